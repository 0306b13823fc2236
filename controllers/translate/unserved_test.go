package translate

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

const unservedInput = `
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: fleetgate, generation: 1}
spec: {controllerName: fleetgate.dev/gateway-controller, parametersRef: {group: fleetgate.dev, kind: GatewayClassConfig, name: default}}
---
apiVersion: fleetgate.dev/v1alpha1
kind: GatewayClassConfig
metadata: {name: default, generation: 1}
spec: {provider: incluster}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, generation: 1, namespace: infra}
spec:
  gatewayClassName: fleetgate
  listeners:
  - {name: http, port: 80, protocol: HTTP}
  - {name: tcp, port: 9000, protocol: TCP}
  - name: asks
    port: 8080
    protocol: HTTP
    allowedRoutes:
      kinds:
      - {kind: HTTPRoute}
      - {kind: GRPCRoute}
`

// TestUnservedKinds: a listener does not offer the route kinds whose CRD its cluster does not
// serve; one left with none, or asking for one, is InvalidRouteKinds (Gateway API: a listener's
// supportedKinds are the kinds the implementation can serve).
func TestUnservedKinds(t *testing.T) {
	type listener struct {
		Kinds    []string
		Resolved string // ResolvedRefs reason
	}
	all := map[string]listener{
		"http": {[]string{"HTTPRoute", "GRPCRoute"}, "ResolvedRefs"},
		"tcp":  {[]string{"TCPRoute"}, "ResolvedRefs"},
		"asks": {[]string{"HTTPRoute", "GRPCRoute"}, "ResolvedRefs"},
	}
	tests := []struct {
		name     string
		unserved map[string][]string
		want     map[string]listener
	}{
		{"everything served", nil, all},
		{"another cluster lacks them", map[string][]string{"member": {"TCPRoute", "GRPCRoute"}}, all},
		{"standard channel", map[string][]string{"hub": {"TCPRoute", "UDPRoute", "TLSRoute"}}, map[string]listener{
			"http": {[]string{"HTTPRoute", "GRPCRoute"}, "ResolvedRefs"},
			"tcp":  {nil, "InvalidRouteKinds"},
			"asks": {[]string{"HTTPRoute", "GRPCRoute"}, "ResolvedRefs"},
		}},
		{"no GRPCRoute", map[string][]string{"hub": {"GRPCRoute"}}, map[string]listener{
			"http": {[]string{"HTTPRoute"}, "ResolvedRefs"},
			"tcp":  {[]string{"TCPRoute"}, "ResolvedRefs"},
			"asks": {[]string{"HTTPRoute"}, "InvalidRouteKinds"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := loadSnapshot([]byte(unservedInput), readFixtures(t))
			if err != nil {
				t.Fatal(err)
			}
			s.UnservedKinds = tt.unserved
			res := Translate(s)
			got := map[string]listener{}
			for _, g := range res.Gateways {
				for _, ls := range g.Listeners {
					var l listener
					for _, k := range ls.SupportedKinds {
						l.Kinds = append(l.Kinds, string(k.Kind))
					}
					if c := findCondition(ls.Conditions, string(gwv1.ListenerConditionResolvedRefs)); c != nil {
						l.Resolved = c.Reason
					}
					got[string(ls.Name)] = l
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("listeners (-want +got):\n%s", diff)
			}
		})
	}
}
