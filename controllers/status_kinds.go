package controllers

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/controllers/translate"
)

// desiredStatus is what fleetgate has to say about one object: a translate.ClassStatus,
// GatewayStatus, ListenerSetStatus, RouteStatus, PolicyStatus, IngressStatus or ServiceStatus.
// Translation is pure and has no clock, so it only names and compares them; merging one into the
// live object (statusKind.apply, status_merge.go) happens here.
type desiredStatus interface {
	// Target is the object the status belongs to.
	Target() translate.ObjectRef
	// Same tells whether other is exactly the same desired status.
	Same(other any) bool
}

// statusKind is how the writer handles the status of one kind (the kinds table's status column).
type statusKind struct {
	part statusPart
	// apply merges want into obj and returns the top-level conditions whose status or reason
	// changed, for Events. It leaves obj alone when want is not the kind's status type.
	apply func(obj client.Object, want desiredStatus, features []gwv1.SupportedFeature) []metav1.Condition
	// cleared is written to an object fleetgate no longer has anything to say about; nil leaves
	// the object as it is (another controller may own its status).
	cleared func(ref translate.ObjectRef) desiredStatus
	// released is written, where cleared is nil, to an object of a leaving cluster (its
	// MemberCluster is being deleted) that fleetgate wrote before: no other controller takes it
	// over there, and fleetgate lets go of the whole cluster.
	released func(ref translate.ObjectRef) desiredStatus
	// ours tells whether an object's status holds entries fleetgate wrote (its controller name):
	// the writer looks for those no pass names when it starts leading (StatusWriter.sweeper). Nil
	// for kinds whose status names no controller.
	ours func(obj client.Object) bool
	// countsOnly tells whether two desired statuses differ at most in their listeners'
	// attachedRoutes, whose writes are coalesced; nil when the kind has no such counts.
	countsOnly func(a, b desiredStatus) bool
}

// statusOf pairs the status type S with the object type O it is merged into by merge.
func statusOf[O client.Object, S desiredStatus](part statusPart, merge func(obj O, want S, features []gwv1.SupportedFeature) []metav1.Condition) *statusKind {
	return &statusKind{part: part, apply: func(obj client.Object, want desiredStatus, features []gwv1.SupportedFeature) []metav1.Condition {
		o, ok := obj.(O)
		w, wok := want.(S)
		if !ok || !wok {
			return nil
		}
		return merge(o, w, features)
	}}
}

func classStatus() *statusKind {
	return statusOf(applied, func(o *gwv1.GatewayClass, want *translate.ClassStatus, features []gwv1.SupportedFeature) []metav1.Condition {
		changed := mergeConditions(&o.Status.Conditions, want.Conditions)
		// Set only while provisioning knows of the account (SetCloudAccount): it goes when not.
		o.Status.Conditions = slices.DeleteFunc(o.Status.Conditions, func(c metav1.Condition) bool {
			return c.Type == translate.ConditionCloudAccountReady && meta.FindStatusCondition(want.Conditions, c.Type) == nil
		})
		if meta.IsStatusConditionTrue(o.Status.Conditions, string(gwv1.GatewayClassConditionStatusAccepted)) {
			o.Status.SupportedFeatures = features
		}
		return changed
	})
}

func gatewayStatus() *statusKind {
	k := statusOf(applied, func(o *gwv1.Gateway, want *translate.GatewayStatus, _ []gwv1.SupportedFeature) []metav1.Condition {
		return mergeGatewayStatus(&o.Status, want)
	})
	k.countsOnly = func(a, b desiredStatus) bool {
		ga, aok := a.(*translate.GatewayStatus)
		gb, bok := b.(*translate.GatewayStatus)
		return aok && bok && sameButCounts(ga, gb, func(s *translate.GatewayStatus) *[]gwv1.ListenerStatus { return &s.Listeners },
			func(l *gwv1.ListenerStatus) *int32 { return &l.AttachedRoutes })
	}
	return releasable(k, func(obj client.Object) {
		if gw, ok := obj.(*gwv1.Gateway); ok {
			gw.Status = gwv1.GatewayStatus{Conditions: pendingConditions(string(gwv1.GatewayConditionAccepted), string(gwv1.GatewayConditionProgrammed))}
		}
	})
}

// releasable has k give released objects (releasedStatus) the status reset sets: the one the CRD
// defaults to, whatever fleetgate had set.
func releasable(k *statusKind, reset func(client.Object)) *statusKind {
	k.released = func(ref translate.ObjectRef) desiredStatus { return releasedStatus{ref} }
	merge := k.apply
	k.apply = func(obj client.Object, want desiredStatus, features []gwv1.SupportedFeature) []metav1.Condition {
		if _, released := want.(releasedStatus); released {
			reset(obj)
			return nil
		}
		return merge(obj, want, features)
	}
	return k
}

