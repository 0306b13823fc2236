package translate

import (
	"reflect"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// Each desired status names its object (Target) and compares itself exactly with another (Same),
// which is all the status writer needs to queue it. Merging one into a live object needs that
// object and a clock (lastTransitionTime), so it stays with the writer, outside this pure package.

// Target is the object the status belongs to.
func (s *ClassStatus) Target() ObjectRef { return s.Ref }

// Target is the object the status belongs to.
func (s *GatewayStatus) Target() ObjectRef { return s.Ref }

// Target is the object the status belongs to.
func (s *ListenerSetStatus) Target() ObjectRef { return s.Ref }

// Target is the object the status belongs to.
func (s *RouteStatus) Target() ObjectRef { return s.Ref }

// Target is the object the status belongs to.
func (s *PolicyStatus) Target() ObjectRef { return s.Ref }

// Target is the object the status belongs to.
func (s *IngressStatus) Target() ObjectRef { return s.Ref }

// Target is the object the status belongs to.
func (s *ServiceStatus) Target() ObjectRef { return s.Ref }

// Same tells whether other is a *ClassStatus equal to s.
func (s *ClassStatus) Same(other any) bool { return sameAs(s, other) }

// Same tells whether other is a *GatewayStatus equal to s.
func (s *GatewayStatus) Same(other any) bool { return sameAs(s, other) }

// Same tells whether other is a *ListenerSetStatus equal to s.
func (s *ListenerSetStatus) Same(other any) bool { return sameAs(s, other) }

// Same tells whether other is a *PolicyStatus equal to s.
func (s *PolicyStatus) Same(other any) bool { return sameAs(s, other) }

// Same tells whether other is an *IngressStatus equal to s.
func (s *IngressStatus) Same(other any) bool { return sameAs(s, other) }

// Same tells whether other is a *ServiceStatus equal to s.
func (s *ServiceStatus) Same(other any) bool { return sameAs(s, other) }

func sameAs[S any](s *S, other any) bool {
	o, ok := other.(*S)
	return ok && reflect.DeepEqual(s, o)
}

// Same tells whether other is a *RouteStatus equal to s. Route statuses, by far the most numerous,
// are compared field by field, several times faster than reflect.DeepEqual; those a Memo carried
// over unchanged share their Parents, which results never modify, and compare at once.
func (s *RouteStatus) Same(other any) bool {
	o, ok := other.(*RouteStatus)
	if ok && o == s {
		return true // an unchanged route's status, handed on from pass to pass
	}
	if !ok || s.Ref != o.Ref || s.Generation != o.Generation || len(s.Parents) != len(o.Parents) {
		return false
	}
	return len(s.Parents) == 0 || &s.Parents[0] == &o.Parents[0] || sameParents(s.Parents, o.Parents)
}

// sameParents tells whether two lists of RouteParentStatus are equal.
func sameParents(a, b []gwv1.RouteParentStatus) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		pa, pb := &a[i], &b[i]
		if pa.ControllerName != pb.ControllerName || !sameParentRef(&pa.ParentRef, &pb.ParentRef) ||
			!slices.EqualFunc(pa.Conditions, pb.Conditions, sameCondition) {
			return false
		}
	}
	return true
}

func sameParentRef(a, b *gwv1.ParentReference) bool {
	return a.Name == b.Name && ptrEqual(a.Group, b.Group) && ptrEqual(a.Kind, b.Kind) &&
		ptrEqual(a.Namespace, b.Namespace) && ptrEqual(a.SectionName, b.SectionName) && ptrEqual(a.Port, b.Port)
}

func sameCondition(a, b metav1.Condition) bool {
	return a.Type == b.Type && a.Status == b.Status && a.Reason == b.Reason && a.Message == b.Message &&
		a.ObservedGeneration == b.ObservedGeneration && a.LastTransitionTime.Equal(&b.LastTransitionTime)
}

func ptrEqual[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
