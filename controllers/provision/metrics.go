package provision

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	calls    *prometheus.CounterVec
	duration *prometheus.HistogramVec
	sweeps   *prometheus.CounterVec
	swept    *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fleetgate_provider_calls_total",
			Help: "Provider calls by provider, operation (ensure, delete, list) and result (success, error).",
		}, []string{"provider", "op", "result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "fleetgate_provider_call_duration_seconds",
			Help:    "Duration of provider calls by provider and operation.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 18),
		}, []string{"provider", "op"}),
		sweeps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fleetgate_provider_sweeps_total",
			Help: "Orphan sweeps by provider and result (success, error).",
		}, []string{"provider", "result"}),
		swept: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fleetgate_provider_swept_gateways_total",
			Help: "Gateways (or clusters of gateways) the orphan sweep queued for deletion, by provider.",
		}, []string{"provider"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.calls, m.duration, m.sweeps, m.swept} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *metrics) observe(provider, op string, start time.Time, err error) {
	result := "success"
	if err != nil {
		result = "error"
	}
	m.calls.WithLabelValues(provider, op, result).Inc()
	m.duration.WithLabelValues(provider, op).Observe(time.Since(start).Seconds())
}
