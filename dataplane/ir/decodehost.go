package ir

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"slices"
)

// DecodeHost decodes one virtual host's JSON as json.Unmarshal into a zero VirtualHost does:
// the same values, and an error for the same inputs. A 100k-host table swap decodes every host,
// and encoding/json's reflection costs ~25 µs a host there; this walks the JSON once by hand.
// Whatever the hand-written decoder refuses (malformed JSON, a value of the wrong type, a
// []byte given as an array of numbers, deep nesting) goes to json.Unmarshal, which decides and
// gives its own error: the fast path only ever has to be right about what it accepts
// (FuzzDecodeHost holds it to that).
func DecodeHost(data []byte) (VirtualHost, error) {
	var d hostDecoder
	return d.decode(data)
}

// decode is DecodeHost; a decoder kept for many hosts (newReusedHostDecoder) decodes the
// routes, backends and endpoints of each into slices of their exact length.
func (d *hostDecoder) decode(data []byte) (VirtualHost, error) {
	d.data, d.i, d.depth = data, 0, 0
	var vh VirtualHost
	if d.top(&vh) == nil {
		return vh, nil
	}
	var slow VirtualHost // apart from vh, which so stays on the stack
	if err := json.Unmarshal(data, &slow); err != nil {
		return VirtualHost{}, err
	}
	return slow, nil
}

// decodeAt decodes the host data starts with (a host's JSON and whatever follows) with the
// hand-written decoder alone, returning its length; false for anything it refuses, a host that
// does not end within data included.
func (d *hostDecoder) decodeAt(data []byte) (VirtualHost, int, bool) {
	d.data, d.i, d.depth = data, 0, 0
	var vh VirtualHost
	if d.virtualHost(&vh) != nil {
		return VirtualHost{}, 0, false
	}
	return vh, d.i, true
}

var (
	// errSyntax and errType only send DecodeHost to json.Unmarshal, which words the real error.
	errSyntax = errors.New("not valid JSON")
	errType   = errors.New("a JSON value of another type than its field's")
)

// maxDepth bounds the nesting the decoder follows; deeper input, which encoding/json takes up
// to 10000 levels, goes to json.Unmarshal.
const maxDepth = 200

// hostDecoder decodes JSON into a VirtualHost with encoding/json's semantics: field names
// matched exactly, else case-folded as bytes.EqualFold; unknown fields skipped (but checked);
// null leaves strings, numbers, booleans and structs alone and clears pointers and slices; a
// field given twice decodes into what the first left, slices element by element.
type hostDecoder struct {
	data  []byte
	i     int
	depth int
	// pool, when set, is what a decoder kept for many hosts allocates from.
	pool *hostPool
}

// hostPool is the memory a decoder kept for many hosts (newReusedHostDecoder) decodes into. A
// 100k-host swap spent as much of its time allocating as decoding: 27 allocations a host of the
// benchmark's shape, most of them arrays of one element and strings every host repeats.
type hostPool struct {
	routes    arena[Route]
	backends  arena[Backend]
	endpoints arena[Endpoint]
	matches   arena[StringMatch]
	strs      internCache
	// sameRoutes are the routes last decoded as a host's, and sameJSON their JSON (routes).
	sameRoutes []Route
	sameJSON   []byte
	// sameBackends are the backends last decoded as a route's, and sameBackendsJSON their JSON
	// (backends).
	sameBackends     []Backend
	sameBackendsJSON []byte
	// recent are the routes last decoded at the first places of a host's routes, with their
	// JSON, and at the place of the route being decoded (route).
	recent [recentRoutes]recentRoute
	at     int
}

// recentRoutes is how many places of a host's routes a decoder kept for many hosts remembers.
const recentRoutes = 8

type recentRoute struct {
	r    Route
	json []byte
}

// newReusedHostDecoder returns a decoder for many hosts, one after the other; with mem, its
// arenas cut their chunks from mem, overwriting what the decode before cut from it.
func newReusedHostDecoder(mem *DecodeMemory) *hostDecoder {
	p := &hostPool{}
	if mem != nil {
		mem.rewind()
		p.routes.kept, p.backends.kept, p.endpoints.kept, p.matches.kept = &mem.routes, &mem.backends, &mem.endpoints, &mem.matches
	}
	return &hostDecoder{pool: p}
}

