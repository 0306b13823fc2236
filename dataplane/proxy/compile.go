package proxy

import (
	"crypto/tls"
	"errors"
	"fmt"
	"hash/maphash"
	"strings"

	"github.com/fleetgate/fleetgate/dataplane/ir"
	"github.com/fleetgate/fleetgate/dataplane/pace"
)

// table is one compiled, immutable ir.Config. Requests read it through an atomic pointer, so a swap
// never blocks them and never shows them half a config.
type table struct {
	version   uint64
	listeners map[portKey]*listenerTable
	limits    *limits
}

type portKey struct {
	port uint32
	udp  bool
}

type listenerTable struct {
	name  string
	port  uint32
	proto ir.Protocol
	hosts *hostMap[*vhost]
	tls   *tls.Config
	// owners finds the listener hostname an HTTPS request's SNI or Host belongs to (misdirected.go).
	owners *hostMap[string]
	sni    *hostMap[*sniRoute]
	l4     *l4Route
	// sources are the allowed client networks (sourcerange.go).
	sources sourceRanges
	// lim are the limits of the table the listener was compiled for.
	lim *limits
	// notFound counts requests no route matched.
	notFound *backendStats
	// own are the series the listener holds a reference to, apart from its hosts'.
	own []*routeStats
	// refs, when set, are all the series references the listener holds, its hosts' included:
	// those a whole compile took for it. Giving back those of 100k hosts was a walk of the host
	// map; a patched listener has none, and is walked.
	refs []*routeStats
}

type sniRoute struct {
	name      string
	terminate bool
	backends  backendSet
	stats     *routeStats
}

type l4Route struct {
	name     string
	backends backendSet
	stats    *routeStats
	affinity bool // ir.L4Route.ClientIPAffinity
}

type mirror struct {
	backend *backend
	num     int32
	den     int32
}

// compileDeps is all a compile reads of the Server it compiles for. It holds no socket and no
// table in service, so compiling cannot touch what requests are using.
type compileDeps struct {
	metrics *metrics
	// up are the shared connection pools backends are compiled onto.
	up upstreams
	// resolveLimits fills a config's limits from the process's defaults.
	resolveLimits func(*ir.Limits) (*limits, error)
	// certs and tlsPools are the certificates and verified-TLS pools in service, reused by content
	// so that a swap keeps parsed keys and warm connections.
	certs    certCache
	tlsPools tlsTransports
	// paced: a table is in service, so compiling shares the core with requests.
	paced bool
}

// compileDeps returns what a compile needs of srv; the caller holds srv.mu.
func (srv *Server) compileDeps() compileDeps {
	return compileDeps{metrics: srv.metrics, up: srv.up, resolveLimits: srv.opts.resolveLimits,
		certs: srv.certs, tlsPools: srv.tlsPools, paced: srv.cur.Load() != nil}
}

// compiler holds the state of one compile: backends are shared between the routes that name the
// same one, which keeps a table of 100k routes over a few services small.
type compiler struct {
	compileDeps
	backends map[string][]sharedBackend
	// pace shares the core with request serving while a large table compiles.
	pace *pace.Pacer
	// clientCert is presented to TLS backends (ir.Config.BackendClientCertificate).
	clientCert *ir.Certificate
	// tlsNext collects the verified-TLS pools this config uses (backendtls.go).
	tlsNext tlsTransports
	// lim are the limits of the table being compiled.
	lim *limits
	// acquired are the series references this compile took, to give back if it fails.
	acquired []*routeStats
	err      error // the first backend that could not be compiled
	// sets are the route sets compiled so far, to share between hosts with equal routes; nil once
	// the memo is off (memoTrial).
	sets map[routesKey][]sharedSet
	seed maphash.Seed
	// setsMissed counts the lists the memo was asked for and did not have, while it never had one.
	setsMissed int
	setsHit    bool
	// last is the route list compiled last, whose memory the next host's list often is (the
	// loader's decoder gives neighbours with the same routes one slice).
	last         sharedSet
	lastListener string
	// backendSets are the backend sets compiled so far by the backends slice they were compiled
	// from (compileBackends).
	backendSets map[backendsKey]backendSet
	// placed are the routes compiled last at the first places of a host's routes: a route that
	// is the same (ir.SameRoute) is not compiled again. The loader's decoder gives hosts whose
	// route lists differ in one route the others of the host before.
	placed [8]placedRoute
}

