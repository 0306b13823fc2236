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
// EndpointSlices of the proxy Service, in every cluster of the gateway, and nothing else.
func TestProxyPods(t *testing.T) {
	lb := &providers.LoadBalancer{Gateway: "apps/web", Namespace: "apps", Name: "web", Clusters: []string{"east", "west"}}
	slice := func(name, svc string, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name,
			Labels: map[string]string{discoveryv1.LabelServiceName: svc}}, AddressType: discoveryv1.AddressTypeIPv4, Endpoints: eps}
	}
	ep := func(ip string, ready bool) discoveryv1.Endpoint {
		return discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready)}}
	}
	proxySvc := providers.ResourceName(lb)
	clusters := map[string]client.Client{
		"east": fake.NewClientBuilder().WithObjects(
			slice("p-1", proxySvc, ep("10.1.0.1", true), ep("10.1.0.2", false)),
			slice("other", "backend", ep("10.1.9.9", true))).Build(),
		"west": fake.NewClientBuilder().WithObjects(slice("p-1", proxySvc, ep("10.2.0.1", true))).Build(),
	}
	got, err := proxyPods(func(cluster string) (client.Client, error) { return clusters[cluster], nil })(t.Context(), lb)
	if err != nil {
		t.Fatal(err)
	}
	want := []ir.Endpoint{{Address: "10.1.0.1", Cluster: "east"}, {Address: "10.2.0.1", Cluster: "west"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("proxy pods (-want +got):\n%s", d)
	}
}

// TestMemberSpecs: the provider gets every MemberCluster's spec by its name, the name endpoints
// carry as their cluster.
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
		&v1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.HubCluster}, Spec: hub}).Build()
	got, err := memberSpecs(c)(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]v1alpha1.MemberClusterSpec{"east": east, v1alpha1.HubCluster: hub}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("member specs (-want +got):\n%s", d)
	}
}