// DecodeMemory is the chunks a decode of many hosts cuts its hosts' routes, backends, endpoints
// and path matches from (HostFilter.Memory), kept for the next decode: a 100k-host reload
// allocated ~90 MiB of route arrays, faulted their pages in and had the collector walk them, to
// drop them once compiled. A decode into it overwrites what the decode before cut from it: the
// caller must hold nothing of the config that decode gave, but what it copied out
// (VirtualHost.Clone). Dropping it gives the memory back.
type DecodeMemory struct {
	routes    chunks[Route]
	backends  chunks[Backend]
	endpoints chunks[Endpoint]
	matches   chunks[StringMatch]
}

// Clone returns a copy of vh that shares no array a DecodeMemory reuses: its routes, backends
// (mirrors' too), endpoints and path matches are its own. The rest (strings, and what a decode
// allocates for one host alone) is shared: no decode overwrites it.
func (vh *VirtualHost) Clone() *VirtualHost {
	c := *vh
	c.Routes = slices.Clone(vh.Routes)
	for i := range c.Routes {
		r := &c.Routes[i]
		if r.Match.Path != nil {
			p := *r.Match.Path
			r.Match.Path = &p
		}
		r.Filters.Mirrors = cloneMirrors(r.Filters.Mirrors)
		r.Backends = slices.Clone(r.Backends)
		for j := range r.Backends {
			cloneBackend(&r.Backends[j])
		}
	}
	return &c
}

// cloneBackend gives b arrays of its own (Clone).
func cloneBackend(b *Backend) {
	b.Endpoints = slices.Clone(b.Endpoints)
	b.Filters.Mirrors = cloneMirrors(b.Filters.Mirrors)
}

func cloneMirrors(ms []Mirror) []Mirror {
	ms = slices.Clone(ms)
	for i := range ms {
		cloneBackend(&ms[i].Backend)
	}
	return ms
}

// chunks are the chunks of one arena: those the current decode took, and those free for it.
type chunks[T any] struct {
	used, spare [][]T
}

// next returns a zero chunk, reusing a spare one when there is one.
func (c *chunks[T]) next() []T {
	var s []T
	if n := len(c.spare); n > 0 {
		s = c.spare[n-1]
		c.spare[n-1] = nil
		c.spare = c.spare[:n-1]
		clear(s)
	} else {
		s = make([]T, chunkLen)
	}
	c.used = append(c.used, s)
	return s
}

// rewind makes every chunk spare, for a new decode, which takes them in the order this one did.
func (c *chunks[T]) rewind() {
	for i := len(c.used) - 1; i >= 0; i-- {
		c.spare = append(c.spare, c.used[i])
	}
	clear(c.used)
	c.used = c.used[:0]
}

func (m *DecodeMemory) rewind() {
	m.routes.rewind()
	m.backends.rewind()
	m.endpoints.rewind()
	m.matches.rewind()
}

// arena holds the arrays of one element type for a decoder kept for many hosts: each is decoded
// into the free part of a shared chunk and cut there at its length, so that the arrays of many
// hosts cost one allocation and no copy (growing each array element by element, as
// encoding/json does, was a third of the decoder's time; decoding into scratch and copying out,
// still a tenth). None of the element types can hold an array of itself (a mirror's backend is
// no slice), so one array at a time is decoded into the free part. A piece keeps its chunk
// alive, unless the chunks are a DecodeMemory's, which the next decode overwrites.
type arena[T any] struct {
	free []T // zero elements
	// kept, if set, is where chunks come from (DecodeMemory).
	kept *chunks[T]
}

// chunk returns a new zero chunk.
func (a *arena[T]) chunk() []T {
	if a.kept != nil {
		return a.kept.next()
	}
	return make([]T, chunkLen)
}

