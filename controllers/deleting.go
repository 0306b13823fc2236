package controllers

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/controllers/snapshot"
)

// dropDeleting takes the Gateways, Ingresses and Services that are being deleted and still held
// by fleetgate's load-balancer finalizer out of s: translation then leaves them out of every
// load-balancer model, the provider removes what they had, and the finalizer is released.
func dropDeleting(s *snapshot.Snapshot) {
	s.Gateways = withoutDeleting(s.Gateways)
	s.Ingresses = withoutDeleting(s.Ingresses)
	s.Services = withoutDeleting(s.Services)
}

// withoutDeleting filters in place: the snapshot's slices are its own (the objects are the cache's).
func withoutDeleting[T any, P interface {
	*T
	GetDeletionTimestamp() *metav1.Time
	GetFinalizers() []string
}](objs []snapshot.Object[T]) []snapshot.Object[T] {
	deleting := func(o snapshot.Object[T]) bool {
		p := P(o.Obj)
		return o.Obj != nil && p.GetDeletionTimestamp() != nil && slices.Contains(p.GetFinalizers(), v1alpha1.FinalizerLoadBalancer)
	}
	return slices.DeleteFunc(objs, deleting)
}
