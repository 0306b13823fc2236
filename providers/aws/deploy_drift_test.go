package aws

import (
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	"github.com/google/go-cmp/cmp"
)

// arns finds the test gateway's resources by Stack ID.
type arns struct {
	lb, sg    string
	tg        map[string]string
	listeners map[string]string
	rules     map[string]string
}

func (e *env) arns(s *Stack) arns {
	e.t.Helper()
	obs, err := e.d.observe(e.ctx, s.GatewayID, false)
	if err != nil || len(obs.lbs) != 1 {
		e.t.Fatalf("observe: %v (%d load balancers)", err, len(obs.lbs))
	}
	a := arns{lb: aws.ToString(obs.lbs[0].lb.LoadBalancerArn), tg: map[string]string{}, listeners: map[string]string{}, rules: map[string]string{}}
	for _, sg := range obs.sgs {
		a.sg = aws.ToString(sg.sg.GroupId)
	}
	for _, tg := range obs.tgs {
		a.tg[tg.tags[TagResource]] = aws.ToString(tg.tg.TargetGroupArn)
	}
	ls, err := e.d.observeListeners(e.ctx, a.lb)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, l := range ls {
		a.listeners[l.tags[TagResource]] = aws.ToString(l.l.ListenerArn)
		for _, r := range l.rules {
			a.rules[r.tags[TagResource]] = aws.ToString(r.r.RuleArn)
		}
	}
	return a
}