// chunkLen is how many elements a chunk holds; a new chunk is taken when less than a quarter of
// one is free, and a longer array grows out of it.
const chunkLen = 64

// take returns n zero elements with no room to append in place.
func (a *arena[T]) take(n int) []T {
	if n > len(a.free) {
		a.free = a.chunk()
	}
	s := a.free[:n:n]
	a.free = a.free[n:]
	return s
}

// The arenas of a pool; nil without one.
func (p *hostPool) endpointArena() *arena[Endpoint] {
	if p == nil {
		return nil
	}
	return &p.endpoints
}

func (p *hostPool) matchArena() *arena[StringMatch] {
	if p == nil {
		return nil
	}
	return &p.matches
}

// internCache shares the strings hosts repeat (route and backend names, match types, paths,
// addresses) among the hosts one decoder decodes: a string is looked up in a direct-mapped table
// by a hash of its length and ends, and allocated only when its slot holds another. Strings that
// share a slot only cost allocations.
type internCache struct {
	slots [1 << internBits]string
}

const (
	internBits = 10
	// maxInterned bounds the strings worth looking up; longer ones are rarely repeated.
	maxInterned = 64
)

func (c *internCache) get(b []byte) string {
	if len(b) == 0 || len(b) > maxInterned {
		return string(b)
	}
	slot := &c.slots[internSlot(b)]
	if *slot != string(b) {
		*slot = string(b)
	}
	return *slot
}

// internSlot hashes the length and the first and last 8 bytes of b (1 to maxInterned bytes).
func internSlot(b []byte) uint64 {
	h := uint64(len(b))
	if len(b) >= 8 {
		h ^= binary.LittleEndian.Uint64(b) * 0x9e3779b97f4a7c15
		h ^= binary.LittleEndian.Uint64(b[len(b)-8:])
	} else {
		for _, c := range b {
			h = h<<8 | uint64(c)
		}
	}
	return (h * 0xff51afd7ed558ccd) >> (64 - internBits)
}

func (d *hostDecoder) top(vh *VirtualHost) error {
	d.space()
	if err := d.virtualHost(vh); err != nil {
		return err
	}
	if d.space(); d.i != len(d.data) {
		return errSyntax
	}
	return nil
}

func (d *hostDecoder) virtualHost(vh *VirtualHost) error {
	return d.object([]string{"hostname", "singleLabelWildcard", "routes"}, func(f int) error {
		switch f {
		case 0:
			return d.strOwn(&vh.Hostname)
		case 1:
			return d.boolean(&vh.SingleLabelWildcard)
		default:
			return d.routes(&vh.Routes)
		}
	})
}

// routes decodes a host's routes. A decoder kept for many hosts gives a host the routes of the one
// before it when their JSON is the same: hosts often repeat their neighbour's routes (an HTTPRoute
// for many hostnames), so they are decoded once and shared, as the controller shares them and the
// proxy compiles them once (a slice is only ever read after decoding).
func (d *hostDecoder) routes(rs *[]Route) error {
	p := d.pool
	if p == nil {
		return slice(d, rs, d.route)
	}
	if cap(*rs) > 0 {
		// "routes" given twice: the second would decode into the routes the first left, their
		// backends and matches included, which may be another host's. json.Unmarshal decodes
		// such a host afresh.
		return errType
	}
	// The JSON of an array ends where its content says: bytes that start as the last routes'
	// JSON hold those routes, whatever follows.
	if len(p.sameJSON) > 0 && bytes.HasPrefix(d.data[d.i:], p.sameJSON) {
		*rs = p.sameRoutes
		d.i += len(p.sameJSON)
		return nil
	}
	start := d.i
	p.at = 0
	if err := exact(d, rs, &p.routes, d.route); err != nil {
		p.sameRoutes, p.sameJSON = nil, p.sameJSON[:0]
		return err
	}
	p.sameRoutes, p.sameJSON = *rs, append(p.sameJSON[:0], d.data[start:d.i]...)
	return nil
}

