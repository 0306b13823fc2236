package proxy

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are registered on the caller's registry; the request path only touches counters and
// observers resolved when a config is compiled, never a label lookup.
type metrics struct {
	requests    *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	conns       *prometheus.CounterVec
	l4Bytes     *prometheus.CounterVec
	version     prometheus.Gauge
	applies     *prometheus.CounterVec
	mirrorDrops prometheus.Counter
	limitHits   *prometheus.CounterVec
	hits        limitHits
	// retryBudgetRefused counts retries not made because the backend's retry budget was spent.
	retryBudgetRefused prometheus.Counter
	deniedDials        prometheus.Counter

	mu     sync.Mutex
	routes map[[2]string]*routeStats
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "fleetgate", Subsystem: "proxy", Name: "requests_total",
			Help: "HTTP requests by listener, route, backend and status class.",
		}, []string{"listener", "route", "backend", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "fleetgate", Subsystem: "proxy", Name: "request_duration_seconds",
			Help:    "HTTP request duration by listener and route.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"listener", "route"}),
		conns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "fleetgate", Subsystem: "proxy", Name: "l4_connections_total",
			Help: "TCP connections, TLS connections and UDP sessions forwarded, by listener, route and backend.",
		}, []string{"listener", "route", "backend"}),
		l4Bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "fleetgate", Subsystem: "proxy", Name: "l4_bytes_total",
			Help: "Bytes forwarded by TCP, TLS and UDP routes, by direction.",
		}, []string{"listener", "route", "backend", "direction"}),
		version: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "fleetgate", Subsystem: "proxy", Name: "config_version",
			Help: "Version of the config being served.",
		}),
		applies: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "fleetgate", Subsystem: "proxy", Name: "config_applies_total",
			Help: "Config applications by result (ok, invalid, bind).",
		}, []string{"result"}),
		mirrorDrops: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "fleetgate", Subsystem: "proxy", Name: "mirror_dropped_total",
			Help: "Mirrored requests dropped because too many were in flight.",
		}),
		limitHits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "fleetgate", Subsystem: "proxy", Name: "limit_hits_total",
			Help: "Requests and connections cut short by a limit, by limit.",
		}, []string{"limit"}),
		retryBudgetRefused: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "fleetgate", Subsystem: "proxy", Name: "retry_budget_exceeded_total",
			Help: "Retries not made because the backend's retry budget (retries in flight) was spent.",
		}),
		deniedDials: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "fleetgate", Subsystem: "proxy", Name: "denied_endpoint_dials_total",
			Help: "Connections to backend endpoints refused because their address is in the denied networks.",
		}),
		routes: map[[2]string]*routeStats{},
	}
	m.hits = limitHits{
		maxConns:         m.limitHits.WithLabelValues("max_connections_per_listener"),
		bodyIdle:         m.limitHits.WithLabelValues("request_body_idle_timeout"),
		writeIdle:        m.limitHits.WithLabelValues("response_write_idle_timeout"),
		backendResponse:  m.limitHits.WithLabelValues("backend_response_timeout"),
		requestTimeout:   m.limitHits.WithLabelValues("request_timeout"),
		http2RapidResets: m.limitHits.WithLabelValues("http2_rapid_reset"),
		targetTooLong:    m.limitHits.WithLabelValues("request_target_too_long"),
	}
	for _, c := range []prometheus.Collector{m.requests, m.duration, m.conns, m.l4Bytes, m.version, m.applies, m.mirrorDrops, m.limitHits, m.retryBudgetRefused, m.deniedDials} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering proxy metrics: %w", err)
		}
	}
	return m, nil
}

// limitHits are the series of fleetgate_proxy_limit_hits_total, resolved once.
type limitHits struct {
	maxConns, bodyIdle, writeIdle, backendResponse, requestTimeout, http2RapidResets, targetTooLong prometheus.Counter
}

// routeStats are the series of one route. They are cached by listener and route name so that a
// config swap reuses them, and each series is resolved on first use: a table of 100k routes costs
// series only for what actually sees traffic.
type routeStats struct {
	m        *metrics
	listener string
	route    string
	duration atomic.Pointer[observerRef]
	local    *backendStats // answers from the proxy itself: 404, redirect, CORS, 500
	mu       sync.Mutex
	// backends are few per route: a slice scanned at compile time costs less than a map, which
	// matters with 100k routes.
	backends []*backendStats
	// refs counts the compiled routes and listeners that use these series, in tables in service or
	// being compiled (guarded by metrics.mu); at 0 they are forgotten.
	refs int
}

type observerRef struct{ prometheus.Observer }

