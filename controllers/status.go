package controllers

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/fleetgate/fleetgate/controllers/translate"
)

// statusTarget is where the writer patches one cluster's objects.
type statusTarget struct {
	// Reader may be a cache: a write that conflicts with a newer object is retried after the queue's
	// backoff, by when the cache has caught up.
	Reader client.Reader
	// Live reads the API server itself. A cache that has not yet seen the writer's own last write
	// may show the status that write replaced, which can equal the one now wanted: the writer then
	// asks Live before it takes the write for a no-op.
	Live     client.Reader
	Writer   client.StatusClient
	Recorder events.EventRecorder
}

// StatusWriter is the one place fleetgate writes Gateway API status. Reconcilers hand it whole
// translation results; it diffs them against what it published last, queues the objects whose desired
// status changed (and the routes that no longer have any of our parents, to clear them), and patches
// /status in the right member cluster, skipping objects already in the desired state. It runs only on
// the leader.
type StatusWriter struct {
	log      logr.Logger
	features []gwv1.SupportedFeature
	metrics  *Metrics

	mu      sync.Mutex
	targets map[string]statusTarget
	desired map[translate.ObjectRef]*desiredStatus
	// passes numbers the Publish calls of each part; count holds how many desired entries each
	// part has, so that a Publish that named them all can skip looking for dropped ones.
	passes, count [2]uint64
	// written is the resourceVersion each object got from the writer's last write to it.
	written map[translate.ObjectRef]string
	// notified are the notices already turned into Events (notices.go).
	notified map[translate.Notice]bool
	queue    workqueue.TypedRateLimitingInterface[translate.ObjectRef]
	// countsDelay is how long the write of a Gateway or ListenerSet waits when only its listeners'
	// attachedRoutes changed (attachedRoutesDelay; shorter in tests).
	countsDelay time.Duration
}

// attachedRoutesDelay coalesces the writes of Gateways and ListenerSets whose only change is a
// listener's attachedRoutes. While routes are added one after another, each would otherwise cost
// one Gateway write in every member that has the Gateway, competing in the API servers with the
// writes of the routes' own Accepted; one write per Gateway in this period carries them all.
const attachedRoutesDelay = 250 * time.Millisecond

// desiredStatus is what fleetgate has to say about one object.
type desiredStatus struct {
	// want is a *ClassStatus, *GatewayStatus, *ListenerSetStatus, *RouteStatus, *PolicyStatus,
	// *IngressStatus or *ServiceStatus.
	want any
	// pass is the Publish of the object's part that last named it.
	pass uint64
}

// NewStatusWriter returns a writer that publishes features on every GatewayClass it accepts.
func NewStatusWriter(log logr.Logger, features []gwv1.SupportedFeature, m *Metrics) *StatusWriter {
	return &StatusWriter{
		log:         log,
		features:    features,
		metrics:     m,
		targets:     map[string]statusTarget{},
		desired:     map[translate.ObjectRef]*desiredStatus{},
		written:     map[translate.ObjectRef]string{},
		countsDelay: attachedRoutesDelay,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			statusRateLimiter(),
			workqueue.TypedRateLimitingQueueConfig[translate.ObjectRef]{Name: "status"}),
	}
}

// SetTarget registers (or replaces) the clients of one member cluster.
func (w *StatusWriter) SetTarget(cluster string, t statusTarget) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.targets[cluster] = t
}

// RemoveTarget forgets a member cluster that is no longer usable. Its queued objects are dropped:
// they left the translation with it and come back (and are written) when it returns.
func (w *StatusWriter) RemoveTarget(cluster string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.targets, cluster)
}

// statusPart is a subset of a translation's statuses that Publish records.
type statusPart int

const (
	// translated are GatewayClass and route statuses: final once translation ran, so they are
	// published before the dataplane is applied and a route's Accepted does not wait for delivery.
	translated statusPart = iota
	// applied are Gateway, ListenerSet, Ingress and LoadBalancer Service statuses, which carry the addresses
	// and Programmed that apply reports.
	applied
)

// partOf says which part a status of kind belongs to.
func partOf(kind string) statusPart {
	switch kind {
	case "Gateway", "ListenerSet", "Ingress", "Service":
		return applied
	}
	return translated
}