func newCompiler(deps compileDeps, clientCert *ir.Certificate, pools tlsTransports) *compiler {
	s := &compiler{compileDeps: deps, backends: map[string][]sharedBackend{}, clientCert: clientCert, tlsNext: pools,
		sets: map[routesKey][]sharedSet{}, seed: maphash.MakeSeed()}
	if deps.paced {
		// Only a swap shares the core with requests; the first table compiles at full speed.
		s.pace = pace.New()
	}
	return s
}

var (
	// errInvalidHost says ir.Validate finds errors in a host.
	errInvalidHost = errors.New("invalid host")
	// errDuplicateHost says a listener's host map already holds a host of that name.
	errDuplicateHost = errors.New("duplicate host")
)

// compileConfig validates cfg and builds its table. It touches no socket; binding happens in Apply.
// Each virtual host is validated as it is compiled, while it is in the cache, and one given twice
// is found by the listener's host map, which keys hosts as ir.Validate does (TestHostMapKeysAsIR).
// A compile that fails answers with Validate's errors when it has any, as if Validate had run first.
func (s *compiler) compileConfig(cfg *ir.Config, certs certCache) (*table, error) {
	if cfg.ValidateButHosts() != nil {
		return nil, fmt.Errorf("invalid config: %w", cfg.Validate())
	}
	hv := cfg.HostValidator()
	lim, err := s.resolveLimits(cfg.Limits)
	if err != nil {
		return nil, fmt.Errorf("invalid config: %w", err)
	}
	t := &table{version: cfg.Version, listeners: make(map[portKey]*listenerTable, len(cfg.Listeners)), limits: lim}
	s.lim = lim
	// A reference per route and listener: 300k appended one by one were ~5× their size in copies.
	n := len(cfg.Listeners)
	for i := range cfg.Listeners {
		for j := range cfg.Listeners[i].VirtualHosts {
			n += len(cfg.Listeners[i].VirtualHosts[j].Routes)
		}
	}
	s.acquired = make([]*routeStats, 0, n)
	for i := range cfg.Listeners {
		l := &cfg.Listeners[i]
		from := len(s.acquired)
		lt, err := s.compileListener(l, certs, hv)
		if err != nil {
			if verr := cfg.Validate(); verr != nil {
				return nil, fmt.Errorf("invalid config: %w", verr)
			}
			return nil, fmt.Errorf("listener %q: %w", l.Name, err)
		}
		lt.refs = s.acquired[from:len(s.acquired):len(s.acquired)]
		t.listeners[portKey{l.Port, l.Protocol == ir.ProtocolUDP}] = lt
	}
	if s.err != nil {
		return nil, s.err
	}
	return t, nil
}

// abort gives back the series references of a compile whose table will not be served.
func (s *compiler) abort() {
	s.metrics.release(s.acquired)
	s.acquired = nil
}

// holdStats takes one more reference to rs for the table being compiled.
func (s *compiler) holdStats(rs *routeStats) {
	s.metrics.hold(rs)
	s.acquired = append(s.acquired, rs)
}

// routeStats returns the series of a route, holding a reference for the table being compiled.
func (s *compiler) routeStats(listener, route string) *routeStats {
	rs := s.metrics.route(listener, route)
	s.acquired = append(s.acquired, rs)
	return rs
}

// compileListener compiles l, validating its virtual hosts with hv.
func (s *compiler) compileListener(l *ir.Listener, certs certCache, hv *ir.HostValidator) (*listenerTable, error) {
	lt, err := s.compileListenerBase(l, certs)
	if err != nil {
		return nil, err
	}
	if lt.hosts == nil {
		return lt, nil
	}
	for i := range l.VirtualHosts {
		in := &l.VirtualHosts[i]
		if !hv.Valid(in) {
			return nil, fmt.Errorf("host %q: %w", in.Hostname, errInvalidHost)
		}
		vh, err := s.compileVHost(l.Name, in)
		if err != nil {
			return nil, err
		}
		if !addHost(lt.hosts, vh, in.SingleLabelWildcard) {
			return nil, fmt.Errorf("host %q: %w", in.Hostname, errDuplicateHost)
		}
		s.pace.Tick()
	}
	return lt, nil
}

