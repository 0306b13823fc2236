package aws

import (
	"context"
	"fmt"
	"maps"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"

	"github.com/fleetgate/fleetgate/providers"
)

// describeTagsBatch is the most ARNs ELBv2 DescribeTags takes in one call.
const describeTagsBatch = 20

// The live state, as found by tags. Every type keeps the SDK value it was read from and its tags.
type (
	liveLB struct {
		lb    elbtypes.LoadBalancer
		tags  map[string]string
		attrs map[string]string
	}
	liveListener struct {
		l     elbtypes.Listener
		tags  map[string]string
		certs []string // every certificate ARN, the default first
		rules []liveRule
	}
	liveRule struct {
		r        elbtypes.Rule
		tags     map[string]string
		priority int32
	}
	liveTG struct {
		tg      elbtypes.TargetGroup
		tags    map[string]string
		attrs   map[string]string
		targets []Target
	}
	liveSG struct {
		sg   ec2types.SecurityGroup
		tags map[string]string
	}
	liveCert struct {
		arn  string
		tags map[string]string
	}
)

// observed is everything of one gateway (or, for List, of the fleet) found by tags.
type observed struct {
	lbs   []liveLB
	tgs   []liveTG
	sgs   []liveSG
	certs []liveCert
}

// owner matches the tags of fleetgate's resources of this fleet, of one gateway or (gatewayID
// "") of every gateway.
func (d *deployer) owner(gatewayID string) func(map[string]string) bool {
	return func(t map[string]string) bool {
		return t[TagManagedBy] == providers.ManagedBy && t[TagFleet] == d.fleet &&
			(gatewayID == "" || t[TagGateway] == gatewayID)
	}
}

// observe finds every load balancer, target group, security group and certificate of gatewayID
// ("" for the whole fleet); deep also reads attributes and registered targets.
func (d *deployer) observe(ctx context.Context, gatewayID string, deep bool) (*observed, error) {
	match := d.owner(gatewayID)
	lbs, err := d.listLoadBalancers(ctx)
	if err != nil {
		return nil, err
	}
	tgs, err := d.listTargetGroups(ctx)
	if err != nil {
		return nil, err
	}
	arns := make([]string, 0, len(lbs)+len(tgs))
	for _, lb := range lbs {
		arns = append(arns, aws.ToString(lb.LoadBalancerArn))
	}
	for _, tg := range tgs {
		arns = append(arns, aws.ToString(tg.TargetGroupArn))
	}
	tags, err := d.ownerTags(ctx, arns, match)
	if err != nil {
		return nil, err
	}
	var o observed
	if o.lbs, err = d.loadBalancersOf(ctx, lbs, tags, match, deep); err != nil {
		return nil, err
	}
	if o.tgs, err = d.targetGroupsOf(ctx, tgs, tags, match, deep); err != nil {
		return nil, err
	}
	if o.sgs, err = d.findSecurityGroups(ctx, gatewayID); err != nil {
		return nil, err
	}
	if o.certs, err = d.findCertificates(ctx, match); err != nil {
		return nil, err
	}
	return &o, nil
}

// ownerTags returns the tags of the listed load balancers and target groups (arns) that may be
// match's: those seen before as someone else's are not asked again (ownership tags do not
// change), so a steady observe asks only of its own and of new resources, not of the whole
// account. Load balancers and target groups share DescribeTags batches.
func (d *deployer) ownerTags(ctx context.Context, arns []string, match func(map[string]string) bool) (map[string]map[string]string, error) {
	var ask []string
	for _, arn := range arns {
		if t, ok := d.seen.get(arn); ok && !match(t) {
			continue
		}
		ask = append(ask, arn)
	}
	tags, err := d.elbTags(ctx, ask)
	if err != nil {
		return nil, err
	}
	d.seen.update(arns, tags)
	return tags, nil
}

func (d *deployer) listLoadBalancers(ctx context.Context) ([]elbtypes.LoadBalancer, error) {
	var all []elbtypes.LoadBalancer
	in := &elbv2.DescribeLoadBalancersInput{}
	for {
		out, err := d.elb.DescribeLoadBalancers(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("describing load balancers: %w", err)
		}
		all = append(all, out.LoadBalancers...)
		if aws.ToString(out.NextMarker) == "" {
			return all, nil
		}
		in.Marker = out.NextMarker
	}
}

func (d *deployer) loadBalancersOf(ctx context.Context, all []elbtypes.LoadBalancer, tags map[string]map[string]string, match func(map[string]string) bool, deep bool) ([]liveLB, error) {
	var lbs []liveLB
	for _, lb := range all {
		t, ok := tags[aws.ToString(lb.LoadBalancerArn)]
		if !ok || !match(t) {
			continue
		}
		l := liveLB{lb: lb, tags: t}
		if deep {
			out, err := d.elb.DescribeLoadBalancerAttributes(ctx, &elbv2.DescribeLoadBalancerAttributesInput{LoadBalancerArn: lb.LoadBalancerArn})
			if err != nil {
				return nil, fmt.Errorf("describing attributes of %s: %w", aws.ToString(lb.LoadBalancerArn), err)
			}
			l.attrs = lbAttributes(out.Attributes)
		}
		lbs = append(lbs, l)
	}
	return lbs, nil
}

