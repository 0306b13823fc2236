package translate

import (
	"maps"
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fleetgate/fleetgate/controllers/snapshot"
	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// Memo remembers compiled routes between translations, so that a pass after one route changed
// compiles that route only. A compiled route depends on the route object and on the backend
// inputs (Services, EndpointSlices, ServiceImports, ServiceExports, ReferenceGrants,
// BackendTLSPolicies and their ConfigMaps, member clusters and their weights); a route is reused
// when its UID and resourceVersion are the same and none of those inputs changed, which the API server's resourceVersions tell exactly. Whatever
// the memo holds, Memo.Translate returns what Translate returns for the same snapshot.
// Attachment, configs and statuses are recomputed on every pass: they depend on every route.
//
// A Memo may be used from one goroutine at a time; Translate serializes callers.
type Memo struct {
	mu     sync.Mutex
	opts   options
	deps   []version
	weight map[string]int32
	routes map[routeKey]*cachedRoute
	// pass numbers the passes; entries not used by the latest are dropped after it.
	pass  uint64
	hosts hostMemo
	// hits counts the routes reused by the last Translate and uncached those compiled but not kept
	// (they use BackendTLSPolicies), for tests.
	hits, uncached int
}

// routeKey identifies one route object; UIDs are unique per cluster.
type routeKey struct {
	cluster, kind string
	uid           types.UID
}

type cachedRoute struct {
	resourceVersion string
	pass            uint64
	// r is the route as compiled, handed to every pass that reuses it: a copy per route and pass
	// was a third of a pass's allocations at 20,000 routes. Passes set only r.parents (attachRoute,
	// on every route of the pass), which is why one pass must finish before the next begins.
	r route
}

// hostMemo remembers the route list of every virtual host of the last pass, with the matches it
// was made of (translator.hostRoutes).
type hostMemo struct {
	pass    uint64
	entries map[hostKey]*hostEntry
	// hits counts the hosts reused by the last pass, for tests.
	hits int
}

type hostEntry struct {
	matches []*compiledMatch
	routes  []ir.Route
	pass    uint64
}

// version identifies one object's state.
type version struct {
	cluster         string
	uid             types.UID
	resourceVersion string
}

// NewMemo returns an empty memo whose passes translate with opts.
func NewMemo(opts ...Option) *Memo { return &Memo{opts: newOptions(opts)} }

// Translate is Translate with compiled routes and virtual hosts reused from earlier calls.
func (c *Memo) Translate(s *snapshot.Snapshot) *Result { return c.Begin(s).Finish() }

// Begin starts a Pass with compiled routes reused from earlier calls; its Finish reuses virtual
// hosts, and must come before the next Begin.
func (c *Memo) Begin(s *snapshot.Snapshot) *Pass {
	c.mu.Lock()
	defer c.mu.Unlock()
	deps, versioned := backendVersions(s)
	if !versioned || !slices.Equal(deps, c.deps) || !maps.Equal(s.ClusterWeights, c.weight) {
		c.routes = nil
	}
	c.deps, c.weight = deps, maps.Clone(s.ClusterWeights)
	if c.routes == nil {
		c.routes = map[routeKey]*cachedRoute{}
	}
	c.pass++
	c.hits, c.uncached = 0, 0
	used := 0
	p := begin(s, func(kind, cluster string, m metav1.Object, compile func() *route, fresh func(*route) bool) *route {
		uid, rv := m.GetUID(), m.GetResourceVersion()
		if !versioned || uid == "" || rv == "" {
			return compile() // a change could not be told from no change (e.g. a test input)
		}
		k := routeKey{cluster, kind, uid}
		e := c.routes[k]
		if e != nil && e.resourceVersion == rv && fresh(&e.r) {
			e.pass = c.pass
			c.hits++
			used++
			return &e.r
		}
		r := compile()
		if len(r.policies) > 0 {
			// Its policies are this pass's objects, which collect the pass's ancestors: compiling
			// such a route again is what keeps them right. TLS backends are few.
			c.uncached++
			if e != nil {
				delete(c.routes, k)
			}
			return r
		}
		r.meta = detach(m)
		e = &cachedRoute{resourceVersion: rv, pass: c.pass, r: *r}
		c.routes[k] = e
		used++
		return &e.r // the one the next pass reuses, so that it finds this pass's statuses
	}, c.opts)
	if used < len(c.routes) {
		// Deleted routes, and old versions of changed ones under another pass number.
		maps.DeleteFunc(c.routes, func(_ routeKey, e *cachedRoute) bool { return e.pass != c.pass })
	}
	if c.hosts.entries == nil {
		c.hosts.entries = map[hostKey]*hostEntry{}
	}
	c.hosts.pass, c.hosts.hits = c.pass, 0
	p.t.hosts = &c.hosts
	p.lock = &c.mu
	p.done = func() {
		// Hosts gone, and those whose matches changed: their old matches are kept alive only here.
		maps.DeleteFunc(c.hosts.entries, func(_ hostKey, e *hostEntry) bool { return e.pass != c.hosts.pass })
	}
	return p
}

// detach returns a copy of an object's metadata. The snapshot's objects sit in one array per
// list and pass: a cached route pointing into it would keep the whole array alive, one per pass
// that compiled a route, which grows with routes × passes.
func detach(m metav1.Object) metav1.Object {
	if a, ok := m.(metav1.ObjectMetaAccessor); ok {
		if om, ok := a.GetObjectMeta().(*metav1.ObjectMeta); ok {
			c := *om
			return &c
		}
	}
	return m
}

// backendVersions lists the versions of every input a compiled route may depend on besides
// itself (snapshot.Dependencies), in snapshot order, and the member clusters backends may resolve
// in. It reports false when an input has no resourceVersion.
func backendVersions(s *snapshot.Snapshot) ([]version, bool) {
	clusters := s.Clusters()
	out := make([]version, 0, len(s.Services)+len(s.EndpointSlices)+len(clusters))
	ok := true
	s.Dependencies(func(cluster string, m metav1.Object) {
		if m.GetResourceVersion() == "" {
			ok = false
		}
		out = append(out, version{cluster: cluster, uid: m.GetUID(), resourceVersion: m.GetResourceVersion()})
	})
	for _, c := range clusters {
		out = append(out, version{cluster: c})
	}
	return out, ok
}