// addHost adds vh to hosts unless they hold a host of its name, and tells whether it did.
func addHost(hosts *hostMap[*vhost], vh *vhost, singleLabel bool) bool {
	if singleLabel {
		return hosts.addSingleLabel(vh.name, vh)
	}
	return hosts.add(vh.name, vh)
}

// compileListenerBase compiles everything of a listener but its virtual hosts; an HTTP or HTTPS
// listener gets an empty host map.
func (s *compiler) compileListenerBase(l *ir.Listener, certs certCache) (*listenerTable, error) {
	lt := &listenerTable{name: l.Name, port: l.Port, proto: l.Protocol, lim: s.lim}
	own := func(rs *routeStats) *routeStats {
		lt.own = append(lt.own, rs)
		return rs
	}
	lt.notFound = own(s.routeStats(l.Name, "")).local
	var err error
	if lt.sources, err = compileSourceRanges(l.SourceRanges); err != nil {
		return nil, err
	}
	switch l.Protocol {
	case ir.ProtocolHTTP, ir.ProtocolHTTPS:
		if l.Protocol == ir.ProtocolHTTPS {
			if lt.tls, err = s.compileCerts(l.Certificates, certs, []string{"h2", "http/1.1"}); err != nil {
				return nil, err
			}
			if err := clientValidation(lt.tls, l.ClientValidation); err != nil {
				return nil, err
			}
			// Full-size records from the first answer on, as nginx writes them (ssl_buffer_size
			// 16k): crypto/tls would start each connection with ~1 KB records, a write each, and
			// grow them over its first dozen. The fast path writes an answer in one piece.
			lt.tls.DynamicRecordSizingDisabled = true
			lt.owners = compileOwners(l.Certificates)
		}
		lt.hosts = newHostMapFor[*vhost](len(l.VirtualHosts))
	case ir.ProtocolTLS:
		if lt.tls, err = s.compileCerts(l.Certificates, certs, nil); err != nil {
			return nil, err
		}
		lt.sni = newHostMap[*sniRoute]()
		for _, r := range l.SNIRoutes {
			sr := &sniRoute{name: r.Name, terminate: r.Terminate, stats: own(s.routeStats(l.Name, r.Name))}
			sr.backends = s.compileBackends(r.Backends, sr.stats)
			if len(r.Hostnames) == 0 {
				lt.sni.add("*", sr)
			}
			for _, h := range r.Hostnames {
				lt.sni.add(h, sr)
			}
		}
	case ir.ProtocolTCP, ir.ProtocolUDP:
		if l.L4 != nil {
			lt.l4 = &l4Route{name: l.L4.Name, stats: own(s.routeStats(l.Name, l.L4.Name)), affinity: l.L4.ClientIPAffinity}
			lt.l4.backends = s.compileBackends(l.L4.Backends, lt.l4.stats)
		}
	}
	return lt, nil
}

