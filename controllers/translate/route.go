package translate

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/controllers/snapshot"
	"github.com/fleetgate/fleetgate/dataplane/ir"
)

const (
	kindHTTPRoute = "HTTPRoute"
	kindGRPCRoute = "GRPCRoute"
	kindTLSRoute  = "TLSRoute"
	kindTCPRoute  = "TCPRoute"
	kindUDPRoute  = "UDPRoute"
)

// route is any route kind, compiled once (independent of the listeners it attaches to).
type route struct {
	// The fields a pass reads of every remembered route come first, on as few cache lines as
	// may be: at 20,000 routes a pass is bound by loading them (memo lookup, attachment replay,
	// route status), not by what it computes.

	kind string
	// endpointPolicy chose its backends' endpoints (routePolicy); nil if it has none.
	endpointPolicy *proxyPolicy
	// rank is its place in the last pass's attachment order, from 1; 0 if it was not in it
	// (compileRoutes).
	rank int
	// kept is where it attached in the last pass that ran attachRoute on it, for a Memo's passes
	// of the same world (hostMemo.world) to attach it there again.
	kept keptAttachments
	// parents is this pass's RouteParentStatus for each of our parents (attachRoute).
	parents []gwv1.RouteParentStatus
	// status is the RouteStatus a pass last gave for it, handed on while it is the same: the
	// published statuses are immutable (the status writer keeps them to compare with the next).
	status *RouteStatus
	// statusOf is status's first parent, the element of parents it was made with: compared
	// without loading status (one object more per route and pass).
	statusOf   *gwv1.RouteParentStatus
	generation int64
	// weightsErr says why a set ClusterWeightsAnnotation is ignored (clusterWeights).
	weightsErr string

	cluster    string
	meta       metav1.Object
	nsName     string    // namespace/name, compared often when sorting
	namespace  string    // read on every pass: meta is one more object to load per route
	created    time.Time // creationTimestamp, compared often when sorting
	parentRefs []gwv1.ParentReference
	// hostnames are nil for TCP and UDP routes, which do not match on hostnames.
	hostnames    []string
	usesHostname bool

	matches []compiledMatch // HTTPRoute and GRPCRoute
	// specRules are the spec's rules, checked against the capabilities of each parent's provider
	// (inexpressible) only when it cannot express everything. Not a pointer to the spec: the
	// object may sit in an array of its list that a remembered route must not keep alive.
	specRules ruleSpecs
	l4        []ir.Backend // TLSRoute, TCPRoute and UDPRoute

	rules     int
	badRules  []string // "rule N: message", dropped from the dataplane
	badReason string   // the Accepted reason when every rule is invalid
	refReason string   // first ResolvedRefs failure
	refMsgs   []string
	// policies are the BackendTLSPolicies its backends competed for; the route's Gateways are
	// their ancestors.
	policies []*tlsPolicy
	// clusterWeights, from ClusterWeightsAnnotation, split its ServiceImport backends across
	// clusters instead of the members' weights.
	clusterWeights map[string]int32

	// refNotes say which endpoints were left out (untrusted slices, denied addresses); they do
	// not make ResolvedRefs False, as the references themselves resolve.
	refNotes []string
	// limits sums up matches for classRules (summarize), so that a route every class serves
	// whole is judged without reading its matches again on every pass.
	limits matchLimits
}

// matchLimits is what classRules needs to know about a route's matches before looking at them.
type matchLimits struct {
	known      bool
	regexInsts regexSize // the largest regex of any match
	retries    int       // the largest retry attempts of any match
}

// summarize fills r.limits from its matches; matches are final once a route is compiled.
func (r *route) summarize() {
	r.limits = matchLimits{known: true}
	for i := range r.matches {
		m := &r.matches[i]
		r.limits.regexInsts = r.limits.regexInsts.max(m.regexInsts)
		if m.ir.Retry != nil {
			r.limits.retries = max(r.limits.retries, m.ir.Retry.Attempts)
		}
	}
}

// compiledMatch is one match of one rule, ready to be placed in a virtual host.
type compiledMatch struct {
	ir   ir.Route
	prec precedence
	// regexInsts is the program size of the match's largest regex; a class whose
	// maxRegexInstructions it exceeds drops the rule (classRules, hostRoutes).
	regexInsts regexSize
}

