package controllers

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/fleetgate/fleetgate/controllers/snapshot"
)

// Metrics are fleetgate's own Prometheus metrics; controller-runtime adds reconcile counts and
// latencies per controller (controller_runtime_reconcile_*).
type Metrics struct {
	translateSeconds   prometheus.Histogram
	snapshotObjects    *prometheus.GaugeVec
	statusWrites       *prometheus.CounterVec
	statusWriteSeconds prometheus.Histogram
}

// NewMetrics creates the metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		translateSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "fleetgate_translate_duration_seconds",
			Help:    "Time to build a snapshot and translate it.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}),
		snapshotObjects: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "fleetgate_snapshot_objects",
			Help: "Objects in the last snapshot, by kind.",
		}, []string{"kind"}),
		statusWrites: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fleetgate_status_writes_total",
			Help: "Status writes by object kind and result (written, unchanged, conflict, error).",
		}, []string{"kind", "result"}),
		statusWriteSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "fleetgate_status_write_duration_seconds",
			Help:    "Time to read, merge and write one object's status.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		}),
	}
	for _, c := range []prometheus.Collector{m.translateSeconds, m.snapshotObjects, m.statusWrites, m.statusWriteSeconds} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *Metrics) observeSnapshot(table []kind, s *snapshot.Snapshot) {
	for _, k := range table {
		m.snapshotObjects.WithLabelValues(k.name).Set(float64(k.count(s)))
	}
}
