package aws

import (
	"cmp"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// Target group protocols and versions, as ELBv2 spells them.
const (
	protocolHTTP        = "HTTP"
	protocolHTTPS       = "HTTPS"
	protocolTCP         = "TCP"
	protocolUDP         = "UDP"
	protocolTLS         = "TLS"
	protocolTCPUDP      = "TCP_UDP"
	versionHTTP1        = "HTTP1"
	versionHTTP2        = "HTTP2"
	versionGRPC         = "GRPC"
	targetTypeIP        = "ip"
	azAll               = "all"
	targetGroupIDPrefix = "tg/"
)

// tgSpec is what makes one target group: the backend, the cluster whose endpoints it holds (""
// for all of them) and how the load balancer speaks to the targets.
type tgSpec struct {
	backend   *ir.Backend
	cluster   string
	endpoints []ir.Endpoint
	protocol  string
	version   string // ALB only
	// sourceIPAffinity keeps a client on one target (NLB stickiness by source IP), as an L4
	// route's ClientIPAffinity asks.
	sourceIPAffinity bool
}

// targetGroup adds the target group of spec to the Stack (once per ID) and returns its ID. The ID
// hashes what tells target groups apart within one gateway, so it is the same on every rebuild
// and unaffected by other routes.
func (b *builder) targetGroup(spec tgSpec) string {
	port := backendPort(spec.backend)
	id := targetGroupID(spec.backend.Name, spec.cluster, port, spec.protocol, spec.version)
	if tg, ok := b.tgs[id]; ok {
		// Shared by two listeners: affinity asked by either holds for both.
		if spec.sourceIPAffinity {
			tg.Attributes[attrStickiness] = "true"
			tg.Attributes[attrStickinessType] = stickinessSourceIP
		}
		return id
	}
	b.tgs[id] = TargetGroup{
		ID:              id,
		Name:            targetGroupName(id, b.lb.Gateway, b.fleet, b.net.VPC, targetTypeIP, spec.version, backendService(spec.backend.Name)),
		Protocol:        spec.protocol,
		ProtocolVersion: spec.version,
		Port:            port,
		VPC:             b.net.VPC,
		HealthCheck:     b.healthCheck(spec.protocol, spec.version, b.net.Probes[spec.backend.Name]),
		Attributes:      b.targetGroupAttributes(spec.protocol, spec.sourceIPAffinity),
		Cluster:         spec.cluster,
		Targets:         b.targets(spec.backend.Name, spec.endpoints),
	}
	return id
}

func targetGroupID(backend, cluster string, port int32, protocol, version string) string {
	return targetGroupIDPrefix + shortHash(12, backend, cluster, strconv.Itoa(int(port)), protocol, version)
}

// backendPort is the Service port of the backend ("cluster/namespace/service:port"): stable while
// endpoints come and go. Every target is registered with its own port; this one is only the
// target group's default. Without one, the first endpoint's port.
func backendPort(be *ir.Backend) int32 {
	if i := strings.LastIndexByte(be.Name, ':'); i >= 0 {
		if p, err := strconv.ParseUint(be.Name[i+1:], 10, 16); err == nil && p > 0 {
			return int32(p)
		}
	}
	if len(be.Endpoints) > 0 {
		return int32(be.Endpoints[0].Port)
	}
	return 1
}

// backendService is the readable part of a backend's target group names: its Service name.
func backendService(name string) string {
	if i := strings.LastIndexByte(name, ':'); i >= 0 {
		name = name[:i]
	}
	return name[strings.LastIndexByte(name, '/')+1:]
}

// targets are the endpoints as IP targets, sorted. An address in none of the load balancer's
// subnets is registered in zone "all", as ELBv2 asks of addresses outside the VPC (a member
// cluster's pods reached over peering). IPv6 endpoints are left out: the target groups are IPv4.
func (b *builder) targets(backend string, eps []ir.Endpoint) []Target {
	var out []Target
	skipped := 0
	for _, e := range eps {
		ip, err := netip.ParseAddr(e.Address)
		if err != nil || !ip.Unmap().Is4() {
			skipped++
			continue
		}
		t := Target{IP: ip.Unmap().String(), Port: int32(e.Port)}
		if !b.inSubnets(ip.Unmap()) {
			t.AvailabilityZone = azAll
		}
		out = append(out, t)
	}
	if skipped > 0 {
		b.note("backend %s: %d endpoints that are not IPv4 addresses are not registered (IPv4 target groups)", backend, skipped)
	}
	slices.SortFunc(out, func(x, y Target) int { return cmp.Or(cmp.Compare(x.IP, y.IP), cmp.Compare(x.Port, y.Port)) })
	return slices.Compact(out)
}

func (b *builder) inSubnets(ip netip.Addr) bool {
	for _, s := range b.net.Subnets {
		if p, err := netip.ParsePrefix(s.CIDR); err == nil && p.Contains(ip) {
			return true
		}
	}
	return false
}

// targetGroupAttributes sets every attribute fleetgate manages, as loadBalancerAttributes does.
func (b *builder) targetGroupAttributes(protocol string, sourceIPAffinity bool) map[string]string {
	a := map[string]string{
		attrDeregistrationDelay: strconv.Itoa(int(int32OrDefault(b.o.DeregistrationDelaySeconds, defaultDeregistrationDelaySeconds))),
	}
	if protocol == protocolHTTP || protocol == protocolHTTPS {
		return a
	}
	a[attrProxyProtocolV2] = strconv.FormatBool(b.o.ProxyProtocolV2)
	a[attrStickiness] = strconv.FormatBool(sourceIPAffinity)
	if sourceIPAffinity {
		a[attrStickinessType] = stickinessSourceIP
	}
	if b.o.PreserveClientIP != nil {
		a[attrPreserveClientIP] = strconv.FormatBool(*b.o.PreserveClientIP)
	}
	return a
}
