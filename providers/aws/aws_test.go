package aws

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/dataplane/ir"
	"github.com/fleetgate/fleetgate/providers"
	"github.com/fleetgate/fleetgate/providers/aws/mototest"
	"github.com/fleetgate/fleetgate/providers/providertest"
)

// testOptions are provider options against endpoint (moto or a shim in front of it) with static
// test keys, fast retries and a wide-open rate limiter: ratelimit_test.go tests the limiter, and
// at its default 10 QPS back-to-back Ensures would wait 100 ms per call.
func testOptions(endpoint, fleet string) Options {
	return Options{
		QPS:   1000,
		Burst: 1000,
		Fleet: fleet,
		Defaults: v1alpha1.AWSOptions{Region: mototest.Region, Endpoint: endpoint,
			Credentials: &v1alpha1.AWSCredentials{SecretRef: &v1alpha1.ObjectRef{Namespace: "test", Name: "aws"}}},
		Secrets: func(context.Context, string, string) (map[string][]byte, error) {
			return map[string][]byte{"access-key-id": []byte("AKIDTEST"), "secret-access-key": []byte("test")}, nil
		},
		MaxAttempts: 3,
		MaxBackoff:  10 * time.Millisecond,
		Registerer:  prometheus.NewRegistry(),
		Log:         logr.Discard(),
	}
}

