package controllers

import (
	"context"
	"testing"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/controllers/translate"
)

// TestBuildSnapshotLeaving: a leaving cluster is read as present but empty: it is in the
// snapshot's clusters (so that what was made for its objects is deleted) and none of its objects
// is, whether or not it has a reader.
func TestBuildSnapshotLeaving(t *testing.T) {
	scheme, err := NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	gw := func(name string) *gwv1.Gateway {
		return &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
			Spec: gwv1.GatewaySpec{GatewayClassName: "fleetgate", Listeners: []gwv1.Listener{{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType}}}}
	}
	hub := fake.NewClientBuilder().WithScheme(scheme).WithObjects(gw("hub-gw")).Build()
	member := fake.NewClientBuilder().WithScheme(scheme).WithObjects(gw("member-gw")).Build()
	tests := []struct {
		name    string
		sources []ClusterReader
		want    []string
	}{
		{"member read", []ClusterReader{{Cluster: "hub", Reader: hub}, {Cluster: "m", Reader: member}}, []string{"hub/hub-gw", "m/member-gw"}},
		{"member leaving, usable", []ClusterReader{{Cluster: "hub", Reader: hub}, {Cluster: "m", Reader: member, Leaving: true}}, []string{"hub/hub-gw"}},
		{"member leaving, unreachable", []ClusterReader{{Cluster: "hub", Reader: hub}, {Cluster: "m", Leaving: true}}, []string{"hub/hub-gw"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := buildSnapshot(context.Background(), kinds(), tt.sources, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, g := range s.Gateways {
				got = append(got, g.Cluster+"/"+g.Obj.Name)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("gateways (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"hub", "m"}, translate.Begin(s).Finish().Clusters); diff != "" {
				t.Errorf("clusters read (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStatusWriterReleasesLeavingGateway: a Gateway that left the results gets back the CRD's
// default status when its cluster is leaving, and keeps what it has otherwise (another controller
// may own it now).
func TestStatusWriterReleasesLeavingGateway(t *testing.T) {
	scheme, err := NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	programmed := gwv1.GatewayStatus{
		Addresses:  []gwv1.GatewayStatusAddress{{Value: "198.18.0.7"}},
		Conditions: []metav1.Condition{{Type: "Programmed", Status: metav1.ConditionTrue, Reason: "Programmed", Message: "ready", LastTransitionTime: metav1.Unix(1, 0)}},
		Listeners:  []gwv1.ListenerStatus{{Name: "http", SupportedKinds: []gwv1.RouteGroupKind{{Kind: "HTTPRoute"}}, Conditions: []metav1.Condition{}}},
	}
	released := gwv1.GatewayStatus{Conditions: pendingConditions("Accepted", "Programmed")}
	tests := []struct {
		name    string
		leaving bool
		want    gwv1.GatewayStatus
	}{
		{"leaving", true, released},
		{"staying", false, programmed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			gw := &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "alb"}, Status: *programmed.DeepCopy()}
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(gw).WithStatusSubresource(gw).Build()
			m, err := NewMetrics(prometheus.NewRegistry())
			if err != nil {
				t.Fatal(err)
			}
			w := NewStatusWriter(logr.Discard(), nil, m)
			w.SetTarget("m", statusTarget{Reader: c, Live: c, Writer: c})
			w.leaving = func(cluster string) bool { return tt.leaving && cluster == "m" }
			ref := translate.ObjectRef{Cluster: "m", Kind: "Gateway", Namespace: "default", Name: "alb"}
			if err := w.write(ctx, ref); err != nil {
				t.Fatal(err)
			}
			var got gwv1.Gateway
			if err := c.Get(ctx, client.ObjectKeyFromObject(gw), &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got.Status); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
			if releasedGateway(&got) != tt.leaving {
				t.Errorf("releasedGateway %v, want %v", releasedGateway(&got), tt.leaving)
			}
		})
	}
}

// TestStatusWriterReleasesLeavingListenerSet: as a Gateway, a ListenerSet of a leaving cluster
// gets back the CRD's default status.
func TestStatusWriterReleasesLeavingListenerSet(t *testing.T) {
	scheme, err := NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ls := &gwv1.ListenerSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "extra"}, Status: gwv1.ListenerSetStatus{
		Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", Message: "ok", LastTransitionTime: metav1.Unix(1, 0)}},
		Listeners:  []gwv1.ListenerEntryStatus{{Name: "https", Conditions: []metav1.Condition{}}},
	}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(ls).WithStatusSubresource(ls).Build()
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	w := NewStatusWriter(logr.Discard(), nil, m)
	w.SetTarget("m", statusTarget{Reader: c, Live: c, Writer: c})
	w.leaving = func(cluster string) bool { return cluster == "m" }
	if err := w.write(ctx, translate.ObjectRef{Cluster: "m", Kind: "ListenerSet", Namespace: "default", Name: "extra"}); err != nil {
		t.Fatal(err)
	}
	var got gwv1.ListenerSet
	if err := c.Get(ctx, client.ObjectKeyFromObject(ls), &got); err != nil {
		t.Fatal(err)
	}
	want := gwv1.ListenerSetStatus{Conditions: pendingConditions("Accepted", "Programmed")}
	if diff := cmp.Diff(want, got.Status); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
	if !pendingOnly(got.Status.Conditions) {
		t.Error("pendingOnly is false for the released status")
	}
}

// TestReleaseFindsIngressAndServiceAddresses: a leaving member's Ingresses of fleetgate's classes
// and LoadBalancer Services of its load-balancer classes that hold addresses are what fleetgate
// still holds there, found from the objects alone (an operator restarted after the member began
// leaving never named them); those of other controllers, and those without addresses, are not.
func TestReleaseFindsIngressAndServiceAddresses(t *testing.T) {
	scheme, err := NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	addr := []networkingv1.IngressLoadBalancerIngress{{IP: "198.18.0.9"}}
	class := func(name, controller string, isDefault bool) *networkingv1.IngressClass {
		c := &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: networkingv1.IngressClassSpec{Controller: controller}}
		if isDefault {
			c.Annotations = map[string]string{networkingv1.AnnotationIsDefaultIngressClass: "true"}
		}
		return c
	}
	ingress := func(name string, className *string, annotation string, addresses bool) *networkingv1.Ingress {
		ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Spec: networkingv1.IngressSpec{IngressClassName: className}}
		if annotation != "" {
			ing.Annotations = map[string]string{"kubernetes.io/ingress.class": annotation}
		}
		if addresses {
			ing.Status.LoadBalancer.Ingress = addr
		}
		return ing
	}
	service := func(name string, class *string, addresses bool) *corev1.Service {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, LoadBalancerClass: class, Ports: []corev1.ServicePort{{Port: 80}}}}
		if addresses {
			svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "198.18.0.10"}}
		}
		return svc
	}
	tests := []struct {
		name string
		objs []client.Object
		want []string
	}{
		{"ours by name, annotation and default; others not", []client.Object{
			class("fg", v1alpha1.IngressControllerName, true), class("nginx", "k8s.io/ingress-nginx", false),
			ingress("by-name", ptr.To("fg"), "", true), ingress("by-annotation", nil, "fg", true),
			ingress("by-default", nil, "", true), ingress("theirs", ptr.To("nginx"), "", true),
			ingress("no-address", ptr.To("fg"), "", false),
			service("nlb", ptr.To(v1alpha1.LoadBalancerClassAWSNLB), true), service("in-cluster", ptr.To(v1alpha1.LoadBalancerClassInCluster), true),
			service("their-lb", ptr.To("example.com/lb"), true), service("no-class", nil, true),
			service("pending", ptr.To(v1alpha1.LoadBalancerClassGCP), false),
		}, []string{
			"status of Ingress default/by-annotation", "status of Ingress default/by-default", "status of Ingress default/by-name",
			"status of Service default/in-cluster", "status of Service default/nlb",
		}},
		{"two default classes: an Ingress without a class is no one's", []client.Object{
			class("fg", v1alpha1.IngressControllerName, true), class("nginx", "k8s.io/ingress-nginx", true),
			ingress("no-class", nil, "", true), ingress("by-name", ptr.To("fg"), "", true),
		}, []string{"status of Ingress default/by-name"}},
		{"the default class is not ours", []client.Object{
			class("fg", v1alpha1.IngressControllerName, false), class("nginx", "k8s.io/ingress-nginx", true),
			ingress("no-class", nil, "", true),
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tt.objs...).Build()
			m, err := NewMetrics(prometheus.NewRegistry())
			if err != nil {
				t.Fatal(err)
			}
			w := NewStatusWriter(logr.Discard(), nil, m)
			w.SetTarget("m", statusTarget{Reader: c, Live: c, Writer: c})
			rel := &memberRelease{writer: w}
			hub, inMember, err := rel.Held(t.Context(), "m", true)
			if err != nil {
				t.Fatal(err)
			}
			if len(hub) > 0 {
				t.Errorf("held in the hub: %v", hub)
			}
			if diff := cmp.Diff(tt.want, inMember); diff != "" {
				t.Errorf("held in the member (-want +got):\n%s", diff)
			}
		})
	}
}

