package translate

import (
	"maps"
	"slices"
	"strconv"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/fleetgate/fleetgate/controllers/snapshot"
)

// Memo remembers compiled routes between translations, so that a pass after one route changed
// compiles that route only. A compiled route depends on the route object and on the backend
// inputs (Services, EndpointSlices, ServiceImports, ServiceExports, ReferenceGrants,
// BackendTLSPolicies and their ConfigMaps, member clusters and their weights); a route is reused
// when its UID and resourceVersion are the same and none of those inputs changed, which the API server's resourceVersions tell exactly. Whatever
// the memo holds, Memo.Translate returns what Translate returns for the same snapshot.
// Beyond compiled routes it keeps, between passes, where each route attached (route.kept), for
// passes in which nothing but routes changed, and the virtual hosts of every port group
// (hostGroup), rebuilt only for the hostnames whose attachments changed.
//
// A Memo may be used from one goroutine at a time; Translate serializes callers.
type Memo struct {
	mu     sync.Mutex
	opts   options
	deps   []version
	weight map[string]int32
	routes map[routeKey]*cachedRoute
	// order holds, by kind, the routes of the last pass in snapshot order (cursor).
	order map[string][]*cachedRoute
	// pass numbers the passes; entries not used by the latest are dropped after it.
	pass  uint64
	hosts hostMemo
	// world holds the versions of every input besides routes (worldVersions), and unserved the
	// kinds each cluster does not serve, of the last pass; hosts.world numbers their changes.
	world    []version
	unserved map[string][]string
	// hits counts the routes reused by the last Translate, known those of them told by their
	// object alone (cachedRoute.src), and uncached those compiled but not kept (they use
	// BackendTLSPolicies), for tests.
	hits, known, uncached int
}

// listenerKey names a listener across passes: its gateway group, ListenerSet (if any) and name.
type listenerKey struct {
	group, set string
	name       gwv1.SectionName
}

// routeKey identifies one route object; UIDs are unique per cluster.
type routeKey struct {
	cluster, kind string
	uid           types.UID
}

type cachedRoute struct {
	// pass, pos, src and r's first fields are what a pass reads of every route: together.
	pass uint64
	// pos is its index in its kind's order of the last pass that used it.
	pos int
	// src is the object it was compiled from while later snapshots hold that very object (the
	// caches' own objects; a copy clears it, and the memo then keeps no snapshot alive).
	src metav1.Object
	// r is the route as compiled, handed to every pass that reuses it: a copy per route and pass
	// was a third of a pass's allocations at 20,000 routes. Passes set only r.parents (attachRoute,
	// on every route of the pass) and r.rank, which is why one pass must finish before the next
	// begins.
	r               route
	cluster         string
	uid             types.UID
	resourceVersion string
}

// hostMemo remembers the virtual hosts of every port group of the last pass (hostGroup).
type hostMemo struct {
	pass   uint64
	groups map[portKey]*hostGroup
	// slots is fromLastOrder's scratch space, all nil between passes.
	slots []*route
	// spare are, by listener, attachment lists no hostGroup holds any more (update), for
	// sizeAttachments to fill again: 20,000 attachments were a sixth of what a pass allocated.
	spare map[listenerKey][]attachment
	// attached are the attachments each listener had in the last pass: the next sizes its list
	// once instead of growing it route by route.
	attached map[listenerKey]int
	// hits counts the hosts whose route lists the last pass reused, and rebuilt the port groups
	// whose hosts it built whole, for tests.
	hits, rebuilt int
	// world numbers the states of every input besides routes (Memo.world), from 1: a remembered
	// route attached in a pass of the same number attaches the same way again (route.kept).
	world uint64
	// shape is the listener count of each gateway group in the last pass (see sameShape).
	shape []int
	// replayed counts the routes the last pass attached as they were before, for tests.
	replayed int
}

