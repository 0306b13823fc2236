package controllers

import (
	"reflect"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/controllers/translate"
)

// The pure merge of desired statuses into live objects' statuses: what fleetgate owns is replaced,
// what other controllers own is kept, and conditions keep their lastTransitionTime unless their
// status changes. The only impurity is the clock that stamps a changed condition.

// mergeGatewayStatus merges want into a Gateway's status and returns the top-level conditions
// whose status or reason changed.
func mergeGatewayStatus(st *gwv1.GatewayStatus, want *translate.GatewayStatus) []metav1.Condition {
	changed := mergeConditions(&st.Conditions, want.Conditions)
	// Conditions fleetgate sets only while they apply go when they stop applying.
	st.Conditions = slices.DeleteFunc(st.Conditions, func(c metav1.Condition) bool {
		return optionalGatewayCondition(c.Type) && meta.FindStatusCondition(want.Conditions, c.Type) == nil
	})
	st.Addresses = want.Addresses
	st.AttachedListenerSets = want.AttachedListenerSets
	st.Listeners = mergeListeners(st.Listeners, want.Listeners,
		func(l *gwv1.ListenerStatus) (gwv1.SectionName, *[]metav1.Condition) { return l.Name, &l.Conditions })
	return changed
}

// mergeListenerSetStatus merges want into a ListenerSet's status and returns the top-level
// conditions whose status or reason changed.
func mergeListenerSetStatus(st *gwv1.ListenerSetStatus, want *translate.ListenerSetStatus) []metav1.Condition {
	changed := mergeConditions(&st.Conditions, want.Conditions)
	// The CRD defaults Accepted and Programmed to Unknown/Pending; drop any other type we did not set.
	st.Conditions = keepOnly(st.Conditions, want.Conditions)
	st.Listeners = mergeListeners(st.Listeners, want.Listeners,
		func(l *gwv1.ListenerEntryStatus) (gwv1.SectionName, *[]metav1.Condition) {
			return l.Name, &l.Conditions
		})
	return changed
}

// mergeListeners returns the wanted listener statuses, keeping the lastTransitionTime of conditions
// that did not change since current.
func mergeListeners[L any](current, want []L, key func(*L) (gwv1.SectionName, *[]metav1.Condition)) []L {
	out := make([]L, 0, len(want))
	for i := range want {
		l := want[i]
		name, conds := key(&l)
		var old *[]metav1.Condition
		if j := slices.IndexFunc(current, func(c L) bool { n, _ := key(&c); return n == name }); j >= 0 {
			_, old = key(&current[j])
		}
		*conds = carryConditions(old, *conds)
		out = append(out, l)
	}
	return out
}

// carryConditions returns want as an entry's new conditions: lastTransitionTime carried over from
// old (the entry's current conditions; nil for a new entry) where the status did not change, stamped
// now otherwise, and no condition type beyond want's.
func carryConditions(old *[]metav1.Condition, want []metav1.Condition) []metav1.Condition {
	if old == nil {
		out := slices.Clone(want)
		stampConditions(out)
		return out
	}
	merged := slices.Clone(*old)
	mergeConditions(&merged, want)
	return keepOnly(merged, want)
}

// mergeParents replaces fleetgate's RouteParentStatus entries and keeps other controllers' entries.
func mergeParents(current, ours []gwv1.RouteParentStatus) []gwv1.RouteParentStatus {
	out := make([]gwv1.RouteParentStatus, 0, len(current)+len(ours))
	for _, p := range current {
		if p.ControllerName != v1alpha1.ControllerName {
			out = append(out, p)
		}
	}
	for _, p := range ours {
		p = *p.DeepCopy()
		var old *[]metav1.Condition
		if o := findParent(current, p.ParentRef); o != nil {
			old = &o.Conditions
		}
		p.Conditions = carryConditions(old, p.Conditions)
		out = append(out, p)
	}
	return out
}

// optionalGatewayCondition tells the Gateway condition types fleetgate sets only in some states
// (spec.tls): it removes them when translation no longer asks for them.
func optionalGatewayCondition(typ string) bool {
	switch gwv1.GatewayConditionType(typ) {
	case gwv1.GatewayConditionResolvedRefs, gwv1.GatewayConditionInsecureFrontendValidationMode, ConditionDNSPublished:
		return true
	}
	return false
}

// maxPolicyAncestors is the API's limit on a policy's status.ancestors.
const maxPolicyAncestors = 16

// mergeAncestors replaces fleetgate's PolicyAncestorStatus entries and keeps other controllers'
// entries, within the API's limit (other controllers' entries come first).
func mergeAncestors(current, ours []gwv1.PolicyAncestorStatus) []gwv1.PolicyAncestorStatus {
	out := make([]gwv1.PolicyAncestorStatus, 0, len(current)+len(ours))
	for _, a := range current {
		if a.ControllerName != v1alpha1.ControllerName {
			out = append(out, a)
		}
	}
	for _, a := range ours {
		if len(out) == maxPolicyAncestors {
			break
		}
		a = *a.DeepCopy()
		var old *[]metav1.Condition
		if o := findAncestor(current, a.AncestorRef); o != nil {
			old = &o.Conditions
		}
		a.Conditions = carryConditions(old, a.Conditions)
		out = append(out, a)
	}
	return out
}

func findAncestor(as []gwv1.PolicyAncestorStatus, ref gwv1.ParentReference) *gwv1.PolicyAncestorStatus {
	for i := range as {
		if as[i].ControllerName == v1alpha1.ControllerName && equality.Semantic.DeepEqual(as[i].AncestorRef, ref) {
			return &as[i]
		}
	}
	return nil
}

func findParent(ps []gwv1.RouteParentStatus, ref gwv1.ParentReference) *gwv1.RouteParentStatus {
	for i := range ps {
		if ps[i].ControllerName == v1alpha1.ControllerName && equality.Semantic.DeepEqual(ps[i].ParentRef, ref) {
			return &ps[i]
		}
	}
	return nil
}

// mergeConditions sets each wanted condition (stamping lastTransitionTime on a change) and returns
// the ones whose status or reason changed.
func mergeConditions(conds *[]metav1.Condition, want []metav1.Condition) []metav1.Condition {
	var changed []metav1.Condition
	for _, c := range want {
		old := meta.FindStatusCondition(*conds, c.Type)
		if old == nil || old.Status != c.Status || old.Reason != c.Reason {
			changed = append(changed, c)
		}
		meta.SetStatusCondition(conds, c)
	}
	return changed
}

// keepOnly drops conditions whose type is not wanted any more.
func keepOnly(conds, want []metav1.Condition) []metav1.Condition {
	return slices.DeleteFunc(conds, func(c metav1.Condition) bool {
		return meta.FindStatusCondition(want, c.Type) == nil
	})
}

func stampConditions(conds []metav1.Condition) {
	now := metav1.Now()
	for i := range conds {
		if conds[i].LastTransitionTime.IsZero() {
			conds[i].LastTransitionTime = now
		}
	}
}

// sameButCounts compares a and b with b's listener counts replaced by a's.
func sameButCounts[S, L any](a, b *S, listeners func(*S) *[]L, count func(*L) *int32) bool {
	la, lb := *listeners(a), *listeners(b)
	if len(la) != len(lb) {
		return false
	}
	c := *b
	cl := slices.Clone(lb)
	for i := range cl {
		*count(&cl[i]) = *count(&la[i])
	}
	*listeners(&c) = cl
	return reflect.DeepEqual(a, &c)
}