// TestDeployDrift: what is changed by hand is put back on the next Deploy, with exactly the
// call that does it, and the Deploy after makes none.
func TestDeployDrift(t *testing.T) {
	e := newEnv(t)
	s := e.albStack(selfSigned(t, "www.example.com", 1))
	e.deploy(s)
	want := e.albView()
	tests := []struct {
		name  string
		drift func(a arns) error
		want  []string
	}{
		{"rule edited", func(a arns) error {
			_, err := e.elb.ModifyRule(e.ctx, &elbv2.ModifyRuleInput{RuleArn: aws.String(a.rules["rule/c"]),
				Conditions: []elbtypes.RuleCondition{{Field: aws.String("host-header"), HostHeaderConfig: &elbtypes.HostHeaderConditionConfig{Values: []string{"evil.example.com"}}}}})
			return err
		}, []string{"ModifyRule"}},
		{"rule action edited", func(a arns) error {
			_, err := e.elb.ModifyRule(e.ctx, &elbv2.ModifyRuleInput{RuleArn: aws.String(a.rules["rule/a"]),
				Actions: []elbtypes.Action{{Type: elbtypes.ActionTypeEnumForward, TargetGroupArn: aws.String(a.tg["tg/b"])}}})
			return err
		}, []string{"ModifyRule"}},
		{"rule deleted", func(a arns) error {
			_, err := e.elb.DeleteRule(e.ctx, &elbv2.DeleteRuleInput{RuleArn: aws.String(a.rules["rule/b"])})
			return err
		}, []string{"CreateRule"}},
		{"listener default action", func(a arns) error {
			_, err := e.elb.ModifyListener(e.ctx, &elbv2.ModifyListenerInput{ListenerArn: aws.String(a.listeners["listener/443"]),
				DefaultActions: []elbtypes.Action{{Type: elbtypes.ActionTypeEnumForward, TargetGroupArn: aws.String(a.tg["tg/a"])}}})
			return err
		}, []string{"ModifyListener"}},
		{"listener deleted", func(a arns) error {
			_, err := e.elb.DeleteListener(e.ctx, &elbv2.DeleteListenerInput{ListenerArn: aws.String(a.listeners["listener/80"])})
			return err
		}, []string{"CreateListener"}},
		{"attribute flipped", func(a arns) error {
			_, err := e.elb.ModifyLoadBalancerAttributes(e.ctx, &elbv2.ModifyLoadBalancerAttributesInput{LoadBalancerArn: &a.lb,
				Attributes: []elbtypes.LoadBalancerAttribute{{Key: aws.String("idle_timeout.timeout_seconds"), Value: aws.String("60")}}})
			return err
		}, []string{"ModifyLoadBalancerAttributes"}},
		{"target group attribute", func(a arns) error {
			_, err := e.elb.ModifyTargetGroupAttributes(e.ctx, &elbv2.ModifyTargetGroupAttributesInput{TargetGroupArn: aws.String(a.tg["tg/a"]),
				Attributes: []elbtypes.TargetGroupAttribute{{Key: aws.String("deregistration_delay.timeout_seconds"), Value: aws.String("5")}}})
			return err
		}, []string{"ModifyTargetGroupAttributes"}},
		{"health check", func(a arns) error {
			_, err := e.elb.ModifyTargetGroup(e.ctx, &elbv2.ModifyTargetGroupInput{TargetGroupArn: aws.String(a.tg["tg/b"]), HealthCheckPath: aws.String("/other")})
			return err
		}, []string{"ModifyTargetGroup"}},
		{"target deregistered", func(a arns) error {
			_, err := e.elb.DeregisterTargets(e.ctx, &elbv2.DeregisterTargetsInput{TargetGroupArn: aws.String(a.tg["tg/a"]),
				Targets: []elbtypes.TargetDescription{{Id: aws.String("10.0.1.10"), Port: aws.Int32(8080)}}})
			return err
		}, []string{"RegisterTargets"}},
		{"target added", func(a arns) error {
			_, err := e.elb.RegisterTargets(e.ctx, &elbv2.RegisterTargetsInput{TargetGroupArn: aws.String(a.tg["tg/b"]),
				Targets: []elbtypes.TargetDescription{{Id: aws.String("10.0.2.99"), Port: aws.Int32(9090)}}})
			return err
		}, []string{"DeregisterTargets"}},
		{"tag removed", func(a arns) error {
			_, err := e.elb.RemoveTags(e.ctx, &elbv2.RemoveTagsInput{ResourceArns: []string{a.lb}, TagKeys: []string{"team"}})
			return err
		}, []string{"AddTags"}},
		{"tag added by hand", func(a arns) error {
			_, err := e.elb.AddTags(e.ctx, &elbv2.AddTagsInput{ResourceArns: []string{a.tg["tg/a"]}, Tags: []elbtypes.Tag{{Key: aws.String("owner"), Value: aws.String("me")}}})
			return err
		}, []string{"RemoveTags"}},
		{"ingress revoked", func(a arns) error {
			_, err := e.ec2.RevokeSecurityGroupIngress(e.ctx, &ec2.RevokeSecurityGroupIngressInput{GroupId: &a.sg, IpPermissions: []ec2types.IpPermission{
				{IpProtocol: aws.String("tcp"), FromPort: aws.Int32(443), ToPort: aws.Int32(443), IpRanges: []ec2types.IpRange{{CidrIp: aws.String("0.0.0.0/0")}}}}})
			return err
		}, []string{"AuthorizeSecurityGroupIngress"}},
		{"security group swapped", func(a arns) error {
			sg, err := e.ec2.CreateSecurityGroup(e.ctx, &ec2.CreateSecurityGroupInput{GroupName: aws.String(e.prefix + "-hand"), Description: aws.String("by hand"), VpcId: &e.vpc})
			if err != nil {
				return err
			}
			_, err = e.elb.SetSecurityGroups(e.ctx, &elbv2.SetSecurityGroupsInput{LoadBalancerArn: &a.lb, SecurityGroups: []string{aws.ToString(sg.GroupId)}})
			return err
		}, []string{"SetSecurityGroups"}},
		{"ingress added", func(a arns) error {
			_, err := e.ec2.AuthorizeSecurityGroupIngress(e.ctx, &ec2.AuthorizeSecurityGroupIngressInput{GroupId: &a.sg, IpPermissions: []ec2types.IpPermission{
				{IpProtocol: aws.String("tcp"), FromPort: aws.Int32(22), ToPort: aws.Int32(22), IpRanges: []ec2types.IpRange{{CidrIp: aws.String("0.0.0.0/0")}}}}})
			return err
		}, []string{"RevokeSecurityGroupIngress"}},
	}
	for _, tt := range tests {
		if err := tt.drift(e.arns(s)); err != nil {
			t.Fatalf("%s: drifting: %v", tt.name, err)
		}
		e.rec.take()
		e.deploy(s)
		if diff := cmp.Diff(tt.want, mutating(e.rec.take())); diff != "" {
			t.Errorf("%s: calls (-want +got):\n%s", tt.name, diff)
		}
		if diff := cmp.Diff(want, e.view(s.LoadBalancer.Name)); diff != "" {
			t.Errorf("%s: not put back (-want +got):\n%s", tt.name, diff)
		}
		e.rec.take()
		e.deploy(s)
		if ops := mutating(e.rec.take()); len(ops) != 0 {
			t.Errorf("%s: the Deploy after made %v", tt.name, ops)
		}
	}
}

