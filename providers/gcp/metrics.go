package gcp

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// apiMetrics count the compute API calls of every account by method (HTTP method, collection
// and custom verb: "POST urlMaps", "POST targetHttpsProxies/setSslCertificates") and status.
type apiMetrics struct {
	calls    *prometheus.CounterVec
	duration *prometheus.HistogramVec
	// restored counts the resources restored after a change outside fleetgate, by kind.
	restored *prometheus.CounterVec
}

func newAPIMetrics(reg prometheus.Registerer) *apiMetrics {
	m := &apiMetrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fleetgate_gcp_api_calls_total",
			Help: "Compute Engine API requests by method and HTTP status (retries count one each; 0 for no answer)."}, []string{"method", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "fleetgate_gcp_api_call_duration_seconds",
			Help: "Compute Engine API request latency by method.", Buckets: prometheus.ExponentialBuckets(0.005, 2, 12)}, []string{"method"}),
		restored: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fleetgate_gcp_drift_restored_total",
			Help: "Resources fleetgate restored after finding them changed outside fleetgate, by kind."}, []string{"kind"}),
	}
	reg.MustRegister(m.calls, m.duration, m.restored)
	return m
}

// transport counts every request that reaches the network; the auth transport wraps it.
type transport struct {
	next http.RoundTripper
	m    *apiMetrics
}

func (t *transport) RoundTrip(r *http.Request) (*http.Response, error) {
	method := apiMethod(r)
	start := time.Now()
	resp, err := t.next.RoundTrip(r)
	code := 0
	if err == nil {
		code = resp.StatusCode
	}
	t.m.calls.WithLabelValues(method, strconv.Itoa(code)).Inc()
	t.m.duration.WithLabelValues(method).Observe(time.Since(start).Seconds())
	return resp, err
}

// apiMethod names a request by its collection: /compute/v1/projects/P/{global|regions/R|zones/Z}/C[/N[/verb]].
func apiMethod(r *http.Request) string {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/compute/v1/projects/"), "/")
	if len(parts) < 2 {
		return r.Method + " other"
	}
	parts = parts[1:] // the project
	switch parts[0] {
	case "regions", "zones":
		if len(parts) < 3 {
			return r.Method + " other"
		}
		parts = parts[2:]
	case "global", "aggregated":
		parts = parts[1:]
	}
	if len(parts) == 0 {
		return r.Method + " other"
	}
	name := parts[0]
	if len(parts) == 3 {
		name += "/" + parts[2] // a custom verb
	}
	return r.Method + " " + name
}
