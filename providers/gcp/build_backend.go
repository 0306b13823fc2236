package gcp

import (
	"cmp"
	"slices"
	"strconv"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"

	"github.com/fleetgate/fleetgate/dataplane/ir"
	"github.com/fleetgate/fleetgate/providers"
)

// Backend service protocols by how the proxy would speak to the backend.
var backendProtocols = map[ir.AppProtocol]string{ir.AppHTTP1: "HTTP", ir.AppWS: "HTTP", ir.AppH2C: "H2C", ir.AppTLS: "HTTPS"}

// errorService is a backend service without backends: what the 404 and 500 fault aborts of the
// URL map stand on (a route action needs a service even when it never reaches it).
func (b *builder) errorService() string {
	return b.add(KindBackendService, b.scope(), "bs/error", nil, &computepb.BackendService{
		Protocol:            proto.String("HTTP"),
		LoadBalancingScheme: proto.String("EXTERNAL_MANAGED"),
		HealthChecks:        []string{b.healthCheck("HTTP", 0, nil)},
	})
}

// backendService is the backend service of one backend's endpoints in one member cluster, with
// a zonal NEG per zone of those endpoints.
func (b *builder) backendService(s *providers.ClusterShare) string {
	protocol := backendProtocols[s.Backend.AppProtocol]
	id := "bs/" + s.Backend.Name + "@" + s.Cluster
	if r, ok := b.byID[id]; ok {
		return b.link(r.Kind, r.Scope, r.Name)
	}
	var probe *providers.HTTPProbe
	if p, ok := b.probes[s.Backend.Name]; ok {
		probe = &p
	}
	bs := &computepb.BackendService{
		Protocol:            proto.String(protocol),
		LoadBalancingScheme: proto.String("EXTERNAL_MANAGED"),
		HealthChecks:        []string{b.healthCheck(protocol, 0, probe)},
	}
	var ports []int
	for _, e := range s.Endpoints {
		ports = append(ports, int(e.Port))
	}
	// The proxies and health checkers reach the endpoints from Google's ranges.
	b.allowTo("proxies", s.Cluster, "tcp", proxyRanges, ports...)
	for _, neg := range b.negs(id, s.Cluster, s.Backend.Name, s.Endpoints, "GCE_VM_IP_PORT") {
		bs.Backends = append(bs.Backends, &computepb.Backend{Group: proto.String(neg),
			BalancingMode: proto.String("RATE"), MaxRatePerEndpoint: proto.Float32(maxRatePerEndpoint)})
	}
	return b.add(KindBackendService, b.scope(), id, []string{protocol}, bs)
}

// maxRatePerEndpoint is a capacity no endpoint reaches: the load balancer spreads requests by
// endpoint count and health, as the fleetgate proxy does, rather than by a rate limit.
const maxRatePerEndpoint = 1e6

// negs builds the zonal NEGs of one backend service's endpoints and returns their URLs, sorted.
// GCE needs each endpoint's VM (its node) and zone: an endpoint without a node, or without a zone
// in a member of several zones, is left out and noted.
func (b *builder) negs(serviceID, cluster, backend string, eps []ir.Endpoint, negType string) []string {
	byZone := map[string][]*computepb.NetworkEndpoint{}
	for _, e := range eps {
		zone := e.Zone
		if zone == "" {
			if zs := b.members[cluster].Zones; len(zs) == 1 {
				zone = zs[0]
			}
		}
		if zone == "" || e.Node == "" {
			b.note("endpoint %s of %s left out: a NEG needs its zone and node", e.Address, backend)
			continue
		}
		ne := &computepb.NetworkEndpoint{IpAddress: proto.String(e.Address), Instance: proto.String(e.Node)}
		if negType == "GCE_VM_IP_PORT" {
			ne.Port = proto.Int32(int32(e.Port))
		}
		byZone[zone] = append(byZone[zone], ne)
	}
	var links []string
	network := b.network(cluster)
	for _, zone := range slices.Sorted(func(yield func(string) bool) {
		for z := range byZone {
			if !yield(z) {
				return
			}
		}
	}) {
		eps := byZone[zone]
		slices.SortFunc(eps, func(a, c *computepb.NetworkEndpoint) int {
			return cmp.Or(cmp.Compare(a.GetIpAddress(), c.GetIpAddress()), cmp.Compare(a.GetPort(), c.GetPort()))
		})
		eps = slices.CompactFunc(eps, func(a, c *computepb.NetworkEndpoint) bool {
			return a.GetIpAddress() == c.GetIpAddress() && a.GetPort() == c.GetPort()
		})
		id := "neg/" + serviceID + "/" + zone
		neg := &computepb.NetworkEndpointGroup{NetworkEndpointType: proto.String(negType), Network: proto.String(network)}
		scope := Scope{Zone: zone}
		// The name hashes the immutable settings, so a change is a new NEG (moved to, then the old deleted).
		link := b.add(KindNEG, scope, id, []string{negType, network}, neg)
		b.byID[id].Endpoints = eps
		links = append(links, link)
	}
	return links
}

// healthCheck is the gateway's health check for a backend protocol (port 0: the serving port;
// passthrough backends need the port itself). The class's settings apply on top; where the class
// names no path, an HTTP backend's health check follows its pods' readiness probe (path and
// scheme), as GKE's Ingress does, so that a backend whose "/" is not a health endpoint is not
// taken for down.
func (b *builder) healthCheck(protocol string, port int32, probe *providers.HTTPProbe) string {
	hc := &computepb.HealthCheck{}
	path := "/"
	if o := b.o.HealthCheck; o != nil {
		if o.Path != "" {
			path, probe = o.Path, nil
		}
		hc.CheckIntervalSec, hc.TimeoutSec = o.IntervalSeconds, o.TimeoutSeconds
		hc.HealthyThreshold, hc.UnhealthyThreshold = o.HealthyThreshold, o.UnhealthyThreshold
	}
	if probe != nil && protocol != "TCP" && protocol != "UDP" {
		path, protocol = probe.Path, probe.Scheme
	}
	spec := proto.String("USE_SERVING_PORT")
	var p *int32
	if port != 0 {
		spec, p = proto.String("USE_FIXED_PORT"), proto.Int32(port)
	}
	switch protocol {
	case "H2C":
		hc.Type = proto.String("HTTP2")
		hc.Http2HealthCheck = &computepb.HTTP2HealthCheck{PortSpecification: spec, Port: p, RequestPath: proto.String(path)}
	case "HTTPS":
		hc.Type = proto.String("HTTPS")
		hc.HttpsHealthCheck = &computepb.HTTPSHealthCheck{PortSpecification: spec, Port: p, RequestPath: proto.String(path)}
	case "TCP", "UDP":
		// UDP backends are checked over TCP on the same port: GCE has no UDP health check.
		hc.Type = proto.String("TCP")
		hc.TcpHealthCheck = &computepb.TCPHealthCheck{PortSpecification: spec, Port: p}
	default:
		hc.Type = proto.String("HTTP")
		hc.HttpHealthCheck = &computepb.HTTPHealthCheck{PortSpecification: spec, Port: p, RequestPath: proto.String(path)}
	}
	id := "hc/" + protocol + "/" + strconv.Itoa(int(port))
	if path != "/" {
		id += path
	}
	return b.add(KindHealthCheck, b.scope(), id, nil, hc)
}
