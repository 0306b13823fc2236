package aws

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
)

const lbResourceID = "lb"

// syncLoadBalancer creates the load balancer or reconciles its attributes, security groups,
// subnets and tags. Type, scheme and IP address type need a replacement (delete, then create:
// the name is the same), which run refuses beforehand while deletion protection is on.
func (d *deployer) syncLoadBalancer(ctx context.Context, st *state, x *executor) error {
	want := st.stack.LoadBalancer
	tags := d.tagsFor(st.stack, lbResourceID, map[string]string{TagClusters: strings.Join(st.stack.Clusters, ",")})
	live := st.liveLoadBalancer()
	if live != nil {
		if changes := replacementChanges(want, live.lb); len(changes) > 0 {
			arn := aws.ToString(live.lb.LoadBalancerArn)
			if err := x.do(Call{"DeleteLoadBalancer", lbResourceID, "replace: " + strings.Join(changes, ", ")}, func() error {
				_, err := d.elb.DeleteLoadBalancer(ctx, &elbv2.DeleteLoadBalancerInput{LoadBalancerArn: &arn})
				return err
			}); err != nil {
				return err
			}
			st.lbGone = arn
			live = nil
		}
	}
	if live == nil {
		return d.createLoadBalancer(ctx, st, x, want, tags)
	}
	st.lbARN = aws.ToString(live.lb.LoadBalancerArn)
	st.deployed = deployedOf(live.lb)
	attrs := changedAttributes(live.attrs, want.Attributes)
	if attrs[attrDeletionProtection] == "false" {
		// fleetgate never turns protection off: whoever turned it on turns it off.
		d.log.Info("deletion protection stays on", "loadBalancer", lbName(live))
		delete(attrs, attrDeletionProtection)
	}
	if err := d.setLoadBalancerAttributes(ctx, x, st.lbARN, attrs); err != nil {
		return err
	}
	if want.Type == TypeApplication && st.sgID != "" && !sameSet(live.lb.SecurityGroups, []string{st.sgID}) {
		if err := x.do(Call{"SetSecurityGroups", lbResourceID, st.sgID}, func() error {
			_, err := d.elb.SetSecurityGroups(ctx, &elbv2.SetSecurityGroupsInput{LoadBalancerArn: &st.lbARN, SecurityGroups: []string{st.sgID}})
			return err
		}); err != nil {
			return err
		}
	}
	if in := subnetsUpdate(want, live.lb); in != nil {
		in.LoadBalancerArn = &st.lbARN
		if err := x.do(Call{"SetSubnets", lbResourceID, strings.Join(subnetIDs(want), ",")}, func() error {
			_, err := d.elb.SetSubnets(ctx, in)
			return err
		}); err != nil {
			return err
		}
	}
	return d.syncELBTags(ctx, x, lbResourceID, st.lbARN, live.tags, tags)
}

// refuseReplacement returns *ReplacementRefusedError when the Stack needs the live load balancer
// replaced and its deletion protection is on.
func (st *state) refuseReplacement() error {
	live := st.liveLoadBalancer()
	if live == nil || live.attrs[attrDeletionProtection] != "true" {
		return nil
	}
	if changes := replacementChanges(st.stack.LoadBalancer, live.lb); len(changes) > 0 {
		return &ReplacementRefusedError{LoadBalancer: lbName(live), Changes: changes}
	}
	return nil
}

// liveLoadBalancer picks the observed load balancer to keep: the one with the Stack's name, else
// the first. Any other is cleaned up.
func (st *state) liveLoadBalancer() *liveLB {
	for i, l := range st.obs.lbs {
		if lbName(&l) == st.stack.LoadBalancer.Name {
			return &st.obs.lbs[i]
		}
	}
	if len(st.obs.lbs) > 0 {
		return &st.obs.lbs[0]
	}
	return nil
}

func (d *deployer) createLoadBalancer(ctx context.Context, st *state, x *executor, want LoadBalancer, tags map[string]string) error {
	in := &elbv2.CreateLoadBalancerInput{
		Name: &want.Name, Type: elbtypes.LoadBalancerTypeEnum(want.Type), Scheme: elbtypes.LoadBalancerSchemeEnum(want.Scheme),
		IpAddressType: elbtypes.IpAddressType(want.IPAddressType), Tags: elbTags(tags),
	}
	if len(want.SubnetMappings) > 0 {
		in.SubnetMappings = sdkSubnetMappings(want.SubnetMappings)
	} else {
		in.Subnets = want.Subnets
	}
	if want.Type == TypeApplication && st.sgID != "" {
		in.SecurityGroups = []string{st.sgID}
	}
	st.lbARN, st.lbCreated = placeholder(lbResourceID), true
	if err := x.do(Call{"CreateLoadBalancer", lbResourceID, fmt.Sprintf("%s %s %s in %s", want.Name, want.Type, want.Scheme, strings.Join(subnetIDs(want), ","))}, func() error {
		out, err := d.elb.CreateLoadBalancer(ctx, in)
		if err == nil {
			st.lbARN = aws.ToString(out.LoadBalancers[0].LoadBalancerArn)
			st.deployed = deployedOf(out.LoadBalancers[0])
		}
		return err
	}); err != nil {
		return err
	}
	return d.setLoadBalancerAttributes(ctx, x, st.lbARN, want.Attributes)
}

