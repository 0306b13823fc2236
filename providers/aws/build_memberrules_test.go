package aws

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	gocmp "github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/dataplane/ir"
)

const otherRole = "arn:aws:iam::222222222222:role/fleetgate"

func memberSpec(region, vpc string, creds *v1alpha1.AWSCredentials, groups ...string) v1alpha1.MemberClusterSpec {
	return v1alpha1.MemberClusterSpec{Region: region, Provider: v1alpha1.ProviderHints{VPC: vpc,
		AWS: &v1alpha1.MemberAWS{Credentials: creds, SecurityGroups: groups}}}
}

func assumeRole(arn string) *v1alpha1.AWSCredentials {
	return &v1alpha1.AWSCredentials{AssumeRole: &v1alpha1.AWSAssumeRole{RoleARN: arn, ExternalID: "ext-1"}}
}

// TestBuildMemberAccess: every member naming security groups gets one rule per protocol and port
// range its targets and health checks use, from the load balancer's security group in its VPC and
// from the load balancer's subnets elsewhere, in its own account (the class's without
// credentials), and one account holds the rules of all its members once.
func TestBuildMemberAccess(t *testing.T) {
	classRegion := func(o v1alpha1.AWSOptions) v1alpha1.AWSOptions {
		o.Region, o.Endpoint = "us-east-1", "http://aws.test"
		return o
	}
	alb, nlb := classRegion(albOptions()), classRegion(nlbOptions())
	nlbCheck := nlb
	nlbCheck.HealthCheck = &v1alpha1.AWSHealthCheck{Port: "9000"}
	east := v1alpha1.AWSOptions{Region: "eu-west-1", Endpoint: "http://aws.test", Credentials: assumeRole(otherRole)}
	httpModel := testModel(httpListener(80, ir.VirtualHost{Hostname: "*", Routes: []ir.Route{{Name: "r", Backends: []ir.Backend{
		backend("east/apps/api:80", 1, ep("east", "10.2.0.5", 8080, 1), ep("east", "10.2.0.6", 8081, 1), ep("east", "10.2.0.7", 8443, 1)),
		backend("hub/apps/api:80", 1, ep("hub", "10.0.0.9", 8080, 1)),
	}}}}))
	udpModel := testModel(
		ir.Listener{Name: "dns", Port: 53, Protocol: ir.ProtocolUDP, L4: &ir.L4Route{Name: "dns", Backends: []ir.Backend{
			backend("east/apps/dns:53", 1, ep("east", "10.2.0.5", 5353, 1), ep("hub", "10.0.0.9", 5353, 1))}}},
		ir.Listener{Name: "both", Port: 54, Protocol: ir.ProtocolTCP, L4: &ir.L4Route{Name: "both", Backends: []ir.Backend{
			backend("east/apps/both:54", 1, ep("east", "10.2.0.8", 7000, 1))}}},
		ir.Listener{Name: "both-udp", Port: 54, Protocol: ir.ProtocolUDP, L4: &ir.L4Route{Name: "both", Backends: []ir.Backend{
			backend("east/apps/both:54", 1, ep("east", "10.2.0.8", 7000, 1))}}},
	)
	subnets := []string{"10.0.0.0/24", "10.0.1.0/24"}
	rules := func(group, proto string, from, to int32, sources ...string) []MemberRule {
		var out []MemberRule
		for _, s := range sources {
			out = append(out, MemberRule{Group: group, Protocol: proto, FromPort: from, ToPort: to, Source: s})
		}
		return out
	}
	cat := func(rs ...[]MemberRule) []MemberRule {
		var out []MemberRule
		for _, r := range rs {
			out = append(out, r...)
		}
		return out
	}
	tests := []struct {
		name    string
		lbModel *ir.Config
		opts    v1alpha1.AWSOptions
		members map[string]v1alpha1.MemberClusterSpec
		want    []MemberAccess
	}{{
		name: "ALB: another account by subnets, its own VPC by security group",
		opts: alb, lbModel: httpModel.Routing,
		members: map[string]v1alpha1.MemberClusterSpec{
			"east":  memberSpec("eu-west-1", "vpc-0e", assumeRole(otherRole), "sg-0e1", "sg-0e2"),
			"hub":   memberSpec("", testVPC, nil, "sg-0a"),
			"west":  {Region: "us-west-2"},         // names no groups: nothing to open
			"north": memberSpec("", "vpc-0n", nil), // a spec the API refuses (no groups): nothing
		},
		want: []MemberAccess{
			{Members: []string{"east"}, Account: east, Rules: cat(
				rules("sg-0e1", ec2TCP, 8080, 8081, subnets...), rules("sg-0e1", ec2TCP, 8443, 8443, subnets...),
				rules("sg-0e2", ec2TCP, 8080, 8081, subnets...), rules("sg-0e2", ec2TCP, 8443, 8443, subnets...))},
			{Members: []string{"hub"}, Account: v1alpha1.AWSOptions{Region: "us-east-1", Endpoint: "http://aws.test"},
				Rules: rules("sg-0a", ec2TCP, 8080, 8080, sourceLoadBalancer)},
		},
	}, {
		name: "ALB: two members of one account share a group: one set of rules",
		opts: alb, lbModel: httpModel.Routing,
		members: map[string]v1alpha1.MemberClusterSpec{
			"east": memberSpec("eu-west-1", "vpc-0e", assumeRole(otherRole), "sg-0e1"),
			"hub":  memberSpec("eu-west-1", "vpc-0e", assumeRole(otherRole), "sg-0e1"),
		},
		want: []MemberAccess{{Members: []string{"east", "hub"}, Account: east, Rules: cat(
			rules("sg-0e1", ec2TCP, 8080, 8081, subnets...), rules("sg-0e1", ec2TCP, 8443, 8443, subnets...))}},
	}, {
		name: "NLB: UDP and TCP_UDP targets, health checks over TCP, by subnets even in its VPC (no security group)",
		opts: nlb, lbModel: udpModel.Routing,
		members: map[string]v1alpha1.MemberClusterSpec{
			"east": memberSpec("eu-west-1", "vpc-0e", assumeRole(otherRole), "sg-0e1"),
			"hub":  memberSpec("", testVPC, nil, "sg-0a"),
		},
		want: []MemberAccess{
			{Members: []string{"east"}, Account: east, Rules: cat(
				rules("sg-0e1", ec2TCP, 5353, 5353, subnets...), rules("sg-0e1", ec2TCP, 7000, 7000, subnets...),
				rules("sg-0e1", ec2UDP, 5353, 5353, subnets...), rules("sg-0e1", ec2UDP, 7000, 7000, subnets...))},
			{Members: []string{"hub"}, Account: v1alpha1.AWSOptions{Region: "us-east-1", Endpoint: "http://aws.test"}, Rules: cat(
				rules("sg-0a", ec2TCP, 5353, 5353, subnets...), rules("sg-0a", ec2UDP, 5353, 5353, subnets...))},
		},
	}, {
		name: "NLB: a health-check port of its own is opened over TCP next to the traffic ports",
		opts: nlbCheck, lbModel: udpModel.Routing,
		members: map[string]v1alpha1.MemberClusterSpec{"hub": memberSpec("", testVPC, nil, "sg-0a")},
		want: []MemberAccess{{Members: []string{"hub"}, Account: v1alpha1.AWSOptions{Region: "us-east-1", Endpoint: "http://aws.test"}, Rules: cat(
			rules("sg-0a", ec2TCP, 9000, 9000, subnets...), rules("sg-0a", ec2UDP, 5353, 5353, subnets...))}},
	}, {
		name: "a member without targets keeps its account, with no rules, so that its old rules go",
		opts: alb, lbModel: testModel(httpListener(80)).Routing,
		members: map[string]v1alpha1.MemberClusterSpec{"east": memberSpec("eu-west-1", "vpc-0e", assumeRole(otherRole), "sg-0e1")},
		want:    []MemberAccess{{Members: []string{"east"}, Account: east}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lb := testModel()
			lb.Routing = tt.lbModel
			s, err := Build(lb, tt.opts, testNetwork(), testFleet)
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			got, err := buildMemberAccess(s, lb, testNetwork(), tt.opts, tt.members, "fleetgate-system")
			if err != nil {
				t.Fatalf("buildMemberAccess: %v", err)
			}
			if diff := gocmp.Diff(tt.want, got); diff != "" {
				t.Errorf("member access (-want +got):\n%s", diff)
			}
		})
	}
}

