package fleet

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
)

// Reconciler connects the hub's MemberClusters and reports their health on their status.
type Reconciler struct {
	Fleet *Fleet
	// Client reads MemberClusters and kubeconfig Secrets in the hub and writes MemberCluster status.
	Client   client.Client
	Recorder events.EventRecorder
	// HubVersion is the hub's Kubernetes version, reported on a MemberCluster named "hub".
	HubVersion string
	// Releaser, when set, holds every member's MemberCluster (but the hub's own) with
	// v1alpha1.FinalizerMember until what fleetgate made for the member is released; nil lets
	// MemberClusters go at once, their members merely disconnected.
	Releaser Releaser
	// ReleaseTimeout is how long a leaving member must have been unreachable before its
	// MemberCluster goes with its objects uncleaned; zero means DefaultReleaseTimeout.
	ReleaseTimeout time.Duration
}

// +kubebuilder:rbac:groups=fleetgate.dev,resources=memberclusters,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=fleetgate.dev,resources=memberclusters/status,verbs=patch

// SetupWithManager watches MemberClusters, the Secrets in the operator namespace they name, and the
// fleet's own health changes.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, skipNameValidation bool) error {
	if err := mgr.Add(r.Fleet); err != nil {
		return fmt.Errorf("adding fleet: %w", err)
	}
	bySecret := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		if o.GetNamespace() != r.Fleet.o.Namespace {
			return nil
		}
		var list v1alpha1.MemberClusterList
		if err := r.Client.List(ctx, &list); err != nil {
			return nil
		}
		var out []reconcile.Request
		for _, mc := range list.Items {
			if mc.Spec.KubeconfigSecretRef.Name == o.GetName() {
				out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: mc.Name}})
			}
		}
		return out
	})
	if err := mgr.Add(elected{r}); err != nil {
		return fmt.Errorf("adding the MemberClusters' look on election: %w", err)
	}
	return ctrl.NewControllerManagedBy(mgr).Named("membercluster").
		// Every replica connects the members; patchStatus writes on the leader only.
		WithOptions(controller.Options{SkipNameValidation: &skipNameValidation, MaxConcurrentReconciles: 4, NeedLeaderElection: ptr.To(false)}).
		For(&v1alpha1.MemberCluster{}).
		Watches(&corev1.Secret{}, bySecret).
		WatchesRawSource(source.Channel(r.Fleet.health, &handler.EnqueueRequestForObject{})).
		Complete(r)
}

// elected has the reconciler look at every MemberCluster again once this replica leads: before,
// it wrote neither their status nor their finalizers, and a connected member is not looked at
// again without news.
type elected struct{ r *Reconciler }

// NeedLeaderElection: it starts when this replica is elected.
func (elected) NeedLeaderElection() bool { return true }