// Publish records one part of the statuses of a complete translation. Objects whose desired
// status did not change are not queued; objects of the part that dropped out of the result are
// queued so that write clears them.
func (w *StatusWriter) Publish(res *translate.Result, part statusPart) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.passes[part]++
	pass := w.passes[part]
	var named uint64
	// Every pass names thousands of unchanged routes: one map lookup each, no allocation.
	set := func(ref translate.ObjectRef, want any) {
		named++
		d := w.desired[ref]
		if d == nil {
			w.desired[ref] = &desiredStatus{want: want, pass: pass}
			w.count[part]++
			w.queue.Add(ref)
			return
		}
		switch {
		case sameStatus(d.want, want):
		case onlyAttachedRoutes(d.want, want):
			// A write already waiting is not postponed, and it writes the latest desired status.
			w.queue.AddAfter(ref, w.countsDelay)
		default:
			w.queue.Add(ref)
		}
		d.want, d.pass = want, pass
	}
	switch part {
	case translated:
		for i := range res.GatewayClasses {
			set(res.GatewayClasses[i].Ref, &res.GatewayClasses[i])
		}
		for i := range res.Routes {
			set(res.Routes[i].Ref, &res.Routes[i])
		}
		for i := range res.Policies {
			set(res.Policies[i].Ref, &res.Policies[i])
		}
	case applied:
		for i := range res.Gateways {
			set(res.Gateways[i].Ref, &res.Gateways[i])
		}
		for i := range res.ListenerSets {
			set(res.ListenerSets[i].Ref, &res.ListenerSets[i])
		}
		for i := range res.Ingresses {
			set(res.Ingresses[i].Ref, &res.Ingresses[i])
		}
		for i := range res.Services {
			set(res.Services[i].Ref, &res.Services[i])
		}
	}
	if named == w.count[part] {
		return // refs are unique in a result: nothing of this part dropped out
	}
	for ref, d := range w.desired {
		if d.pass != pass && partOf(ref.Kind) == part {
			delete(w.desired, ref)
			w.count[part]--
			w.queue.Add(ref) // write clears what fleetgate no longer has to say about it
		}
	}
}

// sameStatus compares two desired statuses exactly. Route statuses, by far the most numerous, are
// compared field by field, several times faster than reflect.DeepEqual; a false difference would
// cost only a write the writer finds to be a no-op.
func sameStatus(a, b any) bool {
	ra, ok := a.(*translate.RouteStatus)
	if !ok {
		return reflect.DeepEqual(a, b)
	}
	rb, ok := b.(*translate.RouteStatus)
	if !ok || ra.Ref != rb.Ref || ra.Generation != rb.Generation || len(ra.Parents) != len(rb.Parents) {
		return false
	}
	for i := range ra.Parents {
		pa, pb := &ra.Parents[i], &rb.Parents[i]
		if pa.ControllerName != pb.ControllerName || !sameParentRef(&pa.ParentRef, &pb.ParentRef) ||
			!slices.EqualFunc(pa.Conditions, pb.Conditions, sameCondition) {
			return false
		}
	}
	return true
}

// onlyAttachedRoutes tells whether two Gateway or ListenerSet statuses differ at most in their
// listeners' attachedRoutes.
func onlyAttachedRoutes(a, b any) bool {
	switch a := a.(type) {
	case *translate.GatewayStatus:
		b, ok := b.(*translate.GatewayStatus)
		return ok && sameButCounts(a, b, func(s *translate.GatewayStatus) *[]gwv1.ListenerStatus { return &s.Listeners },
			func(l *gwv1.ListenerStatus) *int32 { return &l.AttachedRoutes })
	case *translate.ListenerSetStatus:
		b, ok := b.(*translate.ListenerSetStatus)
		return ok && sameButCounts(a, b, func(s *translate.ListenerSetStatus) *[]gwv1.ListenerEntryStatus { return &s.Listeners },
			func(l *gwv1.ListenerEntryStatus) *int32 { return &l.AttachedRoutes })
	}
	return false
}