// TestBuildMemberAccessRefuses: a member whose account cannot be named is an error naming it for a
// gateway with targets there, and no concern of the others.
func TestBuildMemberAccessRefuses(t *testing.T) {
	lb := testModel(httpListener(80, ir.VirtualHost{Hostname: "*", Routes: []ir.Route{{Name: "r", Backends: []ir.Backend{
		backend("east/apps/api:80", 1, ep("east", "10.2.0.5", 8080, 1))}}}}))
	elsewhere := testModel(httpListener(80, ir.VirtualHost{Hostname: "*", Routes: []ir.Route{{Name: "r", Backends: []ir.Backend{
		backend("hub/apps/api:80", 1, ep("hub", "10.0.0.9", 8080, 1))}}}}))
	opts := albOptions()
	s, err := Build(lb, opts, testNetwork(), testFleet)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	other, err := Build(elsewhere, opts, testNetwork(), testFleet)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	tests := []struct {
		name   string
		member v1alpha1.MemberClusterSpec
		want   string
	}{{
		name: "Secret outside the operator's namespace",
		member: memberSpec("eu-west-1", "", &v1alpha1.AWSCredentials{SecretRef: &v1alpha1.ObjectRef{Namespace: "apps", Name: "keys"}},
			"sg-0e1"),
		want: "member east: credentials Secret apps/keys: a member's Secret must be in the operator's namespace fleetgate-system",
	}, {
		name:   "no region anywhere",
		member: memberSpec("", "", nil, "sg-0e1"),
		want:   "member east: no region for the security groups",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			members := map[string]v1alpha1.MemberClusterSpec{"east": tt.member}
			_, err := buildMemberAccess(s, lb, testNetwork(), opts, members, "fleetgate-system")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
			got, err := buildMemberAccess(other, elsewhere, testNetwork(), opts, members, "fleetgate-system")
			if err != nil || len(got) != 0 {
				t.Errorf("a gateway without targets in east: %v, %+v; want no access and no error", err, got)
			}
		})
	}
}

