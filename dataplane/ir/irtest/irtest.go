// Package irtest builds dataplane configs for tests and benchmarks: the shape of the fleet
// convergence benchmark's gateway, many hostnames each with one route to one backend.
package irtest

import (
	"strconv"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// FleetConfig is a gateway of n hostnames rN.example.com on listener "http-80", each with one
// route to one backend.
func FleetConfig(n int) *ir.Config {
	vhosts := make([]ir.VirtualHost, n)
	for i := range vhosts {
		vhosts[i] = FleetHost(i, "/")
	}
	return &ir.Config{Listeners: []ir.Listener{{Name: "http-80", Port: 80, Protocol: ir.ProtocolHTTP, VirtualHosts: vhosts}}}
}

// FleetHost is FleetConfig's host i, routing path prefix path.
func FleetHost(i int, path string) ir.VirtualHost {
	name := "r" + strconv.Itoa(i)
	return ir.VirtualHost{Hostname: name + ".example.com", Routes: []ir.Route{{
		Name:  "HTTPRoute/bench/" + name + "/0/0",
		Match: ir.Match{Path: &ir.StringMatch{Type: ir.MatchPrefix, Value: path}},
		Backends: []ir.Backend{{Name: "member-a/bench/echo:9080", Weight: 1,
			Endpoints: []ir.Endpoint{{Address: "198.18.0.51", Port: 9080, Cluster: "member-a"}}}},
	}}}
}

// WithHost returns a copy of a FleetConfig, as translation would make it, whose host i is vh.
func WithHost(cfg *ir.Config, i int, vh ir.VirtualHost) *ir.Config {
	next := *cfg
	next.Listeners = []ir.Listener{cfg.Listeners[0]}
	next.Listeners[0].VirtualHosts = append([]ir.VirtualHost(nil), cfg.Listeners[0].VirtualHosts...)
	next.Listeners[0].VirtualHosts[i] = vh
	return &next
}