// servedBy reports whether a class with policy p serves the match: its regexes fit p's bound.
func (m *compiledMatch) servedBy(p *proxyPolicy) bool {
	return !m.regexInsts.tooLarge(p.maxRegexInstructions)
}

// classRules checks the route's valid rules against a parent's class: a rule with a regex program
// above the class's bound, or one its provider cannot express (inexpressible), is dropped on that
// class's gateways (dropped, and the latter in t.unexpressed for the configs), and retry attempts
// above its cap are served capped (notes, for the Accepted message).
func (t *translator) classRules(r *route, c *classInfo) (dropped, notes []string) {
	p := c.proxy
	caps := c.caps.ForRouteKind(r.kind)
	if l := r.limits; l.known && (caps.All || r.specRules == nil) &&
		!l.regexInsts.tooLarge(p.maxRegexInstructions) && l.retries <= p.maxRetryAttempts {
		return nil, nil // nothing below could drop a rule or add a note
	}
	host := 0
	if caps.MaxConditionsPerMatch > 0 {
		host = t.hostValue(r, c)
	}
	for i := 0; i < len(r.matches); {
		m := &r.matches[i]
		var biggest regexSize
		j := i
		for ; j < len(r.matches) && r.matches[j].prec.rule == m.prec.rule; j++ {
			biggest = biggest.max(r.matches[j].regexInsts)
		}
		if biggest.tooLarge(p.maxRegexInstructions) {
			dropped = append(dropped, fmt.Sprintf("rule %d: a regex is too large: its compiled program exceeds the limit of %d instructions (GatewayClassConfig spec.proxy.maxRegexInstructions)",
				m.prec.rule, p.maxRegexInstructions))
		} else if msg := r.inexpressible(caps, c.provider, m.prec.rule, host); msg != "" {
			dropped = append(dropped, fmt.Sprintf("rule %d: %s", m.prec.rule, msg))
			if t.unexpressed == nil {
				t.unexpressed = map[ruleAt]bool{}
			}
			t.unexpressed[ruleAt{r, c, m.prec.rule}] = true
		} else if m.ir.Retry != nil && m.ir.Retry.Attempts > p.maxRetryAttempts {
			notes = append(notes, fmt.Sprintf("rule %d: retry.attempts %d capped at %d (GatewayClassConfig spec.proxy.maxRetryAttempts)",
				m.prec.rule, m.ir.Retry.Attempts, p.maxRetryAttempts))
		}
		i = j
	}
	// An L4 route has no matches; its one valid rule (compileL4) is checked alone.
	if r.isL4() && r.rules > 0 {
		if msg := r.inexpressible(caps, c.provider, 0, 0); msg != "" {
			dropped = append(dropped, "rule 0: "+msg)
			if t.unexpressed == nil {
				t.unexpressed = map[ruleAt]bool{}
			}
			t.unexpressed[ruleAt{r, c, 0}] = true
		}
	}
	return dropped, notes
}

// ruleAt is one rule of one route on the gateways of one class.
type ruleAt struct {
	r    *route
	c    *classInfo
	rule int
}

// expressedBy reports whether rule i of r goes into the configs of class c's gateways.
func (t *translator) expressedBy(r *route, c *classInfo, i int) bool {
	return c.caps.ForRouteKind(r.kind).All || !t.unexpressed[ruleAt{r, c, i}]
}

// ruleCount is the number of valid rules that c's provider can express.
func (t *translator) ruleCount(r *route, c *classInfo) int {
	if r.isL4() {
		if r.rules > 0 && t.expressedBy(r, c, 0) {
			return 1
		}
		return 0
	}
	n := 0
	for i := range r.matches {
		if (i == 0 || r.matches[i].prec.rule != r.matches[i-1].prec.rule) && t.expressedBy(r, c, r.matches[i].prec.rule) {
			n++
		}
	}
	return n
}

func (r *route) name() string { return r.nsName }

// isL4 tells a TLSRoute, TCPRoute or UDPRoute: one rule of backends, no matches.
func (r *route) isL4() bool {
	return r.kind == kindTLSRoute || r.kind == kindTCPRoute || r.kind == kindUDPRoute
}

func (r *route) ruleInvalid(i int, reason gwv1.RouteConditionReason, msg string) {
	r.badRules = append(r.badRules, fmt.Sprintf("rule %d: %s", i, msg))
	if r.badReason == "" {
		r.badReason = string(reason)
	}
}