func (s *compiler) compileVHost(listener string, in *ir.VirtualHost) (*vhost, error) {
	tlsBackends := usesTLS(in)
	var key routesKey
	if !tlsBackends {
		// Hosts with TLS backends are compiled on their own: a new client certificate compiles
		// them again one by one (patchHosts).
		set := s.lastRoutes(listener, in.Routes)
		if set == nil && s.sets != nil {
			key = s.routesKey(listener, in.Routes)
			set = s.sharedRoutes(key, in.Routes)
			s.setsHit = s.setsHit || set != nil
			if set == nil {
				s.setsMissed++
			}
		}
		if set != nil {
			s.last, s.lastListener = sharedSet{src: in.Routes, set: set}, listener
			for i := range min(len(s.placed), len(in.Routes)) {
				s.placed[i] = placedRoute{listener: listener, src: &in.Routes[i], r: set.routes[i]}
			}
			return &vhost{name: in.Hostname, routeSet: set}, nil
		}
	}
	routes := make([]*route, 0, len(in.Routes))
	for i := range in.Routes {
		ri := &in.Routes[i]
		if !tlsBackends && i < len(s.placed) {
			if p := &s.placed[i]; p.r != nil && p.listener == listener && ir.SameRoute(p.src, ri) {
				if p.r.stats != nil {
					s.holdStats(p.r.stats)
				}
				routes = append(routes, p.r)
				continue
			}
		}
		r, err := s.compileRoute(listener, ri)
		if err != nil {
			return nil, fmt.Errorf("host %q route %q: %w", in.Hostname, ri.Name, err)
		}
		if !tlsBackends && i < len(s.placed) {
			s.placed[i] = placedRoute{listener: listener, src: ri, r: r}
		}
		routes = append(routes, r)
	}
	v := newVHost(in.Hostname, routes)
	if tlsBackends {
		// Kept to compile again when the client certificate presented to backends changes; a
		// copy, as the loader decodes its next reload into the arrays in (ir.DecodeMemory).
		v.src = in.Clone()
	} else {
		s.last, s.lastListener = sharedSet{src: in.Routes, set: v.routeSet}, listener
		switch {
		case s.sets == nil:
		case !s.setsHit && s.setsMissed >= memoTrial:
			s.sets = nil
		default:
			s.sets[key] = append(s.sets[key], s.last)
		}
	}
	return v, nil
}

// memoTrial is how many route lists of a compile the equal-routes memo misses, without a hit,
// before it is turned off for the rest of the compile: in a table whose hosts' routes are each
// their own every probe misses, and hashing, probing and growing a 100k-entry map was a tenth of
// the compile. Lists that are one slice in memory are still shared with the host before
// (lastRoutes); equal lists apart in memory and in the table are then compiled each on its own.
const memoTrial = 1024

// lastRoutes returns the route set compiled last when routes are its list, the same memory (as
// the loader's decoder gives hosts that repeat their neighbour's routes), taking the series
// references of the host that will use it as sharedRoutes does.
func (s *compiler) lastRoutes(listener string, routes []ir.Route) *routeSet {
	src := s.last.src
	if len(routes) == 0 || len(routes) != len(src) || &routes[0] != &src[0] || listener != s.lastListener {
		return nil
	}
	s.holdSet(s.last.set)
	return s.last.set
}

// holdSet takes a reference to the series of a shared set's routes for one more host.
func (s *compiler) holdSet(set *routeSet) {
	for _, r := range set.routes {
		if r.stats != nil {
			s.holdStats(r.stats)
		}
	}
}

// placedRoute is the route compiled last at one place of a host's routes, with its IR (which
// lives as long as the compile).
type placedRoute struct {
	listener string
	src      *ir.Route
	r        *route
}

// routesKey tells route lists apart cheaply; lists with the same key are compared in full.
type routesKey struct {
	listener string
	hash     uint64
}

// sharedSet is a compiled route list with the IR it was compiled from.
type sharedSet struct {
	src []ir.Route
	set *routeSet
}

// routesKey hashes what most often tells route lists apart: their names, paths and backends.
func (s *compiler) routesKey(listener string, routes []ir.Route) routesKey {
	var h maphash.Hash
	h.SetSeed(s.seed)
	for i := range routes {
		r := &routes[i]
		h.WriteString(r.Name)
		h.WriteByte(0)
		if p := r.Match.Path; p != nil {
			h.WriteString(string(p.Type))
			h.WriteString(p.Value)
		}
		h.WriteByte(0)
		for j := range r.Backends {
			h.WriteString(r.Backends[j].Name)
			h.WriteByte(0)
		}
		h.WriteByte(1)
	}
	return routesKey{listener: listener, hash: h.Sum64()}
}

// sharedRoutes returns the route set this compile already made of routes equal to these, if any,
// taking a reference to its routes' series for the host that will use it: every host holds one per
// route, as if its routes were its own, so hosts come and go without counting their sharers.
func (s *compiler) sharedRoutes(key routesKey, routes []ir.Route) *routeSet {
	for _, c := range s.sets[key] {
		if !ir.RoutesEqual(c.src, routes) {
			continue
		}
		s.holdSet(c.set)
		return c.set
	}
	return nil
}