// route decodes a route of a host's routes. A decoder kept for many hosts gives a route the value
// of the route decoded at the same place of the host before when their JSON is the same: hosts
// whose routes differ in one (each its own path) often repeat the others (a health check, a
// catch-all). r is zero, as exact gives it, and the JSON of an object ends where its content
// says, so those bytes decode to that value; its pointers and slices are only ever read.
func (d *hostDecoder) route(r *Route) error {
	p := d.pool
	if p == nil || p.at >= len(p.recent) {
		return d.routeFields(r)
	}
	m := &p.recent[p.at]
	p.at++
	if len(m.json) > 0 && bytes.HasPrefix(d.data[d.i:], m.json) {
		*r = m.r
		d.i += len(m.json)
		return nil
	}
	start := d.i
	if err := d.routeFields(r); err != nil {
		m.r, m.json = Route{}, m.json[:0]
		return err
	}
	m.r, m.json = *r, append(m.json[:0], d.data[start:d.i]...)
	return nil
}

func (d *hostDecoder) routeFields(r *Route) error {
	return d.object([]string{"name", "match", "filters", "backends", "timeouts", "retry"}, func(f int) error {
		switch f {
		case 0:
			return d.str(&r.Name)
		case 1:
			return d.match(&r.Match)
		case 2:
			return d.filters(&r.Filters)
		case 3:
			return d.backends(&r.Backends)
		case 4:
			return d.timeouts(&r.Timeouts)
		default:
			return pointer(d, &r.Retry, d.retry)
		}
	})
}

// backends decodes a route's backends. A decoder kept for many hosts gives a route the backends
// of the route decoded before it when their JSON is the same, as routes does for hosts: routes
// whose hosts differ (each its own path) still mostly send to the service their neighbour sends
// to, and the backends (with their endpoints) were half of decoding such a host.
func (d *hostDecoder) backends(bs *[]Backend) error {
	p := d.pool
	if p == nil {
		return slice(d, bs, d.backend)
	}
	if cap(*bs) > 0 {
		return errType // "backends" given twice: see routes
	}
	if len(p.sameBackendsJSON) > 0 && bytes.HasPrefix(d.data[d.i:], p.sameBackendsJSON) {
		*bs = p.sameBackends
		d.i += len(p.sameBackendsJSON)
		return nil
	}
	start := d.i
	if err := exact(d, bs, &p.backends, d.backend); err != nil {
		p.sameBackends, p.sameBackendsJSON = nil, p.sameBackendsJSON[:0]
		return err
	}
	p.sameBackends, p.sameBackendsJSON = *bs, append(p.sameBackendsJSON[:0], d.data[start:d.i]...)
	return nil
}

func (d *hostDecoder) match(m *Match) error {
	return d.object([]string{"path", "method", "headers", "queryParams"}, func(f int) error {
		switch f {
		case 0:
			return pointerIn(d, &m.Path, d.pool.matchArena(), d.stringMatch)
		case 1:
			return d.str(&m.Method)
		case 2:
			return slice(d, &m.Headers, d.keyMatch)
		default:
			return slice(d, &m.QueryParams, d.keyMatch)
		}
	})
}

func (d *hostDecoder) stringMatch(m *StringMatch) error {
	return d.object([]string{"type", "value"}, func(f int) error {
		if f == 0 {
			return d.str((*string)(&m.Type))
		}
		return d.str(&m.Value)
	})
}

func (d *hostDecoder) keyMatch(m *KeyMatch) error {
	return d.object([]string{"name", "type", "value"}, func(f int) error {
		switch f {
		case 0:
			return d.str(&m.Name)
		case 1:
			return d.str((*string)(&m.Type))
		default:
			return d.str(&m.Value)
		}
	})
}

func (d *hostDecoder) filters(fs *Filters) error {
	return d.object([]string{"requestHeaders", "responseHeaders", "redirect", "rewrite", "mirrors", "cors"}, func(f int) error {
		switch f {
		case 0:
			return pointer(d, &fs.RequestHeaders, d.headerModifier)
		case 1:
			return pointer(d, &fs.ResponseHeaders, d.headerModifier)
		case 2:
			return pointer(d, &fs.Redirect, d.redirect)
		case 3:
			return pointer(d, &fs.Rewrite, d.rewrite)
		case 4:
			return slice(d, &fs.Mirrors, d.mirror)
		default:
			return pointer(d, &fs.CORS, d.cors)
		}
	})
}

