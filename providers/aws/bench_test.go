package aws

import (
	"cmp"
	"context"
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
	"github.com/fleetgate/fleetgate/providers/aws/mototest"
)

// BenchmarkEnsure measures the provider's call budget and speed on moto (make bench-aws writes
// the table): per op, the API calls made (mutating and reads, counted by the SDK's HTTP client)
// and the wall time (p50/p99). Every case runs in an account holding only the benchmark's own
// gateway, then again beside `others` load balancers, because reads that list the account grow
// with it. The account's rate limiter is opened wide (testOptions), so the time is the provider's
// and moto's: at the default 10 QPS, Ensures on a drained bucket cost 100 ms per call on top.
func BenchmarkEnsure(b *testing.B) {
	m := mototest.Require(b, moto)
	vpc := motoVPC(b, m.URL)
	nlb := json.RawMessage(`{"loadBalancerType":"network","vpc":"` + vpc + `"}`)
	alb := json.RawMessage(`{"loadBalancerType":"application","vpc":"` + vpc + `"}`)
	bg, _ := benchProvider(b, m.URL)
	for _, others := range []int{0, 20} {
		addBackground(b, bg, nlb, others)
		b.Run(fmt.Sprintf("steady-nlb/others=%d", others), func(b *testing.B) {
			benchSteady(b, m.URL, l4Model("small", nlb, ir.ProtocolTCP, 7000))
		})
		b.Run(fmt.Sprintf("steady-alb20/others=%d", others), func(b *testing.B) {
			benchSteady(b, m.URL, httpModel("alb20", alb, nil, nil, paths(20)...))
		})
		b.Run(fmt.Sprintf("steady-alb20-https/others=%d", others), func(b *testing.B) {
			c := selfSigned(b, "alb20s.example.com", 1)
			benchSteady(b, m.URL, httpModel("alb20s", alb, c.CertPEM, c.KeyPEM, paths(20)...))
		})
		b.Run(fmt.Sprintf("route-change-alb50/others=%d", others), func(b *testing.B) {
			benchRouteChange(b, m.URL, alb)
		})
		b.Run(fmt.Sprintf("new-alb20/others=%d", others), func(b *testing.B) {
			benchNew(b, m.URL, alb)
		})
	}
}

// benchSteady ensures an unchanged, Ready gateway again and again: the periodic resync's cost.
func benchSteady(b *testing.B, endpoint string, lb *providers.LoadBalancer) {
	p, rec := benchProvider(b, endpoint)
	ensureReady(b, p, lb)
	mt := &meter{rec: rec, limited: limitedSeconds(b, p)}
	for b.Loop() {
		mt.run(b, func() { ensureOnce(b, p, lb) })
	}
	mt.report(b)
}

// benchRouteChange changes one route of an ALB gateway with 50 routes per op: its path goes back
// and forth between two values.
func benchRouteChange(b *testing.B, endpoint string, alb json.RawMessage) {
	p, rec := benchProvider(b, endpoint)
	ps := paths(50)
	before := httpModel("alb50", alb, nil, nil, ps...)
	ps[25] = "/changed"
	after := httpModel("alb50", alb, nil, nil, ps...)
	ensureReady(b, p, before)
	mt := &meter{rec: rec, limited: limitedSeconds(b, p)}
	models := []*providers.LoadBalancer{after, before}
	i := 0
	for b.Loop() {
		lb := models[i%2]
		i++
		mt.run(b, func() { ensureOnce(b, p, lb) })
	}
	mt.report(b)
}

