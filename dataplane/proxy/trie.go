package proxy

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// pathIndex narrows the routes of a virtual host to those whose path condition can match, so that
// a lookup costs O(path segments) map probes plus the few candidates, not O(routes).
// Every list holds route indexes in ascending (IR precedence) order.
type pathIndex struct {
	exact map[string][]int32
	trie  *trieNode
	// regex holds routes with a Regex path; always holds routes without a path condition.
	regex  []int32
	always []int32
}

// trieNode is one path segment of a Prefix match. A prefix "/a/b" is stored as segments "", "a", "b",
// which makes segment-boundary semantics fall out of the structure: "/a/bc" walks "", "a", "bc".
type trieNode struct {
	children map[string]*trieNode
	routes   []int32
}

func newPathIndex() pathIndex {
	return pathIndex{exact: map[string][]int32{}, trie: &trieNode{}}
}

func (ix *pathIndex) add(i int32, r *route) {
	switch r.pathType {
	case pathExact:
		ix.exact[r.path] = append(ix.exact[r.path], i)
	case pathPrefix:
		n := ix.trie
		for _, seg := range strings.Split(r.path, "/") {
			c := n.children[seg]
			if c == nil {
				if n.children == nil {
					n.children = map[string]*trieNode{}
				}
				c = &trieNode{}
				n.children[seg] = c
			}
			n = c
		}
		n.routes = append(n.routes, i)
	case pathRegex:
		ix.regex = append(ix.regex, i)
	default:
		ix.always = append(ix.always, i)
	}
}

// indexMin is the route count from which a virtual host gets a path index; below it a linear scan
// is faster than the index and costs no memory, which matters with 100k small virtual hosts.
const indexMin = 8

// vhost is the compiled form of one ir.VirtualHost.
type vhost struct {
	name string
	*routeSet
	// src is the host's IR when it has TLS backends, nil otherwise.
	src *ir.VirtualHost
}

// routeSet is the compiled routes of a virtual host and their path index. The hosts of one compile
// whose routes are equal share one (compiler.sharedRoutes): at 100k hosts made from a few route
// lists, a host costs its name and two pointers.
type routeSet struct {
	routes []*route
	// index is nil for small sets.
	index *pathIndex
}

func newVHost(name string, routes []*route) *vhost {
	return &vhost{name: name, routeSet: newRouteSet(routes)}
}

func newRouteSet(routes []*route) *routeSet {
	v := &routeSet{routes: routes}
	if len(routes) >= indexMin {
		ix := newPathIndex()
		for i, r := range routes {
			ix.add(int32(i), r)
		}
		v.index = &ix
	}
	return v
}

// match returns the first route in IR order that matches req, or nil. Each candidate list is sorted,
// so scanning a list stops at its first match or as soon as it passes the best match so far.
func (v *routeSet) match(req *http.Request) *route {
	if v.index == nil {
		return v.matchLinear(req)
	}
	path := req.URL.Path
	best := int32(len(v.routes))
	var q queryCache
	first := func(list []int32, checkPath bool) {
		for _, i := range list {
			if i >= best {
				return
			}
			r := v.routes[i]
			if checkPath && !r.rare.re.MatchString(path) {
				continue
			}
			if r.matchRest(req, &q) {
				best = i
				return
			}
		}
	}
	first(v.index.exact[path], false)
	n := v.index.trie
	rest := path
	for {
		seg := rest
		j := strings.IndexByte(rest, '/')
		if j >= 0 {
			seg = rest[:j]
		}
		if n = n.children[seg]; n == nil {
			break
		}
		first(n.routes, false)
		if j < 0 {
			break
		}
		rest = rest[j+1:]
	}
	first(v.index.regex, true)
	first(v.index.always, false)
	if best == int32(len(v.routes)) {
		return nil
	}
	return v.routes[best]
}

// matchLinear is the first route in IR order whose every condition holds: the lookup for small
// hosts, and the reference the fuzz test holds the index to.
func (v *routeSet) matchLinear(req *http.Request) *route {
	var q queryCache
	for _, r := range v.routes {
		if r.matchPath(req.URL.Path) && r.matchRest(req, &q) {
			return r
		}
	}
	return nil
}

// queryCache parses the query string at most once per request, and only when a route asks.
type queryCache struct {
	v      url.Values
	parsed bool
}

func (q *queryCache) get(req *http.Request) url.Values {
	if !q.parsed {
		q.v, _ = url.ParseQuery(req.URL.RawQuery)
		q.parsed = true
	}
	return q.v
}
