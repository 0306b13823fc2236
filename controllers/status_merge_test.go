package controllers

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/controllers/translate"
)

// then is a lastTransitionTime from before the test, which a merge must keep where the status
// did not change.
var then = metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))

func condAt(typ string, status metav1.ConditionStatus, reason string, gen int64, at metav1.Time) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, ObservedGeneration: gen, LastTransitionTime: at}
}

func cond(typ string, status metav1.ConditionStatus, reason string, gen int64) metav1.Condition {
	return condAt(typ, status, reason, gen, metav1.Time{})
}

// stamped replaces every lastTransitionTime after then by "now", so that tables can say which
// conditions were stamped by the merge.
var stamped = cmp.Transformer("stamped", func(t metav1.Time) string {
	switch {
	case t.Equal(&then):
		return "then"
	case t.IsZero():
		return "zero"
	case t.After(then.Time):
		return "now"
	}
	return t.String()
})

var now = metav1.NewTime(then.Add(time.Hour)) // only compared through stamped

func TestMergeConditions(t *testing.T) {
	T, F := metav1.ConditionTrue, metav1.ConditionFalse
	tests := []struct {
		name            string
		current, want   []metav1.Condition
		result, changed []metav1.Condition
	}{{
		name:    "new condition: stamped, reported",
		want:    []metav1.Condition{cond("Accepted", T, "Accepted", 1)},
		result:  []metav1.Condition{condAt("Accepted", T, "Accepted", 1, now)},
		changed: []metav1.Condition{cond("Accepted", T, "Accepted", 1)},
	}, {
		name:    "same status, new generation: time kept, not reported",
		current: []metav1.Condition{condAt("Accepted", T, "Accepted", 1, then)},
		want:    []metav1.Condition{cond("Accepted", T, "Accepted", 2)},
		result:  []metav1.Condition{condAt("Accepted", T, "Accepted", 2, then)},
	}, {
		name:    "status changed: stamped, reported",
		current: []metav1.Condition{condAt("Accepted", T, "Accepted", 1, then)},
		want:    []metav1.Condition{cond("Accepted", F, "Invalid", 1)},
		result:  []metav1.Condition{condAt("Accepted", F, "Invalid", 1, now)},
		changed: []metav1.Condition{cond("Accepted", F, "Invalid", 1)},
	}, {
		name:    "other types kept",
		current: []metav1.Condition{condAt("example.com/Theirs", T, "Theirs", 1, then)},
		want:    []metav1.Condition{cond("Accepted", T, "Accepted", 1)},
		result:  []metav1.Condition{condAt("example.com/Theirs", T, "Theirs", 1, then), condAt("Accepted", T, "Accepted", 1, now)},
		changed: []metav1.Condition{cond("Accepted", T, "Accepted", 1)},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := append([]metav1.Condition(nil), tt.current...)
			changed := mergeConditions(&got, tt.want)
			if diff := cmp.Diff(tt.result, got, stamped); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.changed, changed, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("changed (-want +got):\n%s", diff)
			}
		})
	}
}

func TestKeepOnly(t *testing.T) {
	T := metav1.ConditionTrue
	tests := []struct {
		name        string
		conds, want []metav1.Condition
		result      []string
	}{
		{name: "drops unwanted types", conds: []metav1.Condition{cond("A", T, "A", 1), cond("B", T, "B", 1)},
			want: []metav1.Condition{cond("A", T, "A", 2)}, result: []string{"A"}},
		{name: "nothing wanted", conds: []metav1.Condition{cond("A", T, "A", 1)}, result: []string{}},
		{name: "nothing to drop", conds: []metav1.Condition{cond("A", T, "A", 1)},
			want: []metav1.Condition{cond("A", T, "A", 1), cond("B", T, "B", 1)}, result: []string{"A"}},
	}
	for _, tt := range tests {
		got := []string{}
		for _, c := range keepOnly(tt.conds, tt.want) {
			got = append(got, c.Type)
		}
		if diff := cmp.Diff(tt.result, got); diff != "" {
			t.Errorf("%s: types (-want +got):\n%s", tt.name, diff)
		}
	}
}

