package translate

import (
	"maps"
	"slices"
	"sync"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetgate/fleetgate/controllers/snapshot"
	"github.com/fleetgate/fleetgate/dataplane/ir"
	"github.com/fleetgate/fleetgate/providers"
)

// Result is everything one translation produces. Every list is sorted deterministically.
type Result struct {
	// Configs holds one dataplane config per gateway whose GatewayClass is accepted, by Gateway key.
	Configs []ir.Config `json:"configs,omitempty"`
	// LoadBalancers holds one provider model per config, same keys and order.
	LoadBalancers  []providers.LoadBalancer `json:"loadBalancers,omitempty"`
	GatewayClasses []ClassStatus            `json:"gatewayClasses,omitempty"`
	Gateways       []GatewayStatus          `json:"gateways,omitempty"`
	ListenerSets   []ListenerSetStatus      `json:"listenerSets,omitempty"`
	Routes         []*RouteStatus           `json:"routes,omitempty"`
	Policies       []PolicyStatus           `json:"policies,omitempty"`
	// Ingresses and Services hold status.loadBalancer of our Ingresses and LoadBalancer Services.
	Ingresses []IngressStatus `json:"ingresses,omitempty"`
	Services  []ServiceStatus `json:"services,omitempty"`
	// Clusters are the member clusters the snapshot read, sorted: whatever is not in one of them
	// is unknown, not gone (provisioning deletes nothing there).
	Clusters []string `json:"-"`
	// Notices are Events to tell owners what has no status field (lost conflicts, unsupported
	// backends); the controller records each new one once.
	Notices []Notice `json:"notices,omitempty"`
	// DNS are, by GatewayClassConfig name, the configs with spec.dns (the embedded DNS publisher)
	// and the gateway keys of their classes.
	DNS map[string]DNSZone `json:"dns,omitempty"`
}

// DNSZone is a GatewayClassConfig's spec.dns, the cluster it was read from, and the gateways
// (keys) its classes serve.
type DNSZone struct {
	Options  v1alpha1.DNSOptions `json:"options"`
	Cluster  string              `json:"cluster"`
	Gateways []string            `json:"gateways"`
}

// translator holds the state of one Translate call.
type translator struct {
	// memo, when set, stands between route objects and their compilation, and hosts between
	// matches and the route lists of virtual hosts (Memo).
	memo    memoFunc
	hosts   *hostMemo
	catalog Catalog
	// unexpressed are the valid rules a parent's provider cannot express (classRules).
	unexpressed map[ruleAt]bool
	snap        *snapshot.Snapshot
	idx         *index
	res         *Result
	classes     map[string]*classInfo
	groups      []*gatewayGroup
	groupByRef  map[groupRef]*gatewayGroup // lookupGroup
	setByKey    map[nsName]*listenerSet
	// policies are every BackendTLSPolicy; policyByTarget orders the ones of each target, winner first.
	policies       []*tlsPolicy
	policyByTarget map[policyTarget][]*tlsPolicy

	// defaultPolicy is the proxy policy of routes without a parent of ours (routePolicy);
	// shared, when sharedKnown, the policy every class has, or nil (policyFresh).
	defaultPolicy *proxyPolicy
	shared        *proxyPolicy
	sharedKnown   bool

	scratch scratch
	// world numbers the state of every input besides routes (hostMemo.world), 0 without a Memo;
	// mixedWeb says that HTTPRoutes and GRPCRoutes may conflict over hostnames.
	world    uint64
	mixedWeb bool
	// lostMatches are, by route, the indexes of HTTPRoute matches an older Ingress serves
	// (compileIngresses): configs leave them out.
	lostMatches map[*route][]int
}

// Translate computes the dataplane configs, load-balancer models and statuses for a snapshot.
// It never panics on bad input: invalid objects are reported through their conditions and left
// out of the dataplane without affecting the others. s must be sorted (Snapshot.Sort).
func Translate(s *snapshot.Snapshot, opts ...Option) *Result {
	return begin(s, nil, nil, newOptions(opts)).Finish()
}

// Begin starts a Pass: its first stage runs now.
func Begin(s *snapshot.Snapshot, opts ...Option) *Pass { return begin(s, nil, nil, newOptions(opts)) }

// memoFunc returns the remembered compiled route of one route object, reused only if fresh says
// it still holds (its parents' classes' endpoint policy); or nil and keep, to which the caller
// hands the route it compiled instead and which returns the one to use. (A compile callback
// would be a closure allocated for every route of every pass.)
type memoFunc func(kind, cluster string, m metav1.Object, fresh func(*route) bool) (r *route, keep func(*route) *route)

// Pass is one translation in two stages. The first, run when the Pass is made, decides classes,
// route attachment and BackendTLSPolicies: their statuses (Early) are final then, and do not wait
// for the configs of every gateway to be built. Finish builds those and the rest of the statuses.
type Pass struct {
	t      *translator
	routes []*route
	// lock, when set, is held while Finish runs, and done is called at its end (Memo).
	lock sync.Locker
	done func()
}

