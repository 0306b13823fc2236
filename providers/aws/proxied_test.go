package aws

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetgate/fleetgate/dataplane/ir"
	"github.com/fleetgate/fleetgate/providers"
	"github.com/fleetgate/fleetgate/providers/aws/mototest"
)

// fakeProxies stands for the in-cluster proxies: they run once ensured, at two pod addresses.
type fakeProxies struct {
	mu      sync.Mutex
	ready   bool
	running map[string][]providers.Port
}

func (f *fakeProxies) Ensure(_ context.Context, lb *providers.LoadBalancer) (providers.Status, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if string(lb.Parameters) != proxyParameters {
		return providers.Status{}, fmt.Errorf("proxies got parameters %s, want %s", lb.Parameters, proxyParameters)
	}
	f.running[lb.Gateway] = lb.Ports
	if !f.ready {
		return providers.Status{Reason: providers.ReasonPending, Message: "0 of 2 replicas available"}, nil
	}
	return providers.Status{Ready: true, Reason: providers.ReasonProgrammed}, nil
}

func (f *fakeProxies) Delete(_ context.Context, lb *providers.LoadBalancer) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.running, lb.Gateway)
	return nil
}

func (f *fakeProxies) Endpoints(context.Context, *providers.LoadBalancer) ([]ir.Endpoint, error) {
	return []ir.Endpoint{{Address: "10.0.1.50", Cluster: "hub"}, {Address: "10.0.2.50", Cluster: "hub"}}, nil
}

// TestNetworkThroughProxies: an NLB gateway with an HTTP listener (beside a TCP one) runs the
// proxies for the HTTP port and forwards it over TCP to the proxy pods; the gateway is programmed
// only through the proxies (not Direct) and waits for them; the proxies go with the last HTTP
// listener, and Delete removes the rest. Without proxies, the HTTP listener is refused before any
// call.
func TestNetworkThroughProxies(t *testing.T) {
	m := mototest.Require(t, moto)
	vpc := motoVPC(t, m.URL)
	fleet := "proxied-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	params := json.RawMessage(`{"loadBalancerType":"network","vpc":"` + vpc + `"}`)
	lb := l4Model("mixed", params, ir.ProtocolTCP, 9000)
	web := httpModel("mixed", params, nil, nil)
	lb.Ports = append(web.Ports, lb.Ports...)
	lb.Routing.Listeners = append(web.Routing.Listeners, lb.Routing.Listeners...)

	ctx := t.Context()
	bare := newTestProvider(t, m.URL, fleet)
	if c, err := bare.Capabilities(params); err != nil || c.Proxied != nil || c.Protocol("HTTP") {
		t.Errorf("without proxies an NLB class expresses HTTP: %+v, %v", c, err)
	}
	st, err := bare.Ensure(ctx, lb)
	if err != nil || st.Reason != providers.ReasonInvalid || !strings.Contains(st.Message, "proxies") {
		t.Errorf("without proxies: %+v, %v; want Invalid naming the proxies", st, err)
	}
	if left := inventory(t, m.URL, fleet); len(left) != 0 {
		t.Errorf("a refused gateway left %v", left)
	}

	px := &fakeProxies{running: map[string][]providers.Port{}}
	o := testOptions(m.URL, fleet)
	o.Proxies = px
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := p.Capabilities(params); err != nil || c.Proxied == nil || !c.Proxied.All {
		t.Errorf("with proxies an NLB class's HTTP is not fully proxied: %+v, %v", c, err)
	}
	ensure := func() providers.Status {
		t.Helper()
		var st providers.Status
		for range 3 { // moto makes a load balancer active on its first describe
			if st, err = p.Ensure(ctx, lb); err != nil {
				t.Fatal(err)
			}
		}
		return st
	}
	st = ensure()
	if st.Ready || st.Direct || !strings.Contains(st.Message, "replicas") {
		t.Errorf("proxies not ready: %+v; want not ready, not direct, the proxies' message", st)
	}
	if d := cmp.Diff([]providers.Port{{Port: 80, Transport: providers.TransportTCP, Protocol: "HTTP"}}, px.running[lb.Gateway]); d != "" {
		t.Errorf("proxies run for (-want +got):\n%s", d)
	}
	px.mu.Lock()
	px.ready = true
	px.mu.Unlock()
	if st = ensure(); !st.Ready || st.Direct {
		t.Errorf("proxies ready: %+v; want ready and not direct (the proxies must ACK)", st)
	}
	var listeners, targets []string
	for _, r := range inventory(t, m.URL, fleet) {
		switch {
		case strings.HasPrefix(r.what, "listener "):
			listeners = append(listeners, strings.TrimPrefix(r.what, "listener "))
		case strings.HasPrefix(r.what, "tg "):
			desc, _, _ := strings.Cut(strings.TrimPrefix(r.what, "tg "), " tg/")
			targets = append(targets, desc)
		}
	}
	slices.Sort(listeners)
	slices.Sort(targets)
	if d := cmp.Diff([]string{"TCP:80", "TCP:9000"}, listeners); d != "" {
		t.Errorf("NLB listeners (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"TCP:80 targets=[10.0.1.50:80 10.0.2.50:80]", "TCP:9000 targets=[10.0.1.10:10000 10.0.2.10:10000]"}, targets); d != "" {
		t.Errorf("NLB target groups (-want +got):\n%s", d)
	}
	// Once its last HTTP listener went, the gateway needs no proxies: they go with it.
	tcpOnly := l4Model("mixed", params, ir.ProtocolTCP, 9000)
	if st, err := p.Ensure(ctx, tcpOnly); err != nil || !st.Ready || !st.Direct {
		t.Errorf("without HTTP listeners: %+v, %v; want ready and direct", st, err)
	}
	if ports, ok := px.running[lb.Gateway]; ok {
		t.Errorf("proxies still run for %v without an HTTP listener", ports)
	}
	if err := p.Delete(ctx, lb); err != nil {
		t.Fatal(err)
	}
	if left := inventory(t, m.URL, fleet); len(left) != 0 || len(px.running) != 0 {
		t.Errorf("after Delete: %v in AWS, proxies %v", left, px.running)
	}
}