// Start queues every MemberCluster once; a failed list is tried again every second (returning an
// error would stop the manager).
func (e elected) Start(ctx context.Context) error {
	var list v1alpha1.MemberClusterList
	for {
		err := e.r.Client.List(ctx, &list)
		if err == nil {
			break
		}
		e.r.Fleet.o.Log.Error(err, "listing the MemberClusters to look at them as the leader; retrying")
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
	for i := range list.Items {
		select {
		case e.r.Fleet.health <- event.GenericEvent{Object: &list.Items[i]}:
		case <-ctx.Done():
			return nil
		}
	}
	return nil
}

// Reconcile connects, reconnects (changed kubeconfig, or back after being unreachable) or
// disconnects one member, in the Cluster API shape: it observes the member afresh (never trusting
// the conditions it set before), sets its conditions with pure functions, and writes the status
// once, deferred, when it changed.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (_ reconcile.Result, retErr error) {
	f := r.Fleet
	var mc v1alpha1.MemberCluster
	if err := r.Client.Get(ctx, req.NamespacedName, &mc); err != nil {
		if apierrors.IsNotFound(err) {
			f.disconnect(req.Name)
			f.setLeaving(req.Name, false) // released by the leader, when this replica follows
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("reading MemberCluster %s: %w", req.Name, err)
	}
	hub := mc.Name == v1alpha1.HubCluster && f.o.Hub != nil
	leaving := !hub && !mc.DeletionTimestamp.IsZero()
	if leaving && (r.Releaser == nil || !controllerutil.ContainsFinalizer(&mc, v1alpha1.FinalizerMember)) {
		f.disconnect(mc.Name)
		f.setLeaving(mc.Name, false)
		return reconcile.Result{}, nil
	}
	if !hub && !leaving && r.Releaser != nil {
		if err := r.holdMember(ctx, &mc); err != nil {
			return reconcile.Result{}, err
		}
	}
	before := mc.DeepCopy()
	released := false
	defer func() {
		if !released {
			retErr = errors.Join(retErr, r.patchStatus(ctx, before, &mc))
		}
	}()
	var o observation
	if hub {
		o = r.observeHub(&mc)
	} else {
		o = r.observe(ctx, &mc)
		f.markObserved(mc.Name)
	}
	setReadyCondition(&mc, o)
	setPrerequisitesCondition(&mc, o)
	setKubernetesVersion(&mc, o)
	requeue := requeueAfter(o, f.o.ProbeInterval)
	if leaving {
		var after time.Duration
		var err error
		if released, after, err = r.release(ctx, &mc, o); err != nil || released {
			return reconcile.Result{}, err
		}
		if requeue == 0 || after < requeue {
			requeue = after
		}
	}
	return reconcile.Result{RequeueAfter: requeue}, nil
}

// observeHub: the hub is read through the manager's own cache; its MemberCluster carries its weight.
func (r *Reconciler) observeHub(mc *v1alpha1.MemberCluster) observation {
	if r.Fleet.setWeight(v1alpha1.HubCluster, mc.Spec.Weight) {
		r.Fleet.changed(v1alpha1.HubCluster)
	}
	var missing []string
	r.Fleet.mu.RLock()
	if k := r.Fleet.hubKinds; k != nil {
		missing = k.Missing()
	}
	r.Fleet.mu.RUnlock()
	return observation{hub: true, member: state{known: true, synced: true, healthy: true, version: r.HubVersion, missing: missing}}
}

// observe looks at a member in order — its kubeconfig Secret, the connection built from it, then
// the fleet's record of its probe and caches — connecting, reconnecting or disconnecting it on the
// way, and returns what it found.
func (r *Reconciler) observe(ctx context.Context, mc *v1alpha1.MemberCluster) observation {
	f := r.Fleet
	cfgBytes, err := r.kubeconfig(ctx, mc)
	if err != nil {
		f.disconnect(mc.Name)
		return observation{kubeconfigErr: err}
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(cfgBytes)
	if err != nil {
		f.disconnect(mc.Name)
		return observation{kubeconfigErr: fmt.Errorf("kubeconfig in Secret %s/%s: %w", f.o.Namespace, mc.Spec.KubeconfigSecretRef.Name, err)}
	}
	weight := mc.Spec.Weight // the API server defaults it to v1alpha1.DefaultClusterWeight
	sum := sha256.Sum256(cfgBytes)
	hash := hex.EncodeToString(sum[:])
	st := f.state(mc.Name)
	if st.known && (st.hash != hash || st.stale) {
		log.FromContext(ctx).Info("reconnecting member", "kubeconfigChanged", st.hash != hash, "resync", st.stale)
		f.disconnect(mc.Name)
		st = state{}
	}
	if st.known {
		if f.setWeight(mc.Name, weight) {
			f.changed(mc.Name)
		}
		return observation{member: st}
	}
	if err := f.connect(ctx, mc.Name, hash, weight, cfg); err != nil {
		return observation{connectErr: err}
	}
	return observation{member: f.state(mc.Name)}
}

// kubeconfig reads the member's kubeconfig from its Secret in the operator namespace.
func (r *Reconciler) kubeconfig(ctx context.Context, mc *v1alpha1.MemberCluster) ([]byte, error) {
	ref := mc.Spec.KubeconfigSecretRef
	key := cmp.Or(ref.Key, "kubeconfig")
	var sec corev1.Secret
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: r.Fleet.o.Namespace, Name: ref.Name}, &sec); err != nil {
		return nil, fmt.Errorf("reading kubeconfig Secret %s/%s: %w", r.Fleet.o.Namespace, ref.Name, err)
	}
	data := sec.Data[key]
	if len(data) == 0 {
		return nil, fmt.Errorf("secret %s/%s has no key %q", r.Fleet.o.Namespace, ref.Name, key)
	}
	return data, nil
}

// patchStatus writes mc's status when it differs from before's, and records an Event when Ready
// changed status or reason.
func (r *Reconciler) patchStatus(ctx context.Context, before, mc *v1alpha1.MemberCluster) error {
	if equalStatus(before.Status, mc.Status) || !r.Fleet.leads() {
		return nil
	}
	if err := r.Client.Status().Patch(ctx, mc, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("writing MemberCluster %s status: %w", mc.Name, err)
	}
	if c, ok := transition(before, mc, PrerequisitesInstalled); ok && r.Recorder != nil {
		eventType := corev1.EventTypeNormal
		if c.Status != metav1.ConditionTrue {
			eventType = corev1.EventTypeWarning
		}
		r.Recorder.Eventf(mc, nil, eventType, c.Reason, "Prerequisites", "%s=%s: %s", c.Type, c.Status, c.Message)
	}
	ready := meta.FindStatusCondition(mc.Status.Conditions, v1alpha1.MemberClusterReady)
	if ready == nil {
		return nil
	}
	if readyTransition(before, mc) && r.Recorder != nil {
		eventType := corev1.EventTypeNormal
		if ready.Status != metav1.ConditionTrue {
			eventType = corev1.EventTypeWarning
		}
		r.Recorder.Eventf(mc, nil, eventType, ready.Reason, "Health", "Ready=%s: %s", ready.Status, ready.Message)
	}
	log.FromContext(ctx).V(1).Info("member status", "ready", ready.Status, "reason", ready.Reason)
	return nil
}
