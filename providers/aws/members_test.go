package aws

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	gocmp "github.com/google/go-cmp/cmp"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/dataplane/ir"
	"github.com/fleetgate/fleetgate/providers"
	"github.com/fleetgate/fleetgate/providers/aws/mototest"
)

// memberEnv is a class account (moto's default, static test keys) with an ALB VPC, and member
// accounts reached by AssumeRole: moto keeps a separate EC2 per account, and credentials from
// AssumeRole into arn:aws:iam::<account>:role/x act in <account>.
type memberEnv struct {
	t      *testing.T
	ctx    context.Context
	url    string
	fleet  string
	lbVPC  string
	class  *ec2.Client
	rec    *recorder
	params json.RawMessage
}

func newMemberEnv(t *testing.T, endpoint string) *memberEnv {
	t.Helper()
	ctx := motoContext(t)
	cfg, err := mototest.Config(ctx, endpoint)
	if err != nil {
		t.Fatal(err)
	}
	e := &memberEnv{t: t, ctx: ctx, url: endpoint, fleet: "members-" + strings.ToLower(rand.Text()[:8]),
		lbVPC: motoVPC(t, endpoint), class: ec2.NewFromConfig(cfg), rec: &recorder{}}
	e.params = json.RawMessage(`{"loadBalancerType":"application","vpc":"` + e.lbVPC + `"}`)
	return e
}

// randomAccount is an account ID no other test uses.
func randomAccount(t *testing.T) string {
	n, err := rand.Int(rand.Reader, big.NewInt(899_999_999_999))
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%012d", n.Int64()+100_000_000_000)
}

// member makes a VPC and a security group in account, returning the role to assume and the
// group's ID, and an EC2 client acting in the account.
func (e *memberEnv) member(account, cidr string) (role, vpc, group string, api *ec2.Client) {
	e.t.Helper()
	role = "arn:aws:iam::" + account + ":role/fleetgate"
	cfg, err := mototest.Config(e.ctx, e.url)
	if err != nil {
		e.t.Fatal(err)
	}
	cfg.Credentials = aws.NewCredentialsCache(stscreds.NewAssumeRoleProvider(sts.NewFromConfig(cfg), role))
	api = ec2.NewFromConfig(cfg)
	v, err := api.CreateVpc(e.ctx, &ec2.CreateVpcInput{CidrBlock: aws.String(cidr)})
	if err != nil {
		e.t.Fatal(err)
	}
	vpc = aws.ToString(v.Vpc.VpcId)
	return role, vpc, e.group(api, vpc), api
}

func (e *memberEnv) group(api *ec2.Client, vpc string) string {
	e.t.Helper()
	sg, err := api.CreateSecurityGroup(e.ctx, &ec2.CreateSecurityGroupInput{GroupName: aws.String("nodes-" + rand.Text()[:6]),
		Description: aws.String("member nodes"), VpcId: aws.String(vpc)})
	if err != nil {
		e.t.Fatal(err)
	}
	return aws.ToString(sg.GroupId)
}

