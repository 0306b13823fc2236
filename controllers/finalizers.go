package controllers

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/controllers/translate"
)

// Finalizer writes are metadata patches on the objects that own load balancers.
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=gateways,verbs=patch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses,verbs=patch
// +kubebuilder:rbac:groups="",resources=services,verbs=patch

// provisioned is what the finalizers need of the provisioning engine.
type provisioned interface {
	// Settled tells that the provider has no work left for the gateway.
	Settled(gateway string) bool
	// Swept tells that the orphan sweep after the first translation cleaned up.
	Swept() bool
}

// finalizers puts v1alpha1.FinalizerLoadBalancer on every Gateway, Ingress and LoadBalancer
// Service whose gateway a registered provider builds, and takes it off a deleting object once the
// provider is done with it: its gateway deleted, or ensured without it. An object deleted while
// the operator was down, whose gateway it cannot know, is released after the first orphan sweep.
// It runs on the leader, woken by translations and provider results.
type finalizers struct {
	log     logr.Logger
	sources func() []ClusterReader
	clients func(cluster string) (client.Client, error)
	engine  provisioned
	wake    chan struct{}

	mu sync.Mutex
	// want maps the objects of the latest translation whose gateway is provisioned to its key.
	want map[translate.ObjectRef]string
	// seen is the last gateway key of every object translation reported, to tie a deleting object
	// (which translation no longer sees) to its gateway.
	seen map[translate.ObjectRef]string
	// held are the objects known to carry the finalizer, so that they are not read again.
	held map[translate.ObjectRef]bool
}

func newFinalizers(log logr.Logger, sources func() []ClusterReader, clients func(string) (client.Client, error), engine provisioned) *finalizers {
	return &finalizers{log: log, sources: sources, clients: clients, engine: engine, wake: make(chan struct{}, 1),
		want: map[translate.ObjectRef]string{}, seen: map[translate.ObjectRef]string{}, held: map[translate.ObjectRef]bool{}}
}

// poke asks for a pass; it never blocks. A nil receiver (a Dataplane without Setup) ignores it.
func (f *finalizers) poke() {
	if f == nil {
		return
	}
	select {
	case f.wake <- struct{}{}:
	default: // a pass is already due
	}
}

// observe records the objects of a translation whose gateway is in provisioned.
func (f *finalizers) observe(res *translate.Result, provisioned map[string]bool) {
	if f == nil {
		return
	}
	want := map[translate.ObjectRef]string{}
	add := func(ref translate.ObjectRef, gw string) {
		if provisioned[gw] {
			want[ref] = gw
		}
	}
	for _, g := range res.Gateways {
		add(g.Ref, g.Gateway)
	}
	for _, i := range res.Ingresses {
		add(i.Ref, i.Gateway)
	}
	for _, s := range res.Services {
		add(s.Ref, s.Gateway)
	}
	f.mu.Lock()
	f.want = want
	maps.Copy(f.seen, want)
	f.mu.Unlock()
	f.poke()
}

// Start runs passes until ctx is cancelled; a pass that failed is tried again after a second.
func (f *finalizers) Start(ctx context.Context) error {
	retry := time.NewTimer(0)
	defer retry.Stop()
	<-retry.C
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-f.wake:
		case <-retry.C:
		}
		if err := f.pass(ctx); err != nil && ctx.Err() == nil {
			f.log.V(1).Info("finalizers: will retry", "error", err.Error())
			retry.Reset(time.Second)
		}
	}
}

// NeedLeaderElection: finalizers follow the leader's engine.
func (f *finalizers) NeedLeaderElection() bool { return true }

// pass adds the missing finalizers and releases the deleting objects the provider is done with.
func (f *finalizers) pass(ctx context.Context) error {
	f.mu.Lock()
	want := maps.Clone(f.want)
	f.mu.Unlock()
	readers := map[string]client.Reader{}
	leaving := map[string]bool{}
	for _, s := range f.sources() {
		if s.Reader != nil {
			readers[s.Cluster] = s.Reader
		}
		leaving[s.Cluster] = s.Leaving
	}
	var failed error
	for ref, gw := range want {
		if f.isHeld(ref) || readers[ref.Cluster] == nil {
			continue
		}
		obj, err := objectOf(ref.Kind)
		if err != nil {
			continue
		}
		if err := readers[ref.Cluster].Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, obj); err != nil {
			if !apierrors.IsNotFound(err) {
				failed = err
			}
			continue
		}
		if obj.GetDeletionTimestamp() != nil {
			continue
		}
		if !controllerutil.ContainsFinalizer(obj, v1alpha1.FinalizerLoadBalancer) {
			if err := f.patch(ctx, ref.Cluster, obj, true); err != nil {
				failed = err
				continue
			}
			f.log.V(1).Info("finalizer added", "object", ref, "gateway", gw)
		}
		f.hold(ref)
	}
	deleting := map[translate.ObjectRef]bool{}
	for cluster, r := range readers {
		for _, kind := range loadBalancerKinds() {
			if err := f.release(ctx, cluster, leaving[cluster], kind, r, want, deleting); err != nil {
				failed = err
			}
		}
	}
	if failed == nil {
		f.prune(want, deleting, readers)
	}
	return failed
}

// prune forgets the objects that are neither in the latest translation nor waiting for release,
// in the clusters it could read.
func (f *finalizers) prune(want map[translate.ObjectRef]string, deleting map[translate.ObjectRef]bool, readers map[string]client.Reader) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for ref := range f.seen {
		if _, ok := want[ref]; !ok && !deleting[ref] && readers[ref.Cluster] != nil {
			delete(f.seen, ref)
		}
	}
	for ref := range f.held {
		if _, ok := want[ref]; !ok {
			delete(f.held, ref)
		}
	}
}

// release takes the finalizer off the deleting objects of one kind in one cluster once their
// gateway is settled; in a leaving cluster (whose MemberCluster is being deleted), off every object:
// fleetgate lets go of them all.
func (f *finalizers) release(ctx context.Context, cluster string, leaving bool, kind string, r client.Reader, want map[translate.ObjectRef]string, deleting map[translate.ObjectRef]bool) error {
	probe, err := objectOf(kind)
	if err != nil {
		return err
	}
	objs, err := listObjects(ctx, r, probe)
	if err != nil {
		return fmt.Errorf("listing %ss in cluster %s: %w", kind, cluster, err)
	}
	var failed error
	for _, obj := range objs {
		if obj.GetDeletionTimestamp() == nil && !leaving || !controllerutil.ContainsFinalizer(obj, v1alpha1.FinalizerLoadBalancer) {
			continue
		}
		ref := translate.ObjectRef{Cluster: cluster, Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}
		if _, live := want[ref]; live {
			continue // the latest translation still built with it
		}
		deleting[ref] = true
		f.mu.Lock()
		gw, known := f.seen[ref]
		f.mu.Unlock()
		if known && !f.engine.Settled(gw) || !known && !f.engine.Swept() {
			continue
		}
		obj, ok := obj.DeepCopyObject().(client.Object)
		if !ok {
			continue
		}
		if err := f.patch(ctx, cluster, obj, false); err != nil {
			failed = err
			continue
		}
		f.log.Info("finalizer released", "object", ref, "gateway", gw, "gatewayKnown", known)
	}
	return failed
}

func (f *finalizers) isHeld(ref translate.ObjectRef) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.held[ref]
}

func (f *finalizers) hold(ref translate.ObjectRef) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.held[ref] = true
}
