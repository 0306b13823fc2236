package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	mdns "github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/providers/dns/bindtest"
	"github.com/fleetgate/fleetgate/tests/testbed"
)

// TestDNSKillOperator: the operator binary (local mode; its class publishes into a real BIND9
// zone over RFC 2136) is SIGKILLed FLEETGATE_DNS_KILLS times (default 20) while routes come and
// go, each kill at a random moment of the DNS change that follows. Meanwhile the zone is asked
// every 20 ms for a name whose route stays the whole time. Then: that name never stopped
// resolving (no lost record); once the operator settles, the zone holds exactly the names of the
// routes that exist, each with its TXT ownership record and nothing of the deleted ones (no
// orphan); the record fleetgate did not create is untouched.
func TestDNSKillOperator(t *testing.T) {
	kills := killCount(t, "FLEETGATE_DNS_KILLS", 20)
	e, bind := newDNSLocalEnv(t)
	ctx, cl := t.Context(), e.c.Client
	must(t, cl.Create(ctx, httpRoute("stable", "stable.example.test", "web")))
	testbed.Eventually(t, 30*time.Second, func() error {
		if !resolves(bind, "stable.example.test") {
			return fmt.Errorf("stable.example.test does not resolve")
		}
		return nil
	})

	var lost, asked atomic.Int64
	watchCtx, stopWatch := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for watchCtx.Err() == nil {
			asked.Add(1)
			if !resolves(bind, "stable.example.test") {
				lost.Add(1)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()

	routes := []string{"stable"}
	for i := range kills {
		name := fmt.Sprintf("r%d", i)
		must(t, cl.Create(ctx, httpRoute(name, name+".example.test", "web")))
		routes = append(routes, name)
		if i >= 2 {
			old := fmt.Sprintf("r%d", i-2)
			must(t, cl.Delete(ctx, &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: old}}))
			routes = slices.DeleteFunc(routes, func(r string) bool { return r == old })
		}
		// Within the operator's reaction to the change: it restarted just before (caches,
		// proxies) and publishes ~1 s later.
		time.Sleep(rand.N(2 * time.Second))
		e.op.Kill()
		e.startOperator()
	}

	addr, _ := e.programmed(metav1.ConditionTrue, 60*time.Second)
	want := []string{"untouched.example.test. A 192.0.2.99"}
	for _, r := range routes {
		want = append(want, r+".example.test. A "+addr, "a-"+r+".example.test. TXT resource=hub/default/gw")
	}
	slices.Sort(want)
	var got []string
	testbed.Eventually(t, 60*time.Second, func() error {
		rrs, err := bind.Transfer()
		if err != nil {
			return err
		}
		got = got[:0]
		for _, rr := range rrs {
			h := rr.Header()
			if h.Name == "ns."+bind.Zone+"." { // the zone's own name server
				continue
			}
			switch rec := rr.(type) {
			case *mdns.A:
				got = append(got, h.Name+" A "+rec.A.String())
			case *mdns.TXT:
				txt := strings.Join(rec.Txt, "")
				_, res, _ := strings.Cut(txt, "external-dns/resource=")
				got = append(got, h.Name+" TXT resource="+res)
			case *mdns.CNAME, *mdns.AAAA:
				got = append(got, rr.String())
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			return fmt.Errorf("zone:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
		}
		return nil
	})
	stopWatch()
	<-watched
	if lost.Load() > 0 {
		t.Errorf("stable.example.test did not resolve %d times out of %d queries during the kills", lost.Load(), asked.Load())
	}
	t.Logf("%d kills: stable.example.test answered all %d queries; the zone holds exactly the %d routes' records", kills, asked.Load(), len(routes))
}

// newDNSLocalEnv is the operator binary in local mode with a Gateway "gw" (HTTP:80) of class
// "fleetgate" whose config publishes into a real BIND9 zone example.test over RFC 2136, which
// holds one record fleetgate did not create (untouched.example.test), and a backend "web".
func newDNSLocalEnv(t *testing.T) (*trafficEnv, *bindtest.Server) {
	t.Helper()
	bind := bindtest.Require(t, "example.test", "untouched 300 IN A 192.0.2.99")
	e := newTrafficEnv(t)
	ctx, cl := t.Context(), e.c.Client
	must(t, cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "fleetgate-system"}}))
	must(t, cl.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "fleetgate-system", Name: "tsig"},
		Data: map[string][]byte{"secret": []byte(bind.Secret)}}))
	e.backend(41, "web", 9080)
	must(t, cl.Create(ctx, &v1alpha1.GatewayClassConfig{ObjectMeta: metav1.ObjectMeta{Name: "fleetgate"},
		Spec: v1alpha1.GatewayClassConfigSpec{Provider: v1alpha1.ProviderInCluster, Scope: v1alpha1.ScopeCluster,
			DNS: &v1alpha1.DNSOptions{Provider: v1alpha1.DNSProviderRFC2136, Zones: []string{"example.test"},
				RFC2136: &v1alpha1.DNSRFC2136{Host: bind.Host, Port: int32(bind.Port), Zone: bind.Zone, TSIGKeyName: bindtest.KeyName,
					TSIGSecretRef: v1alpha1.ObjectRef{Namespace: "fleetgate-system", Name: "tsig"}}}}}))
	must(t, cl.Create(ctx, &gwv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "fleetgate"},
		Spec: gwv1.GatewayClassSpec{ControllerName: v1alpha1.ControllerName,
			ParametersRef: &gwv1.ParametersReference{Group: v1alpha1.Group, Kind: "GatewayClassConfig", Name: "fleetgate"}}}))
	must(t, cl.Create(ctx, &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "gw"},
		Spec: gwv1.GatewaySpec{GatewayClassName: "fleetgate",
			Listeners: []gwv1.Listener{{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType}}}}))
	return e, bind
}