func (r *route) refFailed(reason gwv1.RouteConditionReason, msg string) {
	if r.refReason == "" {
		r.refReason = string(reason)
	}
	r.refMsgs = append(r.refMsgs, msg)
}

func newRoute[T any](kind string, o snapshot.Object[T], spec gwv1.CommonRouteSpec, hostnames []gwv1.Hostname, usesHostname bool) *route {
	r := &route{kind: kind, cluster: o.Cluster, meta: o.Meta(), parentRefs: spec.ParentRefs, usesHostname: usesHostname}
	r.namespace = r.meta.GetNamespace()
	r.nsName = r.namespace + "/" + r.meta.GetName()
	r.generation = r.meta.GetGeneration()
	r.created = r.meta.GetCreationTimestamp().Time
	if v, ok := r.meta.GetAnnotations()[ClusterWeightsAnnotation]; ok {
		var err error
		if r.clusterWeights, err = parseClusterWeights(v); err != nil {
			r.weightsErr = fmt.Sprintf("ignoring annotation %s (member cluster weights apply): %v", ClusterWeightsAnnotation, err)
		}
	}
	for _, h := range hostnames {
		r.hostnames = append(r.hostnames, string(h))
	}
	return r
}

// olderFirst orders routes by creation time, then namespace/name, then cluster: the Gateway API
// tie-breakers for precedence and conflicts.
func olderFirst(a, b *route) int {
	return cmp.Or(
		a.created.Compare(b.created),
		cmp.Compare(a.name(), b.name()),
		cmp.Compare(a.cluster, b.cluster),
		cmp.Compare(a.kind, b.kind),
	)
}

// findParent resolves a parentRef to one of our gateway groups: a Gateway (the one in the route's own
// cluster, or the fleet gateway of that namespace/name), or a ListenerSet attached to one, which is
// returned too. A Gateway parentRef reaches only the Gateway's own listeners.
func (t *translator) findParent(r *route, ref gwv1.ParentReference) (*gatewayGroup, *listenerSet) {
	if cmp.Or(ptrStr(ref.Group), gwv1.GroupName) != gwv1.GroupName {
		return nil, nil
	}
	ns := cmp.Or(ptrStr(ref.Namespace), r.namespace)
	switch cmp.Or(ptrStr(ref.Kind), "Gateway") {
	case "Gateway":
		return t.lookupGroup(r.cluster, ns, string(ref.Name)), nil
	case kindListenerSet:
		if s := t.setByKey[nsName{r.cluster, ns, string(ref.Name)}]; s != nil {
			return s.group, s
		}
	}
	return nil, nil
}

