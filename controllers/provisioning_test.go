package controllers

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestStatusChanged: only status changes of provider-made objects recheck a gateway, so that the
// provider's own spec writes never loop back into another Ensure.
func TestStatusChanged(t *testing.T) {
	dep := func(available int32, image string) *appsv1.Deployment {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{ResourceVersion: image}}
		d.Spec.Template.Spec.Containers = []corev1.Container{{Image: image}}
		d.Status.AvailableReplicas = available
		return d
	}
	svc := func(ip string) *corev1.Service {
		s := &corev1.Service{}
		if ip != "" {
			s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip}}
		}
		return s
	}
	for _, tc := range []struct {
		name     string
		old, new any
		want     bool
	}{
		{name: "deployment became available", old: dep(0, "a"), new: dep(1, "a"), want: true},
		{name: "deployment spec written", old: dep(1, "a"), new: dep(1, "b"), want: false},
		{name: "service got an address", old: svc(""), new: svc("192.0.2.1"), want: true},
		{name: "service unchanged", old: svc("192.0.2.1"), new: svc("192.0.2.1"), want: false},
		{name: "other kinds", old: &corev1.Secret{}, new: &corev1.Secret{Type: "x"}, want: false},
	} {
		if got := statusChanged(tc.old, tc.new); got != tc.want {
			t.Errorf("%s: statusChanged = %v, want %v", tc.name, got, tc.want)
		}
	}
}