// benchNew creates a new ALB gateway with 20 routes per op, ensured until Ready; it is deleted
// outside the measurement.
func benchNew(b *testing.B, endpoint string, alb json.RawMessage) {
	p, rec := benchProvider(b, endpoint)
	mt := &meter{rec: rec, limited: limitedSeconds(b, p)}
	i := 0
	for b.Loop() {
		lb := httpModel("new"+strconv.Itoa(i), alb, nil, nil, paths(20)...)
		i++
		mt.run(b, func() { ensureReady(b, p, lb) })
		b.StopTimer()
		if err := p.Delete(b.Context(), lb); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	mt.report(b)
}

// addBackground ensures NLB gateways of p (another fleet) until it has n: an unchanged gateway
// is ensured again at little cost.
func addBackground(b *testing.B, p *Provider, params json.RawMessage, n int) {
	for i := range n {
		ensureReady(b, p, l4Model("bg"+strconv.Itoa(i), params, ir.ProtocolTCP, uint32(7100+i)))
	}
}

// benchProvider is a provider of a fleet of its own whose calls rec records; its gateways go with
// the benchmark.
func benchProvider(b *testing.B, endpoint string) (*Provider, *recorder) {
	rec := &recorder{}
	o := testOptions(endpoint, "bench-"+strconv.FormatInt(time.Now().UnixNano(), 36))
	o.HTTPClient = rec
	p, err := New(o)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx := context.WithoutCancel(b.Context()) // canceled before cleanups run
		lbs, err := p.List(ctx)
		if err != nil {
			b.Error(err)
		}
		for i := range lbs {
			if err := p.Delete(ctx, &lbs[i]); err != nil {
				b.Error(err)
			}
		}
	})
	return p, rec
}

func ensureOnce(b *testing.B, p *Provider, lb *providers.LoadBalancer) providers.Status {
	st, err := p.Ensure(b.Context(), lb)
	if err != nil {
		b.Fatal(err)
	}
	if st.Reason == providers.ReasonInvalid {
		b.Fatalf("%s: %s", lb.Gateway, st.Message)
	}
	return st
}

// ensureReady ensures lb until Ready (moto turns a load balancer active on its first describe).
func ensureReady(b *testing.B, p *Provider, lb *providers.LoadBalancer) {
	for range 5 {
		if ensureOnce(b, p, lb).Ready {
			return
		}
	}
	b.Fatalf("%s is not Ready after 5 Ensures", lb.Gateway)
}

func paths(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("/p%d", i)
	}
	return out
}

// meter collects the calls and the wall time of each op.
type meter struct {
	rec     *recorder
	limited func() float64
	took    []time.Duration
	calls   []recordedCall
	waited  float64
}

func (mt *meter) run(b *testing.B, op func()) {
	b.Helper()
	mt.rec.mu.Lock()
	first := len(mt.rec.calls)
	mt.rec.mu.Unlock()
	waited := mt.limited()
	start := time.Now()
	op()
	mt.took = append(mt.took, time.Since(start))
	mt.waited += mt.limited() - waited
	mt.rec.mu.Lock()
	mt.calls = append(mt.calls, mt.rec.calls[first:]...)
	mt.rec.mu.Unlock()
}

// report gives the calls per op (and logs them per action with their time, the profile of where
// an op's time goes) and the p50/p99 wall time.
func (mt *meter) report(b *testing.B) {
	n := float64(len(mt.took))
	if n == 0 {
		return
	}
	type stat struct {
		calls int
		took  time.Duration
	}
	byAction := map[string]*stat{}
	mutating, reads := 0, 0
	var inCalls time.Duration
	for _, c := range mt.calls {
		if (mototest.Request{Action: c.Action}).Mutating() {
			mutating++
		} else {
			reads++
		}
		s := byAction[c.Action]
		if s == nil {
			s = &stat{}
			byAction[c.Action] = s
		}
		s.calls++
		s.took += c.Took
		inCalls += c.Took
	}
	slices.Sort(mt.took)
	b.ReportMetric(float64(mutating)/n, "mutating/op")
	b.ReportMetric(float64(reads)/n, "reads/op")
	b.ReportMetric(ms(mt.took[len(mt.took)/2]), "p50-ms")
	b.ReportMetric(ms(mt.took[min(len(mt.took)-1, int(0.99*n))]), "p99-ms")
	b.ReportMetric(ms(inCalls)/n, "in-calls-ms/op")
	b.ReportMetric(mt.waited*1000/n, "rate-limited-ms/op")
	actions := slices.SortedFunc(maps.Keys(byAction), func(x, y string) int {
		return cmp.Or(cmp.Compare(byAction[y].calls, byAction[x].calls), strings.Compare(x, y))
	})
	var line strings.Builder
	for _, a := range actions {
		fmt.Fprintf(&line, " %s=%.1f(%.1fms)", a, float64(byAction[a].calls)/n, ms(byAction[a].took)/n)
	}
	b.Logf("calls per op:%s", line.String())
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// limitedSeconds reads the provider's rate-limiter wait counter.
func limitedSeconds(b *testing.B, p *Provider) func() float64 {
	return func() float64 { return counterValue(b, p.accounts.metrics.limited) }
}
