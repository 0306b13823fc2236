package gcp

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/dataplane/ir"
	"github.com/fleetgate/fleetgate/providers"
	"github.com/fleetgate/fleetgate/providers/gcp/gcpfake"
)

// BenchmarkEnsure measures the provider's call budget and speed on the compute fake (make
// bench-gcp writes the table): per op, the API calls made (mutating and reads, from the fake's
// request log) and the wall time (p50/p99). The gateway is a global Application Load Balancer
// with HTTP and HTTPS listeners and 20 routes to a backend in two member clusters (three NEGs).
// Every case runs in a project holding only the benchmark's gateway, then again beside `others`
// gateways of another fleet, because lists could grow with the project. The fake answers in
// microseconds and the retries never wait, so the time is the provider's, the REST client's and
// the loopback HTTP's: on GCE every call costs tens of milliseconds more, and a mutation's
// operation seconds.
func BenchmarkEnsure(b *testing.B) {
	certs := benchCertificates(b)
	for _, others := range []int{0, 20} {
		run := func(name string, bench func(*testing.B, *benchEnv)) {
			b.Run(fmt.Sprintf("%s/others=%d", name, others), func(b *testing.B) {
				bench(b, newBenchEnv(b, others))
			})
		}
		run("create", func(b *testing.B, e *benchEnv) {
			var lb *providers.LoadBalancer
			e.measure(b, func() {
				// The previous op's gateway goes, so that every op creates into the same project.
				if lb != nil {
					if err := e.p.Delete(b.Context(), lb); err != nil {
						b.Fatal(err)
					}
				}
				lb = benchModel("gw", 20, certs[0], 0)
			}, func() { e.ensure(b, lb) })
		})
		run("steady", func(b *testing.B, e *benchEnv) {
			lb := benchModel("gw", 20, certs[0], 0)
			e.measure(b, func() { e.ensure(b, lb) }, func() { e.ensure(b, lb) })
		})
		run("route-added", func(b *testing.B, e *benchEnv) {
			e.measure(b, func() { e.ensure(b, benchModel("gw", 20, certs[0], 0)) },
				func() { e.ensure(b, benchModel("gw", 21, certs[0], 0)) })
		})
		run("endpoint-added", func(b *testing.B, e *benchEnv) {
			e.measure(b, func() { e.ensure(b, benchModel("gw", 20, certs[0], 0)) },
				func() { e.ensure(b, benchModel("gw", 20, certs[0], 1)) })
		})
		run("certificate-rotated", func(b *testing.B, e *benchEnv) {
			e.measure(b, func() { e.ensure(b, benchModel("gw", 20, certs[0], 0)) },
				func() { e.ensure(b, benchModel("gw", 20, certs[1], 0)) })
		})
		run("delete", func(b *testing.B, e *benchEnv) {
			lb := benchModel("gw", 20, certs[0], 0)
			e.measure(b, func() { e.ensure(b, lb) }, func() {
				if err := e.p.Delete(b.Context(), lb); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

// benchEnv is a fake holding `others` gateways of another fleet, and a provider of the
// benchmark's fleet talking to it.
type benchEnv struct {
	fake *gcpfake.Server
	p    *Provider
}

func newBenchEnv(b *testing.B, others int) *benchEnv {
	fake := gcpfake.NewServer(b)
	bg, err := New(killOptions("bench-others", fake.NoAuth()))
	if err != nil {
		b.Fatal(err)
	}
	defer bg.Close()
	e := &benchEnv{fake: fake}
	for i := range others {
		lb := l7Model("bg"+strconv.Itoa(i), json.RawMessage(`{"loadBalancerType":"global"}`), 80, nil, []string{"hub"},
			routes("bg", []ir.Backend{benchBackend(0)}, "/")...)
		if _, err := bg.Ensure(b.Context(), lb); err != nil {
			b.Fatal(err)
		}
	}
	if e.p, err = New(killOptions("bench", fake.NoAuth())); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(e.p.Close)
	return e
}

// ensure ensures lb, which must become ready at once (the fake is synchronous).
func (e *benchEnv) ensure(b *testing.B, lb *providers.LoadBalancer) {
	st, err := e.p.Ensure(b.Context(), lb)
	if err != nil {
		b.Fatal(err)
	}
	if !st.Ready {
		b.Fatalf("%s: not ready: %+v", lb.Gateway, st)
	}
}

// measure runs op once per iteration, with before run untimed ahead of each (it puts the project
// in the state op starts from), and reports op's calls and wall time.
func (e *benchEnv) measure(b *testing.B, before, op func()) {
	var took []time.Duration
	var calls []gcpfake.Call
	for b.Loop() {
		b.StopTimer()
		before()
		b.StartTimer()
		e.fake.ResetCalls()
		start := time.Now()
		op()
		took = append(took, time.Since(start))
		b.StopTimer()
		calls = append(calls, e.fake.Calls()...)
		b.StartTimer()
	}
	report(b, took, calls)
}

// benchModel is the benchmark's gateway: HTTP and HTTPS (cert) with n routes to one backend in
// hub and east, with extra more endpoints in hub.
func benchModel(name string, n int, cert ir.Certificate, extra int) *providers.LoadBalancer {
	paths := make([]string, n)
	for i := range paths {
		paths[i] = fmt.Sprintf("/p%d", i)
	}
	return l7Model(name, json.RawMessage(`{"loadBalancerType":"global"}`), 80, []ir.Certificate{cert}, []string{"east", "hub"},
		routes(name, []ir.Backend{benchBackend(extra)}, paths...)...)
}

// benchBackend has two endpoints in hub (plus extra) and two in east, in two zones.
func benchBackend(extra int) ir.Backend {
	be := ir.Backend{Name: "apps/web:80", Weight: 1, Endpoints: []ir.Endpoint{
		{Address: "10.0.0.4", Port: 8080, Cluster: "hub", Node: "hub-a"},
		{Address: "10.0.0.5", Port: 8080, Cluster: "hub", Node: "hub-b"},
		{Address: "192.168.0.4", Port: 8080, Cluster: "east", Node: "east-a", Zone: "us-east1-b"},
		{Address: "192.168.0.5", Port: 8080, Cluster: "east", Node: "east-b", Zone: "us-east1-c"},
	}}
	for i := range extra {
		be.Endpoints = append(be.Endpoints, ir.Endpoint{Address: "10.0.1." + strconv.Itoa(i+1), Port: 8080, Cluster: "hub", Node: "hub-c"})
	}
	return be
}

func benchCertificates(b *testing.B) []ir.Certificate {
	var out []ir.Certificate
	for range 2 {
		crt, key := selfSigned(b, "gw.example.com")
		out = append(out, ir.Certificate{Name: "apps/gw-tls", Hostnames: []string{"gw.example.com"}, CertPEM: crt, KeyPEM: key})
	}
	return out
}

// report gives the calls per op (and logs them per method and collection, the profile of an op)
// and the p50/p99 wall time.
func report(b *testing.B, took []time.Duration, calls []gcpfake.Call) {
	n := float64(len(took))
	if n == 0 {
		return
	}
	byName := map[string]int{}
	mutating, reads := 0, 0
	for _, c := range calls {
		if c.Mutating() {
			mutating++
		} else {
			reads++
		}
		byName[callName(c)]++
	}
	slices.Sort(took)
	b.ReportMetric(float64(mutating)/n, "mutating/op")
	b.ReportMetric(float64(reads)/n, "reads/op")
	b.ReportMetric(ms(took[len(took)/2]), "p50-ms")
	b.ReportMetric(ms(took[min(len(took)-1, int(0.99*n))]), "p99-ms")
	names := slices.SortedFunc(maps.Keys(byName), func(x, y string) int {
		return cmp.Or(cmp.Compare(byName[y], byName[x]), strings.Compare(x, y))
	})
	var line strings.Builder
	for _, name := range names {
		fmt.Fprintf(&line, " %s=%g", name, float64(byName[name])/n)
	}
	b.Logf("calls per op:%s", line.String())
}

// callName is a call's method, scope kind and collection (and action): "GET global/urlMaps",
// "POST zones/networkEndpointGroups/attachNetworkEndpoints".
func callName(c gcpfake.Call) string {
	_, rest, _ := strings.Cut(c.Path, "/projects/")
	seg := strings.Split(rest, "/")[1:] // without the project
	scope := "global"
	switch {
	case len(seg) > 0 && seg[0] == "global":
		seg = seg[1:]
	case len(seg) > 1 && (seg[0] == "regions" || seg[0] == "zones"):
		scope, seg = seg[0], seg[2:]
	case len(seg) > 0 && seg[0] == "aggregated":
		scope, seg = "aggregated", seg[1:]
	}
	name := c.Method + " " + scope
	if len(seg) > 0 {
		name += "/" + seg[0]
	}
	if len(seg) > 2 {
		name += "/" + seg[2]
	}
	return name
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
