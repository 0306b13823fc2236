package controllers

import (
	"maps"
	"reflect"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// updateFilter knows the object types whose every change translation reads bumps
// metadata.generation (kind.generationGated).
type updateFilter map[reflect.Type]bool

func newUpdateFilter(table []kind) updateFilter {
	f := updateFilter{}
	for _, k := range table {
		if k.generationGated {
			f[reflect.TypeOf(k.object())] = true
		}
	}
	return f
}

// inputChanged tells whether an update can change what translation computes. Translation reads
// the spec, labels, annotations and identity of objects, never their status; for the kinds whose
// every spec change bumps metadata.generation, an update that keeps generation, labels and
// annotations is a status write (most often fleetgate's own: every RouteParentStatus and Gateway
// status it writes comes back as an update) and needs no new pass. Other kinds (Secrets,
// EndpointSlices, Services, Deployments whose availability is status) always count.
func (f updateFilter) inputChanged(oldObj, newObj any) bool {
	o, ok := oldObj.(client.Object)
	if !ok {
		return true
	}
	n, ok := newObj.(client.Object)
	if !ok || !f[reflect.TypeOf(n)] {
		return true
	}
	return o.GetGeneration() != n.GetGeneration() || o.GetGeneration() == 0 ||
		!maps.Equal(o.GetLabels(), n.GetLabels()) || !maps.Equal(o.GetAnnotations(), n.GetAnnotations()) ||
		!o.GetDeletionTimestamp().Equal(n.GetDeletionTimestamp())
}

// inputChangedPredicate is inputChanged for the manager's own watches.
func inputChangedPredicate(f updateFilter) predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool { return f.inputChanged(e.ObjectOld, e.ObjectNew) }}
}