// sameButCounts compares a and b with b's listener counts replaced by a's.
func sameButCounts[S, L any](a, b *S, listeners func(*S) *[]L, count func(*L) *int32) bool {
	la, lb := *listeners(a), *listeners(b)
	if len(la) != len(lb) {
		return false
	}
	c := *b
	cl := slices.Clone(lb)
	for i := range cl {
		*count(&cl[i]) = *count(&la[i])
	}
	*listeners(&c) = cl
	return reflect.DeepEqual(a, &c)
}

func sameParentRef(a, b *gwv1.ParentReference) bool {
	return a.Name == b.Name && ptrEqual(a.Group, b.Group) && ptrEqual(a.Kind, b.Kind) &&
		ptrEqual(a.Namespace, b.Namespace) && ptrEqual(a.SectionName, b.SectionName) && ptrEqual(a.Port, b.Port)
}

func sameCondition(a, b metav1.Condition) bool {
	return a.Type == b.Type && a.Status == b.Status && a.Reason == b.Reason && a.Message == b.Message &&
		a.ObservedGeneration == b.ObservedGeneration && a.LastTransitionTime.Equal(&b.LastTransitionTime)
}

func ptrEqual[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// Requeue asks the writer to look at every object again, e.g. after the leader changed.
func (w *StatusWriter) Requeue() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for ref := range w.desired {
		w.queue.Add(ref)
	}
}

// NeedLeaderElection makes the writer run only on the leader.
func (w *StatusWriter) NeedLeaderElection() bool { return true }

// Start runs the writer until ctx ends.
func (w *StatusWriter) Start(ctx context.Context) error {
	go func() {
		<-ctx.Done()
		w.queue.ShutDown()
	}()
	w.Requeue()
	// Writes are API round trips; a few in flight keep a burst (a Gateway in every member, its routes)
	// from queueing behind one another. The queue never hands out one object twice at once.
	var wg sync.WaitGroup
	for range statusWorkers {
		wg.Go(func() { w.work(ctx) })
	}
	wg.Wait()
	return nil
}

const statusWorkers = 8

// statusRetryMax caps the backoff of a status write that keeps failing.
const statusRetryMax = 2 * time.Second

// statusRateLimiter backs retries off per object only, and not far: most failures are conflicts
// with our own previous write that the cache has not seen yet. The controller default (a shared
// 10/s bucket, backoff up to 1000 s) left Gateways unprogrammed for minutes after a burst of
// conflicts although their proxies had ACKed.
func statusRateLimiter() workqueue.TypedRateLimiter[translate.ObjectRef] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[translate.ObjectRef](5*time.Millisecond, statusRetryMax)
}

func (w *StatusWriter) work(ctx context.Context) {
	for {
		ref, shutdown := w.queue.Get()
		if shutdown {
			return
		}
		err := w.write(ctx, ref)
		w.queue.Done(ref)
		if err != nil {
			if apierrors.IsConflict(err) {
				// Expected: another writer, or our own last write the cache has not seen yet.
				w.log.V(1).Info("status conflict, retrying", "cluster", ref.Cluster, "kind", ref.Kind, "namespace", ref.Namespace, "name", ref.Name)
			} else {
				w.log.Error(err, "writing status", "cluster", ref.Cluster, "kind", ref.Kind, "namespace", ref.Namespace, "name", ref.Name)
			}
			w.queue.AddRateLimited(ref)
			continue
		}
		w.queue.Forget(ref)
	}
}

