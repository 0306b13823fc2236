package aws

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/dataplane/ir"
	"github.com/fleetgate/fleetgate/providers"
)

// TestBuildRefuses: what ELBv2 cannot express is an error naming the route or listener, before any
// call; errUnsupported marks what the capabilities should have kept out.
func TestBuildRefuses(t *testing.T) {
	be := backend("hub/infra/web:80", 1, ep("hub", "10.0.0.5", 80, 0))
	route := func(r ir.Route) *providers.LoadBalancer {
		if r.Name == "" {
			r.Name = "HTTPRoute/infra/r/0/0"
		}
		if r.Backends == nil {
			r.Backends = []ir.Backend{be}
		}
		return testModel(httpListener(80, ir.VirtualHost{Hostname: "*", Routes: []ir.Route{r}}))
	}
	oneZone := Network{VPC: testVPC, Subnets: testNetwork().Subnets[:1]}
	sameZone := testNetwork()
	sameZone.Subnets[1].AvailabilityZone = sameZone.Subnets[0].AvailabilityZone
	withAddress := func(a providers.Address, m *providers.LoadBalancer) *providers.LoadBalancer {
		m.Addresses = []providers.Address{a}
		return m
	}
	tcp := func(port uint32, backends ...ir.Backend) ir.Listener {
		return ir.Listener{Name: "tcp", Port: port, Protocol: ir.ProtocolTCP, L4: &ir.L4Route{Name: "TCPRoute/infra/t/0", Backends: backends}}
	}
	tests := []struct {
		name        string
		model       *providers.LoadBalancer
		opts        v1alpha1.AWSOptions
		net         *Network
		wantErr     string
		unsupported bool
	}{
		{name: "regex path", model: route(ir.Route{Match: ir.Match{Path: &ir.StringMatch{Type: ir.MatchRegex, Value: "/a.*"}}}),
			wantErr: "route HTTPRoute/infra/r/0/0: path match type Regex", unsupported: true},
		{name: "wildcard character in a path", model: route(ir.Route{Match: ir.Match{Path: exact("/a*b")}}),
			wantErr: `path "/a*b" holds an ALB wildcard`, unsupported: true},
		{name: "wildcard character in a header value", model: route(ir.Route{Match: ir.Match{Headers: []ir.KeyMatch{{Name: "x", Type: ir.MatchExact, Value: "a?"}}}}),
			wantErr: `header x: value "a?" holds an ALB wildcard`, unsupported: true},
		{name: "regex query parameter", model: route(ir.Route{Match: ir.Match{QueryParams: []ir.KeyMatch{{Name: "q", Type: ir.MatchRegex, Value: "a+"}}}}),
			wantErr: "query parameter q: match type Regex", unsupported: true},
		{name: "redirect 307", model: route(ir.Route{Filters: ir.Filters{Redirect: &ir.Redirect{Scheme: "https", StatusCode: 307}}}),
			wantErr: "redirect status 307", unsupported: true},
		{name: "prefix replacement of a deeper prefix", model: route(ir.Route{Match: ir.Match{Path: prefix("/old")},
			Filters: ir.Filters{Redirect: &ir.Redirect{StatusCode: 302, Path: &ir.PathModifier{Type: ir.ReplacePrefixMatch, Value: "/new"}}}}),
			wantErr: `redirect replacing the prefix "/old"`, unsupported: true},
		{name: "header modifier", model: route(ir.Route{Filters: ir.Filters{RequestHeaders: &ir.HeaderModifier{Remove: []string{"x"}}}}),
			wantErr: "request header modifier", unsupported: true},
		{name: "mirror and timeouts", model: route(ir.Route{Filters: ir.Filters{Mirrors: []ir.Mirror{{Backend: be}}}, Timeouts: ir.Timeouts{Request: 1}}),
			wantErr: "request mirror, timeouts", unsupported: true},
		{name: "six backends", model: route(ir.Route{Backends: []ir.Backend{be, be, be, be, be, be}}),
			wantErr: "6 backends, ALB forwards to at most 5", unsupported: true},
		{name: "TLS listener on an ALB", model: testModel(ir.Listener{Name: "tls", Port: 443, Protocol: ir.ProtocolTLS}),
			wantErr: "listener 443: protocol TLS needs a network load balancer", unsupported: true},
		{name: "HTTPS without certificate", model: testModel(ir.Listener{Name: "https", Port: 443, Protocol: ir.ProtocolHTTPS}),
			wantErr: "listener 443: HTTPS needs a certificate"},
		{name: "six condition values, caught by validation", model: testModel(httpListener(80, ir.VirtualHost{Hostname: "a.example.com", Routes: []ir.Route{{
			Name: "HTTPRoute/infra/r/0/0", Backends: []ir.Backend{be}, Match: ir.Match{Path: prefix("/p"), Method: "GET",
				Headers: []ir.KeyMatch{{Name: "x", Type: ir.MatchExact, Value: "1"}}, QueryParams: []ir.KeyMatch{{Name: "q", Type: ir.MatchExact, Value: "1"}}}}}})),
			wantErr: "6 condition values, ALB allows 5 per rule"},
		{name: "gRPC on a plain HTTP listener, caught by validation", model: testModel(httpListener(80, ir.VirtualHost{Hostname: "*", Routes: []ir.Route{{
			Name: "GRPCRoute/infra/g/0/0", Backends: []ir.Backend{be}}}})),
			wantErr: "GRPC target group tg/"},
		{name: "ALB in one zone", model: route(ir.Route{}), net: &oneZone,
			wantErr: "an application load balancer needs subnets in at least 2 zones, got 1"},
		{name: "two subnets in one zone", model: route(ir.Route{}), net: &sameZone,
			wantErr: "are both in zone us-east-1b"},
		{name: "IPAddress address", model: withAddress(providers.Address{Type: "IPAddress", Value: "1.2.3.4"}, testModel(tcp(80, be))), opts: nlbOptions(),
			wantErr: `UnsupportedAddress: address "1.2.3.4" of type IPAddress`},
		{name: "malformed allocation", model: withAddress(providers.Address{Type: AddressTypeEIPAllocation, Value: "1.2.3.4"}, testModel(tcp(80, be))), opts: nlbOptions(),
			wantErr: `UnsupportedAddress: "1.2.3.4" is not an Elastic IP allocation ID`},
		{name: "one allocation for two subnets", model: withAddress(providers.Address{Type: AddressTypeEIPAllocation, Value: "eipalloc-1"}, testModel(tcp(80, be))), opts: nlbOptions(),
			wantErr: "UnsupportedAddress: 1 Elastic IP allocations for 2 subnets"},
		{name: "allocation on an ALB", model: withAddress(providers.Address{Type: AddressTypeEIPAllocation, Value: "eipalloc-1"}, route(ir.Route{})),
			wantErr: "UnsupportedAddress: static addresses need a network load balancer"},
		{name: "two SNI routes on an NLB", model: testModel(ir.Listener{Name: "tls", Port: 443, Protocol: ir.ProtocolTLS, SNIRoutes: []ir.SNIRoute{{Name: "a"}, {Name: "b"}}}),
			opts: nlbOptions(), wantErr: "listener 443: 2 TLS routes: a network load balancer cannot route by SNI", unsupported: true},
		{name: "two backends on an NLB listener", model: testModel(tcp(80, be, backend("hub/infra/other:80", 1))), opts: nlbOptions(),
			wantErr: "route TCPRoute/infra/t/0: 2 backends", unsupported: true},
		{name: "HTTP listener on an NLB", model: testModel(httpListener(80)), opts: nlbOptions(),
			wantErr: "protocol HTTP is served by the fleetgate proxies", unsupported: true},
		{name: "TCP and UDP on one port to different backends", opts: nlbOptions(), model: testModel(tcp(53, be),
			ir.Listener{Name: "udp", Port: 53, Protocol: ir.ProtocolUDP, L4: &ir.L4Route{Name: "u", Backends: []ir.Backend{backend("hub/infra/other:53", 1)}}}),
			wantErr: "TCP and UDP on one port go to different backends", unsupported: true},
		{name: "health check timeout not below interval, caught by validation", model: route(ir.Route{}), opts: func() v1alpha1.AWSOptions {
			o := albOptions()
			o.HealthCheck = &v1alpha1.AWSHealthCheck{IntervalSeconds: ptr.To[int32](5), TimeoutSeconds: ptr.To[int32](5)}
			return o
		}(), wantErr: "health check timeout 5s: 2-120 and less than the interval (5s)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts
			if opts.LoadBalancerType == "" {
				opts = albOptions()
			}
			net := testNetwork()
			if tt.net != nil {
				net = *tt.net
			}
			_, err := Build(tt.model, opts, net, testFleet)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Build error %v, want one containing %q", err, tt.wantErr)
			}
			if got := errors.Is(err, errUnsupported); got != tt.unsupported {
				t.Errorf("errors.Is(err, errUnsupported) = %t, want %t", got, tt.unsupported)
			}
		})
	}
}