type counterRef struct{ prometheus.Counter }

// Indexes into backendStats.c: status classes first ("other", 1xx … 5xx), then the L4 counters.
const (
	statConns = 6 + iota
	statRx
	statTx
	statCount
)

type backendStats struct {
	rs   *routeStats
	name string
	// c holds the counters resolved so far; allocated on first use, as most of 100k routes'
	// backends never see a request.
	c atomic.Pointer[[statCount]atomic.Pointer[counterRef]]
}

// counters returns b.c, allocating it if need be.
func (b *backendStats) counters() *[statCount]atomic.Pointer[counterRef] {
	if c := b.c.Load(); c != nil {
		return c
	}
	b.c.CompareAndSwap(nil, new([statCount]atomic.Pointer[counterRef]))
	return b.c.Load()
}

// route returns the series of a route and takes a reference to them; release gives it back.
func (m *metrics) route(listener, route string) *routeStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := [2]string{listener, route}
	if rs := m.routes[k]; rs != nil {
		rs.refs++
		return rs
	}
	rs := &routeStats{m: m, listener: listener, route: route, refs: 1}
	rs.local = rs.backend("")
	m.routes[k] = rs
	return rs
}

// hold takes one more reference to rs, which the caller already holds one of.
func (m *metrics) hold(rs *routeStats) {
	m.mu.Lock()
	rs.refs++
	m.mu.Unlock()
}

func (rs *routeStats) backend(name string) *backendStats {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for _, b := range rs.backends {
		if b.name == name {
			return b
		}
	}
	b := &backendStats{rs: rs, name: name}
	rs.backends = append(rs.backends, b)
	return b
}

func (rs *routeStats) observe(d time.Duration) {
	o := rs.duration.Load()
	if o == nil {
		o = &observerRef{rs.m.duration.WithLabelValues(rs.listener, rs.route)}
		if !rs.duration.CompareAndSwap(nil, o) {
			o = rs.duration.Load()
		}
	}
	o.Observe(d.Seconds())
}

func statClass(i int) string {
	if i == 0 {
		return "other"
	}
	return strconv.Itoa(i) + "xx"
}

func (b *backendStats) counter(i int) prometheus.Counter {
	cs := b.counters()
	if c := cs[i].Load(); c != nil {
		return c.Counter
	}
	rs := b.rs
	var c prometheus.Counter
	switch i {
	case statConns:
		c = rs.m.conns.WithLabelValues(rs.listener, rs.route, b.name)
	case statRx:
		c = rs.m.l4Bytes.WithLabelValues(rs.listener, rs.route, b.name, "rx")
	case statTx:
		c = rs.m.l4Bytes.WithLabelValues(rs.listener, rs.route, b.name, "tx")
	default:
		c = rs.m.requests.WithLabelValues(rs.listener, rs.route, b.name, statClass(i))
	}
	if !cs[i].CompareAndSwap(nil, &counterRef{c}) {
		return cs[i].Load().Counter
	}
	return c
}

func (b *backendStats) count(code int) {
	i := code / 100
	if i < 1 || i > 5 {
		i = 0
	}
	b.counter(i).Inc()
}

func (b *backendStats) conn() { b.counter(statConns).Inc() }

// forget deletes the series this backend resolved.
func (b *backendStats) forget() {
	rs := b.rs
	cs := b.c.Load()
	if cs == nil {
		return
	}
	for i := range cs {
		if cs[i].Load() == nil {
			continue
		}
		switch i {
		case statConns:
			rs.m.conns.DeleteLabelValues(rs.listener, rs.route, b.name)
		case statRx:
			rs.m.l4Bytes.DeleteLabelValues(rs.listener, rs.route, b.name, "rx")
		case statTx:
			rs.m.l4Bytes.DeleteLabelValues(rs.listener, rs.route, b.name, "tx")
		default:
			rs.m.requests.DeleteLabelValues(rs.listener, rs.route, b.name, statClass(i))
		}
	}
}

// release gives back one reference per entry of rss and forgets the series of routes no table
// uses any more, so that route churn does not grow the registry forever. Series are deleted by
// their exact labels: a partial-match delete would scan every series once per removed route.
func (m *metrics) release(rss []*routeStats) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, rs := range rss {
		if rs.refs--; rs.refs > 0 {
			continue
		}
		delete(m.routes, [2]string{rs.listener, rs.route})
		rs.mu.Lock()
		for _, b := range rs.backends {
			b.forget()
		}
		rs.mu.Unlock()
		if rs.duration.Load() != nil {
			m.duration.DeleteLabelValues(rs.listener, rs.route)
		}
	}
}