func TestCarryConditions(t *testing.T) {
	T, F := metav1.ConditionTrue, metav1.ConditionFalse
	tests := []struct {
		name   string
		old    *[]metav1.Condition
		want   []metav1.Condition
		result []metav1.Condition
	}{{
		name:   "new entry: every condition stamped",
		want:   []metav1.Condition{cond("Accepted", T, "Accepted", 1), cond("ResolvedRefs", T, "ResolvedRefs", 1)},
		result: []metav1.Condition{condAt("Accepted", T, "Accepted", 1, now), condAt("ResolvedRefs", T, "ResolvedRefs", 1, now)},
	}, {
		name:   "existing entry: unchanged kept, changed stamped, unwanted dropped",
		old:    &[]metav1.Condition{condAt("Accepted", T, "Accepted", 1, then), condAt("ResolvedRefs", T, "ResolvedRefs", 1, then), condAt("Old", T, "Old", 1, then)},
		want:   []metav1.Condition{cond("Accepted", T, "Accepted", 2), cond("ResolvedRefs", F, "BackendNotFound", 2)},
		result: []metav1.Condition{condAt("Accepted", T, "Accepted", 2, then), condAt("ResolvedRefs", F, "BackendNotFound", 2, now)},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before []metav1.Condition
			if tt.old != nil {
				before = append(before, *tt.old...)
			}
			got := carryConditions(tt.old, tt.want)
			if diff := cmp.Diff(tt.result, got, stamped); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			if tt.old != nil {
				if diff := cmp.Diff(before, *tt.old); diff != "" {
					t.Errorf("the current entry was changed (-before +after):\n%s", diff)
				}
			}
		})
	}
}

func TestMergeListeners(t *testing.T) {
	T, F := metav1.ConditionTrue, metav1.ConditionFalse
	listener := func(name string, routes int32, conds ...metav1.Condition) gwv1.ListenerStatus {
		return gwv1.ListenerStatus{Name: gwv1.SectionName(name), AttachedRoutes: routes, Conditions: conds}
	}
	key := func(l *gwv1.ListenerStatus) (gwv1.SectionName, *[]metav1.Condition) { return l.Name, &l.Conditions }
	tests := []struct {
		name                  string
		current, want, result []gwv1.ListenerStatus
	}{{
		name:    "matched by name, in want's order, gone listeners dropped",
		current: []gwv1.ListenerStatus{listener("b", 1, condAt("Programmed", T, "Programmed", 1, then)), listener("gone", 0)},
		want:    []gwv1.ListenerStatus{listener("a", 0, cond("Programmed", F, "Pending", 1)), listener("b", 3, cond("Programmed", T, "Programmed", 1))},
		result:  []gwv1.ListenerStatus{listener("a", 0, condAt("Programmed", F, "Pending", 1, now)), listener("b", 3, condAt("Programmed", T, "Programmed", 1, then))},
	}, {
		name:   "none",
		result: []gwv1.ListenerStatus{},
	}}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.result, mergeListeners(tt.current, tt.want, key), stamped); diff != "" {
			t.Errorf("%s: listeners (-want +got):\n%s", tt.name, diff)
		}
	}
}

func TestMergeParents(t *testing.T) {
	T := metav1.ConditionTrue
	parent := func(name, controller string, conds ...metav1.Condition) gwv1.RouteParentStatus {
		return gwv1.RouteParentStatus{ParentRef: gwv1.ParentReference{Name: gwv1.ObjectName(name)},
			ControllerName: gwv1.GatewayController(controller), Conditions: conds}
	}
	tests := []struct {
		name                  string
		current, ours, result []gwv1.RouteParentStatus
	}{{
		name:    "ours replaced, others kept first, times carried",
		current: []gwv1.RouteParentStatus{parent("gw", v1alpha1.ControllerName, condAt("Accepted", T, "Accepted", 1, then)), parent("theirs", "other.io/x", condAt("Accepted", T, "Accepted", 1, then)), parent("gone", v1alpha1.ControllerName)},
		ours:    []gwv1.RouteParentStatus{parent("gw", v1alpha1.ControllerName, cond("Accepted", T, "Accepted", 2))},
		result:  []gwv1.RouteParentStatus{parent("theirs", "other.io/x", condAt("Accepted", T, "Accepted", 1, then)), parent("gw", v1alpha1.ControllerName, condAt("Accepted", T, "Accepted", 2, then))},
	}, {
		name:    "cleared",
		current: []gwv1.RouteParentStatus{parent("gw", v1alpha1.ControllerName, condAt("Accepted", T, "Accepted", 1, then))},
		result:  []gwv1.RouteParentStatus{},
	}, {
		name:   "new parent stamped",
		ours:   []gwv1.RouteParentStatus{parent("gw", v1alpha1.ControllerName, cond("Accepted", T, "Accepted", 1))},
		result: []gwv1.RouteParentStatus{parent("gw", v1alpha1.ControllerName, condAt("Accepted", T, "Accepted", 1, now))},
	}}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.result, mergeParents(tt.current, tt.ours), stamped); diff != "" {
			t.Errorf("%s: parents (-want +got):\n%s", tt.name, diff)
		}
	}
}