func resolves(bind *bindtest.Server, name string) bool {
	rrs, err := bind.Query(name, mdns.TypeA)
	return err == nil && len(rrs) > 0
}

// TestDNSResolvesAfterProgrammed: 50 routes, one at a time, each with its own hostname on a
// Gateway whose class publishes into a BIND9 zone: every name resolves to the Gateway's address,
// and the time from the route being Accepted (its parent status, as the operator writes it) to
// the zone answering is logged as p50/p99 (the closing note's figure; no timed assertion).
func TestDNSResolvesAfterProgrammed(t *testing.T) {
	e, bind := newDNSLocalEnv(t)
	ctx, cl := t.Context(), e.c.Client
	must(t, cl.Create(ctx, httpRoute("first", "first.example.test", "web")))
	addr, _ := e.programmed(metav1.ConditionTrue, 30*time.Second)
	accepted := func(name string) bool {
		var r gwv1.HTTPRoute
		if cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, &r) != nil {
			return false
		}
		for _, p := range r.Status.Parents {
			if c := meta.FindStatusCondition(p.Conditions, string(gwv1.RouteConditionAccepted)); c != nil &&
				c.Status == metav1.ConditionTrue && c.ObservedGeneration == r.Generation {
				return true
			}
		}
		return false
	}
	answer := func(name string) string {
		rrs, err := bind.Query(name, mdns.TypeA)
		if err != nil || len(rrs) == 0 {
			return ""
		}
		return rrs[0].(*mdns.A).A.String()
	}
	const n = 50
	var afterAccepted, afterCreated []time.Duration
	for i := range n {
		name := fmt.Sprintf("n%02d", i)
		host := name + ".example.test"
		created := time.Now()
		must(t, cl.Create(ctx, httpRoute(name, host, "web")))
		var acceptedAt time.Time
		deadline := time.Now().Add(30 * time.Second)
		for {
			if acceptedAt.IsZero() && accepted(name) {
				acceptedAt = time.Now()
			}
			if got := answer(host); got != "" {
				if got != addr {
					t.Fatalf("%s A %s, want the Gateway's %s", host, got, addr)
				}
				if acceptedAt.IsZero() {
					acceptedAt = time.Now() // resolvable before the status was seen
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s does not resolve 30s after its route was created", host)
			}
			time.Sleep(2 * time.Millisecond)
		}
		now := time.Now()
		afterAccepted = append(afterAccepted, now.Sub(acceptedAt))
		afterCreated = append(afterCreated, now.Sub(created))
	}
	pct := func(d []time.Duration, p int) time.Duration {
		s := slices.Sorted(slices.Values(d))
		return s[min(len(s)-1, len(s)*p/100)].Round(100 * time.Microsecond)
	}
	t.Logf("%d names: route Accepted → resolvable p50 %v p99 %v; route created → resolvable p50 %v p99 %v",
		n, pct(afterAccepted, 50), pct(afterAccepted, 99), pct(afterCreated, 50), pct(afterCreated, 99))
}

// killCount is how many times a kill test kills: the environment variable env when set (a
// longer soak), else def.
func killCount(t *testing.T, env string, def int) int {
	t.Helper()
	v := os.Getenv(env)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	must(t, err)
	return n
}
