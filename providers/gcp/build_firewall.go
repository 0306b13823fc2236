package gcp

import (
	"maps"
	"slices"
	"strconv"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"
)

// Where Google's load balancers reach the endpoints from (Cloud Load Balancing firewall rules
// reference): the front ends and health checkers of external Application Load Balancers, and the
// health checkers of passthrough Network Load Balancers, whose client traffic arrives itself.
var (
	proxyRanges       = []string{"35.191.0.0/16", "130.211.0.0/22"}
	passthroughChecks = []string{"35.191.0.0/16", "209.85.152.0/22", "209.85.204.0/22"}
)

// allowRule is one ingress firewall rule the endpoints of a network need.
type allowRule struct {
	network string
	sources map[string]bool
	ports   map[string]map[int]bool // protocol ("tcp", "udp") → ports
}

// allowTo lets sources reach the endpoints' ports over protocol in network. id groups what one
// rule carries.
func (b *builder) allowTo(id, network, protocol string, sources []string, ports ...int) {
	r, ok := b.allow[id]
	if !ok {
		r = &allowRule{network: network, sources: map[string]bool{}, ports: map[string]map[int]bool{}}
		b.allow[id] = r
	}
	for _, s := range sources {
		r.sources[s] = true
	}
	if r.ports[protocol] == nil {
		r.ports[protocol] = map[int]bool{}
	}
	for _, p := range ports {
		r.ports[protocol][p] = true
	}
}

// firewalls are the rules allowTo collected, one resource each: ingress to every VM of the network
// (no target tags: the endpoints' VMs are not known by tag) on exactly the endpoints' ports, from
// exactly the load balancer's ranges (and, for a passthrough listener, its clients).
func (b *builder) firewalls() {
	for _, id := range slices.Sorted(maps.Keys(b.allow)) {
		r := b.allow[id]
		fw := &computepb.Firewall{Network: proto.String(r.network), Direction: proto.String("INGRESS"),
			SourceRanges: slices.Sorted(maps.Keys(r.sources))}
		for _, protocol := range slices.Sorted(maps.Keys(r.ports)) {
			var ports []string
			for _, p := range slices.Sorted(maps.Keys(r.ports[protocol])) {
				ports = append(ports, strconv.Itoa(p))
			}
			fw.Allowed = append(fw.Allowed, &computepb.Allowed{IPProtocol: proto.String(protocol), Ports: ports})
		}
		b.add(KindFirewall, Scope{}, id, nil, fw)
	}
}
