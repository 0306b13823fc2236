package proxy

import (
	"net/http"
	"net/textproto"
	"regexp"
	"strings"
	"time"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

type pathType uint8

const (
	pathAny pathType = iota
	pathExact
	pathPrefix
	pathRegex
)

// route is the compiled form of one ir.Route: regexes compiled, header names canonicalised, filters
// prepared so that the request path only reads them. What most routes leave unset lives in rare, so
// that a route is 128 bytes instead of 288: a reload at 100k hosts compiles ~100k of them, and the
// collector marks them in every cycle while the table lives.
type route struct {
	name string
	// path is the exact path, or the prefix without trailing slashes ("/" becomes "").
	path     string
	backends backendSet
	stats    *routeStats
	// rare is nil when every field of it would be zero: a request to such a route reads no more
	// than this pointer, on the route's own cache line.
	rare     *routeRare
	pathType pathType
	// buffer says the request body must be kept for a retry or a mirror.
	buffer bool
	// fast says the HTTP/1.1 fast path can serve the route.
	fast bool
}

// routeRare is the part of a route that most configs leave unset: matches beyond the path and
// every filter, timeout and retry.
type routeRare struct {
	re      *boundedRegexp
	method  string
	headers []keyMatch
	query   []keyMatch

	cors      *cors
	redirect  *redirect
	reqHdr    *headerMod
	respHdr   *headerMod
	rewrite   *rewrite
	mirrors   []*mirror
	timeout   time.Duration
	beTimeout time.Duration
	retry     *retryPolicy
}

// more returns r's rare part, allocating it on first use; the compile sets rare fields through it
// only when they are not zero.
func (r *route) more() *routeRare {
	if r.rare == nil {
		r.rare = &routeRare{}
	}
	return r.rare
}

// respMod is the route's response header modifier, nil without one.
func (r *route) respMod() *headerMod {
	if r.rare == nil {
		return nil
	}
	return r.rare.respHdr
}

type keyMatch struct {
	name  string // canonical MIME key for headers, verbatim for query params
	value string
	re    *boundedRegexp
}

func (k *keyMatch) matches(v string, ok bool) bool {
	if !ok {
		return false
	}
	if k.re != nil {
		return k.re.MatchString(v)
	}
	return v == k.value
}

func compileKeyMatches(in []ir.KeyMatch, header bool) ([]keyMatch, error) {
	if len(in) == 0 {
		return nil, nil
	}
	out := make([]keyMatch, 0, len(in))
	seen := map[string]bool{}
	for _, m := range in {
		name := m.Name
		if header {
			name = textproto.CanonicalMIMEHeaderKey(name)
		}
		// Gateway API: only the first of several matches on the same name counts.
		if seen[name] {
			continue
		}
		seen[name] = true
		k := keyMatch{name: name, value: m.Value}
		if m.Type == ir.MatchRegex {
			re, err := compileAnchored(m.Value)
			if err != nil {
				return nil, err
			}
			k.re = re
		}
		out = append(out, k)
	}
	return out, nil
}

// maxRegexInput is the longest path, header or query value a regex is run on: a longer one does
// not match a regex condition (an Exact or Prefix condition still sees it). Matching costs time
// in proportion to program size times input length; with programs bounded by
// ir.DefaultMaxRegexInstructions this keeps a match well under a millisecond. 8 KiB is nginx's
// default limit of a request line or header line (large_client_header_buffers).
const maxRegexInput = 8 << 10

// boundedRegexp is an anchored regex that refuses inputs longer than maxRegexInput.
type boundedRegexp struct{ re *regexp.Regexp }

func (b *boundedRegexp) MatchString(s string) bool {
	return len(s) <= maxRegexInput && b.re.MatchString(s)
}

func compileAnchored(expr string) (*boundedRegexp, error) {
	re, err := regexp.Compile(`^(?:` + expr + `)$`)
	if err != nil {
		return nil, err // the callers say which regex
	}
	return &boundedRegexp{re}, nil
}

// matchPath is the path condition on its own, by definition rather than through the index.
func (r *route) matchPath(p string) bool {
	switch r.pathType {
	case pathExact:
		return p == r.path
	case pathPrefix:
		return p == r.path || strings.HasPrefix(p, r.path) && p[len(r.path)] == '/'
	case pathRegex:
		return r.rare.re.MatchString(p)
	}
	return true
}

// matchRest checks every condition but the path.
func (r *route) matchRest(req *http.Request, q *queryCache) bool {
	x := r.rare
	if x == nil {
		return true
	}
	if x.method != "" && req.Method != x.method {
		return false
	}
	for i := range x.headers {
		h := &x.headers[i]
		vs, ok := req.Header[h.name]
		v := ""
		switch len(vs) {
		case 0:
			ok = false
		case 1:
			v = vs[0]
		default:
			v = strings.Join(vs, ",")
		}
		if !h.matches(v, ok) {
			return false
		}
	}
	if len(x.query) > 0 {
		vals := q.get(req)
		for i := range x.query {
			k := &x.query[i]
			vs := vals[k.name]
			v := ""
			if len(vs) > 0 {
				v = vs[0]
			}
			if !k.matches(v, len(vs) > 0) {
				return false
			}
		}
	}
	return true
}

// prefixRest returns the part of p after the route's Prefix match; it starts with "/" or is empty.
func (r *route) prefixRest(p string) string {
	if r.pathType != pathPrefix || !strings.HasPrefix(p, r.path) {
		return p
	}
	return p[len(r.path):]
}