func (w *StatusWriter) write(ctx context.Context, ref translate.ObjectRef) error {
	w.mu.Lock()
	var want any
	d, known := w.desired[ref]
	if known {
		want = d.want
	}
	target, ok := w.targets[ref.Cluster]
	w.mu.Unlock()
	if !ok {
		w.log.V(1).Info("dropping status of a cluster that is not connected", "cluster", ref.Cluster, "kind", ref.Kind, "namespace", ref.Namespace, "name", ref.Name)
		return nil
	}
	if !known {
		want = clearedStatus(ref)
		if want == nil {
			return nil
		}
	}
	obj, err := newObject(ref.Kind)
	if err != nil {
		return err
	}
	start := time.Now()
	key := client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}
	if err := target.Reader.Get(ctx, key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			w.mu.Lock()
			delete(w.written, ref)
			w.mu.Unlock()
			return nil // deleted: nothing to write
		}
		return fmt.Errorf("reading %s %s: %w", ref.Kind, key, err)
	}
	before := obj.DeepCopyObject().(client.Object)
	transitions := applyStatus(obj, want, w.features)
	if equality.Semantic.DeepEqual(before, obj) {
		w.mu.Lock()
		rv, wrote := w.written[ref]
		w.mu.Unlock()
		if !wrote || rv == before.GetResourceVersion() || target.Live == nil {
			w.metrics.statusWrites.WithLabelValues(ref.Kind, "unchanged").Inc()
			return nil
		}
		// The cache may predate our last write, which changed the status: look at the object itself.
		if obj, err = newObject(ref.Kind); err != nil {
			return err
		}
		if err := target.Live.Get(ctx, key, obj); err != nil {
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("reading %s %s: %w", ref.Kind, key, err)
		}
		before = obj.DeepCopyObject().(client.Object)
		transitions = applyStatus(obj, want, w.features)
		if equality.Semantic.DeepEqual(before, obj) {
			w.mu.Lock()
			w.written[ref] = before.GetResourceVersion()
			w.mu.Unlock()
			w.metrics.statusWrites.WithLabelValues(ref.Kind, "unchanged").Inc()
			return nil
		}
	}
	if err := target.Writer.Status().Update(ctx, obj); err != nil {
		if apierrors.IsNotFound(err) {
			w.metrics.statusWrites.WithLabelValues(ref.Kind, "error").Inc()
			return nil // deleted since the cache read it
		}
		if apierrors.IsConflict(err) {
			// Someone else wrote the object, or the cache is behind: the retry reads it again.
			w.metrics.statusWrites.WithLabelValues(ref.Kind, "conflict").Inc()
			return fmt.Errorf("conflict writing %s %s status: %w", ref.Kind, key, err)
		}
		w.metrics.statusWrites.WithLabelValues(ref.Kind, "error").Inc()
		return fmt.Errorf("writing %s %s status: %w", ref.Kind, key, err)
	}
	w.mu.Lock()
	w.written[ref] = obj.GetResourceVersion()
	w.mu.Unlock()
	w.metrics.statusWrites.WithLabelValues(ref.Kind, "written").Inc()
	w.metrics.statusWriteSeconds.Observe(time.Since(start).Seconds())
	for _, c := range transitions {
		eventType := "Normal"
		if c.Status != metav1.ConditionTrue {
			eventType = "Warning"
		}
		if target.Recorder != nil {
			target.Recorder.Eventf(obj, nil, eventType, c.Reason, "StatusChanged", "%s=%s: %s", c.Type, c.Status, c.Message)
		}
	}
	return nil
}

