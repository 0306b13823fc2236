package aws

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/fleetgate/fleetgate/providers"
)

// liveMemberRule is one of fleetgate's rules found on a member's security group.
type liveMemberRule struct {
	rule MemberRule
	id   string // sgr-…
	tags map[string]string
}

// syncMemberRules makes the rules of s's gateway in this deployer's account exactly want, lbSG
// standing in for sourceLoadBalancer: it authorizes the missing ones (tagged as the gateway's in
// the call itself, one call per group) and revokes the gateway's others. A wanted rule that
// exists untagged (someone else's, or another gateway's with the same ports and sources) already
// admits the traffic: EC2 refuses a duplicate, so it is left alone.
func (d *deployer) syncMemberRules(ctx context.Context, x *executor, s *Stack, want []MemberRule, lbSG string) error {
	want = slices.Clone(want)
	for i := range want {
		if want[i].Source == sourceLoadBalancer {
			want[i].Source = lbSG
		}
	}
	live, err := d.describeMemberRules(ctx, d.memberRuleFilters(s.GatewayID))
	if err != nil {
		return err
	}
	var missing []MemberRule
	for _, w := range want {
		if !slices.ContainsFunc(live, func(l liveMemberRule) bool { return l.rule == w }) {
			missing = append(missing, w)
		}
	}
	if missing, err = d.notCovered(ctx, missing); err != nil {
		return err
	}
	tags := d.tagsFor(s, memberRuleResource, nil)
	for _, group := range groupsOf(missing) {
		rules := rulesOf(missing, group)
		if err := x.do(Call{"AuthorizeSecurityGroupIngress", memberRuleResource + " " + group, memberRulesDetail(rules)}, func() error {
			_, err := d.ec2.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{
				GroupId: aws.String(group), IpPermissions: memberPermissions(rules, memberRuleDescription(s.Gateway)),
				TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeSecurityGroupRule, Tags: ec2Tags(tags)}},
			})
			return err
		}); err != nil {
			return err
		}
	}
	var extra []liveMemberRule
	for _, l := range live {
		if !slices.Contains(want, l.rule) {
			extra = append(extra, l)
		}
	}
	return d.revokeMemberRules(ctx, x, extra)
}

// notCovered drops the rules that exist already, untagged, on their groups.
func (d *deployer) notCovered(ctx context.Context, rules []MemberRule) ([]MemberRule, error) {
	if len(rules) == 0 {
		return nil, nil
	}
	all, err := d.describeMemberRules(ctx, []ec2types.Filter{{Name: aws.String("group-id"), Values: groupsOf(rules)}})
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(rules, func(r MemberRule) bool {
		return slices.ContainsFunc(all, func(l liveMemberRule) bool { return l.rule == r })
	}), nil
}

// deleteMemberRules revokes every rule of gatewayID in the account.
func (d *deployer) deleteMemberRules(ctx context.Context, x *executor, gatewayID string) error {
	live, err := d.describeMemberRules(ctx, d.memberRuleFilters(gatewayID))
	if err != nil {
		return err
	}
	return d.revokeMemberRules(ctx, x, live)
}

// pruneMemberRules revokes this fleet's member rules, of every gateway, on the account's groups
// other than keep.
func (d *deployer) pruneMemberRules(ctx context.Context, x *executor, keep []string) error {
	live, err := d.describeMemberRules(ctx, d.memberRuleFilters(""))
	if err != nil {
		return err
	}
	return d.revokeMemberRules(ctx, x, slices.DeleteFunc(live, func(l liveMemberRule) bool { return slices.Contains(keep, l.rule.Group) }))
}

// listMemberRules returns the gateways of this fleet that have rules in the account.
func (d *deployer) listMemberRules(ctx context.Context) ([]Owned, error) {
	live, err := d.describeMemberRules(ctx, d.memberRuleFilters(""))
	if err != nil {
		return nil, err
	}
	byID := map[string]Owned{}
	for _, l := range live {
		id := l.tags[TagGateway]
		byID[id] = Owned{Gateway: l.tags[TagGatewayKey], GatewayID: id}
	}
	return slices.SortedFunc(maps.Values(byID), func(a, b Owned) int { return strings.Compare(a.Gateway, b.Gateway) }), nil
}

