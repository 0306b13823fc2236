package controllers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/controllers/records"
	"github.com/fleetgate/fleetgate/controllers/snapshot"
	"github.com/fleetgate/fleetgate/controllers/translate"
)

// fleetKey is the one work key of the Gateway API pipeline. Translation sees every gateway at once,
// so that RouteParentStatus (a route may name Gateways of several classes) is always computed
// whole; the work queue coalesces bursts of events into one pass.
var fleetKey = reconcile.Request{NamespacedName: types.NamespacedName{Name: "fleet"}}

// deliveryKey is queued when only the proxies' delivery state changed (an ACK, a NACK, a replica
// connecting or leaving): Programmed is merged again into the last translation's statuses,
// without reading, translating and applying everything for it. Both keys go through the one
// worker, so they never run at once.
var deliveryKey = reconcile.Request{NamespacedName: types.NamespacedName{Name: "delivery"}}

// Applier makes a translation real (providers, dataplane config) and reports, per gateway key, whether
// it is programmed. It may be nil until a provider is wired. Programmed reports the same again as
// of now, for what the last Apply published; CloudAccounts, per GatewayClass name, what the latest
// provider calls of its Gateways said of its cloud account.
type Applier interface {
	Apply(ctx context.Context, res *translate.Result) (map[string]translate.Programmed, error)
	Programmed() map[string]translate.Programmed
	CloudAccounts() map[string]translate.CloudAccount
}

// GatewayReconciler runs the pipeline: snapshot → translate → apply → status.
type GatewayReconciler struct {
	// Clusters returns the member clusters to read, each through its informer cache.
	Clusters func() []ClusterReader
	// Translator reuses compiled routes between passes; nil translates from scratch each time.
	Translator *translate.Memo
	Apply      Applier
	Status     *StatusWriter
	Metrics    *Metrics
	// DNS publishes the gateways' hostnames as DNSEndpoints; nil publishes none.
	DNS *dnsPublisher
	// Awaiting, when set, names the member clusters not settled yet (fleet.Fleet.Settled): the
	// first translation waits for them, up to memberWait.
	Awaiting func(ctx context.Context) ([]string, error)

	// kinds is the table of input kinds, set by SetupWithManager.
	kinds []kind
	// lastTranslation holds the Gateway, Ingress and Service statuses of the last full pass as
	// translation computed them, before apply's verdict; only the one worker touches it.
	lastTranslation *translate.Result
	// lastSnapshot and lastResult are the last full pass's input and output, from which the DNS
	// records are computed again when only apply's verdict changed; only the one worker touches them.
	lastSnapshot *snapshot.Snapshot
	lastResult   *translate.Result
	// dnsInputs are what the DNS records were last built from; only the one worker touches them.
	dnsInputs dnsInputs
	// served is what each Ingress and LoadBalancer Service was last given while its gateway was
	// programmed (keepServed); only the one worker touches it.
	served map[translate.ObjectRef]servedStatus
	// records hands the DNS records of one pass on to the next where they are the same; order
	// the order of the snapshot's lists.
	records records.Memo
	order   snapshot.Order
	// settled is set once the members were awaited (Awaiting); waitingSince is when that began.
	settled      bool
	waitingSince time.Time
	// applied is set once a full pass was applied: this replica has configs for its proxies.
	applied atomic.Bool
}

// memberWait bounds how long the first translation waits for the member clusters to connect: one
// that cannot be reached is not waited for past it (its objects join when it connects).
const memberWait = 30 * time.Second

// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// SetupWithManager watches every input kind in the manager's cluster when watchKinds is set (the
// fleet watches them otherwise), fleetgate's proxy Deployments there when watchHub is, and the
// events channels (proxies exiting, member clusters' informers), and the delivery channel (proxy ACKs).
func (r *GatewayReconciler) SetupWithManager(mgr ctrl.Manager, events []<-chan event.GenericEvent, delivery <-chan event.GenericEvent, watchKinds, watchHub, legacyReferencePolicy, skipNameValidation bool) error {
	toFleet := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{fleetKey}
	})
	toDelivery := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{deliveryKey}
	})
	// Every replica translates, so that a follower serves its proxies current configs: status
	// writes, provider calls and Events are the leader's alone (their own runnables).
	b := ctrl.NewControllerManagedBy(mgr).Named("gateway-api").
		WithOptions(controller.Options{SkipNameValidation: &skipNameValidation, NeedLeaderElection: ptr.To(false)})
	r.kinds = kinds()
	if watchKinds {
		changed := inputChangedPredicate(newUpdateFilter(r.kinds))
		for _, k := range r.kinds {
			b = b.Watches(k.object(), toFleet, builder.WithPredicates(changed))
		}
	}
	if watchHub {
		// A proxy Deployment becoming available can make its gateway programmed.
		b = b.Watches(&appsv1.Deployment{}, toFleet)
	}
	for _, ch := range events {
		if ch != nil {
			b = b.WatchesRawSource(source.Channel(ch, toFleet))
		}
	}
	if delivery != nil {
		b = b.WatchesRawSource(source.Channel(delivery, toDelivery))
	}
	if watchHub && legacyReferencePolicy {
		policy := &unstructured.Unstructured{}
		policy.SetGroupVersionKind(referencePolicyGVK())
		b = b.Watches(policy, toFleet)
	}
	return b.Complete(r)
}

