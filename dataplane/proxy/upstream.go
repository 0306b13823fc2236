package proxy

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

var errNoEndpoint = errors.New("backend has no ready endpoints")

// backendSet picks among weighted backends. Backends may be shared between routes; their series
// are per route, so they live here.
type backendSet struct {
	list  []*backend
	stats []*backendStats
	cum   []uint64 // cumulative weights
}

func (s *backendSet) pick() (*backend, *backendStats) {
	n := len(s.cum)
	if n == 0 || s.cum[n-1] == 0 {
		return nil, nil
	}
	i := 0
	if n > 1 {
		i = pickCum(s.cum)
	}
	return s.list[i], s.stats[i]
}

// pickFor is pick, or for a client key (client IP affinity) the backend rendezvous hashing gives it.
func (s *backendSet) pickFor(client string) (*backend, *backendStats) {
	n := len(s.cum)
	if client == "" || n < 2 || s.cum[n-1] == 0 {
		return s.pick()
	}
	i := pickHashed(client, s.cum, func(i int) string { return s.list[i].name })
	return s.list[i], s.stats[i]
}

// pickHashed chooses an index for key by weighted rendezvous hashing: each entry scores
// -weight/ln(u), u uniform in (0,1) from a hash of key and the entry's name, and the best wins. So a
// key keeps its entry while that entry stays, removing an entry moves only its own keys, and keys
// spread in proportion to the weights. The hash is fixed (not seeded per process) so that every
// proxy replica agrees.
func pickHashed(key string, cum []uint64, name func(int) string) int {
	best, bestScore := 0, math.Inf(-1)
	var prev uint64
	for i, c := range cum {
		w := c - prev
		prev = c
		if w == 0 {
			continue
		}
		u := (float64(mix64(fnv64(key, name(i)))>>11) + 0.5) / (1 << 53)
		if score := -float64(w) / math.Log(u); score > bestScore {
			best, bestScore = i, score
		}
	}
	return best
}

// fnv64 is FNV-1a of a, a zero byte and b.
func fnv64(a, b string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(a); i++ {
		h = (h ^ uint64(a[i])) * 1099511628211
	}
	h *= 1099511628211 // the separator, a zero byte
	for i := 0; i < len(b); i++ {
		h = (h ^ uint64(b[i])) * 1099511628211
	}
	return h
}

// mix64 is MurmurHash3's finaliser: FNV alone leaves keys that differ in their last byte
// correlated, which would skew rendezvous hashing.
func mix64(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	return h ^ h>>33
}

// pickCum chooses an index with probability proportional to its weight.
func pickCum(cum []uint64) int {
	x := rand.Uint64N(cum[len(cum)-1])
	if len(cum) <= 8 {
		for i, c := range cum {
			if x < c {
				return i
			}
		}
	}
	return sort.Search(len(cum), func(i int) bool { return cum[i] > x })
}

type backend struct {
	// inflight counts the requests in RoundTrip to this backend and retries the retries among them
	// holding a share of the retry budget (takeRetry).
	inflight atomic.Int64
	retries  atomic.Int64

	name    string
	invalid bool
	scheme  string
	h1      bool // plain HTTP/1.1, which the fast path can speak
	rt      http.RoundTripper
	eps     []string // host:port
	epCum   []uint64
	reqHdr  *headerMod
	respHdr *headerMod
}

func (b *backend) endpoint() (string, bool) {
	switch len(b.eps) {
	case 0:
		return "", false
	case 1:
		return b.eps[0], true
	}
	return b.eps[pickCum(b.epCum)], true
}

// endpointFor is endpoint, or for a client key (client IP affinity) the endpoint rendezvous
// hashing gives it.
func (b *backend) endpointFor(client string) (string, bool) {
	if client == "" || len(b.eps) < 2 {
		return b.endpoint()
	}
	return b.eps[pickHashed(client, b.epCum, func(i int) string { return b.eps[i] })], true
}

