package aws

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
)

// The subnet tags of Kubernetes on AWS (the AWS Load Balancer Controller's subnet discovery).
const (
	tagRoleELB         = "kubernetes.io/role/elb"
	tagRoleInternalELB = "kubernetes.io/role/internal-elb"
	tagClusterPrefix   = "kubernetes.io/cluster/"
)

const (
	// minFreeIPs is what AWS asks of a load balancer's subnet (ALB and NLB alike): 8 free
	// addresses, to scale and to replace nodes.
	minFreeIPs = 8
	// minALBPrefixBits is the /27 an ALB's subnet must be at least.
	minALBPrefixBits = 27
	// maxRejectedNamed bounds the rejected subnets an error names.
	maxRejectedNamed = 20
)

// network finds the VPC and subnets (one per zone) of a load balancer of type lbType for a gateway
// of clusters: o.Subnets checked as given, else discovered by the role and cluster tags (within
// o.VPC when set). A result is reused for the discovery TTL, so that every gateway of the account
// shares one DescribeSubnets per class and period. The error names every subnet it rejected and why.
func (c *clients) network(ctx context.Context, o v1alpha1.AWSOptions, lbType string, clusters []string) (Network, error) {
	key := fmt.Sprintf("%s|%s|%s|%s|%s|%s", o.VPC, strings.Join(o.Subnets, ","), o.Scheme, o.IPAddressType, lbType, strings.Join(clusters, ","))
	if n, ok := c.networks.get(key); ok {
		return n, nil
	}
	req := subnetRequest{lbType: lbType, scheme: o.Scheme, dualstack: o.IPAddressType == ipAddressTypeDualstack, vpc: o.VPC, clusters: clusters}
	in := &ec2.DescribeSubnetsInput{}
	switch {
	case len(o.Subnets) > 0:
		// A filter rather than SubnetIds: a missing subnet is then absent, not an error that hides
		// what is wrong with the others.
		in.Filters = []ec2types.Filter{{Name: awssdk.String("subnet-id"), Values: o.Subnets}}
		req.explicit = o.Subnets
	case o.VPC != "":
		in.Filters = []ec2types.Filter{{Name: awssdk.String("vpc-id"), Values: []string{o.VPC}}}
	}
	var subnets []ec2types.Subnet
	for page := ec2.NewDescribeSubnetsPaginator(c.EC2, in); page.HasMorePages(); {
		out, err := page.NextPage(ctx)
		if err != nil {
			return Network{}, fmt.Errorf("describing subnets (%s): %w", c.Account, err)
		}
		subnets = append(subnets, out.Subnets...)
	}
	n, err := chooseSubnets(subnets, req)
	if err != nil {
		return Network{}, err
	}
	c.networks.put(key, n)
	return n, nil
}

// subnetRequest is what the subnets must serve.
type subnetRequest struct {
	lbType, scheme string
	dualstack      bool
	vpc            string
	clusters       []string
	// explicit are the subnets the class names; nil: discover.
	explicit []string
}

func (r subnetRequest) describe() string {
	return fmt.Sprintf("an %s %s load balancer", r.scheme, r.lbType)
}

// candidate is a subnet and why it cannot be used ("" when it can).
type candidate struct {
	subnet ec2types.Subnet
	reason string
}

