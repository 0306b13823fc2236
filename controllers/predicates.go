package controllers

import (
	"maps"

	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1b1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	"github.com/fleetgate/fleetgate/api/v1alpha1"
)

// inputChanged tells whether an update can change what translation computes. Translation reads
// the spec, labels, annotations and identity of objects, never their status; for the kinds whose
// every spec change bumps metadata.generation, an update that keeps generation, labels and
// annotations is a status write (most often fleetgate's own: every RouteParentStatus and Gateway
// status it writes comes back as an update) and needs no new pass. Other kinds (Secrets,
// EndpointSlices, Services, Deployments whose availability is status) always count.
func inputChanged(oldObj, newObj any) bool {
	o, ok := oldObj.(client.Object)
	if !ok {
		return true
	}
	n, ok := newObj.(client.Object)
	if !ok {
		return true
	}
	switch n.(type) {
	case *gwv1.GatewayClass, *gwv1.Gateway, *gwv1.ListenerSet, *gwv1.HTTPRoute, *gwv1.GRPCRoute, *gwv1.TLSRoute,
		*gwv1.TCPRoute, *gwv1.UDPRoute, *gwv1b1.ReferenceGrant, *gwv1.BackendTLSPolicy, *v1alpha1.GatewayClassConfig,
		*networkingv1.Ingress:
	default:
		return true
	}
	return o.GetGeneration() != n.GetGeneration() || o.GetGeneration() == 0 ||
		!maps.Equal(o.GetLabels(), n.GetLabels()) || !maps.Equal(o.GetAnnotations(), n.GetAnnotations()) ||
		!o.GetDeletionTimestamp().Equal(n.GetDeletionTimestamp())
}

// inputChangedPredicate is inputChanged for the manager's own watches.
func inputChangedPredicate() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool { return inputChanged(e.ObjectOld, e.ObjectNew) }}
}