func (d *deployer) setLoadBalancerAttributes(ctx context.Context, x *executor, arn string, attrs map[string]string) error {
	if len(attrs) == 0 {
		return nil
	}
	return x.do(Call{"ModifyLoadBalancerAttributes", lbResourceID, attrDetail(attrs)}, func() error {
		kvs := make([]elbtypes.LoadBalancerAttribute, 0, len(attrs))
		for _, k := range slices.Sorted(maps.Keys(attrs)) {
			kvs = append(kvs, elbtypes.LoadBalancerAttribute{Key: aws.String(k), Value: aws.String(attrs[k])})
		}
		_, err := d.elb.ModifyLoadBalancerAttributes(ctx, &elbv2.ModifyLoadBalancerAttributesInput{LoadBalancerArn: &arn, Attributes: kvs})
		return err
	})
}

// replacementChanges lists what differs on live that ELBv2 cannot change in place. The type is
// read from Type, never from the ARN (moto's NLB ARNs say "app").
func replacementChanges(want LoadBalancer, live elbtypes.LoadBalancer) []string {
	var changes []string
	for _, f := range []struct{ name, have, want string }{
		{"type", string(live.Type), want.Type},
		{"scheme", string(live.Scheme), want.Scheme},
		{"ipAddressType", string(live.IpAddressType), want.IPAddressType},
	} {
		if f.want != "" && f.have != f.want {
			changes = append(changes, fmt.Sprintf("%s %s→%s", f.name, f.have, f.want))
		}
	}
	return changes
}

// subnetsUpdate is the SetSubnets input when the live subnets differ from want's, else nil.
func subnetsUpdate(want LoadBalancer, live elbtypes.LoadBalancer) *elbv2.SetSubnetsInput {
	have := make([]string, 0, len(live.AvailabilityZones))
	for _, az := range live.AvailabilityZones {
		have = append(have, aws.ToString(az.SubnetId))
	}
	if sameSet(have, subnetIDs(want)) {
		return nil
	}
	if len(want.SubnetMappings) > 0 {
		return &elbv2.SetSubnetsInput{SubnetMappings: sdkSubnetMappings(want.SubnetMappings)}
	}
	return &elbv2.SetSubnetsInput{Subnets: want.Subnets}
}

func subnetIDs(lb LoadBalancer) []string {
	if len(lb.SubnetMappings) == 0 {
		return lb.Subnets
	}
	ids := make([]string, len(lb.SubnetMappings))
	for i, m := range lb.SubnetMappings {
		ids[i] = m.SubnetID
	}
	return ids
}

func sdkSubnetMappings(ms []SubnetMapping) []elbtypes.SubnetMapping {
	out := make([]elbtypes.SubnetMapping, len(ms))
	for i, m := range ms {
		out[i] = elbtypes.SubnetMapping{SubnetId: aws.String(m.SubnetID), AllocationId: optString(m.AllocationID)}
	}
	return out
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func deployedOf(lb elbtypes.LoadBalancer) Deployed {
	dep := Deployed{ARN: aws.ToString(lb.LoadBalancerArn), DNSName: aws.ToString(lb.DNSName), CanonicalHostedZoneID: aws.ToString(lb.CanonicalHostedZoneId)}
	if lb.State != nil {
		dep.State = string(lb.State.Code)
	}
	return dep
}

// addresses are the public IPs of the Elastic IPs in the subnet mappings: ELBv2 does not always
// report them (moto never does), EC2 does.
func (d *deployer) addresses(ctx context.Context, ms []SubnetMapping) ([]string, error) {
	var ids []string
	for _, m := range ms {
		if m.AllocationID != "" {
			ids = append(ids, m.AllocationID)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	out, err := d.ec2.DescribeAddresses(ctx, &ec2.DescribeAddressesInput{AllocationIds: ids})
	if err != nil {
		return nil, fmt.Errorf("describing elastic IPs %v: %w", ids, err)
	}
	addrs := make([]string, 0, len(out.Addresses))
	for _, a := range out.Addresses {
		addrs = append(addrs, aws.ToString(a.PublicIp))
	}
	slices.Sort(addrs)
	return addrs, nil
}