func (d *deployer) listTargetGroups(ctx context.Context) ([]elbtypes.TargetGroup, error) {
	var all []elbtypes.TargetGroup
	// moto ignores PageSize and returns everything at once; AWS pages, so page anyway.
	in := &elbv2.DescribeTargetGroupsInput{}
	for {
		out, err := d.elb.DescribeTargetGroups(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("describing target groups: %w", err)
		}
		all = append(all, out.TargetGroups...)
		if aws.ToString(out.NextMarker) == "" {
			return all, nil
		}
		in.Marker = out.NextMarker
	}
}

func (d *deployer) targetGroupsOf(ctx context.Context, all []elbtypes.TargetGroup, tags map[string]map[string]string, match func(map[string]string) bool, deep bool) ([]liveTG, error) {
	var tgs []liveTG
	for _, tg := range all {
		t, ok := tags[aws.ToString(tg.TargetGroupArn)]
		if !ok || !match(t) {
			continue
		}
		l := liveTG{tg: tg, tags: t}
		if deep {
			var err error
			if l.attrs, l.targets, err = d.targetGroupDetails(ctx, aws.ToString(tg.TargetGroupArn)); err != nil {
				return nil, err
			}
		}
		tgs = append(tgs, l)
	}
	return tgs, nil
}

func (d *deployer) targetGroupDetails(ctx context.Context, arn string) (map[string]string, []Target, error) {
	a, err := d.elb.DescribeTargetGroupAttributes(ctx, &elbv2.DescribeTargetGroupAttributesInput{TargetGroupArn: &arn})
	if err != nil {
		return nil, nil, fmt.Errorf("describing attributes of %s: %w", arn, err)
	}
	attrs := map[string]string{}
	for _, kv := range a.Attributes {
		attrs[aws.ToString(kv.Key)] = aws.ToString(kv.Value)
	}
	h, err := d.elb.DescribeTargetHealth(ctx, &elbv2.DescribeTargetHealthInput{TargetGroupArn: &arn})
	if err != nil {
		return nil, nil, fmt.Errorf("describing targets of %s: %w", arn, err)
	}
	var targets []Target
	for _, t := range h.TargetHealthDescriptions {
		if t.Target == nil || (t.TargetHealth != nil && t.TargetHealth.State == elbtypes.TargetHealthStateEnumDraining) {
			continue // already on its way out: counted, it would be deregistered again on every run
		}
		targets = append(targets, Target{IP: aws.ToString(t.Target.Id), Port: aws.ToInt32(t.Target.Port), AvailabilityZone: aws.ToString(t.Target.AvailabilityZone)})
	}
	return attrs, targets, nil
}

// observeListeners reads the listeners of a load balancer with their certificates and rules.
func (d *deployer) observeListeners(ctx context.Context, lbARN string) ([]liveListener, error) {
	var ls []elbtypes.Listener
	in := &elbv2.DescribeListenersInput{LoadBalancerArn: &lbARN}
	for {
		out, err := d.elb.DescribeListeners(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("describing listeners of %s: %w", lbARN, err)
		}
		ls = append(ls, out.Listeners...)
		if aws.ToString(out.NextMarker) == "" {
			break
		}
		in.Marker = out.NextMarker
	}
	arns := make([]string, len(ls))
	for i, l := range ls {
		arns[i] = aws.ToString(l.ListenerArn)
	}
	tags, err := d.elbTags(ctx, arns)
	if err != nil {
		return nil, err
	}
	out := make([]liveListener, 0, len(ls))
	for _, l := range ls {
		ll := liveListener{l: l, tags: tags[aws.ToString(l.ListenerArn)]}
		if ll.certs, err = d.listenerCertificates(ctx, l); err != nil {
			return nil, err
		}
		if !hasRules(l.Protocol) {
			out = append(out, ll)
			continue // an NLB listener has only its default action
		}
		if ll.rules, err = d.observeRules(ctx, aws.ToString(l.ListenerArn)); err != nil {
			return nil, err
		}
		out = append(out, ll)
	}
	return out, nil
}

// hasRules tells whether a listener of protocol p can have rules besides its default one: only
// an ALB's can.
func hasRules(p elbtypes.ProtocolEnum) bool {
	return p == elbtypes.ProtocolEnumHttp || p == elbtypes.ProtocolEnumHttps
}