// TestValidateMemberRules: what EC2 refuses (and moto accepts) is caught before any call.
func TestValidateMemberRules(t *testing.T) {
	ok := MemberRule{Group: "sg-0a", Protocol: ec2TCP, FromPort: 80, ToPort: 81, Source: "10.0.0.0/24"}
	with := func(f func(*MemberRule)) []MemberRule {
		r := ok
		f(&r)
		return []MemberRule{r}
	}
	many := make([]MemberRule, maxSecurityGroupRules+1)
	for i := range many {
		many[i] = ok
		many[i].FromPort, many[i].ToPort = int32(1000+2*i), int32(1000+2*i)
	}
	tests := []struct {
		name    string
		rules   []MemberRule
		gateway string
		want    string // "" when valid
	}{
		{name: "valid", rules: []MemberRule{ok, {Group: "sg-0a", Protocol: ec2UDP, FromPort: 53, ToPort: 53, Source: "2001:db8::/64"},
			{Group: "sg-0a", Protocol: ec2TCP, FromPort: 1, ToPort: 65535, Source: sourceLoadBalancer}}, gateway: testGateway},
		{name: "protocol", rules: with(func(r *MemberRule) { r.Protocol = "icmp" }), gateway: testGateway, want: `protocol "icmp" is neither tcp nor udp`},
		{name: "port zero", rules: with(func(r *MemberRule) { r.FromPort = 0 }), gateway: testGateway, want: "port range 0-81 is not within 1-65535"},
		{name: "port too high", rules: with(func(r *MemberRule) { r.ToPort = 65536 }), gateway: testGateway, want: "port range 80-65536"},
		{name: "reversed range", rules: with(func(r *MemberRule) { r.FromPort, r.ToPort = 90, 80 }), gateway: testGateway, want: "port range 90-80"},
		{name: "host bits", rules: with(func(r *MemberRule) { r.Source = "10.0.0.1/24" }), gateway: testGateway, want: "has host bits set (EC2 wants 10.0.0.0/24)"},
		{name: "not a CIDR", rules: with(func(r *MemberRule) { r.Source = "10.0.0.1" }), gateway: testGateway, want: `source "10.0.0.1" is not a CIDR`},
		{name: "group", rules: with(func(r *MemberRule) { r.Group = "sg-XYZ" }), gateway: testGateway, want: `"sg-XYZ" is not a security group ID`},
		{name: "quota", rules: many, gateway: testGateway, want: "more than 60 inbound rules (IPv4)"},
		{name: "description", rules: []MemberRule{ok}, gateway: "hub/infra/wéb", want: "has characters EC2 refuses"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := validateMemberRules(tt.rules, tt.gateway)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestPortRanges: consecutive ports of one protocol make one range.
func TestPortRanges(t *testing.T) {
	ports := []memberPort{{ec2TCP, 8082}, {ec2TCP, 8080}, {ec2UDP, 8081}, {ec2TCP, 8081}, {ec2TCP, 8080}, {ec2TCP, 9000}, {ec2TCP, 65535}}
	want := [][2]int32{{8080, 8082}, {9000, 9000}, {65535, 65535}}
	if diff := gocmp.Diff(want, portRanges(ports, ec2TCP)); diff != "" {
		t.Errorf("tcp ranges (-want +got):\n%s", diff)
	}
	if diff := gocmp.Diff([][2]int32{{8081, 8081}}, portRanges(ports, ec2UDP)); diff != "" {
		t.Errorf("udp ranges (-want +got):\n%s", diff)
	}
}

// TestMemberPermissions: each rule is one permission with one source, of the kind its source is,
// carrying the gateway's description; what EC2 reports of it reads back as the same rule.
func TestMemberPermissions(t *testing.T) {
	rules := []MemberRule{
		{Group: "sg-0a", Protocol: ec2TCP, FromPort: 8080, ToPort: 8081, Source: "10.0.1.0/24"},
		{Group: "sg-0a", Protocol: ec2UDP, FromPort: 53, ToPort: 53, Source: "2001:db8::/64"},
		{Group: "sg-0a", Protocol: ec2TCP, FromPort: 80, ToPort: 80, Source: "sg-0lb"},
	}
	desc := memberRuleDescription(testGateway)
	want := []ec2types.IpPermission{
		{IpProtocol: aws.String("tcp"), FromPort: aws.Int32(8080), ToPort: aws.Int32(8081),
			IpRanges: []ec2types.IpRange{{CidrIp: aws.String("10.0.1.0/24"), Description: aws.String(desc)}}},
		{IpProtocol: aws.String("udp"), FromPort: aws.Int32(53), ToPort: aws.Int32(53),
			Ipv6Ranges: []ec2types.Ipv6Range{{CidrIpv6: aws.String("2001:db8::/64"), Description: aws.String(desc)}}},
		{IpProtocol: aws.String("tcp"), FromPort: aws.Int32(80), ToPort: aws.Int32(80),
			UserIdGroupPairs: []ec2types.UserIdGroupPair{{GroupId: aws.String("sg-0lb"), Description: aws.String(desc)}}},
	}
	if diff := gocmp.Diff(want, memberPermissions(rules, desc), cmpopts.IgnoreUnexported(ec2types.IpPermission{}, ec2types.IpRange{},
		ec2types.Ipv6Range{}, ec2types.UserIdGroupPair{})); diff != "" {
		t.Errorf("permissions (-want +got):\n%s", diff)
	}
	live := []ec2types.SecurityGroupRule{
		{GroupId: aws.String("sg-0a"), IpProtocol: aws.String("tcp"), FromPort: aws.Int32(8080), ToPort: aws.Int32(8081), CidrIpv4: aws.String("10.0.1.0/24")},
		{GroupId: aws.String("sg-0a"), IpProtocol: aws.String("udp"), FromPort: aws.Int32(53), ToPort: aws.Int32(53), CidrIpv6: aws.String("2001:db8::/64")},
		{GroupId: aws.String("sg-0a"), IpProtocol: aws.String("tcp"), FromPort: aws.Int32(80), ToPort: aws.Int32(80),
			ReferencedGroupInfo: &ec2types.ReferencedSecurityGroup{GroupId: aws.String("sg-0lb")}},
	}
	var got []MemberRule
	for _, r := range live {
		got = append(got, memberRuleOf(r))
	}
	if diff := gocmp.Diff(rules, got); diff != "" {
		t.Errorf("rules read back (-want +got):\n%s", diff)
	}
}

// TestMemberAccessNotesClientIPs: a target group that keeps client IPs (UDP and TCP_UDP by default,
// TCP when the class asks) with targets in a member is told on the status: the member's rules
// admit the load balancer, not the clients.
func TestMemberAccessNotesClientIPs(t *testing.T) {
	class := nlbOptions()
	class.Region = "us-east-1"
	l4 := func(port uint32, proto ir.Protocol, cluster, ip string) ir.Listener {
		return ir.Listener{Name: fmt.Sprintf("l%d-%s", port, proto), Port: port, Protocol: proto, L4: &ir.L4Route{Name: "r", Backends: []ir.Backend{
			backend(fmt.Sprintf("%s/apps/svc:%d", cluster, port), 1, ep(cluster, ip, port+1000, 1))}}}
	}
	members := map[string]v1alpha1.MemberClusterSpec{"east": memberSpec("", "vpc-0e", nil, "sg-0e")}
	tests := []struct {
		name      string
		listeners []ir.Listener
		preserve  *bool
		want      []string // target group backends (by service port) noted
	}{
		{name: "UDP keeps client IPs", listeners: []ir.Listener{l4(53, ir.ProtocolUDP, "east", "10.2.0.5"), l4(80, ir.ProtocolTCP, "east", "10.2.0.5")}, want: []string{"53"}},
		{name: "UDP in another member", listeners: []ir.Listener{l4(53, ir.ProtocolUDP, "hub", "10.0.0.5")}},
		{name: "TCP when the class asks", listeners: []ir.Listener{l4(80, ir.ProtocolTCP, "east", "10.2.0.5")}, preserve: ptrTo(true), want: []string{"80"}},
		{name: "UDP when the class turns it off", listeners: []ir.Listener{l4(53, ir.ProtocolUDP, "east", "10.2.0.5")}, preserve: ptrTo(false)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := class
			o.PreserveClientIP = tt.preserve
			lb := testModel(tt.listeners...)
			s, err := Build(lb, o, testNetwork(), testFleet)
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			before := len(s.Notes)
			if _, err := buildMemberAccess(s, lb, testNetwork(), o, members, ""); err != nil {
				t.Fatalf("buildMemberAccess: %v", err)
			}
			var want []string
			for _, port := range tt.want {
				for _, tg := range s.TargetGroups {
					if strings.HasSuffix(tg.Targets[0].IP, ".5") && fmt.Sprint(tg.Targets[0].Port-1000) == port {
						want = append(want, "target group "+tg.Name+" keeps client IPs: the security groups of member east admit the load balancer's subnets, not the clients")
					}
				}
			}
			if diff := gocmp.Diff(want, s.Notes[before:], cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("notes (-want +got):\n%s", diff)
			}
		})
	}
}

func ptrTo[T any](v T) *T { return &v }