// attachRoute computes one RouteParentStatus per parentRef that names one of our Gateways, and
// records the route on every listener that accepts it.
func (t *translator) attachRoute(r *route) {
	if t.world != 0 && r.kept.world == t.world && !t.mixedWeb {
		t.replay(r)
		return
	}
	// The attachments recorded for the next pass: none unless it may replay them.
	record := t.world != 0 && (r.kind == kindHTTPRoute || r.kind == kindGRPCRoute) && !t.mixedWeb
	t.scratch.kept = t.scratch.kept[:0]
	r.kept.world = 0
	// Built in scratch space, and kept only if it differs from what a remembered route (Memo)
	// carries from the pass before: on a pass after one change, almost every route's statuses are
	// the same, and allocating them again was a third of a pass's garbage at 20,000 routes.
	prev := r.parents
	parents, conds := t.scratch.parents[:0], t.scratch.conds[:0]
	for _, ref := range r.parentRefs {
		grp, set := t.findParent(r, ref)
		if grp == nil {
			continue // not ours: another controller, or a parent that does not exist
		}
		caps := grp.class.caps.ForRouteKind(r.kind)
		record = record && caps.MaxRulesPerListener == 0 && caps.MaxHostnamesPerListener == 0
		classBad, notes := t.classRules(r, grp.class)
		// A rule the class's provider cannot express is noted in t.unexpressed, for the configs.
		record = record && len(classBad) == 0
		accepted := t.attachToParent(r, grp, set, ref, classBad)
		if accepted.Status == metav1.ConditionTrue && len(notes) > 0 {
			accepted.Message += "; " + strings.Join(notes, "; ")
		}
		bad := r.badRules
		if len(classBad) > 0 {
			bad = append(slices.Clone(bad), classBad...)
		}
		msg := "References are resolved"
		if len(r.refNotes) > 0 {
			msg = strings.Join(append([]string{msg}, r.refNotes...), "; ")
		}
		resolved := cond(string(gwv1.RouteConditionResolvedRefs), true, string(gwv1.RouteReasonResolvedRefs), msg, r.generation)
		if r.refReason != "" {
			resolved = cond(string(gwv1.RouteConditionResolvedRefs), false, r.refReason, strings.Join(append(slices.Clip(r.refMsgs), r.refNotes...), "; "), r.generation)
		}
		start := len(conds)
		conds = append(conds, accepted, resolved)
		if accepted.Status == metav1.ConditionTrue && len(bad) > 0 {
			conds = append(conds, cond(string(gwv1.RouteConditionPartiallyInvalid), true, string(gwv1.RouteReasonUnsupportedValue),
				"Dropped Rule(s): "+strings.Join(bad, "; "), r.generation))
		}
		// Conditions may point into an array conds has since outgrown: it is read, never written.
		parents = append(parents, gwv1.RouteParentStatus{ParentRef: ref, ControllerName: gwv1.GatewayController(v1alpha1.ControllerName), Conditions: conds[start:len(conds):len(conds)]})
	}
	t.scratch.parents, t.scratch.conds = parents[:0], conds[:0]
	if record {
		r.kept.world = t.world
		if !slices.EqualFunc(r.kept.at, t.scratch.kept, keptAt.same) {
			r.kept.at = slices.Clone(t.scratch.kept)
		}
	}
	// Always set: a remembered route carries its parents from the pass before.
	switch {
	case len(parents) == 0:
		r.parents = nil
		return
	case !sameParents(prev, parents):
		r.parents = cloneParents(parents)
	}
	t.recordAncestors(r)
	if r.weightsErr != "" {
		t.notice(r.ref(), "Warning", "InvalidClusterWeights", "%s", r.weightsErr)
	}
}

// scratch is space attachRoute reuses from route to route.
type scratch struct {
	parents []gwv1.RouteParentStatus
	conds   []metav1.Condition
	kept    []keptAt
}

// keptAttachments are the listeners a route attached to in a pass of world number world.
type keptAttachments struct {
	world uint64
	at    []keptAt
}

// keptAt is one listener a route attached to, by place (the same in every pass of one world),
// with the hostnames it serves there.
type keptAt struct {
	group, listener int
	hostnames       []string
}

func (a keptAt) same(b keptAt) bool {
	return a.group == b.group && a.listener == b.listener && slices.Equal(a.hostnames, b.hostnames)
}

// replay attaches a remembered route where it attached in the last pass of the same world: every
// input of attachRoute but the other routes is the same, and the others matter only through
// HTTPRoute/GRPCRoute hostname conflicts (t.mixedWeb) and providers' listener limits (never
// recorded). Its parents' statuses are those of that pass.
func (t *translator) replay(r *route) {
	t.hosts.replayed++
	for _, k := range r.kept.at {
		l := t.groups[k.group].listeners[k.listener]
		l.attached++
		l.last = r
		l.hosts = append(l.hosts, attachment{route: r, hostnames: k.hostnames})
		l.web.add(r.kind)
	}
	if r.parents != nil && r.weightsErr != "" {
		t.notice(r.ref(), "Warning", "InvalidClusterWeights", "%s", r.weightsErr)
	}
}

// cloneParents copies parents out of scratch space, with two allocations.
func cloneParents(parents []gwv1.RouteParentStatus) []gwv1.RouteParentStatus {
	n := 0
	for i := range parents {
		n += len(parents[i].Conditions)
	}
	out := slices.Clone(parents)
	conds := make([]metav1.Condition, 0, n)
	for i := range out {
		start := len(conds)
		conds = append(conds, out[i].Conditions...)
		out[i].Conditions = conds[start:len(conds):len(conds)]
	}
	return out
}

func (r *route) ref() ObjectRef {
	return ObjectRef{Cluster: r.cluster, Kind: r.kind, Namespace: r.namespace, Name: r.nsName[len(r.namespace)+1:]}
}

