package dns

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics of one publisher; the class is a constant label, so that each class's publisher has
// its own series. A nil *metrics records nothing.
type metrics struct {
	duration  prometheus.Observer
	errors    prometheus.Counter
	changes   *prometheus.CounterVec
	held      prometheus.Gauge
	conflicts prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer, class string) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	labels := prometheus.Labels{"class": class}
	m := &metrics{}
	var err error
	duration := register(reg, &err, prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "fleetgate_dns_sync_duration_seconds", Help: "Duration of one embedded DNS publisher pass.",
		ConstLabels: labels, Buckets: prometheus.ExponentialBuckets(0.005, 2, 12),
	}))
	m.duration = duration
	m.errors = register(reg, &err, prometheus.NewCounter(prometheus.CounterOpts{
		Name: "fleetgate_dns_sync_errors_total", Help: "Embedded DNS publisher passes that failed.", ConstLabels: labels,
	}))
	m.changes = register(reg, &err, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "fleetgate_dns_record_changes_total", Help: "Record sets created, updated and deleted by the embedded DNS publisher.", ConstLabels: labels,
	}, []string{"action"}))
	m.held = register(reg, &err, prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "fleetgate_dns_deletes_held", Help: "Record deletions the delete budget held back in the last pass.", ConstLabels: labels,
	}))
	m.conflicts = register(reg, &err, prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "fleetgate_dns_conflicts", Help: "Desired records not published in the last pass because someone else holds the name.", ConstLabels: labels,
	}))
	if err != nil {
		return nil, fmt.Errorf("dns: registering metrics: %w", err)
	}
	return m, nil
}

// register registers c, or returns the collector already registered under its name (a class's
// publisher rebuilt after its options changed).
func register[C prometheus.Collector](reg prometheus.Registerer, errp *error, c C) C {
	if err := reg.Register(c); err != nil {
		if are, ok := errors.AsType[prometheus.AlreadyRegisteredError](err); ok {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
		*errp = errors.Join(*errp, err)
	}
	return c
}

func (m *metrics) observe(res Result, err error, d time.Duration) {
	if m == nil {
		return
	}
	m.duration.Observe(d.Seconds())
	if err != nil {
		m.errors.Inc()
	}
	var created, updated, deleted, held, conflicts int
	for _, o := range res.Owners {
		created += len(o.Created)
		updated += len(o.Updated)
		deleted += len(o.Deleted)
		held += len(o.Held)
		conflicts += len(o.Conflicts)
	}
	if err == nil {
		m.changes.WithLabelValues("create").Add(float64(created))
		m.changes.WithLabelValues("update").Add(float64(updated))
		m.changes.WithLabelValues("delete").Add(float64(deleted))
	}
	m.held.Set(float64(held))
	m.conflicts.Set(float64(conflicts))
}
