package aws

import (
	"cmp"
	"slices"
)

// Everyone, per address family, is where a listener without source ranges takes clients from.
const (
	anyIPv4 = "0.0.0.0/0"
	anyIPv6 = "::/0"
)

// securityGroup opens each ALB listener port to its source ranges (everyone when it has none;
// IPv6 too on a dualstack load balancer).
func (b *builder) securityGroup() *SecurityGroup {
	sg := &SecurityGroup{
		ID:          "sg",
		Name:        loadBalancerName(b.lb.Gateway, b.fleet, b.lb.Name, string(b.o.LoadBalancerType), b.scheme()),
		Description: "fleetgate load balancer of gateway " + b.lb.Gateway,
		VPC:         b.net.VPC,
	}
	for _, l := range b.lb.Routing.Listeners {
		ranges := l.SourceRanges
		if len(ranges) == 0 {
			ranges = []string{anyIPv4}
			if b.ipAddressType() == ipAddressTypeDualstack {
				ranges = append(ranges, anyIPv6)
			}
		}
		for _, r := range ranges {
			sg.Ingress = append(sg.Ingress, IngressRule{Protocol: "tcp", Port: int32(l.Port), CIDR: r})
		}
	}
	slices.SortFunc(sg.Ingress, func(x, y IngressRule) int {
		return cmp.Or(cmp.Compare(x.Port, y.Port), cmp.Compare(x.Protocol, y.Protocol), cmp.Compare(x.CIDR, y.CIDR))
	})
	sg.Ingress = slices.Compact(sg.Ingress)
	return sg
}
