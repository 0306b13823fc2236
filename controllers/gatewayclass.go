package controllers

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/fleetgate/fleetgate/api/v1alpha1"
)

const indexClassParams = "fleetgate.dev/gatewayclass-params"

// GatewayClassReconciler accepts the GatewayClasses that name fleetgate's controller and reports
// whether their parametersRef points at a usable GatewayClassConfig.
type GatewayClassReconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	// Features are the Gateway API features fleetgate implements, published in status.supportedFeatures.
	Features []gwv1.SupportedFeature
}

// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=gatewayclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=gatewayclasses/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=fleetgate.dev,resources=gatewayclassconfigs,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// SetupWithManager registers the reconciler and its watches.
func (r *GatewayClassReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	err := mgr.GetFieldIndexer().IndexField(ctx, &gwv1.GatewayClass{}, indexClassParams, func(o client.Object) []string {
		gc := o.(*gwv1.GatewayClass)
		if gc.Spec.ControllerName != ControllerName || gc.Spec.ParametersRef == nil {
			return nil
		}
		return []string{string(gc.Spec.ParametersRef.Name)}
	})
	if err != nil {
		return fmt.Errorf("indexing GatewayClass parametersRef: %w", err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("gatewayclass").
		For(&gwv1.GatewayClass{}).
		Watches(&v1alpha1.GatewayClassConfig{}, handler.EnqueueRequestsFromMapFunc(r.classesForConfig)).
		Complete(r)
}

func (r *GatewayClassReconciler) classesForConfig(ctx context.Context, o client.Object) []reconcile.Request {
	var classes gwv1.GatewayClassList
	if err := r.Client.List(ctx, &classes, client.MatchingFields{indexClassParams: o.GetName()}); err != nil {
		log.FromContext(ctx).Error(err, "listing GatewayClasses for GatewayClassConfig", "config", o.GetName())
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(classes.Items))
	for _, gc := range classes.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: gc.Name}})
	}
	return reqs
}

// Reconcile sets the Accepted condition and supportedFeatures of one GatewayClass.
func (r *GatewayClassReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var gc gwv1.GatewayClass
	if err := r.Client.Get(ctx, req.NamespacedName, &gc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if gc.Spec.ControllerName != ControllerName {
		return reconcile.Result{}, nil
	}
	params, paramsErr := r.resolveParams(ctx, gc.Spec.ParametersRef)
	if paramsErr != nil && !isInvalidParams(paramsErr) {
		return reconcile.Result{}, paramsErr
	}
	_ = params // the pipeline reads the provider and scope from the same config

	before := gc.Status.DeepCopy()
	cond := classAccepted(gc.Generation, paramsErr)
	prev := meta.FindStatusCondition(gc.Status.Conditions, cond.Type)
	meta.SetStatusCondition(&gc.Status.Conditions, cond)
	gc.Status.SupportedFeatures = r.Features
	if equality.Semantic.DeepEqual(before, &gc.Status) {
		return reconcile.Result{}, nil
	}
	if err := r.Client.Status().Update(ctx, &gc); err != nil {
		if apierrors.IsConflict(err) {
			return reconcile.Result{Requeue: true}, nil
		}
		return reconcile.Result{}, fmt.Errorf("updating GatewayClass %s status: %w", gc.Name, err)
	}
	if prev == nil || prev.Status != cond.Status || prev.Reason != cond.Reason {
		eventType := "Normal"
		if cond.Status != metav1.ConditionTrue {
			eventType = "Warning"
		}
		r.Recorder.Eventf(&gc, nil, eventType, cond.Reason, "Reconcile", "%s", cond.Message)
	}
	log.FromContext(ctx).Info("GatewayClass status updated", "accepted", cond.Status, "reason", cond.Reason)
	return reconcile.Result{}, nil
}

// invalidParamsError marks a parametersRef problem that the user must fix, as opposed to an API error.
type invalidParamsError struct{ msg string }

func (e *invalidParamsError) Error() string { return e.msg }

func isInvalidParams(err error) bool {
	_, ok := err.(*invalidParamsError)
	return ok
}

func (r *GatewayClassReconciler) resolveParams(ctx context.Context, ref *gwv1.ParametersReference) (*v1alpha1.GatewayClassConfig, error) {
	if ref == nil {
		return nil, &invalidParamsError{"spec.parametersRef is required: it must name a fleetgate.dev GatewayClassConfig"}
	}
	if string(ref.Group) != v1alpha1.Group || ref.Kind != "GatewayClassConfig" {
		return nil, &invalidParamsError{fmt.Sprintf("spec.parametersRef must refer to group %s kind GatewayClassConfig, not %s/%s", v1alpha1.Group, ref.Group, ref.Kind)}
	}
	if ref.Namespace != nil && *ref.Namespace != "" {
		return nil, &invalidParamsError{fmt.Sprintf("spec.parametersRef names namespace %q, but GatewayClassConfig is cluster-scoped", *ref.Namespace)}
	}
	var cfg v1alpha1.GatewayClassConfig
	if err := r.Client.Get(ctx, types.NamespacedName{Name: ref.Name}, &cfg); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &invalidParamsError{fmt.Sprintf("GatewayClassConfig %q not found", ref.Name)}
		}
		return nil, fmt.Errorf("reading GatewayClassConfig %q: %w", ref.Name, err)
	}
	return &cfg, nil
}

// classAccepted is the Accepted condition for a class whose parameters resolved with paramsErr.
func classAccepted(generation int64, paramsErr error) metav1.Condition {
	if paramsErr != nil {
		return metav1.Condition{
			Type:               string(gwv1.GatewayClassConditionStatusAccepted),
			Status:             metav1.ConditionFalse,
			Reason:             string(gwv1.GatewayClassReasonInvalidParameters),
			Message:            paramsErr.Error(),
			ObservedGeneration: generation,
		}
	}
	return metav1.Condition{
		Type:               string(gwv1.GatewayClassConditionStatusAccepted),
		Status:             metav1.ConditionTrue,
		Reason:             string(gwv1.GatewayClassReasonAccepted),
		Message:            "fleetgate accepts this class",
		ObservedGeneration: generation,
	}
}
