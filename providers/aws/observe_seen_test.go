package aws

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
)

// TestObserveAsksTagsOfOwnAndNew: observe asks DescribeTags of the gateway's own load balancers
// and target groups every time, of another's (here every parallel test's, and a hand-made
// untagged one) only the first time, and of a new ARN always, so that an orphan tagged for the
// gateway after the first observe is still found by its tags alone.
func TestObserveAsksTagsOfOwnAndNew(t *testing.T) {
	e := newEnv(t)
	s := e.albStack(selfSigned(t, "seen.example.com", 1))
	e.deploy(s)
	foreign := e.targetGroup(e.prefix+"-foreign", nil)

	first := e.observeAsked(s)
	if !slices.Contains(first.asked, foreign) {
		t.Fatalf("first observe did not ask the tags of the new target group %s", foreign)
	}
	second := e.observeAsked(s)
	if slices.Contains(second.asked, foreign) {
		t.Errorf("second observe asked again the tags of %s, known not to be the gateway's", foreign)
	}
	for _, own := range append(first.own, second.own...) {
		if !slices.Contains(second.asked, own) {
			t.Errorf("second observe did not ask the tags of the gateway's own %s", own)
		}
	}
	if len(second.own) != len(first.own) {
		t.Errorf("second observe found %d own resources, the first %d", len(second.own), len(first.own))
	}

	ownerTags := map[string]string{}
	for k, v := range first.tags {
		if k == TagManagedBy || k == TagFleet || k == TagGateway {
			ownerTags[k] = v
		}
	}
	orphan := e.targetGroup(e.prefix+"-orphan", ownerTags)
	if third := e.observeAsked(s); !slices.Contains(third.own, orphan) {
		t.Errorf("an orphan target group tagged for the gateway (%s) was not found: own %v", orphan, third.own)
	}
}

// TestProviderKeepsDeployer: Ensures of one account share a deployer, whose caches outlive them.
func TestProviderKeepsDeployer(t *testing.T) {
	p := newTestProvider(t, "http://127.0.0.1:1", "keep")
	o, err := decodeOptions(json.RawMessage(`{"loadBalancerType":"network"}`), p.o.Defaults)
	if err != nil {
		t.Fatal(err)
	}
	d1, _, err := p.deployer(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	d2, _, err := p.deployer(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	if d1 != d2 {
		t.Error("a second Ensure of the account got a new deployer: its tag caches are lost")
	}
}

type askedTags struct {
	asked, own []string          // ARNs whose tags were asked; ARNs of the gateway's LBs and TGs
	tags       map[string]string // of one of the gateway's resources
}

// observeAsked observes s's gateway and says what DescribeTags was asked about.
func (e *env) observeAsked(s *Stack) askedTags {
	e.t.Helper()
	e.rec.take()
	obs, err := e.d.observe(e.ctx, s.GatewayID, false)
	if err != nil {
		e.t.Fatal(err)
	}
	var a askedTags
	for _, c := range e.rec.take() {
		if in, ok := c.Input.(*elbv2.DescribeTagsInput); ok {
			a.asked = append(a.asked, in.ResourceArns...)
		}
	}
	for _, lb := range obs.lbs {
		a.own = append(a.own, aws.ToString(lb.lb.LoadBalancerArn))
		a.tags = maps.Clone(lb.tags)
	}
	for _, tg := range obs.tgs {
		a.own = append(a.own, aws.ToString(tg.tg.TargetGroupArn))
	}
	return a
}

// targetGroup makes a target group by hand in the env's VPC and returns its ARN.
func (e *env) targetGroup(name string, tags map[string]string) string {
	e.t.Helper()
	in := &elbv2.CreateTargetGroupInput{Name: aws.String(name), Protocol: elbtypes.ProtocolEnumHttp, Port: aws.Int32(80),
		VpcId: &e.vpc, TargetType: elbtypes.TargetTypeEnumIp}
	if len(tags) > 0 {
		in.Tags = elbTags(tags)
	}
	out, err := e.elb.CreateTargetGroup(e.ctx, in)
	if err != nil {
		e.t.Fatal(err)
	}
	return aws.ToString(out.TargetGroups[0].TargetGroupArn)
}