// chooseSubnets picks one subnet per zone, the one with most free addresses (ties by ID), and
// checks there are enough zones (2 for an ALB).
func chooseSubnets(subnets []ec2types.Subnet, r subnetRequest) (Network, error) {
	cands := make([]candidate, 0, len(subnets))
	for _, s := range subnets {
		cands = append(cands, candidate{subnet: s, reason: r.rejection(s)})
	}
	for _, id := range r.explicit {
		if !slices.ContainsFunc(subnets, func(s ec2types.Subnet) bool { return awssdk.ToString(s.SubnetId) == id }) {
			cands = append(cands, candidate{subnet: ec2types.Subnet{SubnetId: awssdk.String(id)}, reason: "not found"})
		}
	}
	vpc, err := r.commonVPC(cands)
	if err != nil {
		return Network{}, err
	}
	n := Network{VPC: vpc, Subnets: onePerZone(cands)}
	rejected := rejections(cands)
	minZones := 1
	if r.lbType == TypeApplication {
		minZones = 2
	}
	switch {
	case r.explicit != nil && len(rejected) > 0:
		// Subnets named by the class are all used or the class is wrong: AWS would refuse them.
		return Network{}, fmt.Errorf("subnets of the GatewayClassConfig cannot serve %s: %s", r.describe(), strings.Join(rejected, "; "))
	case len(n.Subnets) < minZones:
		msg := fmt.Sprintf("too few subnets for %s: needs %d availability zone%s, found %d", r.describe(), minZones, plural(minZones), len(n.Subnets))
		if len(n.Subnets) > 0 {
			msg += fmt.Sprintf(" (%s in %s)", n.Subnets[0].ID, n.Subnets[0].AvailabilityZone)
		}
		if len(rejected) > 0 {
			msg += "; rejected: " + strings.Join(rejected, "; ")
		} else if r.explicit == nil {
			msg += fmt.Sprintf("; tag subnets with %s", r.roleTag())
		}
		return Network{}, errors.New(msg)
	}
	return n, nil
}

// commonVPC is the class's VPC, or else the one VPC of the usable candidates.
func (r subnetRequest) commonVPC(cands []candidate) (string, error) {
	if r.vpc != "" {
		return r.vpc, nil
	}
	vpcs := map[string][]string{}
	for _, c := range cands {
		if c.reason == "" {
			v := awssdk.ToString(c.subnet.VpcId)
			vpcs[v] = append(vpcs[v], awssdk.ToString(c.subnet.SubnetId))
		}
	}
	if len(vpcs) > 1 {
		var each []string
		for _, v := range slices.Sorted(maps.Keys(vpcs)) {
			each = append(each, v+" ("+strings.Join(slices.Sorted(slices.Values(vpcs[v])), ", ")+")")
		}
		return "", fmt.Errorf("subnets for %s are in several VPCs: %s; set vpc in the GatewayClassConfig", r.describe(), strings.Join(each, "; "))
	}
	for v := range vpcs {
		return v, nil
	}
	return "", nil
}