// listenerCertificates lists a secure listener's certificates, the default first.
func (d *deployer) listenerCertificates(ctx context.Context, l elbtypes.Listener) ([]string, error) {
	if len(l.Certificates) == 0 {
		return nil, nil
	}
	certs := []string{aws.ToString(l.Certificates[0].CertificateArn)}
	in := &elbv2.DescribeListenerCertificatesInput{ListenerArn: l.ListenerArn}
	for {
		out, err := d.elb.DescribeListenerCertificates(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("describing certificates of %s: %w", aws.ToString(l.ListenerArn), err)
		}
		for _, c := range out.Certificates {
			if !aws.ToBool(c.IsDefault) && aws.ToString(c.CertificateArn) != certs[0] {
				certs = append(certs, aws.ToString(c.CertificateArn))
			}
		}
		if aws.ToString(out.NextMarker) == "" {
			return certs, nil
		}
		in.Marker = out.NextMarker
	}
}

func (d *deployer) observeRules(ctx context.Context, listenerARN string) ([]liveRule, error) {
	var rs []elbtypes.Rule
	in := &elbv2.DescribeRulesInput{ListenerArn: &listenerARN}
	for {
		out, err := d.elb.DescribeRules(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("describing rules of %s: %w", listenerARN, err)
		}
		for _, r := range out.Rules {
			if !aws.ToBool(r.IsDefault) {
				rs = append(rs, r)
			}
		}
		if aws.ToString(out.NextMarker) == "" {
			break
		}
		in.Marker = out.NextMarker
	}
	arns := make([]string, len(rs))
	for i, r := range rs {
		arns[i] = aws.ToString(r.RuleArn)
	}
	tags, err := d.elbTags(ctx, arns)
	if err != nil {
		return nil, err
	}
	out := make([]liveRule, 0, len(rs))
	for _, r := range rs {
		p, err := strconv.ParseInt(aws.ToString(r.Priority), 10, 32)
		if err != nil {
			return nil, fmt.Errorf("rule %s has priority %q: %w", aws.ToString(r.RuleArn), aws.ToString(r.Priority), err)
		}
		out = append(out, liveRule{r: r, tags: tags[aws.ToString(r.RuleArn)], priority: int32(p)})
	}
	return out, nil
}

// elbTags returns the tags of ELBv2 resources by ARN, in batches of describeTagsBatch.
func (d *deployer) elbTags(ctx context.Context, arns []string) (map[string]map[string]string, error) {
	tags := make(map[string]map[string]string, len(arns))
	for start := 0; start < len(arns); start += describeTagsBatch {
		batch := arns[start:min(start+describeTagsBatch, len(arns))]
		out, err := d.elb.DescribeTags(ctx, &elbv2.DescribeTagsInput{ResourceArns: batch})
		if isNotFound(err) && len(batch) > 1 {
			// One resource of the batch went since it was listed (another gateway's cleanup):
			// the others are asked one by one.
			for _, arn := range batch {
				one, err := d.elbTags(ctx, []string{arn})
				if err != nil {
					return nil, err
				}
				maps.Copy(tags, one)
			}
			continue
		}
		if isNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("describing tags: %w", err)
		}
		for _, td := range out.TagDescriptions {
			m := map[string]string{}
			for _, t := range td.Tags {
				m[aws.ToString(t.Key)] = aws.ToString(t.Value)
			}
			tags[aws.ToString(td.ResourceArn)] = m
		}
	}
	return tags, nil
}

// findSecurityGroups filters on the ownership tags server-side.
func (d *deployer) findSecurityGroups(ctx context.Context, gatewayID string) ([]liveSG, error) {
	filters := []ec2types.Filter{
		{Name: aws.String("tag:" + TagManagedBy), Values: []string{providers.ManagedBy}},
		{Name: aws.String("tag:" + TagFleet), Values: []string{d.fleet}},
	}
	if gatewayID != "" {
		filters = append(filters, ec2types.Filter{Name: aws.String("tag:" + TagGateway), Values: []string{gatewayID}})
	}
	var sgs []liveSG
	in := &ec2.DescribeSecurityGroupsInput{Filters: filters}
	for {
		out, err := d.ec2.DescribeSecurityGroups(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("describing security groups: %w", err)
		}
		for _, sg := range out.SecurityGroups {
			sgs = append(sgs, liveSG{sg: sg, tags: ec2TagMap(sg.Tags)})
		}
		if aws.ToString(out.NextToken) == "" {
			return sgs, nil
		}
		in.NextToken = out.NextToken
	}
}

func lbAttributes(kvs []elbtypes.LoadBalancerAttribute) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		m[aws.ToString(kv.Key)] = aws.ToString(kv.Value)
	}
	return m
}

func ec2TagMap(tags []ec2types.Tag) map[string]string {
	m := make(map[string]string, len(tags))
	for _, t := range tags {
		m[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	return m
}
