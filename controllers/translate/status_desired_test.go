package translate

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

func TestStatusSame(t *testing.T) {
	ref := ObjectRef{Cluster: "hub", Kind: "HTTPRoute", Namespace: "apps", Name: "web"}
	route := func(reason string) *RouteStatus {
		return &RouteStatus{Ref: ref, Generation: 1, Parents: []gwv1.RouteParentStatus{{
			ParentRef:      gwv1.ParentReference{Name: "gw"},
			ControllerName: "fleetgate.dev/gateway-controller",
			Conditions:     []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, Reason: reason}},
		}}}
	}
	otherParent := route("Accepted")
	otherParent.Parents[0].ParentRef.SectionName = ptr.To(gwv1.SectionName("http"))
	tests := []struct {
		name string
		a    interface{ Same(any) bool }
		b    any
		want bool
	}{
		{name: "route equal", a: route("Accepted"), b: route("Accepted"), want: true},
		{name: "route condition differs", a: route("Accepted"), b: route("NotAllowedByListeners"), want: false},
		{name: "route parent differs", a: route("Accepted"), b: otherParent, want: false},
		{name: "route against another type", a: route("Accepted"), b: &PolicyStatus{Ref: ref}, want: false},
		{name: "ingress equal", a: &IngressStatus{Ref: ref, Gateway: "g"}, b: &IngressStatus{Ref: ref, Gateway: "g"}, want: true},
		{name: "ingress differs", a: &IngressStatus{Ref: ref, Gateway: "g"}, b: &IngressStatus{Ref: ref, Gateway: "h"}, want: false},
		{name: "gateway against class", a: &GatewayStatus{Ref: ref}, b: &ClassStatus{Ref: ref}, want: false},
		{name: "nil of the same type", a: &ServiceStatus{Ref: ref}, b: (*ServiceStatus)(nil), want: false},
	}
	for _, tt := range tests {
		if got := tt.a.Same(tt.b); got != tt.want {
			t.Errorf("%s: Same = %v, want %v", tt.name, got, tt.want)
		}
	}
}