// Reconcile translates the whole snapshot and publishes the result, or for deliveryKey only
// what the proxies' latest ACKs change.
func (r *GatewayReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if req == deliveryKey && r.lastTranslation != nil && r.Apply != nil {
		res := r.lastTranslation.Applied()
		programmed := r.Apply.Programmed()
		r.setProgrammed(res, programmed)
		r.publishDNS(r.lastSnapshot, r.lastResult, programmed)
		r.Status.Publish(res, applied)
		r.Status.Notify(ctx, res.Notices)
		return reconcile.Result{}, nil
	}
	if wait, err := r.awaitMembers(ctx); wait > 0 || err != nil {
		return reconcile.Result{RequeueAfter: wait}, err
	}
	start := time.Now()
	snap, err := buildSnapshot(ctx, r.kinds, r.Clusters(), &r.order)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("building snapshot: %w", err)
	}
	var pass *translate.Pass
	if r.Translator != nil {
		pass = r.Translator.Begin(snap)
	} else {
		pass = translate.Begin(snap)
	}
	// Route and policy statuses do not depend on the configs of the gateways nor on the
	// dataplane (Early: they are final), so they are published while those are built and
	// applied: a route's Accepted does not wait for its dataplane, nor its first request for the
	// comparison of every route's status (a third of a pass's critical path at 20,000 routes).
	early := make(chan struct{})
	var earlyPanic any // handed back to this goroutine, where the controller recovers from panics
	go func() {
		defer close(early)
		defer func() { earlyPanic = recover() }()
		r.Status.Publish(pass.Early(), translated)
	}()
	res := pass.Finish()
	r.Metrics.translateSeconds.Observe(time.Since(start).Seconds())
	r.Metrics.observeSnapshot(r.kinds, snap)

	var applyErr error
	if r.Apply != nil {
		r.lastTranslation = res.Applied()
		var programmed map[string]translate.Programmed
		programmed, applyErr = r.Apply.Apply(ctx, res)
		r.setProgrammed(res, programmed)
		if applyErr == nil {
			r.lastSnapshot, r.lastResult = snap, res
			r.publishDNS(snap, res, programmed)
		}
	}
	// Status is published even when apply failed: the conditions translation computed are true
	// regardless, and Programmed stays Pending for what apply did not confirm.
	<-early
	if earlyPanic != nil {
		panic(earlyPanic)
	}
	r.Status.Publish(res, applied)
	r.Status.Notify(ctx, res.Notices)
	log.FromContext(ctx).V(1).Info("translated", "gateways", len(res.Configs), "routes", len(res.Routes), "took", time.Since(start))
	if applyErr != nil {
		return reconcile.Result{}, fmt.Errorf("applying: %w", applyErr)
	}
	r.applied.Store(true)
	return reconcile.Result{}, nil
}

// Applied is a readiness check: a replica takes proxies (through the config server's Service) only
// once it has configs to give them, so that a proxy moving to a replica that just started does not
// wait on it (nor drop out of its gateway's Programmed meanwhile).
func (r *GatewayReconciler) Applied(*http.Request) error {
	if !r.applied.Load() {
		return errors.New("the first translation has not been applied yet")
	}
	return nil
}

// awaitMembers holds the first translation until every MemberCluster is connected or known not
// to answer: a replica that translated without a member about to connect would take its routes and
// backends away from the proxies it serves (a replica starting in a rolling upgrade, say). It
// returns how long to wait before looking again; 0 once settled.
func (r *GatewayReconciler) awaitMembers(ctx context.Context) (time.Duration, error) {
	if r.settled || r.Awaiting == nil {
		return 0, nil
	}
	waiting, err := r.Awaiting(ctx)
	if err != nil {
		return 0, fmt.Errorf("looking for member clusters still connecting: %w", err)
	}
	if r.waitingSince.IsZero() {
		r.waitingSince = time.Now()
	}
	switch {
	case len(waiting) == 0:
	case time.Since(r.waitingSince) < memberWait:
		log.FromContext(ctx).V(1).Info("waiting for member clusters before the first translation", "members", waiting)
		return 250 * time.Millisecond, nil
	default:
		log.FromContext(ctx).Info("translating without member clusters that did not connect in time; they join when they do",
			"members", waiting, "waited", memberWait)
	}
	r.settled = true
	return 0, nil
}

// setProgrammed merges apply's verdict per gateway into res: Programmed conditions, the
// addresses of Ingresses and Services, which keep what they were served while their gateway is
// only pending, and the classes' cloud accounts.
func (r *GatewayReconciler) setProgrammed(res *translate.Result, programmed map[string]translate.Programmed) {
	for gw, p := range programmed {
		res.SetProgrammed(gw, p)
		res.SetLoadBalancerStatus(gw, p)
	}
	for class, a := range r.Apply.CloudAccounts() {
		res.SetCloudAccount(class, a)
	}
	if r.served == nil {
		r.served = map[translate.ObjectRef]servedStatus{}
	}
	keepServed(res, programmed, r.served)
	if r.DNS != nil {
		setDNSPublished(res, r.DNS.Verdicts())
	}
}

// publishDNS hands the records of a whole pass to the DNS publisher. Only complete passes get
// here: a pass that failed to read or apply never takes records away.
func (r *GatewayReconciler) publishDNS(snap *snapshot.Snapshot, res *translate.Result, programmed map[string]translate.Programmed) {
	if r.DNS == nil || snap == nil || res == nil {
		return
	}
	retained := r.DNS.Retained()
	in := newDNSInputs(snap, res, programmed, retained)
	if in.same(&r.dnsInputs) {
		return // the records would be those of the last build, which the publisher has
	}
	r.dnsInputs = in
	d := &dnsDesired{owners: r.records.Build(snap, res, programmed, retained), clusters: res.Clusters, hubNamespaces: map[string]bool{}, retained: retained, zones: res.DNS}
	for _, ns := range snap.Namespaces {
		if ns.Cluster == v1alpha1.HubCluster {
			d.hubNamespaces[ns.Obj.Name] = true
		}
	}
	r.DNS.Set(d)
}