func (e *memberEnv) provider(members map[string]v1alpha1.MemberClusterSpec, endpoint string) *Provider {
	e.t.Helper()
	o := testOptions(endpoint, e.fleet)
	o.Namespace = "test"
	o.HTTPClient = e.rec
	o.Members = func(context.Context) (map[string]v1alpha1.MemberClusterSpec, error) { return members, nil }
	p, err := New(o)
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

// ingress are the inbound rules of group as "proto/from-to from source", sorted, with whether
// they carry this fleet's tags and the gateway's description.
func (e *memberEnv) ingress(api *ec2.Client, group string) []string {
	e.t.Helper()
	out, err := api.DescribeSecurityGroupRules(e.ctx, &ec2.DescribeSecurityGroupRulesInput{
		Filters: []ec2types.Filter{{Name: aws.String("group-id"), Values: []string{group}}}})
	if err != nil {
		e.t.Fatal(err)
	}
	var rules []string
	for _, r := range out.SecurityGroupRules {
		if aws.ToBool(r.IsEgress) {
			continue
		}
		m := memberRuleOf(r)
		s := fmt.Sprintf("%s/%d-%d from %s", m.Protocol, m.FromPort, m.ToPort, m.Source)
		if tags := ec2TagMap(r.Tags); tags[TagFleet] == e.fleet && tags[TagResource] == memberRuleResource {
			s += " owned by " + tags[TagGatewayKey]
		}
		if d := aws.ToString(r.Description); d != "" {
			s += " (" + d + ")"
		}
		rules = append(rules, s)
	}
	slices.Sort(rules)
	return rules
}

// mutations are the mutating EC2 calls recorded since the last call, by action.
func (e *memberEnv) mutations() []string {
	e.rec.mu.Lock()
	defer e.rec.mu.Unlock()
	var out []string
	for _, c := range e.rec.calls {
		if c.Service == "ec2" && !strings.HasPrefix(c.Action, "Describe") {
			out = append(out, c.Action)
		}
	}
	e.rec.calls = nil
	return out
}

// albLB is a gateway of the ALB class with one backend whose endpoints are in several members.
func (e *memberEnv) albLB(name string, eps ...ir.Endpoint) *providers.LoadBalancer {
	lb := httpModel(name, e.params, nil, nil)
	lb.Routing.Listeners[0].VirtualHosts[0].Routes[0].Backends[0].Endpoints = eps
	for _, ep := range eps {
		if !slices.Contains(lb.Clusters, ep.Cluster) {
			lb.Clusters = append(lb.Clusters, ep.Cluster)
		}
	}
	return lb
}

func (e *memberEnv) ensure(p *Provider, lb *providers.LoadBalancer) {
	e.t.Helper()
	st, err := p.Ensure(e.ctx, lb)
	if err != nil {
		e.t.Fatalf("Ensure: %v", err)
	}
	if st.Reason == providers.ReasonInvalid {
		e.t.Fatalf("Ensure: invalid: %s", st.Message)
	}
}

func (e *memberEnv) lbSecurityGroup() string {
	e.t.Helper()
	out, err := e.class.DescribeSecurityGroups(e.ctx, &ec2.DescribeSecurityGroupsInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag:" + TagFleet), Values: []string{e.fleet}}, {Name: aws.String("tag:" + TagResource), Values: []string{"sg"}}}})
	if err != nil || len(out.SecurityGroups) != 1 {
		e.t.Fatalf("the load balancer's security group: %v (%d found)", err, len(out.SecurityGroups))
	}
	return aws.ToString(out.SecurityGroups[0].GroupId)
}

func memberCreds(role string) *v1alpha1.AWSCredentials {
	return &v1alpha1.AWSCredentials{SecretRef: &v1alpha1.ObjectRef{Namespace: "test", Name: "aws"},
		AssumeRole: &v1alpha1.AWSAssumeRole{RoleARN: role, ExternalID: "fleet-ext-1", SessionName: "fleetgate"}}
}

// TestMemberRules: an ALB gateway with endpoints in a member of another account (assumed role,
// another VPC) and in the hub (the ALB's VPC) opens the members' security groups: the other
// account's from the ALB's subnets, signed with the assumed role's keys; the hub's from the ALB's
// security group. A steady Ensure changes nothing; a port change moves the rules; a rule revoked
// by hand comes back (Plan shows it first, and a dry run makes no call); the orphan sweep finds a
// gateway that has only member rules left; Delete leaves nothing.
func TestMemberRules(t *testing.T) {
	m := mototest.Require(t, moto)
	t.Parallel()
	e := newMemberEnv(t, m.URL)
	role, eastVPC, eastSG, east := e.member(randomAccount(t), "10.2.0.0/16")
	hubSG := e.group(e.class, e.lbVPC)
	members := map[string]v1alpha1.MemberClusterSpec{
		"east": {Region: mototest.Region, Provider: v1alpha1.ProviderHints{VPC: eastVPC,
			AWS: &v1alpha1.MemberAWS{Credentials: memberCreds(role), SecurityGroups: []string{eastSG}}}},
		"hub": {Provider: v1alpha1.ProviderHints{VPC: e.lbVPC, AWS: &v1alpha1.MemberAWS{SecurityGroups: []string{hubSG}}}},
	}
	p := e.provider(members, m.URL)
	lb := e.albLB("members", endpoint("east", "10.2.0.10", 8080), endpoint("east", "10.2.0.11", 8081), endpoint("hub", "10.0.1.20", 8080))
	desc := " (fleetgate load balancer of gateway hub/apps/members)"
	owned := " owned by hub/apps/members" + desc

	e.ensure(p, lb)
	lbSG := e.lbSecurityGroup()
	if diff := gocmp.Diff([]string{"tcp/8080-8081 from 10.0.1.0/24" + owned, "tcp/8080-8081 from 10.0.2.0/24" + owned}, e.ingress(east, eastSG)); diff != "" {
		t.Errorf("east's group (-want +got):\n%s", diff)
	}
	// moto leaves the description of a group reference out of DescribeSecurityGroupRules: it is
	// checked on the request.
	if diff := gocmp.Diff([]string{"tcp/8080-8080 from " + lbSG + " owned by hub/apps/members"}, e.ingress(e.class, hubSG)); diff != "" {
		t.Errorf("hub's group (-want +got):\n%s", diff)
	}
	if !slices.ContainsFunc(e.rec.find("AuthorizeSecurityGroupIngress"), func(c recordedCall) bool {
		return strings.Contains(c.Body, "GroupId="+hubSG) && strings.Contains(c.Body, "Groups.1.GroupId="+lbSG) &&
			strings.Contains(c.Body, "Groups.1.Description=fleetgate+load+balancer+of+gateway+hub%2Fapps%2Fmembers")
	}) {
		t.Errorf("no AuthorizeSecurityGroupIngress of %s from %s with the gateway's description", hubSG, lbSG)
	}
	// east's rules were written with the assumed role's keys, not the class's.
	for _, c := range e.rec.find("AuthorizeSecurityGroupIngress") {
		if strings.Contains(c.Body, eastSG) == (c.AccessKey == "AKIDTEST") {
			t.Errorf("AuthorizeSecurityGroupIngress signed by %s: %s", c.AccessKey, c.Body)
		}
	}
	if len(e.rec.find("AssumeRole")) == 0 {
		t.Error("east's account was reached without AssumeRole")
	}
	// One accounts cache (and rate limiter per account and region): the class's account, which
	// the hub's group is in too, and east's.
	classKey := accountKey(mustDecode(t, e.params, p.o.Defaults))
	eastKey := accountKey(v1alpha1.AWSOptions{Region: mototest.Region, Endpoint: m.URL, Credentials: memberCreds(role)})
	p.accounts.mu.Lock()
	keys := slices.Sorted(maps.Keys(p.accounts.byKey))
	p.accounts.mu.Unlock()
	if diff := gocmp.Diff(slices.Sorted(slices.Values([]string{classKey, eastKey})), keys); diff != "" {
		t.Errorf("accounts (-want +got):\n%s", diff)
	}
	e.mutations()

	e.ensure(p, lb)
	// The member rules' cost in steady state: one read per member account, the assumed role's
	// credentials cached.
	if n, roles := len(e.rec.find("DescribeSecurityGroupRules")), len(e.rec.find("AssumeRole")); n != 2 || roles != 0 {
		t.Errorf("a steady Ensure made %d DescribeSecurityGroupRules and %d AssumeRole calls, want 2 and 0", n, roles)
	}
	if got := e.mutations(); len(got) != 0 {
		t.Errorf("a steady Ensure made mutating EC2 calls: %v", got)
	}

	// The targets move to 9090: the rules follow.
	lb = e.albLB("members", endpoint("east", "10.2.0.12", 9090), endpoint("hub", "10.0.1.21", 9090))
	e.ensure(p, lb)
	if diff := gocmp.Diff([]string{"tcp/9090-9090 from 10.0.1.0/24" + owned, "tcp/9090-9090 from 10.0.2.0/24" + owned}, e.ingress(east, eastSG)); diff != "" {
		t.Errorf("east's group after the port change (-want +got):\n%s", diff)
	}
	if diff := gocmp.Diff([]string{"tcp/9090-9090 from " + lbSG + " owned by hub/apps/members"}, e.ingress(e.class, hubSG)); diff != "" {
		t.Errorf("hub's group after the port change (-want +got):\n%s", diff)
	}

	// A rule revoked by hand: Plan shows it back, a dry run leaves it missing, Ensure restores it.
	_, err := east.RevokeSecurityGroupIngress(e.ctx, &ec2.RevokeSecurityGroupIngressInput{GroupId: aws.String(eastSG),
		IpPermissions: []ec2types.IpPermission{{IpProtocol: aws.String("tcp"), FromPort: aws.Int32(9090), ToPort: aws.Int32(9090),
			IpRanges: []ec2types.IpRange{{CidrIp: aws.String("10.0.2.0/24")}}}}})
	if err != nil {
		t.Fatal(err)
	}
	e.mutations()
	calls, err := p.Plan(e.ctx, lb)
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	want := []Call{{"AuthorizeSecurityGroupIngress", memberRuleResource + " " + eastSG, eastSG + " tcp/9090 from 10.0.2.0/24"}}
	if diff := gocmp.Diff(want, calls); diff != "" {
		t.Errorf("Plan after drift (-want +got):\n%s", diff)
	}
	dry := *lb
	dry.Annotations = map[string]string{AnnotationDryRun: "true"}
	if st, err := p.Ensure(e.ctx, &dry); err != nil || !strings.Contains(st.Message, "1 calls would be made") {
		t.Errorf("dry run: %v, %+v", err, st)
	}
	if got := e.mutations(); len(got) != 0 {
		t.Errorf("Plan and the dry run made mutating EC2 calls: %v", got)
	}
	e.ensure(p, lb)
	if diff := gocmp.Diff([]string{"tcp/9090-9090 from 10.0.1.0/24" + owned, "tcp/9090-9090 from 10.0.2.0/24" + owned}, e.ingress(east, eastSG)); diff != "" {
		t.Errorf("east's group after the drift (-want +got):\n%s", diff)
	}

	// Delete leaves both groups as they were before, and nothing for the sweep to find.
	if err := p.Delete(e.ctx, lb); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if got := e.ingress(east, eastSG); len(got) != 0 {
		t.Errorf("east's group after Delete: %v", got)
	}
	if got := e.ingress(e.class, hubSG); len(got) != 0 {
		t.Errorf("hub's group after Delete: %v", got)
	}
	if listed, err := p.List(e.ctx); err != nil || slices.ContainsFunc(listed, func(l providers.LoadBalancer) bool { return l.Gateway == lb.Gateway }) {
		t.Errorf("List after Delete: %v, %+v", err, listed)
	}

	// Only east's rules are left (the hub's rule and the class account's resources went by
	// hand): the sweep still finds the gateway, and its Delete removes them.
	e.ensure(p, lb)
	rules, err := e.class.DescribeSecurityGroupRules(e.ctx, &ec2.DescribeSecurityGroupRulesInput{
		Filters: []ec2types.Filter{{Name: aws.String("group-id"), Values: []string{hubSG}}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rules.SecurityGroupRules {
		if !aws.ToBool(r.IsEgress) {
			if _, err := e.class.RevokeSecurityGroupIngress(e.ctx, &ec2.RevokeSecurityGroupIngressInput{GroupId: aws.String(hubSG),
				SecurityGroupRuleIds: []string{aws.ToString(r.SecurityGroupRuleId)}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	d, _, err := p.deployer(e.ctx, mustDecode(t, e.params, p.o.Defaults))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Delete(e.ctx, providers.GatewayID(lb.Gateway)); err != nil {
		t.Fatalf("deleting the load balancer: %v", err)
	}
	listed, err := p.List(e.ctx)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	i := slices.IndexFunc(listed, func(l providers.LoadBalancer) bool { return l.Gateway == lb.Gateway })
	if i < 0 {
		t.Fatalf("List did not find the gateway with only member rules left: %+v", listed)
	}
	if err := p.Delete(e.ctx, &listed[i]); err != nil {
		t.Fatalf("Delete of the listed gateway: %v", err)
	}
	if got := e.ingress(east, eastSG); len(got) != 0 {
		t.Errorf("east's group after the sweep's Delete: %v", got)
	}
}

func mustDecode(t *testing.T, raw json.RawMessage, defaults v1alpha1.AWSOptions) v1alpha1.AWSOptions {
	t.Helper()
	o, err := decodeOptions(raw, defaults)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// TestMemberRulesBadCredentials: a member whose role cannot be assumed fails Ensure with an error
// naming it and AWS's code, and the other member's rules are made all the same.
func TestMemberRulesBadCredentials(t *testing.T) {
	m := mototest.Require(t, moto)
	t.Parallel()
	shim := mototest.NewFaults(m.URL)
	t.Cleanup(shim.Close)
	e := newMemberEnv(t, m.URL)
	// The bad account comes first (accounts are visited in order): its failure must not stop the
	// good one.
	badAccount, goodAccount := randomAccount(t), randomAccount(t)
	if badAccount > goodAccount {
		badAccount, goodAccount = goodAccount, badAccount
	}
	goodRole, goodVPC, goodSG, good := e.member(goodAccount, "10.3.0.0/16")
	badRole, badVPC, badSG, _ := e.member(badAccount, "10.4.0.0/16")
	shim.Fail(mototest.Rule{Service: "sts", Actions: []string{"AssumeRole"}, First: 1 << 30,
		Match: func(r mototest.Request) bool { return r.Form.Get("RoleArn") == badRole },
		Fault: mototest.Fault{Status: http.StatusForbidden, Code: "AccessDenied", Message: "not authorized to perform sts:AssumeRole"}})
	members := map[string]v1alpha1.MemberClusterSpec{
		"east": {Region: mototest.Region, Provider: v1alpha1.ProviderHints{VPC: goodVPC,
			AWS: &v1alpha1.MemberAWS{Credentials: memberCreds(goodRole), SecurityGroups: []string{goodSG}}}},
		"west": {Region: mototest.Region, Provider: v1alpha1.ProviderHints{VPC: badVPC,
			AWS: &v1alpha1.MemberAWS{Credentials: memberCreds(badRole), SecurityGroups: []string{badSG}}}},
	}
	p := e.provider(members, shim.URL())
	lb := e.albLB("badcreds", endpoint("east", "10.3.0.10", 8080), endpoint("west", "10.4.0.10", 8080))
	_, err := p.Ensure(e.ctx, lb)
	if err == nil {
		t.Fatal("Ensure succeeded with a member whose role cannot be assumed")
	}
	for _, want := range []string{"security groups of member west (AWS error AccessDenied)", "not authorized to perform sts:AssumeRole"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "member east") {
		t.Errorf("error %q blames east too", err)
	}
	if me, ok := errors.AsType[*MemberError](err); !ok || !slices.Equal(me.Members, []string{"west"}) {
		t.Errorf("error %q is not a MemberError of west", err)
	}
	owned := " owned by hub/apps/badcreds (fleetgate load balancer of gateway hub/apps/badcreds)"
	if diff := gocmp.Diff([]string{"tcp/8080-8080 from 10.0.1.0/24" + owned, "tcp/8080-8080 from 10.0.2.0/24" + owned}, e.ingress(good, goodSG)); diff != "" {
		t.Errorf("east's group (-want +got):\n%s", diff)
	}
}

// TestMemberRulesInvalid: a member rule EC2 would refuse (here a member's Secret outside the
// operator's namespace) makes the gateway Invalid before any call to its account.
func TestMemberRulesInvalid(t *testing.T) {
	m := mototest.Require(t, moto)
	t.Parallel()
	e := newMemberEnv(t, m.URL)
	members := map[string]v1alpha1.MemberClusterSpec{
		"east": {Region: mototest.Region, Provider: v1alpha1.ProviderHints{AWS: &v1alpha1.MemberAWS{
			Credentials:    &v1alpha1.AWSCredentials{SecretRef: &v1alpha1.ObjectRef{Namespace: "apps", Name: "keys"}},
			SecurityGroups: []string{"sg-0123"}}}},
	}
	p := e.provider(members, m.URL)
	st, err := p.Ensure(e.ctx, e.albLB("invalid", endpoint("east", "10.2.0.10", 8080)))
	if err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	if st.Reason != providers.ReasonInvalid || !strings.Contains(st.Message, "member east: credentials Secret apps/keys") {
		t.Errorf("status %+v, want Invalid naming member east's Secret", st)
	}
	if got := e.mutations(); len(got) != 0 {
		t.Errorf("mutating calls before the refusal: %v", got)
	}
}