// releasedStatus is the desired status of an object fleetgate lets go of in a leaving cluster.
type releasedStatus struct{ ref translate.ObjectRef }

func (r releasedStatus) Target() translate.ObjectRef { return r.ref }
func (r releasedStatus) Same(other any) bool         { o, ok := other.(releasedStatus); return ok && o == r }

// pendingConditions are the conditions the Gateway API CRDs default to before a controller
// looked at an object: what a released object goes back to.
func pendingConditions(types ...string) []metav1.Condition {
	out := make([]metav1.Condition, 0, len(types))
	for _, t := range types {
		out = append(out, metav1.Condition{Type: t, Status: metav1.ConditionUnknown, Reason: string(gwv1.GatewayReasonPending),
			Message: "Waiting for controller", LastTransitionTime: metav1.Unix(0, 0)})
	}
	return out
}

func listenerSetStatus() *statusKind {
	k := statusOf(applied, func(o *gwv1.ListenerSet, want *translate.ListenerSetStatus, _ []gwv1.SupportedFeature) []metav1.Condition {
		return mergeListenerSetStatus(&o.Status, want)
	})
	k.countsOnly = func(a, b desiredStatus) bool {
		sa, aok := a.(*translate.ListenerSetStatus)
		sb, bok := b.(*translate.ListenerSetStatus)
		return aok && bok && sameButCounts(sa, sb, func(s *translate.ListenerSetStatus) *[]gwv1.ListenerEntryStatus { return &s.Listeners },
			func(l *gwv1.ListenerEntryStatus) *int32 { return &l.AttachedRoutes })
	}
	return releasable(k, func(obj client.Object) {
		if ls, ok := obj.(*gwv1.ListenerSet); ok {
			ls.Status = gwv1.ListenerSetStatus{Conditions: pendingConditions(string(gwv1.ListenerSetConditionAccepted), string(gwv1.ListenerSetConditionProgrammed))}
		}
	})
}

// routeStatus is the status of a route kind O, whose RouteParentStatus list parents points at.
// A route that no longer names any of our parents loses our entries.
func routeStatus[O client.Object](parents func(O) *[]gwv1.RouteParentStatus) *statusKind {
	k := statusOf(translated, func(o O, want *translate.RouteStatus, _ []gwv1.SupportedFeature) []metav1.Condition {
		p := parents(o)
		*p = mergeParents(*p, want.Parents)
		return nil
	})
	k.cleared = func(ref translate.ObjectRef) desiredStatus { return &translate.RouteStatus{Ref: ref} }
	k.ours = func(obj client.Object) bool {
		o, ok := obj.(O)
		return ok && slices.ContainsFunc(*parents(o), func(p gwv1.RouteParentStatus) bool { return p.ControllerName == v1alpha1.ControllerName })
	}
	return k
}

func policyStatus() *statusKind {
	k := statusOf(translated, func(o *gwv1.BackendTLSPolicy, want *translate.PolicyStatus, _ []gwv1.SupportedFeature) []metav1.Condition {
		o.Status.Ancestors = mergeAncestors(o.Status.Ancestors, want.Ancestors)
		return nil
	})
	k.cleared = func(ref translate.ObjectRef) desiredStatus { return &translate.PolicyStatus{Ref: ref} }
	k.ours = func(obj client.Object) bool {
		o, ok := obj.(*gwv1.BackendTLSPolicy)
		return ok && slices.ContainsFunc(o.Status.Ancestors, func(a gwv1.PolicyAncestorStatus) bool { return a.ControllerName == v1alpha1.ControllerName })
	}
	return k
}

// ingressStatus: an Ingress that is not ours any more loses the addresses fleetgate gave it.
func ingressStatus() *statusKind {
	k := statusOf(applied, func(o *networkingv1.Ingress, want *translate.IngressStatus, _ []gwv1.SupportedFeature) []metav1.Condition {
		o.Status.LoadBalancer = *want.LoadBalancer.DeepCopy()
		return nil
	})
	k.cleared = func(ref translate.ObjectRef) desiredStatus { return &translate.IngressStatus{Ref: ref} }
	return k
}

// serviceStatus: a Service that is not ours any more is left alone, since another controller may
// own its status.
func serviceStatus() *statusKind {
	k := statusOf(applied, func(o *corev1.Service, want *translate.ServiceStatus, _ []gwv1.SupportedFeature) []metav1.Condition {
		o.Status.LoadBalancer = *want.LoadBalancer.DeepCopy()
		return nil
	})
	k.released = func(ref translate.ObjectRef) desiredStatus { return &translate.ServiceStatus{Ref: ref} }
	return k
}