// onePerZone takes the usable candidate with most free addresses (ties by ID) in each zone and
// rejects the others there; the result is sorted by ID.
func onePerZone(cands []candidate) []Subnet {
	slices.SortFunc(cands, func(a, b candidate) int {
		return cmp.Or(
			cmp.Compare(awssdk.ToInt32(b.subnet.AvailableIpAddressCount), awssdk.ToInt32(a.subnet.AvailableIpAddressCount)),
			cmp.Compare(awssdk.ToString(a.subnet.SubnetId), awssdk.ToString(b.subnet.SubnetId)))
	})
	taken := map[string]string{} // zone → subnet
	var out []Subnet
	for i := range cands {
		c := &cands[i]
		if c.reason != "" {
			continue
		}
		zone := awssdk.ToString(c.subnet.AvailabilityZone)
		if first, ok := taken[zone]; ok {
			c.reason = fmt.Sprintf("second in %s (%s taken there)", zone, first)
			continue
		}
		taken[zone] = awssdk.ToString(c.subnet.SubnetId)
		out = append(out, Subnet{ID: taken[zone], AvailabilityZone: zone, CIDR: awssdk.ToString(c.subnet.CidrBlock)})
	}
	slices.SortFunc(out, func(a, b Subnet) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// rejections lists "subnet: reason" by subnet ID, at most maxRejectedNamed of them.
func rejections(cands []candidate) []string {
	var out []string
	for _, c := range cands {
		if c.reason != "" {
			out = append(out, awssdk.ToString(c.subnet.SubnetId)+": "+c.reason)
		}
	}
	slices.Sort(out)
	if len(out) > maxRejectedNamed {
		out = append(out[:maxRejectedNamed], fmt.Sprintf("and %d more", len(out)-maxRejectedNamed))
	}
	return out
}

func (r subnetRequest) roleTag() string {
	if r.scheme == schemeInternal {
		return tagRoleInternalELB
	}
	return tagRoleELB
}

// rejection says why s cannot take the load balancer, "" when it can. Tags are only consulted in
// discovery: subnets the class names explicitly are the user's choice.
func (r subnetRequest) rejection(s ec2types.Subnet) string {
	tags := map[string]string{}
	for _, t := range s.Tags {
		tags[awssdk.ToString(t.Key)] = awssdk.ToString(t.Value)
	}
	if r.explicit == nil {
		role := r.roleTag()
		if v, ok := tags[role]; !ok {
			return "no " + role + " tag"
		} else if v != "" && v != "1" {
			return fmt.Sprintf("%s is %q, needs \"1\" or empty", role, v)
		}
		if why := r.clusterMismatch(tags); why != "" {
			return why
		}
	}
	if v := awssdk.ToString(s.VpcId); r.vpc != "" && v != r.vpc {
		return fmt.Sprintf("in %s, not the class's %s", v, r.vpc)
	}
	if s.State != ec2types.SubnetStateAvailable {
		return fmt.Sprintf("state %s, not available", s.State)
	}
	if free := awssdk.ToInt32(s.AvailableIpAddressCount); free < minFreeIPs {
		return fmt.Sprintf("%d free IPs, needs %d", free, minFreeIPs)
	}
	if p, err := netip.ParsePrefix(awssdk.ToString(s.CidrBlock)); err == nil && r.lbType == TypeApplication && p.Bits() > minALBPrefixBits {
		return fmt.Sprintf("/%d, an application load balancer needs at least a /%d", p.Bits(), minALBPrefixBits)
	}
	if r.dualstack && !hasIPv6(s) {
		return "no IPv6 CIDR, which ipAddressType dualstack needs"
	}
	return ""
}

// clusterMismatch: a subnet tagged for clusters serves only those, with value owned or shared; an
// untagged one serves any.
func (r subnetRequest) clusterMismatch(tags map[string]string) string {
	var others, badValue []string
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		name, ok := strings.CutPrefix(k, tagClusterPrefix)
		switch v := tags[k]; {
		case !ok:
		case !slices.Contains(r.clusters, name):
			others = append(others, name)
		case v == "owned" || v == "shared":
			return ""
		default:
			badValue = append(badValue, fmt.Sprintf("%s is %q, needs owned or shared", k, v))
		}
	}
	switch {
	case len(badValue) > 0:
		return strings.Join(badValue, ", ")
	case len(others) > 0:
		return fmt.Sprintf("tagged for cluster %s, not %s", strings.Join(others, ", "), strings.Join(r.clusters, " or "))
	}
	return ""
}

func hasIPv6(s ec2types.Subnet) bool {
	for _, a := range s.Ipv6CidrBlockAssociationSet {
		if awssdk.ToString(a.Ipv6CidrBlock) == "" || a.Ipv6CidrBlockState == nil {
			continue
		}
		switch a.Ipv6CidrBlockState.State {
		case ec2types.SubnetCidrBlockStateCodeDisassociating, ec2types.SubnetCidrBlockStateCodeDisassociated,
			ec2types.SubnetCidrBlockStateCodeFailing, ec2types.SubnetCidrBlockStateCodeFailed:
			continue
		}
		return true
	}
	return false
}

// networkCache holds discovered networks for a TTL.
type networkCache struct {
	ttl time.Duration
	now func() time.Time

	mu      sync.Mutex
	entries map[string]cachedNetwork
}

type cachedNetwork struct {
	network Network
	expires time.Time
}

func newNetworkCache(ttl time.Duration, now func() time.Time) *networkCache {
	return &networkCache{ttl: ttl, now: now, entries: map[string]cachedNetwork{}}
}

func (c *networkCache) get(key string) (Network, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || !c.now().Before(e.expires) {
		delete(c.entries, key)
		return Network{}, false
	}
	return Network{VPC: e.network.VPC, Subnets: slices.Clone(e.network.Subnets)}, true
}

func (c *networkCache) put(key string, n Network) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries[key] = cachedNetwork{network: Network{VPC: n.VPC, Subnets: slices.Clone(n.Subnets)}, expires: c.now().Add(c.ttl)}
}
