package fleet

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/fleetgate/fleetgate/api/v1alpha1"
)

// reasonConnecting: the member's kubeconfig works but its caches have not synced yet.
const reasonConnecting = "Connecting"

// Reconciler connects the hub's MemberClusters and reports their health on their status.
type Reconciler struct {
	Fleet *Fleet
	// Client reads MemberClusters and kubeconfig Secrets in the hub and writes MemberCluster status.
	Client   client.Client
	Recorder events.EventRecorder
	// HubVersion is the hub's Kubernetes version, reported on a MemberCluster named "hub".
	HubVersion string
}

// +kubebuilder:rbac:groups=fleetgate.dev,resources=memberclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=fleetgate.dev,resources=memberclusters/status,verbs=get;update;patch

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
	return ctrl.NewControllerManagedBy(mgr).Named("membercluster").
		WithOptions(controller.Options{SkipNameValidation: &skipNameValidation, MaxConcurrentReconciles: 4}).
		For(&v1alpha1.MemberCluster{}).
		Watches(&corev1.Secret{}, bySecret).
		WatchesRawSource(source.Channel(r.Fleet.health, &handler.EnqueueRequestForObject{})).
		Complete(r)
}

// Reconcile connects, reconnects (changed kubeconfig, or back after being unreachable) or
// disconnects one member and writes its Ready condition.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	f := r.Fleet
	var mc v1alpha1.MemberCluster
	if err := r.Client.Get(ctx, req.NamespacedName, &mc); err != nil {
		if apierrors.IsNotFound(err) {
			f.disconnect(req.Name)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("reading MemberCluster %s: %w", req.Name, err)
	}
	weight := mc.Spec.Weight // the API server defaults it to DefaultWeight
	if mc.Name == HubCluster && f.o.Hub != nil {
		// The hub is read through the manager's own cache; its MemberCluster carries its weight.
		if f.setWeight(HubCluster, weight) {
			f.changed(HubCluster)
		}
		return reconcile.Result{}, r.setReady(ctx, &mc, metav1.ConditionTrue, v1alpha1.MemberReasonConnected,
			"the operator's own cluster", r.HubVersion)
	}
	if !mc.DeletionTimestamp.IsZero() {
		f.disconnect(mc.Name)
		return reconcile.Result{}, nil
	}
	cfgBytes, err := r.kubeconfig(ctx, &mc)
	if err != nil {
		f.disconnect(mc.Name)
		return reconcile.Result{}, r.setReady(ctx, &mc, metav1.ConditionFalse, v1alpha1.MemberReasonKubeconfigInvalid, err.Error(), "")
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(cfgBytes)
	if err != nil {
		f.disconnect(mc.Name)
		return reconcile.Result{}, r.setReady(ctx, &mc, metav1.ConditionFalse, v1alpha1.MemberReasonKubeconfigInvalid,
			fmt.Sprintf("Secret %s/%s: %v", f.o.Namespace, mc.Spec.KubeconfigSecretRef.Name, err), "")
	}
	sum := sha256.Sum256(cfgBytes)
	hash := hex.EncodeToString(sum[:])
	st := f.state(mc.Name)
	if st.known && (st.hash != hash || st.stale) {
		log.FromContext(ctx).Info("reconnecting member", "kubeconfigChanged", st.hash != hash, "resync", st.stale)
		f.disconnect(mc.Name)
		st = state{}
	}
	if !st.known {
		if err := f.connect(ctx, mc.Name, hash, weight, cfg); err != nil {
			// Requeue at the probe's pace: "Unreachable within 10s" holds for members that were
			// never reachable too.
			return reconcile.Result{RequeueAfter: f.o.ProbeInterval}, r.setReady(ctx, &mc, metav1.ConditionFalse,
				v1alpha1.MemberReasonUnreachable, err.Error(), "")
		}
		st = f.state(mc.Name)
	} else if f.setWeight(mc.Name, weight) {
		f.changed(mc.Name)
	}
	switch {
	case !st.healthy:
		return reconcile.Result{}, r.setReady(ctx, &mc, metav1.ConditionFalse, v1alpha1.MemberReasonUnreachable,
			"API server does not answer: "+st.probeErr, st.version)
	case !st.synced:
		// The sync goroutine pokes this reconciler when done; the requeue is a safety net.
		return reconcile.Result{RequeueAfter: 10 * time.Second}, r.setReady(ctx, &mc, metav1.ConditionFalse, reasonConnecting,
			"connected; waiting for informer caches to sync", st.version)
	}
	return reconcile.Result{}, r.setReady(ctx, &mc, metav1.ConditionTrue, v1alpha1.MemberReasonConnected,
		"API server answers and informer caches are synced", st.version)
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

// setReady writes the Ready condition and version when they changed, and an Event on a transition.
func (r *Reconciler) setReady(ctx context.Context, mc *v1alpha1.MemberCluster, status metav1.ConditionStatus, reason, msg, version string) error {
	before := mc.DeepCopy()
	old := meta.FindStatusCondition(mc.Status.Conditions, v1alpha1.MemberClusterReady)
	transition := old == nil || old.Status != status || old.Reason != reason
	meta.SetStatusCondition(&mc.Status.Conditions, metav1.Condition{
		Type: v1alpha1.MemberClusterReady, Status: status, Reason: reason, Message: msg, ObservedGeneration: mc.Generation,
	})
	if version != "" {
		mc.Status.KubernetesVersion = version
	}
	if equalStatus(before.Status, mc.Status) {
		return nil
	}
	if err := r.Client.Status().Patch(ctx, mc, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("writing MemberCluster %s status: %w", mc.Name, err)
	}
	if transition && r.Recorder != nil {
		eventType := corev1.EventTypeNormal
		if status != metav1.ConditionTrue {
			eventType = corev1.EventTypeWarning
		}
		r.Recorder.Eventf(mc, nil, eventType, reason, "Health", "Ready=%s: %s", status, msg)
	}
	log.FromContext(ctx).V(1).Info("member status", "ready", status, "reason", reason)
	return nil
}

func equalStatus(a, b v1alpha1.MemberClusterStatus) bool {
	if a.KubernetesVersion != b.KubernetesVersion || len(a.Conditions) != len(b.Conditions) {
		return false
	}
	for i := range a.Conditions {
		x, y := a.Conditions[i], b.Conditions[i]
		if x.Type != y.Type || x.Status != y.Status || x.Reason != y.Reason || x.Message != y.Message || x.ObservedGeneration != y.ObservedGeneration {
			return false
		}
	}
	return true
}