// applyStatus merges the desired status into obj and returns the top-level conditions whose status
// or reason changed, for Events. Conditions keep their lastTransitionTime unless their status changes.
func applyStatus(obj client.Object, want any, features []gwv1.SupportedFeature) []metav1.Condition {
	switch o := obj.(type) {
	case *gwv1.GatewayClass:
		cs, ok := want.(*translate.ClassStatus)
		if !ok {
			return nil
		}
		changed := mergeConditions(&o.Status.Conditions, cs.Conditions)
		if meta.IsStatusConditionTrue(o.Status.Conditions, string(gwv1.GatewayClassConditionStatusAccepted)) {
			o.Status.SupportedFeatures = features
		}
		return changed
	case *gwv1.Gateway:
		gs, ok := want.(*translate.GatewayStatus)
		if !ok {
			return nil
		}
		changed := mergeConditions(&o.Status.Conditions, gs.Conditions)
		// Conditions fleetgate sets only while they apply go when they stop applying.
		o.Status.Conditions = slices.DeleteFunc(o.Status.Conditions, func(c metav1.Condition) bool {
			return optionalGatewayCondition(c.Type) && meta.FindStatusCondition(gs.Conditions, c.Type) == nil
		})
		o.Status.Addresses = gs.Addresses
		o.Status.AttachedListenerSets = gs.AttachedListenerSets
		o.Status.Listeners = mergeListeners(o.Status.Listeners, gs.Listeners,
			func(l *gwv1.ListenerStatus) (gwv1.SectionName, *[]metav1.Condition) { return l.Name, &l.Conditions })
		return changed
	case *gwv1.ListenerSet:
		ss, ok := want.(*translate.ListenerSetStatus)
		if !ok {
			return nil
		}
		changed := mergeConditions(&o.Status.Conditions, ss.Conditions)
		// The CRD defaults Accepted and Programmed to Unknown/Pending; drop any other type we did not set.
		o.Status.Conditions = keepOnly(o.Status.Conditions, ss.Conditions)
		o.Status.Listeners = mergeListeners(o.Status.Listeners, ss.Listeners,
			func(l *gwv1.ListenerEntryStatus) (gwv1.SectionName, *[]metav1.Condition) {
				return l.Name, &l.Conditions
			})
		return changed
	case *gwv1.BackendTLSPolicy:
		ps, ok := want.(*translate.PolicyStatus)
		if !ok {
			return nil
		}
		o.Status.Ancestors = mergeAncestors(o.Status.Ancestors, ps.Ancestors)
		return nil
	case *networkingv1.Ingress:
		if is, ok := want.(*translate.IngressStatus); ok {
			o.Status.LoadBalancer = *is.LoadBalancer.DeepCopy()
		}
		return nil
	case *corev1.Service:
		if ss, ok := want.(*translate.ServiceStatus); ok {
			o.Status.LoadBalancer = *ss.LoadBalancer.DeepCopy()
		}
		return nil
	default:
		rs, _ := want.(*translate.RouteStatus)
		parents := routeParents(obj)
		if parents == nil || rs == nil {
			return nil
		}
		*parents = mergeParents(*parents, rs.Parents)
		return nil
	}
}

// mergeListeners returns the wanted listener statuses, keeping the lastTransitionTime of conditions
// that did not change since current.
func mergeListeners[L any](current, want []L, key func(*L) (gwv1.SectionName, *[]metav1.Condition)) []L {
	out := make([]L, 0, len(want))
	for i := range want {
		l := want[i]
		name, conds := key(&l)
		var old *[]metav1.Condition
		if j := slices.IndexFunc(current, func(c L) bool { n, _ := key(&c); return n == name }); j >= 0 {
			_, old = key(&current[j])
		}
		*conds = carryConditions(old, *conds)
		out = append(out, l)
	}
	return out
}

// carryConditions returns want as an entry's new conditions: lastTransitionTime carried over from
// old (the entry's current conditions; nil for a new entry) where the status did not change, stamped
// now otherwise, and no condition type beyond want's.
func carryConditions(old *[]metav1.Condition, want []metav1.Condition) []metav1.Condition {
	if old == nil {
		out := slices.Clone(want)
		stampConditions(out)
		return out
	}
	merged := slices.Clone(*old)
	mergeConditions(&merged, want)
	return keepOnly(merged, want)
}

// mergeParents replaces fleetgate's RouteParentStatus entries and keeps other controllers' entries.
func mergeParents(current, ours []gwv1.RouteParentStatus) []gwv1.RouteParentStatus {
	out := make([]gwv1.RouteParentStatus, 0, len(current)+len(ours))
	for _, p := range current {
		if p.ControllerName != ControllerName {
			out = append(out, p)
		}
	}
	for _, p := range ours {
		p = *p.DeepCopy()
		var old *[]metav1.Condition
		if o := findParent(current, p.ParentRef); o != nil {
			old = &o.Conditions
		}
		p.Conditions = carryConditions(old, p.Conditions)
		out = append(out, p)
	}
	return out
}

// optionalGatewayCondition tells the Gateway condition types fleetgate sets only in some states
// (spec.tls): it removes them when translation no longer asks for them.
func optionalGatewayCondition(typ string) bool {
	switch gwv1.GatewayConditionType(typ) {
	case gwv1.GatewayConditionResolvedRefs, gwv1.GatewayConditionInsecureFrontendValidationMode:
		return true
	}
	return false
}

// maxPolicyAncestors is the API's limit on a policy's status.ancestors.
const maxPolicyAncestors = 16

