package translate

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

func TestIngressHostMatches(t *testing.T) {
	tests := []struct {
		pattern, host string
		want          bool
	}{
		{"", "foo.com", true},
		{"foo.com", "foo.com", true},
		{"foo.com", "bar.foo.com", false},
		{"*.foo.com", "bar.foo.com", true},
		{"*.foo.com", "foo.com", false},
		{"*.foo.com", "a.b.foo.com", false},
		{"*.foo.com", ".foo.com", false},
		{"*.foo.com", "*.b.foo.com", false},
		{"*.foo.com", "barfoo.com", false},
	}
	for _, tt := range tests {
		if got := ingressHostMatches(tt.pattern, tt.host); got != tt.want {
			t.Errorf("ingressHostMatches(%q, %q) = %v, want %v", tt.pattern, tt.host, got, tt.want)
		}
	}
}

func TestIngressPathMatch(t *testing.T) {
	type out struct {
		Type ir.MatchType
		Path string
		Err  bool
	}
	tests := []struct {
		typ  *networkingv1.PathType
		path string
		want out
	}{
		{ptr.To(networkingv1.PathTypeExact), "/foo/", out{ir.MatchExact, "/foo/", false}},
		{ptr.To(networkingv1.PathTypePrefix), "/foo/", out{ir.MatchPrefix, "/foo", false}},
		{ptr.To(networkingv1.PathTypePrefix), "/", out{ir.MatchPrefix, "/", false}},
		{ptr.To(networkingv1.PathTypePrefix), "/foo//", out{Err: true}},
		{ptr.To(networkingv1.PathTypeImplementationSpecific), "/foo/", out{ir.MatchPrefix, "/foo", false}},
		{ptr.To(networkingv1.PathTypeImplementationSpecific), "", out{ir.MatchPrefix, "/", false}},
		{nil, "/x", out{ir.MatchPrefix, "/x", false}},
		{ptr.To(networkingv1.PathTypeExact), "foo", out{Err: true}},
		{ptr.To(networkingv1.PathType("Regex")), "/x", out{Err: true}},
	}
	for _, tt := range tests {
		typ, path, err := ingressPathMatch(networkingv1.HTTPIngressPath{PathType: tt.typ, Path: tt.path})
		got := out{typ, path, err != nil}
		if err != nil {
			got = out{Err: true}
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("ingressPathMatch(%v, %q) (-want +got):\n%s", ptr.Deref(tt.typ, "<nil>"), tt.path, diff)
		}
	}
}

func TestSetLoadBalancerStatus(t *testing.T) {
	ip, host := gwv1.IPAddressType, gwv1.HostnameAddressType
	base := func() *Result {
		return &Result{
			Ingresses: []IngressStatus{
				{Ref: ObjectRef{Kind: "Ingress", Name: "a"}, Gateway: "k", Ports: []networkingv1.IngressPortStatus{{Port: 80, Protocol: corev1.ProtocolTCP}}},
				{Ref: ObjectRef{Kind: "Ingress", Name: "b"}, Gateway: "other"},
			},
			Services: []ServiceStatus{
				{Ref: ObjectRef{Kind: "Service", Name: "s"}, Gateway: "k", IPMode: ptr.To(corev1.LoadBalancerIPModeProxy),
					Ports: []corev1.PortStatus{{Port: 53, Protocol: corev1.ProtocolUDP}}},
			},
		}
	}
	addrs := []gwv1.GatewayStatusAddress{{Type: &ip, Value: "127.1.2.3"}, {Type: &host, Value: "lb.example.com"}}
	tests := []struct {
		name    string
		p       Programmed
		wantIng []networkingv1.IngressLoadBalancerIngress
		wantSvc []corev1.LoadBalancerIngress
	}{
		{name: "not ready leaves status empty", p: Programmed{Addresses: addrs}},
		{name: "ready publishes addresses with ports", p: Programmed{Ready: true, Addresses: addrs},
			wantIng: []networkingv1.IngressLoadBalancerIngress{
				{IP: "127.1.2.3", Ports: []networkingv1.IngressPortStatus{{Port: 80, Protocol: corev1.ProtocolTCP}}},
				{Hostname: "lb.example.com", Ports: []networkingv1.IngressPortStatus{{Port: 80, Protocol: corev1.ProtocolTCP}}},
			},
			wantSvc: []corev1.LoadBalancerIngress{
				{IP: "127.1.2.3", IPMode: ptr.To(corev1.LoadBalancerIPModeProxy), Ports: []corev1.PortStatus{{Port: 53, Protocol: corev1.ProtocolUDP}}},
				{Hostname: "lb.example.com", Ports: []corev1.PortStatus{{Port: 53, Protocol: corev1.ProtocolUDP}}},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := base()
			r.SetLoadBalancerStatus("k", tt.p)
			r.SetLoadBalancerStatus("k", tt.p) // idempotent
			if diff := cmp.Diff(tt.wantIng, r.Ingresses[0].LoadBalancer.Ingress); diff != "" {
				t.Errorf("ingress (-want +got):\n%s", diff)
			}
			if r.Ingresses[1].LoadBalancer.Ingress != nil {
				t.Errorf("other gateway's Ingress changed: %+v", r.Ingresses[1].LoadBalancer)
			}
			if diff := cmp.Diff(tt.wantSvc, r.Services[0].LoadBalancer.Ingress); diff != "" {
				t.Errorf("service (-want +got):\n%s", diff)
			}
		})
	}
}
