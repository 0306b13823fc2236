package controllers

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/providers"
)

// setupProvisioning builds the Dataplane's provisioning engine and finalizers and runs them on the
// leader: the engine reads the clusters through sources, and finalizers are written with the hub's
// client or the member's.
func (d *Dataplane) setupProvisioning(ctx context.Context, mgr ctrl.Manager, reg prometheus.Registerer, sources func() []ClusterReader, members *MemberClients) error {
	clients := func(cluster string) (client.Client, error) {
		if cluster == v1alpha1.HubCluster {
			return mgr.GetClient(), nil
		}
		if members == nil {
			return nil, fmt.Errorf("member cluster %q: no member clients", cluster)
		}
		return members.Client(cluster)
	}
	log := mgr.GetLogger()
	if err := d.newEngine(reg, log.WithName("provision")); err != nil {
		return err
	}
	d.finalizers = newFinalizers(log.WithName("finalizers"), sources, clients, d.engine)
	if err := d.recheckOnDrift(ctx, mgr.GetCache()); err != nil {
		return err
	}
	if err := mgr.Add(d.engine); err != nil {
		return fmt.Errorf("adding the provisioning engine: %w", err)
	}
	if err := mgr.Add(d.finalizers); err != nil {
		return fmt.Errorf("adding the finalizers: %w", err)
	}
	return nil
}

// recheckOnDrift has the provider look again at a gateway whose provider-made objects in the hub
// (proxy Deployments and Services, found by their ownership label and gateway annotation) changed
// status or went away: a model that did not change queues no Ensure, and readiness or a deleted
// Deployment is news only the provider can read. Spec changes are left out, so the provider's own
// writes never loop back.
func (d *Dataplane) recheckOnDrift(ctx context.Context, c cache.Cache) error {
	recheck := func(obj any) {
		if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		o, ok := obj.(client.Object)
		if !ok || o.GetLabels()[providers.LabelManagedBy] != providers.ManagedBy {
			return
		}
		if gw := o.GetAnnotations()[providers.AnnotationGateway]; gw != "" {
			d.Recheck(gw)
		}
	}
	handler := toolscache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, newObj any) {
			if statusChanged(oldObj, newObj) {
				recheck(newObj)
			}
		},
		DeleteFunc: recheck,
	}
	for _, obj := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}} {
		inf, err := c.GetInformer(ctx, obj)
		if err != nil {
			return fmt.Errorf("informer for %T: %w", obj, err)
		}
		if _, err := inf.AddEventHandler(handler); err != nil {
			return fmt.Errorf("watching %T for drift: %w", obj, err)
		}
	}
	return nil
}

func statusChanged(oldObj, newObj any) bool {
	switch n := newObj.(type) {
	case *appsv1.Deployment:
		o, ok := oldObj.(*appsv1.Deployment)
		return !ok || !equality.Semantic.DeepEqual(o.Status, n.Status)
	case *corev1.Service:
		o, ok := oldObj.(*corev1.Service)
		return !ok || !equality.Semantic.DeepEqual(o.Status, n.Status)
	}
	return false
}
