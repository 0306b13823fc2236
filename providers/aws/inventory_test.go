package aws

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/acm"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"

	"github.com/fleetgate/fleetgate/providers/aws/mototest"
)

// resource is one AWS resource tagged for a fleet, as the tests see it through their own
// clients (not the deployer's observe code): which gateway owns it, an ID that names it by owner
// and role rather than by ARN (so that it compares across re-creations; a second resource of one
// role gets "#2"), a version that changes when it is modified, and a description.
type resource struct {
	gateway, id, version, what string
}

// inventory lists every load balancer, listener, rule, target group, security group and
// certificate tagged for fleet.
func inventory(t *testing.T, endpoint, fleet string) []resource {
	t.Helper()
	ctx := context.Background()
	cfg, err := mototest.Config(ctx, endpoint)
	if err != nil {
		t.Fatal(err)
	}
	elb, ec, cm := elbv2.NewFromConfig(cfg), ec2.NewFromConfig(cfg), acm.NewFromConfig(cfg)
	var out []resource
	tagsOf := func(arn string) map[string]string {
		tt, err := elb.DescribeTags(ctx, &elbv2.DescribeTagsInput{ResourceArns: []string{arn}})
		if err != nil {
			t.Fatalf("DescribeTags %s: %v", arn, err)
		}
		m := map[string]string{}
		for _, d := range tt.TagDescriptions {
			for _, tag := range d.Tags {
				m[*tag.Key] = *tag.Value
			}
		}
		return m
	}
	seen := map[string]int{}
	stableID := func(gateway, role string) string {
		id := gateway + " " + role
		if seen[id]++; seen[id] > 1 {
			id += fmt.Sprintf("#%d", seen[id])
		}
		return id
	}
	add := func(tags map[string]string, kind, what string) {
		out = append(out, resource{gateway: tags[TagGatewayKey], id: stableID(tags[TagGatewayKey], kind+" "+tags[TagResource]),
			version: tagText(tags), what: what + " " + tags[TagResource]})
	}
	lbs, err := elb.DescribeLoadBalancers(ctx, &elbv2.DescribeLoadBalancersInput{})
	if err != nil {
		t.Fatal(err)
	}
	for _, lb := range lbs.LoadBalancers {
		tags := tagsOf(*lb.LoadBalancerArn)
		if tags[TagFleet] != fleet {
			continue
		}
		add(tags, "lb", fmt.Sprintf("lb %s %s", lb.Type, lb.Scheme))
		ls, err := elb.DescribeListeners(ctx, &elbv2.DescribeListenersInput{LoadBalancerArn: lb.LoadBalancerArn})
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range ls.Listeners {
			what := fmt.Sprintf("listener %s:%d", l.Protocol, *l.Port)
			out = append(out, resource{gateway: tags[TagGatewayKey], id: stableID(tags[TagGatewayKey], what),
				version: fmt.Sprint(l.Protocol, len(l.Certificates), len(l.DefaultActions)), what: what})
			rs, err := elb.DescribeRules(ctx, &elbv2.DescribeRulesInput{ListenerArn: l.ListenerArn})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rs.Rules {
				if awssdk.ToBool(r.IsDefault) {
					continue
				}
				add(tagsOf(*r.RuleArn), "rule", fmt.Sprintf("rule %d conditions", len(r.Conditions)))
			}
		}
	}
	tgs, err := elb.DescribeTargetGroups(ctx, &elbv2.DescribeTargetGroupsInput{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tg := range tgs.TargetGroups {
		tags := tagsOf(*tg.TargetGroupArn)
		if tags[TagFleet] != fleet {
			continue
		}
		h, err := elb.DescribeTargetHealth(ctx, &elbv2.DescribeTargetHealthInput{TargetGroupArn: tg.TargetGroupArn})
		if err != nil {
			t.Fatal(err)
		}
		var targets []string
		for _, d := range h.TargetHealthDescriptions {
			targets = append(targets, fmt.Sprintf("%s:%d", *d.Target.Id, *d.Target.Port))
		}
		slices.Sort(targets)
		add(tags, "tg", fmt.Sprintf("tg %s:%d targets=%v", tg.Protocol, *tg.Port, targets))
	}
	sgs, err := ec.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: []ec2types.Filter{
		{Name: awssdk.String("tag:" + TagFleet), Values: []string{fleet}}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, sg := range sgs.SecurityGroups {
		tags := map[string]string{}
		for _, tag := range sg.Tags {
			tags[*tag.Key] = *tag.Value
		}
		add(tags, "sg", fmt.Sprintf("sg ingress=%d", len(sg.IpPermissions)))
	}
	certs, err := cm.ListCertificates(ctx, &acm.ListCertificatesInput{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range certs.CertificateSummaryList {
		ct, err := cm.ListTagsForCertificate(ctx, &acm.ListTagsForCertificateInput{CertificateArn: c.CertificateArn})
		if err != nil {
			t.Fatal(err)
		}
		tags := map[string]string{}
		for _, tag := range ct.Tags {
			tags[*tag.Key] = awssdk.ToString(tag.Value)
		}
		if tags[TagFleet] == fleet {
			add(tags, "certificate", "certificate")
		}
	}
	return out
}

func tagText(tags map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		b.WriteString(k + "=" + tags[k] + ";")
	}
	return b.String()
}
