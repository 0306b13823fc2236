package controllers

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/controllers/snapshot"
)

// TestDropDeleting: objects being deleted under fleetgate's finalizer leave the snapshot; those
// deleting under someone else's finalizer only, and live ones, stay.
func TestDropDeleting(t *testing.T) {
	now := metav1.Now()
	meta := func(name string, deleting bool, finalizers ...string) metav1.ObjectMeta {
		m := metav1.ObjectMeta{Namespace: "ns", Name: name, Finalizers: finalizers}
		if deleting {
			m.DeletionTimestamp = &now
		}
		return m
	}
	ours := v1alpha1.FinalizerLoadBalancer
	s := &snapshot.Snapshot{
		Gateways: []snapshot.Object[gwv1.Gateway]{
			{Cluster: "hub", Obj: &gwv1.Gateway{ObjectMeta: meta("live", false, ours)}},
			{Cluster: "hub", Obj: &gwv1.Gateway{ObjectMeta: meta("deleting", true, ours)}},
			{Cluster: "hub", Obj: &gwv1.Gateway{ObjectMeta: meta("others", true, "example.com/other")}},
		},
		Ingresses: []snapshot.Object[networkingv1.Ingress]{
			{Cluster: "hub", Obj: &networkingv1.Ingress{ObjectMeta: meta("deleting", true, "example.com/other", ours)}},
			{Cluster: "hub", Obj: &networkingv1.Ingress{ObjectMeta: meta("live", false)}},
		},
		Services: []snapshot.Object[corev1.Service]{
			{Cluster: "hub", Obj: &corev1.Service{ObjectMeta: meta("deleting", true, ours)}},
		},
	}
	dropDeleting(s)
	var got []string
	for _, g := range s.Gateways {
		got = append(got, "Gateway/"+g.Obj.Name)
	}
	for _, i := range s.Ingresses {
		got = append(got, "Ingress/"+i.Obj.Name)
	}
	for _, svc := range s.Services {
		got = append(got, "Service/"+svc.Obj.Name)
	}
	want := []string{"Gateway/live", "Gateway/others", "Ingress/live"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("left in the snapshot (-want +got):\n%s", diff)
	}
}