func ancestor(name, controller string, conds ...metav1.Condition) gwv1.PolicyAncestorStatus {
	return gwv1.PolicyAncestorStatus{AncestorRef: gwv1.ParentReference{Name: gwv1.ObjectName(name)},
		ControllerName: gwv1.GatewayController(controller), Conditions: conds}
}

func TestMergeAncestors(t *testing.T) {
	accepted := cond("Accepted", metav1.ConditionTrue, "Accepted", 2)
	conflicted := cond("Accepted", metav1.ConditionFalse, "Conflicted", 2)
	old := condAt("Accepted", metav1.ConditionTrue, "Accepted", 1, then)
	stale := condAt("Stale", metav1.ConditionTrue, "Stale", 1, then)
	theirs := make([]gwv1.PolicyAncestorStatus, 0, maxPolicyAncestors)
	for range maxPolicyAncestors {
		theirs = append(theirs, ancestor("theirs", "other.io/x", old))
	}
	tests := []struct {
		name                  string
		current, ours, result []gwv1.PolicyAncestorStatus
	}{{
		name:    "ours replaced, others kept first",
		current: []gwv1.PolicyAncestorStatus{ancestor("gone", v1alpha1.ControllerName, old), ancestor("theirs", "other.io/x", old), ancestor("gw", v1alpha1.ControllerName, old, stale)},
		ours:    []gwv1.PolicyAncestorStatus{ancestor("gw", v1alpha1.ControllerName, conflicted)},
		result:  []gwv1.PolicyAncestorStatus{ancestor("theirs", "other.io/x", old), ancestor("gw", v1alpha1.ControllerName, condAt("Accepted", metav1.ConditionFalse, "Conflicted", 2, now))},
	}, {
		name:    "cleared",
		current: []gwv1.PolicyAncestorStatus{ancestor("gw", v1alpha1.ControllerName, old)},
		result:  []gwv1.PolicyAncestorStatus{},
	}, {
		name:    "no more than the API allows",
		current: theirs,
		ours:    []gwv1.PolicyAncestorStatus{ancestor("gw", v1alpha1.ControllerName, accepted)},
		result:  theirs,
	}}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.result, mergeAncestors(tt.current, tt.ours), stamped); diff != "" {
			t.Errorf("%s: ancestors (-want +got):\n%s", tt.name, diff)
		}
	}
}

