package controllers

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
)

func TestInputChanged(t *testing.T) {
	route := func(gen int64, labels map[string]string, status string) *gwv1.HTTPRoute {
		r := &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Name: "r", Generation: gen, Labels: labels, ResourceVersion: status}}
		if status != "" {
			r.Status.Parents = []gwv1.RouteParentStatus{{ControllerName: v1alpha1.ControllerName}}
		}
		return r
	}
	gateway := func(annotations map[string]string) *gwv1.Gateway {
		return &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "gw", Generation: 1, Annotations: annotations}}
	}
	tests := []struct {
		name     string
		old, new client.Object
		want     bool
	}{
		{name: "our own RouteParentStatus write", old: route(1, nil, ""), new: route(1, nil, "2"), want: false},
		{name: "route spec change", old: route(1, nil, ""), new: route(2, nil, ""), want: true},
		{name: "route label change", old: route(1, nil, ""), new: route(1, map[string]string{"a": "b"}, ""), want: true},
		{name: "gateway annotation change", old: gateway(nil), new: gateway(map[string]string{"a": "b"}), want: true},
		{name: "gateway status write", old: gateway(nil), new: gateway(nil), want: false},
		{name: "object without generation", old: route(0, nil, ""), new: route(0, nil, "2"), want: true},
		{name: "ListenerSet status write",
			old: &gwv1.ListenerSet{ObjectMeta: metav1.ObjectMeta{Generation: 1}},
			new: &gwv1.ListenerSet{ObjectMeta: metav1.ObjectMeta{Generation: 1, ResourceVersion: "2"}}, want: false},
		{name: "BackendTLSPolicy spec change",
			old: &gwv1.BackendTLSPolicy{ObjectMeta: metav1.ObjectMeta{Generation: 1}},
			new: &gwv1.BackendTLSPolicy{ObjectMeta: metav1.ObjectMeta{Generation: 2}}, want: true},
		{name: "ConfigMap data change (no generation)",
			old: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ca"}},
			new: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ca"}, Data: map[string]string{"ca.crt": "x"}}, want: true},
		{name: "EndpointSlice (not generation-tracked here)",
			old: &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Generation: 1}},
			new: &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Generation: 1}}, want: true},
		{name: "proxy Deployment becoming available",
			old: &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: 1}},
			new: &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: 1}, Status: appsv1.DeploymentStatus{AvailableReplicas: 1}}, want: true},
	}
	f := newUpdateFilter(kinds())
	for _, tt := range tests {
		if got := f.inputChanged(tt.old, tt.new); got != tt.want {
			t.Errorf("%s: inputChanged = %v, want %v", tt.name, got, tt.want)
		}
	}
}
