package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/dataplane/ir"
	"github.com/fleetgate/fleetgate/providers"
)

// TestProxyPods: the proxies behind a network load balancer are the ready addresses of the
// EndpointSlices the EndpointSlice controller keeps for the proxy Service, in every cluster of the
// gateway, and nothing else: a slice written by anyone else (a tenant pointing the gateway's
// traffic at an address of theirs) and an FQDN slice are ignored.
func TestProxyPods(t *testing.T) {
	lb := &providers.LoadBalancer{Gateway: "apps/web", Namespace: "apps", Name: "web", Clusters: []string{"east", "west"}}
	proxySvc := providers.ResourceName(lb)
	slice := func(name, svc, managedBy string, typ discoveryv1.AddressType, eps ...discoveryv1.Endpoint) client.Object {
		return &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name,
			Labels: map[string]string{discoveryv1.LabelServiceName: svc, discoveryv1.LabelManagedBy: managedBy}}, AddressType: typ, Endpoints: eps}
	}
	ep := func(addr string, ready *bool) discoveryv1.Endpoint {
		return discoveryv1.Endpoint{Addresses: []string{addr}, Conditions: discoveryv1.EndpointConditions{Ready: ready}}
	}
	const ctrl = endpointSliceController
	v4 := discoveryv1.AddressTypeIPv4
	tests := []struct {
		name       string
		east, west []client.Object
		want       []ir.Endpoint
	}{
		{name: "ready endpoints of both clusters",
			east: []client.Object{slice("p-1", proxySvc, ctrl, v4, ep("10.1.0.1", ptr.To(true)), ep("10.1.0.2", ptr.To(false)), ep("10.1.0.3", nil))},
			west: []client.Object{slice("p-1", proxySvc, ctrl, v4, ep("10.2.0.1", ptr.To(true)))},
			want: []ir.Endpoint{{Address: "10.1.0.1", Cluster: "east"}, {Address: "10.1.0.3", Cluster: "east"}, {Address: "10.2.0.1", Cluster: "west"}}},
		{name: "another Service's slice",
			east: []client.Object{slice("p-1", proxySvc, ctrl, v4, ep("10.1.0.1", ptr.To(true))), slice("other", "backend", ctrl, v4, ep("10.1.9.9", ptr.To(true)))},
			want: []ir.Endpoint{{Address: "10.1.0.1", Cluster: "east"}}},
		{name: "a slice not managed by the EndpointSlice controller",
			east: []client.Object{slice("p-1", proxySvc, ctrl, v4, ep("10.1.0.1", ptr.To(true))), slice("p-evil", proxySvc, "tenant", v4, ep("203.0.113.66", ptr.To(true)))},
			west: []client.Object{slice("p-evil", proxySvc, "", v4, ep("203.0.113.67", ptr.To(true)))},
			want: []ir.Endpoint{{Address: "10.1.0.1", Cluster: "east"}}},
		{name: "an FQDN slice",
			east: []client.Object{slice("p-1", proxySvc, ctrl, discoveryv1.AddressTypeFQDN, ep("evil.example.com", ptr.To(true)))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clusters := map[string]client.Client{
				"east": fake.NewClientBuilder().WithObjects(tt.east...).Build(),
				"west": fake.NewClientBuilder().WithObjects(tt.west...).Build(),
			}
			got, err := proxyPods(func(cluster string) (client.Client, error) { return clusters[cluster], nil })(t.Context(), lb)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("proxy pods (-want +got):\n%s", d)
			}
		})
	}
}

// TestMemberSpecs: the provider gets every MemberCluster's spec by its name, the name endpoints
// carry as their cluster, except those being deleted, whose rules go.
func TestMemberSpecs(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	east := v1alpha1.MemberClusterSpec{Region: "eu-west-1", Provider: v1alpha1.ProviderHints{VPC: "vpc-0e",
		AWS: &v1alpha1.MemberAWS{SecurityGroups: []string{"sg-0e"}}}}
	hub := v1alpha1.MemberClusterSpec{Weight: 50}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		&v1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "east"}, Spec: east},
		&v1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.HubCluster}, Spec: hub},
		&v1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "gone", DeletionTimestamp: ptr.To(metav1.Now()),
			Finalizers: []string{v1alpha1.FinalizerMemberRules}}, Spec: east}).Build()
	got, err := memberSpecs(c)(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]v1alpha1.MemberClusterSpec{"east": east, v1alpha1.HubCluster: hub}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("member specs (-want +got):\n%s", d)
	}
}