func begin(s *snapshot.Snapshot, hosts *hostMemo, memo memoFunc, o options) *Pass {
	t := &translator{
		memo:       memo,
		hosts:      hosts,
		catalog:    o.catalog,
		snap:       s,
		idx:        newIndex(s),
		res:        &Result{},
		classes:    map[string]*classInfo{},
		groupByRef: map[groupRef]*gatewayGroup{},
	}
	t.translateClasses()
	t.compilePolicies()
	t.buildGroups()
	t.attachListenerSets()
	for i, grp := range t.groups {
		grp.idx = i
		for j, l := range grp.listeners {
			l.idx = j
		}
	}
	if hosts != nil {
		if !hosts.sameShape(t.groups) {
			hosts.world++
		}
		t.world = hosts.world
		t.mixedWeb = len(s.HTTPRoutes) > 0 && len(s.GRPCRoutes) > 0
	}
	routes, byKind := t.compileRoutes()
	t.sizeAttachments()
	for i, r := range routes {
		r.rank = i + 1
		t.attachRoute(r)
	}
	t.countAttachments()
	t.routeStatuses(byKind)
	t.policyStatuses()
	r := t.res
	// Never nil: a pass that read no cluster knows of none, which is not "every cluster".
	r.Clusters = slices.AppendSeq(make([]string, 0, len(s.ClusterWeights)), maps.Keys(s.ClusterWeights))
	slices.Sort(r.Clusters)
	// Refs are unique within each list, so an unstable sort gives the same order, much faster.
	slices.SortFunc(r.GatewayClasses, func(a, b ClassStatus) int { return a.Ref.compare(b.Ref) })
	slices.SortFunc(r.Policies, func(a, b PolicyStatus) int { return a.Ref.compare(b.Ref) })
	return &Pass{t: t, routes: routes}
}

// Early returns the result so far, in which GatewayClasses, Routes and Policies are final; Finish
// fills in the rest of the same Result.
func (p *Pass) Early() *Result { return p.t.res }

// Finish builds the configs, load-balancer models and Gateway, ListenerSet, Ingress and Service
// statuses, and returns the whole result. It may be called once.
func (p *Pass) Finish() *Result {
	if p.lock != nil {
		p.lock.Lock()
		defer p.lock.Unlock()
	}
	t := p.t
	ingGroups, ingresses := t.compileIngresses(p.routes)
	for _, grp := range t.groups {
		t.listenerSetStatuses(grp)
		t.gatewayStatuses(grp)
		if !grp.class.accepted {
			continue
		}
		cfg := t.buildConfig(grp)
		t.res.Configs = append(t.res.Configs, cfg)
		t.res.LoadBalancers = append(t.res.LoadBalancers, t.buildLoadBalancer(grp, cfg))
	}
	for i, grp := range ingGroups {
		t.emitIngress(grp, ingresses[i])
	}
	t.translateLBServices()
	// Configs is final now: the models may point into it.
	for i := range t.res.LoadBalancers {
		t.res.LoadBalancers[i].Routing = &t.res.Configs[i]
	}
	slices.SortFunc(t.res.Gateways, func(a, b GatewayStatus) int { return a.Ref.compare(b.Ref) })
	slices.SortFunc(t.res.ListenerSets, func(a, b ListenerSetStatus) int { return a.Ref.compare(b.Ref) })
	t.sortExtras()
	if p.done != nil {
		p.done()
	}
	return t.res
}

// compileAll compiles every route of one kind; Snapshot.Sort has dropped entries without an object.
func compileAll[T any](t *translator, kind string, objs []snapshot.Object[T], compile func(snapshot.Object[T]) *route) []*route {
	out := make([]*route, 0, len(objs))
	fresh := t.policyFresh // one method value, not one per route
	for _, o := range objs {
		var r *route
		keep := unmemoised
		if t.memo != nil {
			r, keep = t.memo(kind, o.Cluster, o.Meta(), fresh)
		}
		if r == nil {
			r = compile(o)
			r.summarize()
			r = keep(r)
		}
		out = append(out, r)
	}
	return out
}

// policyFresh reports whether a compiled route's endpoints were chosen by the policy its parents'
// classes give it now: a GatewayClassConfig change (or a Gateway moving to another class) is not
// among the backend inputs the Memo tracks.
func (t *translator) policyFresh(r *route) bool {
	if r.endpointPolicy == nil {
		return true
	}
	if !t.sharedKnown {
		t.sharedKnown = true
		for _, c := range t.classes {
			if t.shared == nil {
				t.shared = c.proxy
			} else if !samePolicy(t.shared, c.proxy) {
				t.shared = nil
				break
			}
		}
	}
	// When every class has one policy, a route compiled under it has its parents' policy (or no
	// parent of ours, and serves nowhere): no need to find them.
	if t.shared != nil && samePolicy(r.endpointPolicy, t.shared) {
		return true
	}
	return samePolicy(r.endpointPolicy, t.routePolicy(r))
}