// sameShape reports whether groups have the listener counts of the last pass, and records them
// when not. Equal versions imply equal groups, unless a Gateway's spec changed without its
// generation (never through the API server): a replayed attachment could then point past a
// listener list, so such a pass starts a new world instead.
func (h *hostMemo) sameShape(groups []*gatewayGroup) bool {
	same := len(groups) == len(h.shape)
	for i := 0; same && i < len(groups); i++ {
		same = len(groups[i].listeners) == h.shape[i]
	}
	if !same {
		h.shape = h.shape[:0]
		for _, g := range groups {
			h.shape = append(h.shape, len(g.listeners))
		}
	}
	return same
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
		c.order = nil
	}
	last := c.order
	c.order = make(map[string][]*cachedRoute, len(last))
	var cur cursor
	c.pass++
	c.hits, c.known, c.uncached = 0, 0, 0
	used := 0
	if c.hosts.groups == nil {
		c.hosts.groups = map[portKey]*hostGroup{}
	}
	c.hosts.pass, c.hosts.hits, c.hosts.rebuilt, c.hosts.replayed = c.pass, 0, 0, 0
	world := worldVersions(s)
	if len(c.routes) == 0 || !slices.Equal(world, c.world) || !maps.EqualFunc(s.UnservedKinds, c.unserved, slices.Equal) {
		c.hosts.world++ // and routes compiled anew carry no attachment to replay
	}
	c.world, c.unserved = world, maps.Clone(s.UnservedKinds)
	p := begin(s, &c.hosts, func(kind, cluster string, m metav1.Object, fresh func(*route) bool) (*route, func(*route) *route) {
		if !versioned {
			return nil, unmemoised // a change could not be told from no change (e.g. a test input)
		}
		if kind != cur.kind {
			cur.flush(c.order)
			cur = cursor{kind: kind, prev: last[kind], next: make([]*cachedRoute, 0, len(last[kind])+1)}
		}
		// A snapshot of the caches' own objects holds an unchanged route as the very object the
		// last pass compiled: told apart without reading it (its UID and resourceVersion were a
		// cache miss per route and pass).
		if cur.at < len(cur.prev) {
			if e := cur.prev[cur.at]; e.src == m && e.pass != c.pass && fresh(&e.r) {
				cur.at++
				c.known++
				return c.reuse(&cur, &used, e), nil
			}
		}
		uid, rv := m.GetUID(), m.GetResourceVersion()
		if uid == "" || rv == "" {
			return nil, unmemoised
		}
		k := routeKey{cluster, kind, uid}
		e := cur.find(c, k)
		if e != nil && e.resourceVersion == rv && fresh(&e.r) {
			if e.src != m && e.src != nil {
				// A copy (not a cache's object): neither it nor the metadata compiled from the
				// last one may keep a snapshot alive.
				e.src, e.r.meta = nil, detach(e.r.meta)
			}
			return c.reuse(&cur, &used, e), nil
		}
		return nil, c.keeper(&cur, &used, e, k, m, rv)
	}, c.opts)
	cur.flush(c.order)
	if used < len(c.routes) {
		// Deleted routes, and old versions of changed ones under another pass number.
		maps.DeleteFunc(c.routes, func(_ routeKey, e *cachedRoute) bool { return e.pass != c.pass })
	}
	p.lock = &c.mu
	p.done = func() {
		// Port groups gone: their routes are kept alive only here.
		maps.DeleteFunc(c.hosts.groups, func(_ portKey, g *hostGroup) bool { return g.pass != c.hosts.pass })
	}
	return p
}

