package xds

import "github.com/prometheus/client_golang/prometheus"

// metrics tell how far a rolling upgrade got: the replicas still on the previous wire version, and
// the ones that cannot be served at all.
type metrics struct {
	refusals prometheus.Counter
	replicas *prometheus.GaugeVec
}

func newMetrics() *metrics {
	return &metrics{
		refusals: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "fleetgate_xds_wire_refusals_total",
			Help: "Proxy subscriptions refused because proxy and operator share no wire version.",
		}),
		replicas: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "fleetgate_xds_replicas",
			Help: "Connected proxy replicas, by the wire version their stream speaks.",
		}, []string{"wire"}),
	}
}

func (m *metrics) subscribed(v WireVersion, delta float64) {
	m.replicas.WithLabelValues(v.String()).Add(delta)
}

func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	m.refusals.Describe(ch)
	m.replicas.Describe(ch)
}

func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	m.refusals.Collect(ch)
	m.replicas.Collect(ch)
}

// Collector returns the server's metrics, for the operator to register.
func (s *Server) Collector() prometheus.Collector { return s.metrics }
