package aws

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/acm"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
)

// view is what moto holds for one load balancer, read with the raw clients and written in a
// form of the test's own (independent of the deployer's canonical texts), for cmp.Diff.
type view struct {
	LB           lbView
	Ingress      []string
	TargetGroups map[string]tgView // by name
	Listeners    map[int32]listenerView
	Rules        []string // "port#rank conditions → action", sorted
}

type lbView struct {
	Name, Type, Scheme string
	Subnets            int
	SecurityGroups     []string // names
	Attrs              map[string]string
	Tags               map[string]string
}

type tgView struct {
	Protocol, Version, HealthPath, Matcher string
	Port                                   int32
	Attrs                                  map[string]string
	Targets                                []string
}

type listenerView struct {
	Protocol  string
	Certs     []string // domain names
	SSLPolicy string
	Default   string
}

// viewAttrs are the attributes the views show.
func viewAttrs() []string {
	return []string{"idle_timeout.timeout_seconds", "deletion_protection.enabled", "deregistration_delay.timeout_seconds"}
}

func (e *env) view(name string) view {
	e.t.Helper()
	ctx := e.ctx
	must := func(err error) {
		e.t.Helper()
		if err != nil {
			e.t.Fatal(err)
		}
	}
	lbs, err := e.elb.DescribeLoadBalancers(ctx, &elbv2.DescribeLoadBalancersInput{Names: []string{name}})
	must(err)
	if len(lbs.LoadBalancers) != 1 {
		e.t.Fatalf("%d load balancers named %s", len(lbs.LoadBalancers), name)
	}
	lb := lbs.LoadBalancers[0]
	v := view{TargetGroups: map[string]tgView{}, Listeners: map[int32]listenerView{}}
	attrs, err := e.elb.DescribeLoadBalancerAttributes(ctx, &elbv2.DescribeLoadBalancerAttributesInput{LoadBalancerArn: lb.LoadBalancerArn})
	must(err)
	tags, err := e.elb.DescribeTags(ctx, &elbv2.DescribeTagsInput{ResourceArns: []string{aws.ToString(lb.LoadBalancerArn)}})
	must(err)
	v.LB = lbView{Name: name, Type: string(lb.Type), Scheme: string(lb.Scheme), Subnets: len(lb.AvailabilityZones),
		Attrs: pickAttrs(lbAttributes(attrs.Attributes)), Tags: map[string]string{}}
	for _, t := range tags.TagDescriptions[0].Tags {
		v.LB.Tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	if len(lb.SecurityGroups) > 0 {
		sgs, err := e.ec2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{GroupIds: lb.SecurityGroups})
		must(err)
		for _, sg := range sgs.SecurityGroups {
			v.LB.SecurityGroups = append(v.LB.SecurityGroups, aws.ToString(sg.GroupName))
			v.Ingress = append(v.Ingress, ingressOfView(sg.IpPermissions)...)
		}
		sort.Strings(v.Ingress)
	}
	tgs, err := e.elb.DescribeTargetGroups(ctx, &elbv2.DescribeTargetGroupsInput{})
	must(err)
	tgName := map[string]string{}
	for _, tg := range tgs.TargetGroups {
		if aws.ToString(tg.VpcId) != e.vpc {
			continue
		}
		tgName[aws.ToString(tg.TargetGroupArn)] = aws.ToString(tg.TargetGroupName)
		tv := tgView{Protocol: string(tg.Protocol), Version: aws.ToString(tg.ProtocolVersion), Port: aws.ToInt32(tg.Port), HealthPath: aws.ToString(tg.HealthCheckPath)}
		if tg.Matcher != nil {
			tv.Matcher = aws.ToString(tg.Matcher.HttpCode)
		}
		a, err := e.elb.DescribeTargetGroupAttributes(ctx, &elbv2.DescribeTargetGroupAttributesInput{TargetGroupArn: tg.TargetGroupArn})
		must(err)
		tv.Attrs = map[string]string{}
		for _, kv := range a.Attributes {
			if slices.Contains(viewAttrs(), aws.ToString(kv.Key)) {
				tv.Attrs[aws.ToString(kv.Key)] = aws.ToString(kv.Value)
			}
		}
		h, err := e.elb.DescribeTargetHealth(ctx, &elbv2.DescribeTargetHealthInput{TargetGroupArn: tg.TargetGroupArn})
		must(err)
		for _, t := range h.TargetHealthDescriptions {
			tv.Targets = append(tv.Targets, fmt.Sprintf("%s:%d", aws.ToString(t.Target.Id), aws.ToInt32(t.Target.Port)))
		}
		sort.Strings(tv.Targets)
		v.TargetGroups[aws.ToString(tg.TargetGroupName)] = tv
	}
	ls, err := e.elb.DescribeListeners(ctx, &elbv2.DescribeListenersInput{LoadBalancerArn: lb.LoadBalancerArn})
	must(err)
	for _, l := range ls.Listeners {
		lv := listenerView{Protocol: string(l.Protocol), Default: viewAction(l.DefaultActions, tgName)}
		if len(l.Certificates) > 0 { // moto reports an SSL policy on plain listeners too
			lv.SSLPolicy = aws.ToString(l.SslPolicy)
			certs, err := e.elb.DescribeListenerCertificates(ctx, &elbv2.DescribeListenerCertificatesInput{ListenerArn: l.ListenerArn})
			must(err)
			for _, c := range certs.Certificates {
				dc, err := e.acm.DescribeCertificate(ctx, &acm.DescribeCertificateInput{CertificateArn: c.CertificateArn})
				must(err)
				lv.Certs = append(lv.Certs, aws.ToString(dc.Certificate.DomainName))
			}
			sort.Strings(lv.Certs)
		}
		v.Listeners[aws.ToInt32(l.Port)] = lv
		rules, err := e.elb.DescribeRules(ctx, &elbv2.DescribeRulesInput{ListenerArn: l.ListenerArn})
		must(err)
		v.Rules = append(v.Rules, viewRules(aws.ToInt32(l.Port), rules.Rules, tgName)...)
	}
	sort.Strings(v.Rules)
	return v
}