func (d *hostDecoder) header(h *Header) error {
	return d.object([]string{"name", "value"}, func(f int) error {
		if f == 0 {
			return d.str(&h.Name)
		}
		return d.str(&h.Value)
	})
}

func (d *hostDecoder) headerModifier(m *HeaderModifier) error {
	return d.object([]string{"set", "add", "remove"}, func(f int) error {
		switch f {
		case 0:
			return slice(d, &m.Set, d.header)
		case 1:
			return slice(d, &m.Add, d.header)
		default:
			return slice(d, &m.Remove, d.str)
		}
	})
}

func (d *hostDecoder) pathModifier(m *PathModifier) error {
	return d.object([]string{"type", "value"}, func(f int) error {
		if f == 0 {
			return d.str((*string)(&m.Type))
		}
		return d.str(&m.Value)
	})
}

func (d *hostDecoder) redirect(r *Redirect) error {
	return d.object([]string{"scheme", "hostname", "port", "path", "statusCode"}, func(f int) error {
		switch f {
		case 0:
			return d.str(&r.Scheme)
		case 1:
			return d.str(&r.Hostname)
		case 2:
			return d.uint32(&r.Port)
		case 3:
			return pointer(d, &r.Path, d.pathModifier)
		default:
			return d.int(&r.StatusCode)
		}
	})
}

func (d *hostDecoder) rewrite(r *Rewrite) error {
	return d.object([]string{"hostname", "path"}, func(f int) error {
		if f == 0 {
			return d.str(&r.Hostname)
		}
		return pointer(d, &r.Path, d.pathModifier)
	})
}

func (d *hostDecoder) mirror(m *Mirror) error {
	return d.object([]string{"backend", "numerator", "denominator"}, func(f int) error {
		switch f {
		case 0:
			return d.backend(&m.Backend)
		case 1:
			return d.int32(&m.Numerator)
		default:
			return d.int32(&m.Denominator)
		}
	})
}

func (d *hostDecoder) cors(c *CORS) error {
	return d.object([]string{"allowOrigins", "allowCredentials", "allowMethods", "allowHeaders", "exposeHeaders", "maxAge"}, func(f int) error {
		switch f {
		case 0:
			return slice(d, &c.AllowOrigins, d.str)
		case 1:
			return d.boolean(&c.AllowCredentials)
		case 2:
			return slice(d, &c.AllowMethods, d.str)
		case 3:
			return slice(d, &c.AllowHeaders, d.str)
		case 4:
			return slice(d, &c.ExposeHeaders, d.str)
		default:
			return d.int32(&c.MaxAge)
		}
	})
}

func (d *hostDecoder) timeouts(t *Timeouts) error {
	return d.object([]string{"request", "backendRequest"}, func(f int) error {
		if f == 0 {
			return d.int64((*int64)(&t.Request))
		}
		return d.int64((*int64)(&t.BackendRequest))
	})
}

func (d *hostDecoder) retry(r *Retry) error {
	return d.object([]string{"attempts", "codes", "backoff"}, func(f int) error {
		switch f {
		case 0:
			return d.int(&r.Attempts)
		case 1:
			return slice(d, &r.Codes, d.int)
		default:
			return d.int64((*int64)(&r.Backoff))
		}
	})
}

func (d *hostDecoder) backend(b *Backend) error {
	return d.object([]string{"name", "weight", "invalid", "appProtocol", "endpoints", "filters", "tls"}, func(f int) error {
		switch f {
		case 0:
			return d.str(&b.Name)
		case 1:
			return d.uint32(&b.Weight)
		case 2:
			return d.boolean(&b.Invalid)
		case 3:
			return d.str((*string)(&b.AppProtocol))
		case 4:
			return exact(d, &b.Endpoints, d.pool.endpointArena(), d.endpoint)
		case 5:
			return d.filters(&b.Filters)
		default:
			return pointer(d, &b.TLS, d.backendTLS)
		}
	})
}