// TestDeploySubnets: a subnet added to the Stack is set on the load balancer in place.
func TestDeploySubnets(t *testing.T) {
	e := newEnv(t)
	s := e.albStack(selfSigned(t, "www.example.com", 1))
	e.deploy(s)
	sn, err := e.ec2.CreateSubnet(e.ctx, &ec2.CreateSubnetInput{VpcId: &e.vpc, AvailabilityZone: aws.String("us-east-1c"), CidrBlock: aws.String("10.0.3.0/24")})
	if err != nil {
		t.Fatal(err)
	}
	s.LoadBalancer.Subnets = append(s.LoadBalancer.Subnets, aws.ToString(sn.Subnet.SubnetId))
	e.rec.take()
	e.deploy(s)
	if diff := cmp.Diff([]string{"SetSubnets"}, mutating(e.rec.take())); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if got := e.view(s.LoadBalancer.Name).LB.Subnets; got != 3 {
		t.Errorf("load balancer in %d subnets, want 3", got)
	}
	e.deploy(s)
	if ops := mutating(e.rec.take()); len(ops) != 0 {
		t.Errorf("Deploy after made %v", ops)
	}
}

// TestDeployHandMade: a rule added by hand to a listener (no tags of ours) is left alone; a
// listener added by hand to the gateway's load balancer goes, since the gateway does not
// declare its port.
func TestDeployHandMade(t *testing.T) {
	e := newEnv(t)
	s := e.albStack(selfSigned(t, "www.example.com", 1))
	e.deploy(s)
	a := e.arns(s)
	fixed := []elbtypes.Action{{Type: elbtypes.ActionTypeEnumFixedResponse, FixedResponseConfig: &elbtypes.FixedResponseActionConfig{StatusCode: aws.String("200")}}}
	if _, err := e.elb.CreateRule(e.ctx, &elbv2.CreateRuleInput{ListenerArn: aws.String(a.listeners["listener/443"]), Priority: aws.Int32(40000), Actions: fixed,
		Conditions: []elbtypes.RuleCondition{{Field: aws.String("path-pattern"), PathPatternConfig: &elbtypes.PathPatternConditionConfig{Values: []string{"/hand"}}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.elb.CreateListener(e.ctx, &elbv2.CreateListenerInput{LoadBalancerArn: &a.lb, Port: aws.Int32(8080), Protocol: elbtypes.ProtocolEnumHttp, DefaultActions: fixed}); err != nil {
		t.Fatal(err)
	}
	e.rec.take()
	e.deploy(s)
	if diff := cmp.Diff([]string{"DeleteListener"}, mutating(e.rec.take())); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	v := e.view(s.LoadBalancer.Name)
	if _, ok := v.Listeners[8080]; ok {
		t.Error("the hand-made listener is still there")
	}
	if want := `443#4 path=/hand → fixed 200 ""`; !slices.Contains(v.Rules, want) {
		t.Errorf("rules %q, want the hand-made %q kept", v.Rules, want)
	}
}
