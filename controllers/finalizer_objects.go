package controllers

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
)

// patch adds or removes the finalizer with a merge patch of metadata.finalizers that carries
// obj's resourceVersion, so that it never overwrites a change it did not see.
func (f *finalizers) patch(ctx context.Context, cluster string, obj client.Object, add bool) error {
	c, err := f.clients(cluster)
	if err != nil {
		return err
	}
	orig, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return fmt.Errorf("copying %T", obj)
	}
	if add {
		controllerutil.AddFinalizer(obj, v1alpha1.FinalizerLoadBalancer)
	} else {
		controllerutil.RemoveFinalizer(obj, v1alpha1.FinalizerLoadBalancer)
	}
	if err := c.Patch(ctx, obj, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("patching the finalizers of %s/%s in cluster %s: %w", obj.GetNamespace(), obj.GetName(), cluster, err)
	}
	return nil
}

// loadBalancerKinds are the kinds whose objects own load balancers and carry the finalizer.
func loadBalancerKinds() []string { return []string{"Gateway", "Ingress", "Service"} }

// objectOf is an empty object of a kind that owns load balancers, from the kinds table.
func objectOf(kind string) (client.Object, error) {
	k, ok := kindsByName(kinds())[kind]
	if !ok || !slices.Contains(loadBalancerKinds(), kind) {
		return nil, fmt.Errorf("kind %s owns no load balancer", kind)
	}
	return k.object(), nil
}

// listObjects lists the cached objects of probe's kind, straight from the informer's store when
// the reader can; the objects must not be modified.
func listObjects(ctx context.Context, r client.Reader, probe client.Object) ([]client.Object, error) {
	if sl, ok := r.(storeLister); ok {
		objs, ok, err := sl.ListStore(ctx, probe)
		if err != nil {
			return nil, err
		}
		if ok {
			out := make([]client.Object, 0, len(objs))
			for _, o := range objs {
				if obj, ok := o.(client.Object); ok {
					out = append(out, obj)
				}
			}
			return out, nil
		}
	}
	var list client.ObjectList
	switch probe.(type) {
	case *gwv1.Gateway:
		list = &gwv1.GatewayList{}
	case *networkingv1.Ingress:
		list = &networkingv1.IngressList{}
	default:
		list = &corev1.ServiceList{}
	}
	if err := r.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	var out []client.Object
	err := meta.EachListItem(list, func(o runtime.Object) error {
		if obj, ok := o.(client.Object); ok {
			out = append(out, obj)
		}
		return nil
	})
	return out, err
}