// viewRules writes a listener's rules as "port#rank": the rank in priority order, not the
// priority itself, which is assignPriorities' to choose.
func viewRules(port int32, rules []elbtypes.Rule, tgName map[string]string) []string {
	prio := func(r elbtypes.Rule) int {
		p, _ := strconv.Atoi(aws.ToString(r.Priority))
		return p
	}
	rules = slices.DeleteFunc(slices.Clone(rules), func(r elbtypes.Rule) bool { return aws.ToBool(r.IsDefault) })
	slices.SortFunc(rules, func(a, b elbtypes.Rule) int { return prio(a) - prio(b) })
	out := make([]string, len(rules))
	for i, r := range rules {
		out[i] = fmt.Sprintf("%d#%d %s → %s", port, i+1, viewConditions(r.Conditions), viewAction(r.Actions, tgName))
	}
	return out
}

func pickAttrs(m map[string]string) map[string]string {
	out := map[string]string{}
	for _, k := range viewAttrs() {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	return out
}

func ingressOfView(perms []ec2types.IpPermission) []string {
	var out []string
	for _, p := range perms {
		for _, r := range p.IpRanges {
			out = append(out, fmt.Sprintf("%s/%d %s", aws.ToString(p.IpProtocol), aws.ToInt32(p.FromPort), aws.ToString(r.CidrIp)))
		}
	}
	return out
}

func viewConditions(cs []elbtypes.RuleCondition) string {
	var parts []string
	for _, c := range cs {
		var s string
		switch {
		case c.HostHeaderConfig != nil:
			s = "host=" + strings.Join(c.HostHeaderConfig.Values, ",")
		case c.PathPatternConfig != nil:
			s = "path=" + strings.Join(c.PathPatternConfig.Values, ",")
		case c.HttpHeaderConfig != nil:
			s = aws.ToString(c.HttpHeaderConfig.HttpHeaderName) + "=" + strings.Join(c.HttpHeaderConfig.Values, ",")
		case c.HttpRequestMethodConfig != nil:
			s = "method=" + strings.Join(c.HttpRequestMethodConfig.Values, ",")
		case c.QueryStringConfig != nil:
			var kvs []string
			for _, kv := range c.QueryStringConfig.Values {
				kvs = append(kvs, aws.ToString(kv.Key)+":"+aws.ToString(kv.Value))
			}
			s = "query=" + strings.Join(kvs, ",")
		default:
			s = aws.ToString(c.Field) + "?" + strings.Join(c.Values, ",")
		}
		parts = append(parts, s)
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

func viewAction(as []elbtypes.Action, tgName map[string]string) string {
	var parts []string
	for _, a := range as {
		switch {
		case a.ForwardConfig != nil:
			var ws []string
			for _, t := range a.ForwardConfig.TargetGroups {
				ws = append(ws, fmt.Sprintf("%s=%d", tgName[aws.ToString(t.TargetGroupArn)], aws.ToInt32(t.Weight)))
			}
			sort.Strings(ws)
			parts = append(parts, "forward "+strings.Join(ws, ","))
		case a.RedirectConfig != nil:
			r := a.RedirectConfig
			parts = append(parts, fmt.Sprintf("redirect %s %s://%s:%s", r.StatusCode, aws.ToString(r.Protocol), aws.ToString(r.Host), aws.ToString(r.Port)))
		case a.FixedResponseConfig != nil:
			parts = append(parts, fmt.Sprintf("fixed %s %q", aws.ToString(a.FixedResponseConfig.StatusCode), aws.ToString(a.FixedResponseConfig.MessageBody)))
		default:
			parts = append(parts, string(a.Type)+" "+tgName[aws.ToString(a.TargetGroupArn)])
		}
	}
	return strings.Join(parts, "; ")
}
