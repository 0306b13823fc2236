package gcp

import (
	"slices"
	"strconv"
	"strings"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"

	"github.com/fleetgate/fleetgate/dataplane/ir"
	"github.com/fleetgate/fleetgate/providers"
)

// passthrough builds a passthrough Network Load Balancer: per TCP or UDP listener a regional backend
// service (scheme EXTERNAL) of GCE_VM_IP NEGs and a forwarding rule on the shared address. A
// passthrough load balancer delivers packets to the listener's own port on the endpoint, so an
// endpoint listening on another port cannot be a target: it is left out and noted.
func (b *builder) passthrough() error {
	var ip string
	for _, l := range b.lb.Routing.Listeners {
		if l.Protocol != ir.ProtocolTCP && l.Protocol != ir.ProtocolUDP {
			b.note("listener %s: %s is not served by a passthrough Network Load Balancer", l.Name, l.Protocol)
			continue
		}
		if ip == "" {
			var err error
			if ip, err = b.address(); err != nil {
				return err
			}
		}
		port := strconv.FormatUint(uint64(l.Port), 10)
		protocol := string(l.Protocol)
		bs := &computepb.BackendService{
			Protocol:            proto.String(protocol),
			LoadBalancingScheme: proto.String("EXTERNAL"),
			HealthChecks:        []string{b.healthCheck(protocol, int32(l.Port), nil)},
		}
		id := "bs/" + protocol + "/" + port
		if l.L4 != nil {
			for _, s := range providers.ClusterShares(l.L4.Backends) {
				if s.Backend.Invalid {
					continue
				}
				var eps []ir.Endpoint
				for _, e := range s.Endpoints {
					if e.Port != l.Port {
						b.note("endpoint %s:%d of %s left out: a passthrough load balancer delivers to port %d", e.Address, e.Port, s.Backend.Name, l.Port)
						continue
					}
					eps = append(eps, e)
				}
				// Clients reach the VMs themselves (a passthrough load balancer keeps their
				// addresses), and so do the health checkers.
				if len(eps) > 0 {
					clients := l.SourceRanges
					if len(clients) == 0 {
						clients = []string{"0.0.0.0/0"}
					}
					id := protocol + "/" + port
					b.allowTo(id, s.Cluster, strings.ToLower(protocol), append(slices.Clone(clients), passthroughChecks...), int(l.Port))
					if l.Protocol == ir.ProtocolUDP {
						// Its health check is TCP on the same port (GCE has no UDP check).
						b.allowTo(id+"/check", s.Cluster, "tcp", passthroughChecks, int(l.Port))
					}
				}
				for _, neg := range b.negs(id+"/"+s.Cluster, s.Cluster, s.Backend.Name, eps, "GCE_VM_IP") {
					bs.Backends = append(bs.Backends, &computepb.Backend{Group: proto.String(neg), BalancingMode: proto.String("CONNECTION")})
				}
			}
		}
		service := b.add(KindBackendService, b.scope(), id, nil, bs)
		fr := &computepb.ForwardingRule{
			IPAddress:           &ip,
			IPProtocol:          proto.String(protocol),
			Ports:               []string{port},
			LoadBalancingScheme: proto.String("EXTERNAL"),
			BackendService:      &service,
			NetworkTier:         proto.String("PREMIUM"),
			SourceIpRanges:      l.SourceRanges,
			Labels:              b.s.Labels,
		}
		b.add(KindForwardingRule, b.scope(), "fr/"+protocol+"/"+port, nil, fr)
	}
	return nil
}
