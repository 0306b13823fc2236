package aws

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// syncSecurityGroup creates the ALB's security group or reconciles its tags and ingress rules
// (exactly: rules fleetgate did not ask for are revoked). A group in another VPC is replaced:
// the new one is created here, the old one deleted by cleanup once the load balancer has moved.
func (d *deployer) syncSecurityGroup(ctx context.Context, st *state, x *executor) error {
	want := st.stack.SecurityGroup
	if want == nil {
		return nil
	}
	tags := d.tagsFor(st.stack, want.ID, nil)
	var live *liveSG
	for i, sg := range st.obs.sgs {
		if sg.tags[TagResource] == want.ID && aws.ToString(sg.sg.VpcId) == want.VPC {
			live = &st.obs.sgs[i]
			break
		}
	}
	if live == nil {
		st.sgID = placeholder(want.ID)
		if err := x.do(Call{"CreateSecurityGroup", want.ID, want.Name + " in " + want.VPC}, func() error {
			out, err := d.ec2.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{
				GroupName: &want.Name, Description: &want.Description, VpcId: &want.VPC,
				TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeSecurityGroup, Tags: ec2Tags(tags)}},
			})
			if err == nil {
				st.sgID = aws.ToString(out.GroupId)
			}
			return err
		}); err != nil {
			return err
		}
		return d.syncIngress(ctx, x, want.ID, st.sgID, nil, want.Ingress)
	}
	st.sgID = aws.ToString(live.sg.GroupId)
	if err := d.syncEC2Tags(ctx, x, want.ID, st.sgID, live.tags, tags); err != nil {
		return err
	}
	return d.syncIngress(ctx, x, want.ID, st.sgID, ingressOf(live.sg.IpPermissions), want.Ingress)
}

// syncIngress authorizes the missing rules and revokes the extra ones, one call each.
func (d *deployer) syncIngress(ctx context.Context, x *executor, id, groupID string, have, want []IngressRule) error {
	missing, extra := diffIngress(have, want)
	if len(missing) > 0 {
		if err := x.do(Call{"AuthorizeSecurityGroupIngress", id, ingressDetail(missing)}, func() error {
			_, err := d.ec2.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{GroupId: &groupID, IpPermissions: permissions(missing)})
			return err
		}); err != nil {
			return err
		}
	}
	if len(extra) > 0 {
		return x.do(Call{"RevokeSecurityGroupIngress", id, ingressDetail(extra)}, func() error {
			_, err := d.ec2.RevokeSecurityGroupIngress(ctx, &ec2.RevokeSecurityGroupIngressInput{GroupId: &groupID, IpPermissions: permissions(extra)})
			return err
		})
	}
	return nil
}

func (d *deployer) syncEC2Tags(ctx context.Context, x *executor, id, resourceID string, have, want map[string]string) error {
	set, remove := tagDiff(have, want)
	if len(set) > 0 {
		if err := x.do(Call{"CreateTags", id, tagDetail(set, nil)}, func() error {
			_, err := d.ec2.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{resourceID}, Tags: ec2Tags(set)})
			return err
		}); err != nil {
			return err
		}
	}
	if len(remove) > 0 {
		return x.do(Call{"DeleteTags", id, tagDetail(nil, remove)}, func() error {
			tags := make([]ec2types.Tag, len(remove))
			for i, k := range remove {
				tags[i] = ec2types.Tag{Key: aws.String(k)}
			}
			_, err := d.ec2.DeleteTags(ctx, &ec2.DeleteTagsInput{Resources: []string{resourceID}, Tags: tags})
			return err
		})
	}
	return nil
}

// ingressOf flattens EC2 permissions into one IngressRule per protocol, port and range.
func ingressOf(perms []ec2types.IpPermission) []IngressRule {
	var rules []IngressRule
	for _, p := range perms {
		proto, port := aws.ToString(p.IpProtocol), aws.ToInt32(p.FromPort)
		for _, r := range p.IpRanges {
			rules = append(rules, IngressRule{Protocol: proto, Port: port, CIDR: aws.ToString(r.CidrIp)})
		}
		for _, r := range p.Ipv6Ranges {
			rules = append(rules, IngressRule{Protocol: proto, Port: port, CIDR: aws.ToString(r.CidrIpv6)})
		}
	}
	return rules
}

func diffIngress(have, want []IngressRule) (missing, extra []IngressRule) {
	for _, w := range want {
		if !slices.Contains(have, w) {
			missing = append(missing, w)
		}
	}
	for _, h := range have {
		if !slices.Contains(want, h) {
			extra = append(extra, h)
		}
	}
	return missing, extra
}

func permissions(rules []IngressRule) []ec2types.IpPermission {
	perms := make([]ec2types.IpPermission, len(rules))
	for i, r := range rules {
		p := ec2types.IpPermission{IpProtocol: aws.String(r.Protocol), FromPort: aws.Int32(r.Port), ToPort: aws.Int32(r.Port)}
		if strings.Contains(r.CIDR, ":") {
			p.Ipv6Ranges = []ec2types.Ipv6Range{{CidrIpv6: aws.String(r.CIDR)}}
		} else {
			p.IpRanges = []ec2types.IpRange{{CidrIp: aws.String(r.CIDR)}}
		}
		perms[i] = p
	}
	return perms
}

func ingressDetail(rules []IngressRule) string {
	parts := make([]string, len(rules))
	for i, r := range rules {
		parts[i] = fmt.Sprintf("%s/%d from %s", r.Protocol, r.Port, r.CIDR)
	}
	return strings.Join(parts, ", ")
}
