package proxy

import (
	"maps"
	"math"
	"path"
	"strings"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// hostMap finds the entry for a hostname the way Gateway API matches hostnames: an exact name first,
// then the most specific "*.suffix" wildcard (a wildcard covers one or more labels), then "*".
// Lookups are map probes only, one per label, so they cost the same for 1 or 100k names.
type hostMap[T any] struct {
	exact map[string]T
	// recent overlays exact in a clone, which shares exact with the map it was cloned from: the
	// exact names added, replaced or removed since. Cloning copies recent alone until it outgrows
	// foldAt, and then folds it into a copy of exact, so that patching one host of 100k costs a
	// copy of a few hundred entries, and a request one more probe of a small map.
	recent map[string]recentHost[T]
	// shared says exact is shared: writes go to recent.
	shared bool
	// wild is keyed by the suffix including its leading dot: "*.example.com" → ".example.com".
	wild   map[string]T
	any    T
	hasAny bool
	// single marks wildcards that cover exactly one label (singlelabel.go).
	single map[string]bool
}

type recentHost[T any] struct {
	v    T
	gone bool
}

func newHostMap[T any]() *hostMap[T] { return newHostMapFor[T](0) }

// newHostMapFor returns a map with room for n exact names: a table of 100k hosts is built without
// growing it step by step.
func newHostMapFor[T any](n int) *hostMap[T] {
	return &hostMap[T]{exact: make(map[string]T, n), wild: map[string]T{}}
}

func (m *hostMap[T]) getExact(name string) (T, bool) {
	if len(m.recent) > 0 {
		if r, ok := m.recent[name]; ok {
			return r.v, !r.gone
		}
	}
	v, ok := m.exact[name]
	return v, ok
}

func (m *hostMap[T]) setExact(name string, v T) {
	if m.shared {
		m.recent[name] = recentHost[T]{v: v}
		return
	}
	m.exact[name] = v
}

func (m *hostMap[T]) deleteExact(name string) {
	if m.shared {
		m.recent[name] = recentHost[T]{gone: true}
		return
	}
	delete(m.exact, name)
}

// add registers v for name unless the name is already taken; the first entry wins, as the IR lists
// the more important one first. It reports whether v was added.
func (m *hostMap[T]) add(name string, v T) bool {
	name = ir.HostnameKey(name)
	switch {
	case name == "*":
		if m.hasAny {
			return false
		}
		m.any, m.hasAny = v, true
	case strings.HasPrefix(name, "*."):
		key := name[1:]
		if _, ok := m.wild[key]; ok {
			return false
		}
		m.wild[key] = v
	default:
		if _, ok := m.getExact(name); ok {
			return false
		}
		m.setExact(name, v)
	}
	return true
}

// lookup expects a host already normalised by normalizeHost.
func (m *hostMap[T]) lookup(host string) (T, bool) {
	if v, ok := m.getExact(host); ok {
		return v, true
	}
	if len(m.wild) > 0 {
		// Scanning dots from the left tries the longest suffix first, i.e. the most specific wildcard.
		// i > 0: the wildcard label must cover at least one character.
		firstDot := true
		for i := 1; i < len(host); i++ {
			if host[i] != '.' {
				continue
			}
			if v, ok := m.wild[host[i:]]; ok && !m.skipWildcard(host[i:], firstDot) {
				return v, true
			}
			firstDot = false
		}
	}
	return m.any, m.hasAny
}

// normalizeHost strips a port and a trailing dot and lower-cases, allocating only when the host
// actually contains upper-case letters.
func normalizeHost(h string) string {
	if i := strings.LastIndexByte(h, ':'); i >= 0 {
		// "[::1]:80" → "[::1]"; a bare IPv6 literal without brackets keeps its colons.
		if j := strings.LastIndexByte(h, ']'); j >= 0 {
			if j < i {
				h = h[:i]
			}
		} else if strings.IndexByte(h, ':') == i {
			h = h[:i]
		}
	}
	if n := len(h); n > 0 && h[n-1] == '.' {
		h = h[:n-1]
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; 'A' <= c && c <= 'Z' {
			return strings.ToLower(h)
		}
	}
	return h
}

// normalizePath removes dot segments and merges repeated slashes, as Envoy does for Gateway API, so
// that "/public/../admin" cannot match a "/public" route and reach "/admin" on the backend. Clean
// paths, the common case, are returned as they are without allocating.
func normalizePath(p string) string {
	if p == "" || p[0] != '/' || !needsCleaning(p) {
		return p
	}
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c
}

func needsCleaning(p string) bool {
	for i := 0; i < len(p); i++ {
		if p[i] != '/' {
			continue
		}
		rest := p[i+1:]
		switch {
		case strings.HasPrefix(rest, "/"):
			return true
		case rest == "." || rest == ".." || strings.HasPrefix(rest, "./") || strings.HasPrefix(rest, "../"):
			return true
		}
	}
	return false
}

// clone returns a copy that add and remove may change while m keeps serving. The copy shares the
// exact names with m (see recent).
func (m *hostMap[T]) clone() *hostMap[T] {
	c := *m
	c.wild = maps.Clone(m.wild)
	c.single = maps.Clone(m.single)
	if len(m.recent) < foldAt(len(m.exact)) {
		c.recent = make(map[string]recentHost[T], len(m.recent)+1)
		maps.Copy(c.recent, m.recent)
		c.shared = true
		return &c
	}
	c.exact = maps.Clone(m.exact)
	for k, r := range m.recent {
		if r.gone {
			delete(c.exact, k)
		} else {
			c.exact[k] = r.v
		}
	}
	c.recent, c.shared = nil, false
	return &c
}

// foldAt is the size of recent from which a clone folds it into exact: as many entries as the
// square root of exact's, so that copying recent and, amortized, folding it cost about the same.
func foldAt(exact int) int {
	return 16 + int(math.Sqrt(float64(exact)))
}

// find returns the entry registered under name (not the one a request for name would reach).
func (m *hostMap[T]) find(name string) (T, bool) {
	switch name = ir.HostnameKey(name); {
	case name == "*":
		return m.any, m.hasAny
	case strings.HasPrefix(name, "*."):
		v, ok := m.wild[name[1:]]
		return v, ok
	default:
		return m.getExact(name)
	}
}

// remove deletes the entry registered under name.
func (m *hostMap[T]) remove(name string) {
	switch name = ir.HostnameKey(name); {
	case name == "*":
		var zero T
		m.any, m.hasAny = zero, false
	case strings.HasPrefix(name, "*."):
		delete(m.wild, name[1:])
		delete(m.single, name[1:])
	default:
		m.deleteExact(name)
	}
}

// len is the number of entries.
func (m *hostMap[T]) len() int {
	n := len(m.exact) + len(m.wild)
	for k, r := range m.recent {
		switch _, base := m.exact[k]; {
		case r.gone && base:
			n--
		case !r.gone && !base:
			n++
		}
	}
	if m.hasAny {
		n++
	}
	return n
}

// each calls f with every entry.
func (m *hostMap[T]) each(f func(T)) {
	for k, v := range m.exact {
		if _, ok := m.recent[k]; !ok {
			f(v)
		}
	}
	for _, r := range m.recent {
		if !r.gone {
			f(r.v)
		}
	}
	for _, v := range m.wild {
		f(v)
	}
	if m.hasAny {
		f(m.any)
	}
}