func (d *hostDecoder) backendTLS(t *BackendTLS) error {
	return d.object([]string{"hostname", "caCertPEM", "systemRoots", "subjectAltNames"}, func(f int) error {
		switch f {
		case 0:
			return d.str(&t.Hostname)
		case 1:
			return d.bytes(&t.CACertPEM)
		case 2:
			return d.boolean(&t.SystemRoots)
		default:
			return slice(d, &t.SubjectAltNames, d.subjectAltName)
		}
	})
}

func (d *hostDecoder) subjectAltName(s *SubjectAltName) error {
	return d.object([]string{"type", "value"}, func(f int) error {
		if f == 0 {
			return d.str((*string)(&s.Type))
		}
		return d.str(&s.Value)
	})
}

func (d *hostDecoder) endpoint(e *Endpoint) error {
	return d.object([]string{"address", "port", "cluster", "weight", "zone", "node"}, func(f int) error {
		switch f {
		case 0:
			return d.str(&e.Address)
		case 1:
			return d.uint32(&e.Port)
		case 2:
			return d.str(&e.Cluster)
		case 3:
			return d.uint32(&e.Weight)
		case 4:
			return d.str(&e.Zone)
		default:
			return d.str(&e.Node)
		}
	})
}

// pointer decodes an object into *p, allocating it if nil; null sets it to nil.
func pointer[T any](d *hostDecoder, p **T, decode func(*T) error) error {
	return pointerIn(d, p, nil, decode)
}

// pointerIn is pointer allocating from a, if set.
func pointerIn[T any](d *hostDecoder, p **T, a *arena[T], decode func(*T) error) error {
	if d.null() {
		*p = nil
		return nil
	}
	if d.i >= len(d.data) || d.data[d.i] != '{' {
		return errType
	}
	if *p == nil {
		if a != nil {
			*p = &a.take(1)[0]
		} else {
			*p = new(T)
		}
	}
	return decode(*p)
}

// slice decodes an array into *s as encoding/json does: into the elements already there (up to
// the capacity), then into new zero ones; an empty array gives an empty slice, null a nil one.
func slice[T any](d *hostDecoder, s *[]T, decode func(*T) error) error {
	if d.null() {
		*s = nil
		return nil
	}
	if d.i >= len(d.data) || d.data[d.i] != '[' {
		return errType
	}
	if d.depth++; d.depth > maxDepth {
		return errSyntax
	}
	d.i++
	out, n := *s, 0
	if d.space(); d.next(']') {
		*s = []T{}
		d.depth--
		return nil
	}
	for {
		if n < cap(out) {
			out = out[:max(len(out), n+1)]
		} else {
			var zero T
			out = append(out[:n], zero)
		}
		d.space()
		if err := decode(&out[n]); err != nil {
			return err
		}
		n++
		if d.space(); d.next(']') {
			break
		}
		if !d.next(',') {
			return errSyntax
		}
	}
	*s = out[:n]
	d.depth--
	return nil
}

// exact is slice for an empty *s, decoding into the free part of a's chunk, so that the array
// costs no allocation of its own and no copy. Without a, or with elements in *s, it is slice.
func exact[T any](d *hostDecoder, s *[]T, a *arena[T], decode func(*T) error) error {
	if a == nil || cap(*s) > 0 {
		return slice(d, s, decode)
	}
	if len(a.free) < chunkLen/4 {
		a.free = a.chunk()
	}
	out := a.free[:0]
	err := slice(d, &out, decode)
	grown := cap(out) > cap(a.free) // longer than the free part: slice moved it out
	if err != nil || grown {
		// slice decodes into the elements it finds, which must be zero for the next array.
		clear(a.free)
	}
	if err != nil {
		return err
	}
	if n := len(out); n > 0 && !grown {
		out = out[:n:n]
		a.free = a.free[n:]
	}
	*s = out
	return nil
}
