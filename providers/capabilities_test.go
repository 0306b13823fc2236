package providers

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCapabilitiesProxied(t *testing.T) {
	nlb := Capabilities{
		Protocols:          []string{"TCP", "UDP", "TLS"},
		RouteKinds:         []string{"TCPRoute", "UDPRoute", "TLSRoute"},
		MaxBackendsPerRule: 1,
	}
	proxiedNLB := nlb
	proxiedNLB.Proxied = &Capabilities{All: true}
	tests := []struct {
		name     string
		caps     Capabilities
		protocol string
		kind     string
		want     Capabilities // of ForProtocol(protocol) and ForRouteKind(kind) alike
		protoOK  bool
	}{
		{"HTTP without proxies", nlb, "HTTP", "HTTPRoute", nlb, false},
		{"HTTP through the proxies", proxiedNLB, "HTTP", "HTTPRoute", Capabilities{All: true}, true},
		{"HTTPS and GRPCRoute through the proxies", proxiedNLB, "HTTPS", "GRPCRoute", Capabilities{All: true}, true},
		{"TCP stays on the load balancer", proxiedNLB, "TCP", "TCPRoute", proxiedNLB, true},
		{"TLS stays on the load balancer", proxiedNLB, "TLS", "TLSRoute", proxiedNLB, true},
		{"proxies that lack HTTPS", Capabilities{Proxied: &Capabilities{Protocols: []string{"HTTP"}}}, "HTTPS", "HTTPRoute",
			Capabilities{Protocols: []string{"HTTP"}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.caps.ForProtocol(tt.protocol)); diff != "" {
				t.Errorf("ForProtocol(%s) (-want +got):\n%s", tt.protocol, diff)
			}
			if diff := cmp.Diff(tt.want, tt.caps.ForRouteKind(tt.kind)); diff != "" {
				t.Errorf("ForRouteKind(%s) (-want +got):\n%s", tt.kind, diff)
			}
			if got := tt.caps.Protocol(tt.protocol); got != tt.protoOK {
				t.Errorf("Protocol(%s) = %v, want %v", tt.protocol, got, tt.protoOK)
			}
		})
	}
}