func newTestProvider(t *testing.T, endpoint, fleet string) *Provider {
	t.Helper()
	p, err := New(testOptions(endpoint, fleet))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// motoVPC makes a VPC with two subnets in two zones tagged for internet-facing load balancers.
func motoVPC(t testing.TB, endpoint string) string {
	t.Helper()
	n := createSubnets(context.Background(), t, endpoint, []subnetSpec{
		{zone: "a", cidr: "10.0.1.0/24", tags: elb()},
		{zone: "b", cidr: "10.0.2.0/24", tags: elb()},
	})
	return n.vpcs[0]
}

func endpoint(cluster, ip string, port uint32) ir.Endpoint {
	return ir.Endpoint{Address: ip, Port: port, Cluster: cluster}
}

// l4Model is a gateway of an NLB class with one TCP or UDP listener to one backend.
func l4Model(name string, params json.RawMessage, proto ir.Protocol, port uint32) *providers.LoadBalancer {
	key := "hub/apps/" + name
	tr := providers.TransportTCP
	if proto == ir.ProtocolUDP {
		tr = providers.TransportUDP
	}
	be := ir.Backend{Name: fmt.Sprintf("hub/apps/%s:%d", name, port), Weight: 1,
		Endpoints: []ir.Endpoint{endpoint("hub", "10.0.1.10", port+1000), endpoint("hub", "10.0.2.10", port+1000)}}
	return &providers.LoadBalancer{Gateway: key, Namespace: "apps", Name: name, Class: "aws-nlb", Provider: "aws",
		Scope: "Cluster", Clusters: []string{"hub"}, Parameters: params,
		Ports: []providers.Port{{Port: int32(port), Transport: tr, Protocol: string(proto)}},
		Routing: &ir.Config{Gateway: key, Listeners: []ir.Listener{{Name: "l", Port: port, Protocol: proto,
			L4: &ir.L4Route{Name: "TCPRoute/apps/" + name + "/0", Backends: []ir.Backend{be}}}}}}
}

// httpModel is a gateway of an ALB class: HTTP on 80 (and HTTPS on 443 with crt/key) with one
// route per path to one backend.
func httpModel(name string, params json.RawMessage, crt, key []byte, paths ...string) *providers.LoadBalancer {
	gw := "hub/apps/" + name
	if len(paths) == 0 {
		paths = []string{"/"}
	}
	be := ir.Backend{Name: "hub/apps/web:80", Weight: 1,
		Endpoints: []ir.Endpoint{endpoint("hub", "10.0.1.20", 8080), endpoint("hub", "10.0.2.20", 8080)}}
	var routes []ir.Route
	for i, p := range paths {
		routes = append(routes, ir.Route{Name: fmt.Sprintf("HTTPRoute/apps/%s/%d/0", name, i),
			Match: ir.Match{Path: &ir.StringMatch{Type: ir.MatchPrefix, Value: p}}, Backends: []ir.Backend{be}})
	}
	vh := []ir.VirtualHost{{Hostname: name + ".example.com", Routes: routes}}
	lb := &providers.LoadBalancer{Gateway: gw, Namespace: "apps", Name: name, Class: "aws-alb", Provider: "aws",
		Scope: "Cluster", Clusters: []string{"hub"}, Parameters: params,
		Ports:   []providers.Port{{Port: 80, Transport: providers.TransportTCP, Protocol: "HTTP"}},
		Routing: &ir.Config{Gateway: gw, Listeners: []ir.Listener{{Name: "http", Port: 80, Protocol: ir.ProtocolHTTP, VirtualHosts: vh}}}}
	if crt != nil {
		lb.Ports = append(lb.Ports, providers.Port{Port: 443, Transport: providers.TransportTCP, Protocol: "HTTPS"})
		lb.Routing.Listeners = append(lb.Routing.Listeners, ir.Listener{Name: "https", Port: 443, Protocol: ir.ProtocolHTTPS,
			Certificates: []ir.Certificate{{Name: "apps/" + name + "-tls", Hostnames: []string{name + ".example.com"}, CertPEM: crt, KeyPEM: key}},
			VirtualHosts: vh})
	}
	return lb
}

// TestProviderSuite runs the behaviour every provider must show against moto, with NLB gateways.
func TestProviderSuite(t *testing.T) {
	m := mototest.Require(t, moto)
	shim := mototest.NewFaults(m.URL)
	t.Cleanup(shim.Close)
	vpc := motoVPC(t, m.URL)
	fleet := "suite-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	params := json.RawMessage(`{"loadBalancerType":"network","vpc":"` + vpc + `"}`)
	ports := map[string]uint32{}
	providertest.Run(t, providertest.Harness{
		New: func(t *testing.T) providers.Provider { return newTestProvider(t, shim.URL(), fleet) },
		Model: func(name string) *providers.LoadBalancer {
			if _, ok := ports[name]; !ok {
				ports[name] = uint32(7000 + len(ports))
			}
			return l4Model(name, params, ir.ProtocolTCP, ports[name])
		},
		Owned: func(context.Context) (map[string]string, error) {
			out := map[string]string{}
			for _, r := range inventory(t, m.URL, fleet) {
				out[r.id] = r.version
			}
			return out, nil
		},
		Settle: func(context.Context, *providers.LoadBalancer) error { return nil }, // moto's LBs turn active on the first describe
		Observe: func(ctx context.Context, lb *providers.LoadBalancer) (providertest.Observed, error) {
			var o providertest.Observed
			for _, r := range inventory(t, m.URL, fleet) {
				if r.gateway != lb.Gateway {
					continue
				}
				if strings.HasPrefix(r.what, "lb ") {
					o.Labels = tagMap(r.version)
				}
				if l, ok := strings.CutPrefix(r.what, "listener "); ok {
					proto, port, _ := strings.Cut(l, ":")
					n, _ := strconv.Atoi(port)
					tr := providers.TransportTCP
					if proto == "UDP" {
						tr = providers.TransportUDP
					}
					o.Ports = append(o.Ports, providers.Port{Port: int32(n), Transport: tr, Protocol: proto})
				}
			}
			return o, nil
		},
		Mutations: func() int { n, _ := shim.Counts(); return n },
		ValidParameters: []json.RawMessage{
			json.RawMessage(`{"loadBalancerType":"network","crossZone":true}`),
			json.RawMessage(`{"loadBalancerType":"application","scheme":"internal","idleTimeoutSeconds":120}`),
			nil,
		},
		InvalidParameters: []json.RawMessage{
			json.RawMessage(`{"loadBalancerType":"network","idleTimeoutSeconds":30}`),
			json.RawMessage(`{"loadBalancerTyp":"network"}`),
			json.RawMessage(`{"healthCheck":{"protocol":"TCP","path":"/healthz"}}`),
		},
	})
}

// tagMap reads tagText back.
func tagMap(s string) map[string]string {
	m := map[string]string{}
	for kv := range strings.SplitSeq(strings.TrimSuffix(s, ";"), ";") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

// TestEnsureReportsStatus: an ALB gateway becomes Ready, Direct, with its DNS name; a dry run
// makes no mutating call and says what it would do; an option the type cannot take is Invalid
// without a call; notes reach the message.
func TestEnsureReportsStatus(t *testing.T) {
	m := mototest.Require(t, moto)
	shim := mototest.NewFaults(m.URL)
	t.Cleanup(shim.Close)
	vpc := motoVPC(t, m.URL)
	fleet := "status-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	p := newTestProvider(t, shim.URL(), fleet)
	ctx := t.Context()
	alb := json.RawMessage(`{"loadBalancerType":"application","vpc":"` + vpc + `"}`)

	dry := httpModel("dry", alb, nil, nil)
	dry.Annotations = map[string]string{AnnotationDryRun: "true"}
	before, _ := shim.Counts()
	st, err := p.Ensure(ctx, dry)
	if err != nil {
		t.Fatal(err)
	}
	if after, _ := shim.Counts(); after != before {
		t.Errorf("a dry run made %d mutating calls", after-before)
	}
	if st.Ready || !strings.Contains(st.Message, "dry run:") || !strings.Contains(st.Message, "CreateLoadBalancer") {
		t.Errorf("dry run status %+v: want not ready and the planned calls", st)
	}
	if got := inventory(t, m.URL, fleet); len(got) != 0 {
		t.Errorf("a dry run left resources: %v", got)
	}

	lb := httpModel("web", alb, nil, nil)
	var got providers.Status
	for range 5 {
		if got, err = p.Ensure(ctx, lb); err != nil {
			t.Fatal(err)
		}
		if got.Ready {
			break
		}
	}
	if !got.Ready || !got.Direct || got.Reason != providers.ReasonProgrammed || len(got.Addresses) != 1 ||
		got.Addresses[0].Type != providers.AddressTypeHostname || !strings.HasSuffix(got.Addresses[0].Value, ".elb.amazonaws.com") {
		t.Errorf("ALB status %+v: want ready, direct, one hostname", got)
	}

	bad := httpModel("bad", json.RawMessage(`{"loadBalancerType":"application","proxyProtocolV2":true}`), nil, nil)
	before, _ = shim.Counts()
	st, err = p.Ensure(ctx, bad)
	if err != nil || st.Reason != providers.ReasonInvalid || !strings.Contains(st.Message, "proxyProtocolV2") {
		t.Errorf("invalid options: %+v, %v; want Invalid naming proxyProtocolV2", st, err)
	}
	if after, _ := shim.Counts(); after != before {
		t.Errorf("invalid options made %d mutating calls", after-before)
	}
	for _, l := range []*providers.LoadBalancer{lb, dry} {
		if err := p.Delete(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	if left := inventory(t, m.URL, fleet); len(left) != 0 {
		t.Errorf("left after Delete: %v", left)
	}
}

// TestDeleteKeepsSharedFleetGateway: Delete for some members of a fleet gateway leaves its load
// balancer to the members that still hold it; Delete for all of them removes it.
func TestDeleteKeepsSharedFleetGateway(t *testing.T) {
	m := mototest.Require(t, moto)
	vpc := motoVPC(t, m.URL)
	fleet := "shared-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	p := newTestProvider(t, m.URL, fleet)
	lb := l4Model("shared", json.RawMessage(`{"loadBalancerType":"network","vpc":"`+vpc+`"}`), ir.ProtocolTCP, 7100)
	lb.Gateway, lb.Clusters = "apps/shared", []string{"east", "west"}
	lb.Routing.Gateway = lb.Gateway
	if _, err := p.Ensure(t.Context(), lb); err != nil {
		t.Fatal(err)
	}
	east := *lb
	east.Clusters = []string{"east"}
	if err := p.Delete(t.Context(), &east); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(inventory(t, m.URL, fleet), func(r resource) bool { return strings.HasPrefix(r.what, "lb ") }) {
		t.Fatal("Delete for one member removed the load balancer the other member still holds")
	}
	if err := p.Delete(t.Context(), lb); err != nil {
		t.Fatal(err)
	}
	if left := inventory(t, m.URL, fleet); len(left) != 0 {
		t.Errorf("left after Delete of every member: %v", left)
	}
}