// retryEndpoint picks the endpoint of a retry, avoiding those that already failed this request
// (refused, timed out, or answered a retriable code) while any other is left: the endpoint that just
// failed is the least likely to do better.
func (b *backend) retryEndpoint(failed []string) (string, bool) {
	ep, ok := b.endpoint()
	if !ok || !slices.Contains(failed, ep) {
		return ep, ok
	}
	start := rand.IntN(len(b.eps))
	for i := range b.eps {
		if c := b.eps[(start+i)%len(b.eps)]; !slices.Contains(failed, c) {
			return c, true
		}
	}
	return ep, true // each has failed once: the weights choose again
}

func (s *compiler) compileBackends(in []ir.Backend, rs *routeStats) backendSet {
	// Routes of the same name whose backends the decoder shared (one slice) get one set: it is
	// only read, and its backends are the ones compileBackend would share anyway. Backends with
	// filters are each a route's own, so a list holding one is compiled every time.
	var key backendsKey
	if len(in) > 0 && !hasFilters(in) {
		key = backendsKey{first: &in[0], n: len(in), rs: rs}
		if set, ok := s.backendSets[key]; ok {
			return set
		}
	}
	out := backendSet{list: make([]*backend, 0, len(in)), stats: make([]*backendStats, 0, len(in)), cum: make([]uint64, 0, len(in))}
	var total uint64
	for i := range in {
		b := s.compileBackend(&in[i])
		total += uint64(in[i].Weight)
		out.list = append(out.list, b)
		out.stats = append(out.stats, rs.backend(b.name))
		out.cum = append(out.cum, total)
	}
	if key.first != nil {
		if s.backendSets == nil {
			s.backendSets = map[backendsKey]backendSet{}
		}
		s.backendSets[key] = out
	}
	return out
}

// backendsKey is a decoded backends slice and the series of the route it is compiled for.
type backendsKey struct {
	first *ir.Backend
	n     int
	rs    *routeStats
}

func hasFilters(in []ir.Backend) bool {
	for i := range in {
		if f := &in[i].Filters; f.RequestHeaders != nil || f.ResponseHeaders != nil {
			return true
		}
	}
	return false
}

// compileBackend returns the compiled backend, shared with earlier routes naming the same one. The
// lookup allocates nothing: a table of 100k routes holds 100k references to a handful of backends.
func (s *compiler) compileBackend(in *ir.Backend) *backend {
	f := &in.Filters
	if f.RequestHeaders != nil || f.ResponseHeaders != nil {
		// Backends with filters are rare and not shared.
		return s.newBackend(in)
	}
	var tlsKey string // computed once per reference: TLS settings are compared by their hash
	if in.TLS != nil {
		tlsKey = backendTLSKey(in.TLS)
	}
	for _, sb := range s.backends[in.Name] {
		if sb.tlsKey == tlsKey && sameBackend(&sb.src, in) {
			return sb.b
		}
	}
	b := s.newBackend(in)
	src := ir.Backend{Name: in.Name, AppProtocol: in.AppProtocol, Invalid: in.Invalid, Endpoints: slices.Clone(in.Endpoints)}
	s.backends[in.Name] = append(s.backends[in.Name], sharedBackend{src: src, tlsKey: tlsKey, b: b})
	return b
}

// sharedBackend is a compiled backend with the fields of the IR it was compiled from; TLS settings
// by their backendTLSKey ("" for none).
type sharedBackend struct {
	src    ir.Backend
	tlsKey string
	b      *backend
}

// sameBackend compares everything but TLS that shapes a compiled backend without filters (the
// weight belongs to the route's choice, not to the backend).
func sameBackend(a, b *ir.Backend) bool {
	return a.Name == b.Name && a.AppProtocol == b.AppProtocol && a.Invalid == b.Invalid && slices.Equal(a.Endpoints, b.Endpoints)
}