func TestMergeGatewayStatus(t *testing.T) {
	T := metav1.ConditionTrue
	addr := []gwv1.GatewayStatusAddress{{Value: "10.0.0.1"}}
	tests := []struct {
		name    string
		current gwv1.GatewayStatus
		want    *translate.GatewayStatus
		result  gwv1.GatewayStatus
		changed []string
	}{{
		name: "optional conditions fleetgate no longer sets go, others' stay",
		current: gwv1.GatewayStatus{Conditions: []metav1.Condition{
			condAt("Accepted", T, "Accepted", 1, then), condAt("Programmed", T, "Programmed", 1, then),
			condAt("ResolvedRefs", T, "ResolvedRefs", 1, then), condAt("InsecureFrontendValidationMode", T, "ConfigurationChanged", 1, then),
			condAt("example.com/Other", T, "Theirs", 1, then),
		}},
		want: &translate.GatewayStatus{Conditions: []metav1.Condition{cond("Accepted", T, "Accepted", 1), cond("Programmed", T, "Programmed", 1)}},
		result: gwv1.GatewayStatus{Conditions: []metav1.Condition{
			condAt("Accepted", T, "Accepted", 1, then), condAt("Programmed", T, "Programmed", 1, then), condAt("example.com/Other", T, "Theirs", 1, then),
		}, Listeners: []gwv1.ListenerStatus{}},
	}, {
		name:    "addresses and listeners are translation's",
		current: gwv1.GatewayStatus{Addresses: []gwv1.GatewayStatusAddress{{Value: "10.9.9.9"}}, Listeners: []gwv1.ListenerStatus{{Name: "old"}}},
		want: &translate.GatewayStatus{Conditions: []metav1.Condition{cond("Programmed", T, "Programmed", 1)}, Addresses: addr,
			Listeners: []gwv1.ListenerStatus{{Name: "http", AttachedRoutes: 2, Conditions: []metav1.Condition{cond("Programmed", T, "Programmed", 1)}}}},
		result: gwv1.GatewayStatus{Conditions: []metav1.Condition{condAt("Programmed", T, "Programmed", 1, now)}, Addresses: addr,
			Listeners: []gwv1.ListenerStatus{{Name: "http", AttachedRoutes: 2, Conditions: []metav1.Condition{condAt("Programmed", T, "Programmed", 1, now)}}}},
		changed: []string{"Programmed"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := tt.current
			var changed []string
			for _, c := range mergeGatewayStatus(&st, tt.want) {
				changed = append(changed, c.Type)
			}
			if diff := cmp.Diff(tt.result, st, stamped); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.changed, changed); diff != "" {
				t.Errorf("changed (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMergeListenerSetStatus(t *testing.T) {
	T, F := metav1.ConditionTrue, metav1.ConditionFalse
	tests := []struct {
		name    string
		current gwv1.ListenerSetStatus
		want    *translate.ListenerSetStatus
		result  gwv1.ListenerSetStatus
	}{{
		name: "the CRD's defaults replaced, types not set dropped",
		current: gwv1.ListenerSetStatus{Conditions: []metav1.Condition{
			condAt("Accepted", metav1.ConditionUnknown, "Pending", 0, then), condAt("Programmed", metav1.ConditionUnknown, "Pending", 0, then),
		}},
		want: &translate.ListenerSetStatus{Conditions: []metav1.Condition{cond("Accepted", F, "NotAllowed", 1)},
			Listeners: []gwv1.ListenerEntryStatus{{Name: "a", Conditions: []metav1.Condition{cond("Accepted", T, "Accepted", 1)}}}},
		result: gwv1.ListenerSetStatus{Conditions: []metav1.Condition{condAt("Accepted", F, "NotAllowed", 1, now)},
			Listeners: []gwv1.ListenerEntryStatus{{Name: "a", Conditions: []metav1.Condition{condAt("Accepted", T, "Accepted", 1, now)}}}},
	}}
	for _, tt := range tests {
		st := tt.current
		mergeListenerSetStatus(&st, tt.want)
		if diff := cmp.Diff(tt.result, st, stamped); diff != "" {
			t.Errorf("%s: status (-want +got):\n%s", tt.name, diff)
		}
	}
}

func TestOptionalGatewayCondition(t *testing.T) {
	for typ, want := range map[string]bool{
		"ResolvedRefs": true, "InsecureFrontendValidationMode": true, "Accepted": false, "Programmed": false, "example.com/Other": false,
	} {
		if got := optionalGatewayCondition(typ); got != want {
			t.Errorf("optionalGatewayCondition(%q) = %v, want %v", typ, got, want)
		}
	}
}

func TestSameButCounts(t *testing.T) {
	gs := func(routes ...int32) *translate.GatewayStatus {
		s := &translate.GatewayStatus{Conditions: []metav1.Condition{cond("Programmed", metav1.ConditionTrue, "Programmed", 1)}}
		for i, n := range routes {
			s.Listeners = append(s.Listeners, gwv1.ListenerStatus{Name: gwv1.SectionName(rune('a' + i)), AttachedRoutes: n})
		}
		return s
	}
	other := gs(1)
	other.Conditions[0].Reason = "Pending"
	tests := []struct {
		name string
		a, b *translate.GatewayStatus
		want bool
	}{
		{name: "equal", a: gs(1, 2), b: gs(1, 2), want: true},
		{name: "counts differ", a: gs(1, 2), b: gs(3, 2), want: true},
		{name: "listener added", a: gs(1), b: gs(1, 2), want: false},
		{name: "condition differs", a: gs(1), b: other, want: false},
	}
	listeners := func(s *translate.GatewayStatus) *[]gwv1.ListenerStatus { return &s.Listeners }
	count := func(l *gwv1.ListenerStatus) *int32 { return &l.AttachedRoutes }
	for _, tt := range tests {
		before := tt.b.Listeners[0].AttachedRoutes
		if got := sameButCounts(tt.a, tt.b, listeners, count); got != tt.want {
			t.Errorf("%s: sameButCounts = %v, want %v", tt.name, got, tt.want)
		}
		if tt.b.Listeners[0].AttachedRoutes != before {
			t.Errorf("%s: b was changed", tt.name)
		}
	}
}