// storeOf is a storeLister handing out its objects themselves, for the kinds it holds.
type storeOf struct {
	client.Reader
	objs []any
}

func (s storeOf) ListStore(_ context.Context, obj client.Object) ([]any, bool, error) {
	if _, ok := obj.(*gwv1.HTTPRoute); ok {
		return s.objs, true, nil
	}
	return nil, false, nil
}

// TestBuildSnapshotSources: a kind is read from every source in source order, the cache's own
// objects where a source hands them out and a listing's elsewhere, into one array of the exact
// size (grown source by source, it copied the hub's routes again for every member).
func TestBuildSnapshotSources(t *testing.T) {
	scheme, err := NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	route := func(name string) *gwv1.HTTPRoute {
		return &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
	}
	hubRoutes := []any{route("a"), route("b")}
	hub := storeOf{Reader: fake.NewClientBuilder().WithScheme(scheme).Build(), objs: hubRoutes}
	listed := fake.NewClientBuilder().WithScheme(scheme).WithObjects(route("c")).Build()
	other := storeOf{Reader: fake.NewClientBuilder().WithScheme(scheme).Build(), objs: []any{route("d")}}
	s, err := buildSnapshot(context.Background(), kinds(), []ClusterReader{
		{Cluster: "hub", Reader: hub}, {Cluster: "m1", Reader: listed}, {Cluster: "m2", Reader: other}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range s.HTTPRoutes {
		got = append(got, r.Cluster+"/"+r.Obj.Name)
	}
	if diff := cmp.Diff([]string{"hub/a", "hub/b", "m1/c", "m2/d"}, got); diff != "" {
		t.Errorf("routes (-want +got):\n%s", diff)
	}
	if s.HTTPRoutes[0].Obj != hubRoutes[0] && s.HTTPRoutes[1].Obj != hubRoutes[0] {
		t.Error("the hub's cached route was copied")
	}
	if cap(s.HTTPRoutes) != len(s.HTTPRoutes) {
		t.Errorf("routes in an array of %d for %d: want it sized once for every source", cap(s.HTTPRoutes), len(s.HTTPRoutes))
	}
}