func (s *compiler) newBackend(in *ir.Backend) *backend {
	b := &backend{
		name:    in.Name,
		invalid: in.Invalid,
		scheme:  "http",
		reqHdr:  compileHeaderMod(in.Filters.RequestHeaders),
		respHdr: compileHeaderMod(in.Filters.ResponseHeaders),
	}
	switch in.AppProtocol {
	case ir.AppH2C:
		b.rt = s.up.h2c
	case ir.AppTLS:
		t, err := s.backendTransport(in.TLS, s.clientCert)
		if err != nil && s.err == nil {
			s.err = fmt.Errorf("backend %q: %w", in.Name, err)
		}
		b.rt, b.scheme = t, "https"
	default:
		b.rt, b.h1 = s.up.http1, true
	}
	var total uint64
	for _, e := range in.Endpoints {
		w := uint64(e.Weight)
		if w == 0 {
			w = 1
		}
		total += w
		b.eps = append(b.eps, net.JoinHostPort(e.Address, strconv.FormatUint(uint64(e.Port), 10)))
		b.epCum = append(b.epCum, total)
	}
	return b
}

// upstreams are the shared connection pools. They outlive config swaps so that a new route table
// keeps using the warm keepalive connections of the old one.
type upstreams struct {
	http1, h2c, tls *http.Transport
}

// dial is the dialer of every pool; TLS backends' pools are clones, so they share it.
func newUpstreams(dial func(ctx context.Context, network, addr string) (net.Conn, error), idleTimeout time.Duration) upstreams {
	base := func() *http.Transport {
		return &http.Transport{
			DialContext:           dial,
			MaxIdleConns:          0,
			MaxIdleConnsPerHost:   1024,
			IdleConnTimeout:       idleTimeout,
			ExpectContinueTimeout: time.Second,
			// The proxy must pass bodies through untouched, not negotiate gzip for itself.
			DisableCompression: true,
			ReadBufferSize:     32 << 10,
			WriteBufferSize:    32 << 10,
		}
	}
	h1 := base()
	h2c := base()
	p := new(http.Protocols)
	p.SetUnencryptedHTTP2(true)
	h2c.Protocols = p
	h2c.HTTP2 = &http.HTTP2Config{MaxConcurrentStreams: 1000}
	t := base()
	t.ForceAttemptHTTP2 = true
	// A TLS backend without a BackendTLSPolicy is encrypted to but not verified, as the endpoint
	// addresses come from the cluster's own EndpointSlices; verified backends get their own pool
	// (backendtls.go).
	t.TLSClientConfig = &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12} //nolint:gosec // see above
	return upstreams{http1: h1, h2c: h2c, tls: t}
}

func (u upstreams) close() {
	u.http1.CloseIdleConnections()
	u.h2c.CloseIdleConnections()
	u.tls.CloseIdleConnections()
}

type retryPolicy struct {
	attempts int
	codes    map[int]bool
	backoff  time.Duration
}

func compileRetry(r *ir.Retry) *retryPolicy {
	if r == nil || r.Attempts == 0 {
		return nil
	}
	p := &retryPolicy{attempts: r.Attempts, codes: map[int]bool{}, backoff: r.Backoff}
	for _, c := range r.Codes {
		p.codes[c] = true
	}
	return p
}

// minRetryBackoff is the least wait before a retry, as Envoy's default base interval: a route
// without a backoff (or with a tiny one) must not make the proxy spin on a refusing backend.
const minRetryBackoff = 25 * time.Millisecond

// wait is the backoff before retry n (1-based): exponential from the configured backoff (at least
// minRetryBackoff), capped at 16 times it, with up to 25% jitter so that retries do not align.
func (p *retryPolicy) wait(n int) time.Duration {
	d := max(p.backoff, minRetryBackoff) << min(n-1, 4)
	return d + rand.N(d/4+1)
}

// takeRetry reserves one retry of the backend's budget: retries in flight may be at most percent
// of the requests in flight to it, and minConcurrent are always allowed (Envoy's retry budget).
// A true return must be given back with doneRetry.
func (b *backend) takeRetry(percent, minConcurrent int) bool {
	allowed := max(int64(minConcurrent), b.inflight.Load()*int64(percent)/100)
	if b.retries.Add(1) > allowed {
		b.retries.Add(-1)
		return false
	}
	return true
}

func (b *backend) doneRetry() { b.retries.Add(-1) }