// mergeAncestors replaces fleetgate's PolicyAncestorStatus entries and keeps other controllers'
// entries, within the API's limit (other controllers' entries come first).
func mergeAncestors(current, ours []gwv1.PolicyAncestorStatus) []gwv1.PolicyAncestorStatus {
	out := make([]gwv1.PolicyAncestorStatus, 0, len(current)+len(ours))
	for _, a := range current {
		if a.ControllerName != ControllerName {
			out = append(out, a)
		}
	}
	for _, a := range ours {
		if len(out) == maxPolicyAncestors {
			break
		}
		a = *a.DeepCopy()
		var old *[]metav1.Condition
		if o := findAncestor(current, a.AncestorRef); o != nil {
			old = &o.Conditions
		}
		a.Conditions = carryConditions(old, a.Conditions)
		out = append(out, a)
	}
	return out
}

func findAncestor(as []gwv1.PolicyAncestorStatus, ref gwv1.ParentReference) *gwv1.PolicyAncestorStatus {
	for i := range as {
		if as[i].ControllerName == ControllerName && equality.Semantic.DeepEqual(as[i].AncestorRef, ref) {
			return &as[i]
		}
	}
	return nil
}

// mergeConditions sets each wanted condition (stamping lastTransitionTime on a change) and returns
// the ones whose status or reason changed.
func mergeConditions(conds *[]metav1.Condition, want []metav1.Condition) []metav1.Condition {
	var changed []metav1.Condition
	for _, c := range want {
		old := meta.FindStatusCondition(*conds, c.Type)
		if old == nil || old.Status != c.Status || old.Reason != c.Reason {
			changed = append(changed, c)
		}
		meta.SetStatusCondition(conds, c)
	}
	return changed
}

// keepOnly drops conditions whose type is not wanted any more.
func keepOnly(conds, want []metav1.Condition) []metav1.Condition {
	return slices.DeleteFunc(conds, func(c metav1.Condition) bool {
		return meta.FindStatusCondition(want, c.Type) == nil
	})
}

func stampConditions(conds []metav1.Condition) {
	now := metav1.Now()
	for i := range conds {
		if conds[i].LastTransitionTime.IsZero() {
			conds[i].LastTransitionTime = now
		}
	}
}

func findParent(ps []gwv1.RouteParentStatus, ref gwv1.ParentReference) *gwv1.RouteParentStatus {
	for i := range ps {
		if ps[i].ControllerName == ControllerName && equality.Semantic.DeepEqual(ps[i].ParentRef, ref) {
			return &ps[i]
		}
	}
	return nil
}

// routeParents points at the parents list of any route kind.
func routeParents(obj client.Object) *[]gwv1.RouteParentStatus {
	switch r := obj.(type) {
	case *gwv1.HTTPRoute:
		return &r.Status.Parents
	case *gwv1.GRPCRoute:
		return &r.Status.Parents
	case *gwv1.TLSRoute:
		return &r.Status.Parents
	case *gwv1.TCPRoute:
		return &r.Status.Parents
	case *gwv1.UDPRoute:
		return &r.Status.Parents
	}
	return nil
}

func newObject(kind string) (client.Object, error) {
	switch kind {
	case "GatewayClass":
		return &gwv1.GatewayClass{}, nil
	case "Gateway":
		return &gwv1.Gateway{}, nil
	case "ListenerSet":
		return &gwv1.ListenerSet{}, nil
	case "HTTPRoute":
		return &gwv1.HTTPRoute{}, nil
	case "GRPCRoute":
		return &gwv1.GRPCRoute{}, nil
	case "TLSRoute":
		return &gwv1.TLSRoute{}, nil
	case "TCPRoute":
		return &gwv1.TCPRoute{}, nil
	case "UDPRoute":
		return &gwv1.UDPRoute{}, nil
	case "BackendTLSPolicy":
		return &gwv1.BackendTLSPolicy{}, nil
	case "Ingress":
		return &networkingv1.Ingress{}, nil
	case "IngressClass":
		return &networkingv1.IngressClass{}, nil
	case "Service":
		return &corev1.Service{}, nil
	}
	return nil, fmt.Errorf("status of kind %q is not written by fleetgate", kind)
}
