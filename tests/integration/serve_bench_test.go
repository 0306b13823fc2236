package integration

import (
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// BenchmarkTimeToServe measures apply → first 200 for route changes through the local-mode operator
// and its proxy: each change adds an HTTPRoute for a new hostname, and the clock stops at the first
// request the proxy answers from the backend. Run with `make bench-serve`; it reports p50 and p99.
func BenchmarkTimeToServe(b *testing.B) {
	e := newTrafficEnv(b)
	e.backend(20, "v1", 9080)
	e.gateway(gwv1.Listener{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType})
	must(e.t, e.c.Client.Create(b.Context(), httpRoute("warmup", "warmup.example.com", "v1")))
	addr, _ := e.programmed(metav1.ConditionTrue, 30*time.Second)
	gwAddr := net.JoinHostPort(addr, "80")
	e.serves(gwAddr, "warmup.example.com", "v1", 10*time.Second)

	const changes = 100
	var took []time.Duration
	for i := range changes {
		host := fmt.Sprintf("r%d.example.com", i)
		start := time.Now()
		must(e.t, e.c.Client.Create(b.Context(), httpRoute(fmt.Sprintf("r%d", i), host, "v1")))
		for {
			if code, body := get(gwAddr, host, "/"); code == http.StatusOK && strings.HasPrefix(body, "v1 ") {
				break
			}
			if time.Since(start) > 30*time.Second {
				b.Fatalf("route %s not served after 30s", host)
			}
			time.Sleep(time.Millisecond)
		}
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	p := func(q float64) time.Duration { return took[int(q*float64(len(took)-1))] }
	b.ReportMetric(float64(p(0.5).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(p(0.99).Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(took[len(took)-1].Microseconds())/1000, "max-ms")
	b.Logf("apply → first 200 over %d route changes: p50 %s, p99 %s, max %s", changes, p(0.5), p(0.99), took[len(took)-1])
}
