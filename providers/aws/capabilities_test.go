package aws

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/providers"
)

func TestCapabilitiesOf(t *testing.T) {
	tests := []struct {
		name string
		typ  v1alpha1.AWSLoadBalancerType
		want providers.Capabilities
	}{{
		name: "application",
		typ:  v1alpha1.AWSApplication,
		want: providers.Capabilities{
			Protocols:           []string{"HTTP", "HTTPS"},
			RouteKinds:          []string{"HTTPRoute", "GRPCRoute"},
			PathMatches:         []string{"Exact", "PathPrefix"},
			HeaderMatches:       []string{"Exact"},
			QueryMatches:        []string{"Exact"},
			MethodMatch:         true,
			Filters:             []string{"RequestRedirect"},
			Weights:             true,
			MaxBackendsPerRule:  5,
			MaxRulesPerListener: 100, MaxConditionsPerMatch: 5, MaxCertificatesPerListener: 25,
		},
	}, {
		name: "network",
		typ:  v1alpha1.AWSNetwork,
		want: providers.Capabilities{
			Protocols:           []string{"TCP", "UDP", "TLS"},
			RouteKinds:          []string{"TCPRoute", "UDPRoute", "TLSRoute"},
			MaxBackendsPerRule:  1,
			MaxRulesPerListener: 1,
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := decodeOptions([]byte(`{"loadBalancerType":"`+string(tc.typ)+`"}`), v1alpha1.AWSOptions{Region: "us-east-1"})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, capabilitiesOf(o)); diff != "" {
				t.Errorf("capabilitiesOf (-want +got):\n%s", diff)
			}
		})
	}
}