// compileRoutes compiles every route and orders them for attachment: HTTPRoutes and GRPCRoutes
// together, oldest first (the older wins an HTTP/gRPC hostname conflict), then TLS, TCP and UDP
// routes, oldest first (the older gets a TCP or UDP listener). byKind holds them per kind in
// snapshot order.
func (t *translator) compileRoutes() (all []*route, byKind [][]*route) {
	http := compileAll(t, kindHTTPRoute, t.snap.HTTPRoutes, t.compileHTTPRoute)
	grpc := compileAll(t, kindGRPCRoute, t.snap.GRPCRoutes, t.compileGRPCRoute)
	tls := compileAll(t, kindTLSRoute, t.snap.TLSRoutes, t.compileTLSRoute)
	tcp := compileAll(t, kindTCPRoute, t.snap.TCPRoutes, t.compileTCPRoute)
	udp := compileAll(t, kindUDPRoute, t.snap.UDPRoutes, t.compileUDPRoute)
	byKind = [][]*route{http, grpc, tls, tcp, udp}
	var slots []*route
	if t.hosts != nil {
		slots = t.hosts.slots
	}
	for _, rs := range [][]*route{append(slices.Clone(http), grpc...), slices.Clone(tls), slices.Clone(tcp), slices.Clone(udp)} {
		var sorted []*route
		sorted, slots = sortOlderFirst(rs, slots)
		all = append(all, sorted...)
	}
	if t.hosts != nil {
		t.hosts.slots = slots
	}
	return all, byKind // ranked as they are attached (begin)
}

// sortOlderFirst returns rs sorted by olderFirst, as a stable sort of rs would. The routes a Memo
// remembers carry their place in the last pass's order (rank), which was sorted; a remembered route
// is the compilation of the very same object version (UID and resourceVersion), so the fields
// olderFirst reads are those it had then, and the remembered routes in rank order are still sorted.
// Only the others (new or changed) are sorted, then merged in: with one route changed among
// 20,000, a sort of them all (nearly sorted as it was) was a tenth of Begin.
// slots is scratch space for fromLastOrder, returned for the next call.
func sortOlderFirst(rs, slots []*route) ([]*route, []*route) {
	ranked, slots := fromLastOrder(rs, slots)
	news := rs[ranked:]
	if len(news) == 0 {
		return rs, slots
	}
	slices.SortStableFunc(news, olderFirst)
	if ranked == 0 {
		return rs, slots
	}
	out := make([]*route, 0, len(rs))
	old := rs[:ranked]
	for _, n := range news {
		// Each new route's place is found by halving: a new route is most often the newest, whose
		// place a walk found after comparing it with every remembered one. On a tie the remembered
		// route goes first, as a stable sort of rs (remembered first) keeps it.
		i, _ := slices.BinarySearchFunc(old, n, func(o, n *route) int {
			if olderFirst(n, o) < 0 {
				return 1
			}
			return -1
		})
		out = append(append(out, old[:i]...), n)
		old = old[i:]
	}
	return append(out, old...), slots
}

// fromLastOrder puts the routes with a rank in the order of the last pass, the others after them
// (a rank held twice goes with the others), and returns how many have a rank. slots is scratch
// space, all nil, grown as ranks need and returned all nil again: each route is read once (a
// visit of 20,000 routes is a cache miss each), and a pass allocates no slots of its own.
func fromLastOrder(rs, slots []*route) (int, []*route) {
	var unranked []*route
	top := 0
	for _, r := range rs {
		k := r.rank
		if k >= len(slots) {
			slots = slices.Grow(slots, k+1-len(slots))[:max(k+1, cap(slots))]
		}
		if k == 0 || slots[k] != nil {
			unranked = append(unranked, r)
			continue
		}
		slots[k] = r
		top = max(top, k)
	}
	if top == 0 {
		return 0, slots // no rank: rs is as it was
	}
	i := 0
	for k, r := range slots[:top+1] {
		if r != nil {
			rs[i] = r
			i++
			slots[k] = nil
		}
	}
	copy(rs[i:], unranked)
	return i, slots
}

// sizeAttachments gives each listener room for as many attachments as it had in the last pass
// (Memo), plus a little.
func (t *translator) sizeAttachments() {
	if t.hosts == nil || len(t.hosts.attached) == 0 {
		return
	}
	for _, grp := range t.groups {
		for _, l := range grp.listeners {
			k := l.key()
			n := t.hosts.attached[k]
			if n == 0 {
				continue
			}
			if s := t.hosts.spare[k]; cap(s) >= n {
				delete(t.hosts.spare, k)
				l.hosts = s[:0]
				continue
			}
			l.hosts = make([]attachment, 0, n+n/16+1)
		}
	}
}

// countAttachments records the number of attachments of each listener for the next pass.
func (t *translator) countAttachments() {
	if t.hosts == nil {
		return
	}
	if t.hosts.attached == nil {
		t.hosts.attached = map[listenerKey]int{}
	}
	clear(t.hosts.attached)
	for _, grp := range t.groups {
		for _, l := range grp.listeners {
			if len(l.hosts) > 0 {
				t.hosts.attached[l.key()] = len(l.hosts)
			}
		}
	}
}
