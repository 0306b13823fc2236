package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/dataplane/ir"
	"github.com/fleetgate/fleetgate/providers"
	"github.com/fleetgate/fleetgate/providers/aws"
)

func TestWritePlan(t *testing.T) {
	lb := &providers.LoadBalancer{Gateway: "hub/apps/web", Class: "aws-alb"}
	tests := []struct {
		name  string
		calls []aws.Call
		err   error
		want  string
	}{
		{name: "in sync", want: "hub/apps/web (class aws-alb): in sync\n"},
		{name: "calls", calls: []aws.Call{{Operation: "CreateLoadBalancer", Resource: "lb", Detail: "fg-web"}, {Operation: "CreateListener", Resource: "listener/80"}},
			want: "hub/apps/web (class aws-alb): 2 calls would be made\n    1. CreateLoadBalancer lb: fg-web\n    2. CreateListener listener/80\n"},
		{name: "error", err: errors.New("planning hub/apps/web: AccessDenied"),
			want: "hub/apps/web (class aws-alb): no plan: planning hub/apps/web: AccessDenied\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			writePlan(&b, lb, tt.calls, tt.err)
			if b.String() != tt.want {
				t.Errorf("got\n%q\nwant\n%q", b.String(), tt.want)
			}
		})
	}
}

// TestPlanMainFlags: --help is no failure, an unknown flag is a usage error, and a kubeconfig that
// cannot be read fails before any AWS call.
func TestPlanMainFlags(t *testing.T) {
	tests := []struct {
		args       []string
		want       int
		wantStderr string
	}{
		{args: []string{"--help"}, want: 0, wantStderr: "usage: fleetgate plan"},
		{args: []string{"--no-such-flag"}, want: 2, wantStderr: "no-such-flag"},
		{args: []string{"--kubeconfig", "/nonexistent/kubeconfig"}, want: 1, wantStderr: "loading kubeconfig /nonexistent/kubeconfig"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stdout, stderr strings.Builder
			if got := planMain(tt.args, &stdout, &stderr); got != tt.want {
				t.Errorf("exit %d, want %d; stderr: %s", got, tt.want, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.wantStderr) {
				t.Errorf("stderr %q has no %q", stderr.String(), tt.wantStderr)
			}
		})
	}
}

// TestPlanProxies: a plan finds the proxies behind a network load balancer where the operator in
// a cluster does (the proxy Service's EndpointSlices in the hub), refuses those of a local-mode
// operator (a Service of the local class, no EndpointSlices) and those of member clusters it does
// not read, and never runs nor removes proxies.
func TestPlanProxies(t *testing.T) {
	lb := &providers.LoadBalancer{Gateway: "hub/apps/web", Namespace: "apps", Name: "web", Clusters: []string{v1alpha1.HubCluster}}
	name := providers.ResourceName(lb)
	service := func(class *string) client.Object {
		typ := corev1.ServiceTypeClusterIP
		if class != nil {
			typ = corev1.ServiceTypeLoadBalancer
		}
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name},
			Spec: corev1.ServiceSpec{Type: typ, LoadBalancerClass: class}}
	}
	slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name + "-1",
		Labels: map[string]string{discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: endpointSliceController}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.0.1.50"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}}}
	tests := []struct {
		name     string
		clusters []string
		objs     []client.Object
		want     []ir.Endpoint
		wantErr  string
	}{
		{name: "in a cluster", objs: []client.Object{service(nil), slice}, want: []ir.Endpoint{{Address: "10.0.1.50", Cluster: v1alpha1.HubCluster}}},
		{name: "not running yet", objs: nil},
		{name: "local mode", objs: []client.Object{service(ptr.To(v1alpha1.LoadBalancerClassLocal))}, wantErr: "cannot be known outside the operator"},
		{name: "a member cluster", clusters: []string{"east"}, objs: []client.Object{service(nil), slice}, wantErr: "plan reads the hub alone"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lb := *lb
			if tt.clusters != nil {
				lb.Clusters = tt.clusters
			}
			px := planProxies{hub: fake.NewClientBuilder().WithObjects(tt.objs...).Build()}
			got, err := px.Endpoints(t.Context(), &lb)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Endpoints: %v, %v; want an error saying %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("endpoints (-want +got):\n%s", d)
			}
		})
	}
	px := planProxies{hub: fake.NewClientBuilder().Build()}
	if _, err := px.Ensure(t.Context(), lb); !errors.Is(err, errPlanMutates) {
		t.Errorf("Ensure: %v, want %v", err, errPlanMutates)
	}
	if err := px.Delete(t.Context(), lb); !errors.Is(err, errPlanMutates) {
		t.Errorf("Delete: %v, want %v", err, errPlanMutates)
	}
}