func (d *deployer) revokeMemberRules(ctx context.Context, x *executor, rules []liveMemberRule) error {
	byGroup := map[string][]liveMemberRule{}
	for _, r := range rules {
		byGroup[r.rule.Group] = append(byGroup[r.rule.Group], r)
	}
	for _, group := range slices.Sorted(maps.Keys(byGroup)) {
		rs := byGroup[group]
		ids := make([]string, len(rs))
		plain := make([]MemberRule, len(rs))
		for i, r := range rs {
			ids[i], plain[i] = r.id, r.rule
		}
		if err := x.do(Call{"RevokeSecurityGroupIngress", memberRuleResource + " " + group, memberRulesDetail(plain)}, func() error {
			_, err := d.ec2.RevokeSecurityGroupIngress(ctx, &ec2.RevokeSecurityGroupIngressInput{GroupId: aws.String(group), SecurityGroupRuleIds: ids})
			if isNotFound(err) || hasCode(err, "InvalidSecurityGroupRuleId.NotFound") {
				return nil // gone already: the group, or the rule by hand
			}
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}

// memberRuleFilters select this fleet's member rules, of gatewayID or ("") of every gateway.
func (d *deployer) memberRuleFilters(gatewayID string) []ec2types.Filter {
	f := []ec2types.Filter{
		{Name: aws.String("tag:" + TagManagedBy), Values: []string{providers.ManagedBy}},
		{Name: aws.String("tag:" + TagFleet), Values: []string{d.fleet}},
		{Name: aws.String("tag:" + TagResource), Values: []string{memberRuleResource}},
	}
	if gatewayID != "" {
		f = append(f, ec2types.Filter{Name: aws.String("tag:" + TagGateway), Values: []string{gatewayID}})
	}
	return f
}

// describeMemberRules lists the inbound rules filters select.
func (d *deployer) describeMemberRules(ctx context.Context, filters []ec2types.Filter) ([]liveMemberRule, error) {
	var out []liveMemberRule
	in := &ec2.DescribeSecurityGroupRulesInput{Filters: filters}
	for {
		page, err := d.ec2.DescribeSecurityGroupRules(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("describing security group rules: %w", err)
		}
		for _, r := range page.SecurityGroupRules {
			if aws.ToBool(r.IsEgress) {
				continue
			}
			out = append(out, liveMemberRule{rule: memberRuleOf(r), id: aws.ToString(r.SecurityGroupRuleId), tags: ec2TagMap(r.Tags)})
		}
		if aws.ToString(page.NextToken) == "" {
			return out, nil
		}
		in.NextToken = page.NextToken
	}
}

func memberRuleOf(r ec2types.SecurityGroupRule) MemberRule {
	m := MemberRule{Group: aws.ToString(r.GroupId), Protocol: aws.ToString(r.IpProtocol), FromPort: aws.ToInt32(r.FromPort), ToPort: aws.ToInt32(r.ToPort)}
	switch {
	case r.CidrIpv4 != nil:
		m.Source = aws.ToString(r.CidrIpv4)
	case r.CidrIpv6 != nil:
		m.Source = aws.ToString(r.CidrIpv6)
	case r.ReferencedGroupInfo != nil:
		m.Source = aws.ToString(r.ReferencedGroupInfo.GroupId)
	}
	return m
}

// memberPermissions are the rules as EC2 permissions, one each (a rule of AuthorizeSecurityGroupIngress).
func memberPermissions(rules []MemberRule, description string) []ec2types.IpPermission {
	perms := make([]ec2types.IpPermission, len(rules))
	for i, r := range rules {
		p := ec2types.IpPermission{IpProtocol: aws.String(r.Protocol), FromPort: aws.Int32(r.FromPort), ToPort: aws.Int32(r.ToPort)}
		switch {
		case strings.HasPrefix(r.Source, "sg-"):
			p.UserIdGroupPairs = []ec2types.UserIdGroupPair{{GroupId: aws.String(r.Source), Description: aws.String(description)}}
		case strings.Contains(r.Source, ":"):
			p.Ipv6Ranges = []ec2types.Ipv6Range{{CidrIpv6: aws.String(r.Source), Description: aws.String(description)}}
		default:
			p.IpRanges = []ec2types.IpRange{{CidrIp: aws.String(r.Source), Description: aws.String(description)}}
		}
		perms[i] = p
	}
	return perms
}

func groupsOf(rules []MemberRule) []string {
	var gs []string
	for _, r := range rules {
		gs = append(gs, r.Group)
	}
	slices.Sort(gs)
	return slices.Compact(gs)
}

func rulesOf(rules []MemberRule, group string) []MemberRule {
	var out []MemberRule
	for _, r := range rules {
		if r.Group == group {
			out = append(out, r)
		}
	}
	return out
}