// keeper returns the function that remembers the route compiled for object m (key k, version rv)
// in place of e, if any. Made here, its closure is allocated only for the routes compiled.
func (c *Memo) keeper(cur *cursor, used *int, e *cachedRoute, k routeKey, m metav1.Object, rv string) func(*route) *route {
	return func(r *route) *route {
		if len(r.policies) > 0 {
			// Its policies are this pass's objects, which collect the pass's ancestors: compiling
			// such a route again is what keeps them right. TLS backends are few.
			c.uncached++
			if e != nil {
				delete(c.routes, k)
			}
			return r
		}
		// r.meta is m: while src holds m as well, it keeps nothing alive that src does not, and a
		// copy of every route's metadata was 5-7 MB of the heap at 20,000 routes. Reuse detaches it
		// on the first snapshot that holds another object.
		e := &cachedRoute{cluster: k.cluster, uid: k.uid, resourceVersion: rv, pass: c.pass, src: m, r: *r}
		c.routes[k] = e
		cur.keep(e)
		*used++
		return &e.r // the one the next pass reuses, so that it finds this pass's statuses
	}
}

// reuse hands on remembered route e in this pass.
func (c *Memo) reuse(cur *cursor, used *int, e *cachedRoute) *route {
	e.pass = c.pass
	c.hits++
	*used++
	cur.keep(e)
	return &e.r
}

// unmemoised hands on a route compiled without a Memo's say.
func unmemoised(r *route) *route { return r }

// cursor walks one kind's routes of the last pass (Memo.order) alongside the objects of this
// one, both in snapshot order: after one change, almost every object is the route at the
// cursor, found without hashing its key in a map of every route.
type cursor struct {
	kind string
	prev []*cachedRoute
	at   int
	// next is this pass's order of the kind.
	next []*cachedRoute
}

// find returns the remembered route of key k, if any.
func (cur *cursor) find(c *Memo, k routeKey) *cachedRoute {
	// The route at the cursor, or the one after it when the one at the cursor was deleted.
	for i := cur.at; i < len(cur.prev) && i <= cur.at+1; i++ {
		if e := cur.prev[i]; e.uid == k.uid && e.cluster == k.cluster && e.pass != c.pass {
			cur.at = i + 1
			return e
		}
	}
	e := c.routes[k]
	if e != nil && e.pass != c.pass && e.pos < len(cur.prev) && cur.prev[e.pos] == e {
		cur.at = e.pos + 1 // several routes were deleted or moved: continue after this one
	}
	return e
}

// keep appends e to this pass's order.
func (cur *cursor) keep(e *cachedRoute) {
	e.pos = len(cur.next)
	cur.next = append(cur.next, e)
}

// flush records this pass's order of the kind.
func (cur *cursor) flush(order map[string][]*cachedRoute) {
	if cur.kind != "" {
		order[cur.kind] = cur.next
	}
}

// detach returns a copy of an object's metadata. The objects of a snapshot of copies sit in one
// array per list and pass: a cached route pointing into it would keep the whole array alive, one
// per pass that compiled a route, which grows with routes × passes.
func detach(m metav1.Object) metav1.Object {
	if a, ok := m.(metav1.ObjectMetaAccessor); ok {
		if om, ok := a.GetObjectMeta().(*metav1.ObjectMeta); ok {
			c := *om
			return &c
		}
	}
	return m
}

// worldVersions lists the versions of every input besides routes, in snapshot order: with the
// routes' backends (backendVersions, checked apart), what attaching a route depends on besides
// the other routes. Gateways, GatewayClasses and ListenerSets count by generation: fleetgate's
// own status writes change their resourceVersions, and translation reads only their specs.
func worldVersions(s *snapshot.Snapshot) []version {
	var out []version
	s.Lists(func(list, cluster string, m metav1.Object) {
		switch list {
		case "HTTPRoutes", "GRPCRoutes", "TLSRoutes", "TCPRoutes", "UDPRoutes":
			return
		case "Gateways", "GatewayClasses", "ListenerSets":
			out = append(out, version{cluster: cluster, uid: m.GetUID(), resourceVersion: strconv.FormatInt(m.GetGeneration(), 10)})
			return
		}
		out = append(out, version{cluster: cluster, uid: m.GetUID(), resourceVersion: m.GetResourceVersion()})
	})
	return out
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
