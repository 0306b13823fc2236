package aws

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
)

// AddressTypeEIPAllocation is the spec.addresses type of a static NLB address: the value is an
// Elastic IP allocation ID ("eipalloc-…"). The addresses are given to the subnets in the order
// the subnets are discovered or listed (AWSOptions.Subnets), one each, so there must be as many
// as subnets. ELBv2 takes no plain IP address for an internet-facing NLB, only allocations.
const AddressTypeEIPAllocation = "fleetgate.dev/eip-allocation"

// Defaults AWS documents and fleetgate writes explicitly, so that drift from them is corrected.
const (
	defaultIdleTimeoutSeconds         = 60
	defaultDeregistrationDelaySeconds = 300
	// defaultSSLPolicy offers TLS 1.3 and 1.2 with forward secrecy only, AWS's own recommendation;
	// AWS's API default (ELBSecurityPolicy-2016-08) still accepts TLS 1.0.
	defaultSSLPolicy                    = "ELBSecurityPolicy-TLS13-1-2-2021-06"
	ipAddressTypeIPv4                   = "ipv4"
	ipAddressTypeDualstack              = "dualstack"
	schemeInternetFacing                = "internet-facing"
	attrDeletionProtection              = "deletion_protection.enabled"
	attrAccessLogsEnabled               = "access_logs.s3.enabled"
	attrAccessLogsBucket                = "access_logs.s3.bucket"
	attrAccessLogsPrefix                = "access_logs.s3.prefix"
	attrIdleTimeout                     = "idle_timeout.timeout_seconds"
	attrCrossZone                       = "load_balancing.cross_zone.enabled"
	attrDeregistrationDelay             = "deregistration_delay.timeout_seconds"
	attrPreserveClientIP                = "preserve_client_ip.enabled"
	attrProxyProtocolV2                 = "proxy_protocol_v2.enabled"
	attrStickiness                      = "stickiness.enabled"
	attrStickinessType                  = "stickiness.type"
	stickinessSourceIP                  = "source_ip"
	eipAllocationPrefix                 = "eipalloc-"
	addressTypeIPAddress                = "IPAddress"
	minApplicationLoadBalancerSubnetAZs = 2
)

func (b *builder) loadBalancer() (LoadBalancer, error) {
	lbType := string(b.o.LoadBalancerType)
	l := LoadBalancer{
		Name:          loadBalancerName(b.lb.Gateway, b.fleet, b.lb.Name, lbType, b.scheme()),
		Type:          lbType,
		Scheme:        b.scheme(),
		IPAddressType: b.ipAddressType(),
		Attributes:    b.loadBalancerAttributes(),
	}
	if err := b.checkSubnets(); err != nil {
		return LoadBalancer{}, err
	}
	mappings, err := b.subnetMappings()
	if err != nil {
		return LoadBalancer{}, err
	}
	if mappings != nil {
		l.SubnetMappings = mappings
		return l, nil
	}
	for _, s := range b.net.Subnets {
		l.Subnets = append(l.Subnets, s.ID)
	}
	slices.Sort(l.Subnets)
	return l, nil
}

func (b *builder) scheme() string {
	if b.o.Scheme == "" {
		return schemeInternetFacing
	}
	return b.o.Scheme
}

func (b *builder) ipAddressType() string {
	if b.o.IPAddressType == "" {
		return ipAddressTypeIPv4
	}
	return b.o.IPAddressType
}

// checkSubnets enforces CreateLoadBalancer's subnet rules, which need the zones the Stack does not
// keep: one subnet per zone, and an ALB in at least two zones.
func (b *builder) checkSubnets() error {
	zones := map[string]string{}
	for _, s := range b.net.Subnets {
		if other, ok := zones[s.AvailabilityZone]; ok {
			return fmt.Errorf("subnets %s and %s are both in zone %s: a load balancer takes one subnet per zone", other, s.ID, s.AvailabilityZone)
		}
		zones[s.AvailabilityZone] = s.ID
	}
	if b.o.LoadBalancerType == v1alpha1.AWSApplication && len(zones) < minApplicationLoadBalancerSubnetAZs {
		return fmt.Errorf("an application load balancer needs subnets in at least %d zones, got %d", minApplicationLoadBalancerSubnetAZs, len(zones))
	}
	if len(zones) == 0 {
		return fmt.Errorf("no subnets")
	}
	return nil
}

// subnetMappings pairs the requested EIP allocations with the subnets, in subnet order; nil when
// no address is requested.
func (b *builder) subnetMappings() ([]SubnetMapping, error) {
	if len(b.lb.Addresses) == 0 {
		return nil, nil
	}
	var allocs []string
	for _, a := range b.lb.Addresses {
		switch {
		case a.Type == AddressTypeEIPAllocation && strings.HasPrefix(a.Value, eipAllocationPrefix):
			allocs = append(allocs, a.Value)
		case a.Type == AddressTypeEIPAllocation:
			return nil, fmt.Errorf("UnsupportedAddress: %q is not an Elastic IP allocation ID (%s…)", a.Value, eipAllocationPrefix)
		case a.Type == "" || a.Type == addressTypeIPAddress:
			return nil, fmt.Errorf("UnsupportedAddress: address %q of type IPAddress: ELBv2 assigns static addresses from Elastic IP allocations, request them with type %s", a.Value, AddressTypeEIPAllocation)
		default:
			return nil, fmt.Errorf("UnsupportedAddress: address type %q: only %s is supported", a.Type, AddressTypeEIPAllocation)
		}
	}
	if b.o.LoadBalancerType != v1alpha1.AWSNetwork {
		return nil, fmt.Errorf("UnsupportedAddress: static addresses need a network load balancer")
	}
	if len(allocs) != len(b.net.Subnets) {
		return nil, fmt.Errorf("UnsupportedAddress: %d Elastic IP allocations for %d subnets: one per subnet is needed", len(allocs), len(b.net.Subnets))
	}
	m := make([]SubnetMapping, len(allocs))
	for i, s := range b.net.Subnets {
		m[i] = SubnetMapping{SubnetID: s.ID, AllocationID: allocs[i]}
	}
	slices.SortFunc(m, func(x, y SubnetMapping) int { return strings.Compare(x.SubnetID, y.SubnetID) })
	return m, nil
}

// loadBalancerAttributes sets every attribute fleetgate manages, defaults included, so that drift
// correction puts back a value changed by hand.
func (b *builder) loadBalancerAttributes() map[string]string {
	a := map[string]string{
		attrDeletionProtection: strconv.FormatBool(b.o.DeletionProtection),
		attrAccessLogsEnabled:  strconv.FormatBool(b.o.AccessLogs != nil),
	}
	if l := b.o.AccessLogs; l != nil {
		a[attrAccessLogsBucket] = l.Bucket
		a[attrAccessLogsPrefix] = l.Prefix
	}
	switch b.o.LoadBalancerType {
	case v1alpha1.AWSApplication:
		a[attrIdleTimeout] = strconv.Itoa(int(int32OrDefault(b.o.IdleTimeoutSeconds, defaultIdleTimeoutSeconds)))
	case v1alpha1.AWSNetwork:
		a[attrCrossZone] = strconv.FormatBool(b.o.CrossZone)
	}
	return a
}

func int32OrDefault(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}