func usesTLS(in *ir.VirtualHost) bool {
	for i := range in.Routes {
		r := &in.Routes[i]
		for j := range r.Backends {
			if r.Backends[j].AppProtocol == ir.AppTLS {
				return true
			}
		}
		for j := range r.Filters.Mirrors {
			if r.Filters.Mirrors[j].Backend.AppProtocol == ir.AppTLS {
				return true
			}
		}
	}
	return false
}

// stats appends the series every table holding lt refers to through it.
func (lt *listenerTable) stats(out []*routeStats) []*routeStats {
	if lt.refs != nil {
		return append(out, lt.refs...)
	}
	out = append(out, lt.own...)
	if lt.hosts != nil {
		lt.hosts.each(func(v *vhost) { out = v.stats(out) })
	}
	return out
}

// stats appends the series of v's routes.
func (v *vhost) stats(out []*routeStats) []*routeStats {
	for _, r := range v.routes {
		if r.stats != nil {
			out = append(out, r.stats)
		}
	}
	return out
}

func (s *compiler) compileRoute(listener string, in *ir.Route) (*route, error) {
	r, err := compileMatch(in)
	if err != nil {
		return nil, err
	}
	if s.metrics != nil {
		r.stats = s.routeStats(listener, in.Name)
	}
	f := &in.Filters
	if c := compileCORS(f.CORS); c != nil {
		r.more().cors = c
	}
	if rd := f.Redirect; rd != nil {
		r.more().redirect = &redirect{scheme: strings.ToLower(rd.Scheme), host: rd.Hostname, port: rd.Port,
			path: compilePathMod(rd.Path), code: rd.StatusCode}
	}
	if h := compileHeaderMod(f.RequestHeaders); h != nil {
		r.more().reqHdr = h
	}
	if h := compileHeaderMod(f.ResponseHeaders); h != nil {
		r.more().respHdr = h
	}
	if rw := f.Rewrite; rw != nil {
		r.more().rewrite = &rewrite{host: rw.Hostname, path: compilePathMod(rw.Path)}
	}
	for i := range f.Mirrors {
		m := &f.Mirrors[i]
		x := r.more()
		x.mirrors = append(x.mirrors, &mirror{backend: s.compileBackend(&m.Backend), num: m.Numerator, den: m.Denominator})
	}
	r.backends = s.compileBackends(in.Backends, r.stats)
	if t := in.Timeouts; t.Request != 0 || t.BackendRequest != 0 {
		x := r.more()
		x.timeout, x.beTimeout = t.Request, t.BackendRequest
	}
	if rp := compileRetry(in.Retry); rp != nil {
		r.more().retry = rp
	}
	r.buffer = r.rare != nil && (r.rare.retry != nil || len(r.rare.mirrors) > 0)
	r.fast = r.isFast()
	return r, nil
}

// compileMatch builds the match part of a route; it is separate so tests and fuzzers can build
// routes without a Server.
func compileMatch(in *ir.Route) (*route, error) {
	r := &route{name: in.Name}
	if m := in.Match.Method; m != "" {
		r.more().method = m
	}
	if p := in.Match.Path; p != nil {
		switch p.Type {
		case ir.MatchExact:
			r.pathType, r.path = pathExact, p.Value
		case ir.MatchPrefix:
			// Gateway API ignores a trailing slash on a prefix; "/" matches everything.
			r.pathType, r.path = pathPrefix, strings.TrimRight(p.Value, "/")
		case ir.MatchRegex:
			re, err := compileAnchored(p.Value)
			if err != nil {
				return nil, fmt.Errorf("path regex: %w", err)
			}
			r.pathType, r.more().re = pathRegex, re
		default:
			return nil, fmt.Errorf("path match type %q", p.Type)
		}
	}
	headers, err := compileKeyMatches(in.Match.Headers, true)
	if err != nil {
		return nil, fmt.Errorf("header match: %w", err)
	}
	query, err := compileKeyMatches(in.Match.QueryParams, false)
	if err != nil {
		return nil, fmt.Errorf("query match: %w", err)
	}
	if len(headers) > 0 || len(query) > 0 {
		x := r.more()
		x.headers, x.query = headers, query
	}
	return r, nil
}