// routeStatuses emits the statuses of the routes that have parents of ours, in ObjectRef order
// (cluster, kind, namespace, name) without sorting them: each kind's routes, in snapshot order,
// are sorted by cluster, namespace and name already.
func (t *translator) routeStatuses(byKind [][]*route) {
	slices.SortFunc(byKind, func(a, b []*route) int {
		if len(a) == 0 || len(b) == 0 {
			return cmp.Compare(len(a), len(b))
		}
		return cmp.Compare(a[0].kind, b[0].kind)
	})
	// One visit of each route (a cache miss each at 20,000 routes): room for all of them rather
	// than a count of those with parents first, and each cluster found at the kinds' heads. An
	// unchanged route's status is a pointer to the one of the last pass: a list of 20,000
	// statuses was half of what a pass allocated.
	n := 0
	for _, rs := range byKind {
		n += len(rs)
	}
	t.res.Routes = slices.Grow(t.res.Routes, n)
	next := make([]int, len(byKind))
	for {
		cluster, found := "", false
		for k, rs := range byKind {
			if next[k] < len(rs) && (!found || rs[next[k]].cluster < cluster) {
				cluster, found = rs[next[k]].cluster, true
			}
		}
		if !found {
			return
		}
		for k, rs := range byKind {
			for ; next[k] < len(rs) && rs[next[k]].cluster == cluster; next[k]++ {
				if r := rs[next[k]]; r.parents != nil {
					t.res.Routes = append(t.res.Routes, r.routeStatus())
				}
			}
		}
	}
}

// routeStatus returns r's status: the one of the last pass when its parents are the very same
// (attachRoute keeps a remembered route's parents unless they changed), else a new one.
// A route's generation is that of the object it was compiled from, which r.status was made with;
// attachRoute gives r.parents a new array whenever they change, so the first element tells them.
func (r *route) routeStatus() *RouteStatus {
	if r.status != nil && len(r.parents) > 0 && r.statusOf == &r.parents[0] {
		return r.status
	}
	r.status = &RouteStatus{Ref: r.ref(), Generation: r.generation, Parents: r.parents}
	r.statusOf = nil
	if len(r.parents) > 0 {
		r.statusOf = &r.parents[0]
	}
	return r.status
}

// attachToParent attaches r to the listeners of grp that accept it. classBad are the rules grp's class
// drops (classRules).
func (t *translator) attachToParent(r *route, grp *gatewayGroup, set *listenerSet, ref gwv1.ParentReference, classBad []string) metav1.Condition {
	gen := r.generation
	reject := func(reason gwv1.RouteConditionReason, msg string) metav1.Condition {
		return cond(string(gwv1.RouteConditionAccepted), false, string(reason), msg, gen)
	}
	var cands []*listener
	for _, l := range grp.listeners {
		if l.set != set {
			continue
		}
		if ref.SectionName != nil && *ref.SectionName != l.spec.Name {
			continue
		}
		if ref.Port != nil && *ref.Port != l.spec.Port {
			continue
		}
		cands = append(cands, l)
	}
	if len(cands) == 0 {
		if set != nil && set.rejectReason != "" {
			return reject(gwv1.RouteReasonNoMatchingParent, "ListenerSet is not accepted: "+set.rejectMsg)
		}
		if i := slices.IndexFunc(grp.gateways, func(g *gatewayObject) bool { return g.invalidReason == "" }); i < 0 && len(grp.gateways) > 0 {
			return reject(gwv1.RouteReasonNoMatchingParent, "Gateway is not accepted: "+grp.gateways[0].invalidMsg)
		}
		return reject(gwv1.RouteReasonNoMatchingParent, "No listener matches the parentRef sectionName and port")
	}
	var allowed []*listener
	wrongProtocol := false
	for _, l := range cands {
		kindOK := slices.ContainsFunc(l.kinds, func(k gwv1.RouteGroupKind) bool { return string(k.Kind) == r.kind })
		if !kindOK && defaultKinds(l.spec.Protocol) != nil && !slices.Contains(defaultKinds(l.spec.Protocol), r.kind) {
			wrongProtocol = true
		}
		if kindOK && t.allowsNamespace(l, r.cluster, r.namespace) {
			allowed = append(allowed, l)
		}
	}
	if len(allowed) == 0 {
		if r.kind == kindTLSRoute && wrongProtocol {
			// The TLSRoute API doc says UnsupportedValue, but conformance (v1.6 TLSRouteInvalidNoMatchingListener)
			// asks for NotAllowedByListeners, like every other kind a listener does not allow.
			return reject(gwv1.RouteReasonNotAllowedByListeners, "TLSRoute needs a listener of protocol TLS")
		}
		for _, l := range cands {
			if msg := unservableKind(l, r.kind); msg != "" {
				return reject(gwv1.RouteReasonNotAllowedByListeners, "No listener allows this route kind: "+msg)
			}
		}
		return reject(gwv1.RouteReasonNotAllowedByListeners, "No listener allows this route kind from this namespace")
	}
	var matched []match
	for _, l := range allowed {
		var hosts []string
		if r.usesHostname {
			hosts = intersectHostnames(l.hostname, r.hostnames)
			if len(hosts) == 0 {
				continue
			}
		}
		matched = append(matched, match{l, hosts})
	}
	if len(matched) == 0 {
		return reject(gwv1.RouteReasonNoMatchingListenerHostname, "No listener hostname matches the route hostnames")
	}
	if r.rules > 0 && len(r.badRules)+len(classBad) == r.rules {
		reason := cmp.Or(r.badReason, string(gwv1.RouteReasonUnsupportedValue))
		return reject(gwv1.RouteConditionReason(reason), "All rules are invalid: "+strings.Join(append(slices.Clone(r.badRules), classBad...), "; "))
	}
	if r.kind == kindHTTPRoute || r.kind == kindGRPCRoute {
		free := matched[:0] // filtered in place
		for _, m := range matched {
			if !webConflict(m.l, r, m.hosts) {
				free = append(free, m)
			}
		}
		if len(free) == 0 {
			return reject(gwv1.RouteReasonNotAllowedByListeners, "Hostnames conflict with an older route of the other kind (HTTPRoute/GRPCRoute) on every matching listener")
		}
		matched = free
	}
	if c, caps := grp.class, grp.class.caps.ForRouteKind(r.kind); caps.MaxRulesPerListener > 0 || caps.MaxHostnamesPerListener > 0 {
		var refusal string
		if matched, refusal = t.withinListenerLimits(r, c, matched); len(matched) == 0 {
			return reject(gwv1.RouteReasonUnsupportedValue, refusal)
		}
	}
	for _, m := range matched {
		if m.l.last == r {
			continue
		}
		m.l.attached++
		m.l.last = r
		switch r.kind {
		case kindTCPRoute, kindUDPRoute:
			// Every TCPRoute/UDPRoute on the listener is accepted and counted in attachedRoutes, but
			// only the oldest forwards (conformance TCP/UDPRouteMultipleRoutesAttachment, v1.6).
			if m.l.l4 == nil {
				m.l.l4 = r
			}
		default:
			m.l.hosts = append(m.l.hosts, attachment{route: r, hostnames: m.hosts})
			m.l.web.add(r.kind)
			t.scratch.kept = append(t.scratch.kept, keptAt{group: grp.idx, listener: m.l.idx, hostnames: m.hosts})
		}
	}
	return cond(string(gwv1.RouteConditionAccepted), true, string(gwv1.RouteReasonAccepted), "Route is accepted", gen)
}

// webKinds counts the HTTPRoutes and GRPCRoutes attached to a listener.
type webKinds struct{ http, grpc int }

func (w *webKinds) add(kind string) {
	switch kind {
	case kindHTTPRoute:
		w.http++
	case kindGRPCRoute:
		w.grpc++
	}
}

// match is a listener a route attaches to, with the hostnames it serves there.
type match struct {
	l     *listener
	hosts []string
}

// webConflict reports whether an HTTPRoute (GRPCRoute) would share a hostname of listener l with
// an already attached GRPCRoute (HTTPRoute): the spec accepts only the older of the two.
func webConflict(l *listener, r *route, hosts []string) bool {
	other := l.web.grpc
	if r.kind == kindGRPCRoute {
		other = l.web.http
	}
	if other == 0 {
		return false
	}
	for _, a := range l.hosts {
		if a.route.kind == r.kind || (a.route.kind != kindHTTPRoute && a.route.kind != kindGRPCRoute) {
			continue
		}
		for _, x := range a.hostnames {
			for _, y := range hosts {
				if hostMatches(x, y) || hostMatches(y, x) {
					return true
				}
			}
		}
	}
	return false
}
