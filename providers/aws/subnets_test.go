package aws

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/google/go-cmp/cmp"

	"github.com/fleetgate/fleetgate/providers/aws/mototest"
)

// subnetSpec is a subnet a test creates on moto.
type subnetSpec struct {
	vpc  int    // index of the test's VPC (0 or 1)
	zone string // a → us-east-1a
	cidr string
	tags map[string]string
	// used is the number of network interfaces made in it, which take free addresses.
	used int
	ipv6 bool
}

func elb(extra ...string) map[string]string {
	tags := map[string]string{tagRoleELB: "1"}
	for i := 0; i+1 < len(extra); i += 2 {
		tags[extra[i]] = extra[i+1]
	}
	return tags
}

const missingSubnet = "subnet-0123456789abcdef0"

// TestNetwork finds subnets on moto: each case has VPCs of its own, so cases run in parallel. In
// expectations "{i}" stands for the ID of the case's subnet i, "{vpcN}" for its VPC N.
func TestNetwork(t *testing.T) {
	srv := mototest.Require(t, moto)
	tests := []struct {
		name     string
		subnets  []subnetSpec
		lbType   string
		extra    string // more options JSON
		explicit []string
		// vpcUnset leaves spec.aws.vpc unset (explicit subnets only: discovery would see the
		// other cases' subnets).
		vpcUnset bool
		clusters []string
		want     []int
		wantErr  []string
	}{{
		name: "an ALB takes one role-tagged subnet per zone",
		subnets: []subnetSpec{
			{zone: "a", cidr: "10.0.0.0/24", tags: elb()},
			{zone: "b", cidr: "10.0.1.0/24", tags: map[string]string{tagRoleELB: ""}},
			{zone: "c", cidr: "10.0.2.0/24"},
		},
		want: []int{0, 1},
	}, {
		name: "the subnet with most free addresses of each zone",
		subnets: []subnetSpec{
			{zone: "a", cidr: "10.0.0.0/26", tags: elb()},
			{zone: "a", cidr: "10.0.1.0/24", tags: elb()},
			{zone: "b", cidr: "10.0.2.0/24", tags: elb()},
			{zone: "b", cidr: "10.0.3.0/24", tags: elb(), used: 3},
		},
		want: []int{1, 2},
	}, {
		name:   "an internal load balancer takes internal-elb subnets",
		extra:  `,"scheme":"internal"`,
		lbType: TypeNetwork,
		subnets: []subnetSpec{
			{zone: "a", cidr: "10.0.0.0/24", tags: map[string]string{tagRoleInternalELB: "1"}},
			{zone: "b", cidr: "10.0.1.0/24", tags: elb()},
		},
		want: []int{0},
	}, {
		name: "every rejection is named",
		subnets: []subnetSpec{
			{zone: "a", cidr: "10.0.0.0/24", tags: elb()},
			{zone: "b", cidr: "10.0.1.0/24"},
			{zone: "c", cidr: "10.0.2.0/24", tags: map[string]string{tagRoleELB: "0"}},
			{zone: "d", cidr: "10.0.3.0/29", tags: elb()},
			{zone: "a", cidr: "10.0.4.0/25", tags: elb()},
			{zone: "f", cidr: "10.0.5.0/24", tags: elb(tagClusterPrefix+"other", "owned")},
			{zone: "b", cidr: "10.0.6.0/28", tags: elb()},
		},
		clusters: []string{"east"},
		wantErr: []string{
			"too few subnets for an internet-facing application load balancer: needs 2 availability zones, found 1 ({0} in us-east-1a); rejected: ",
			"{1}: no kubernetes.io/role/elb tag", `{2}: kubernetes.io/role/elb is "0", needs "1" or empty`,
			"{3}: 3 free IPs, needs 8", "{4}: second in us-east-1a ({0} taken there)",
			"{5}: tagged for cluster other, not east", "{6}: /28, an application load balancer needs at least a /27",
		},
	}, {
		name:   "addresses taken by network interfaces count",
		lbType: TypeNetwork,
		subnets: []subnetSpec{
			{zone: "a", cidr: "10.0.0.0/28", tags: elb(), used: 4},
		},
		wantErr: []string{"too few subnets for an internet-facing network load balancer: needs 1 availability zone, found 0; rejected: {0}: 7 free IPs, needs 8"},
	}, {
		name:   "a network load balancer takes a /28",
		lbType: TypeNetwork,
		subnets: []subnetSpec{
			{zone: "a", cidr: "10.0.0.0/28", tags: elb()},
		},
		want: []int{0},
	}, {
		name: "subnets tagged for clusters serve those clusters",
		subnets: []subnetSpec{
			{zone: "a", cidr: "10.0.0.0/24", tags: elb(tagClusterPrefix+"east", "owned")},
			{zone: "b", cidr: "10.0.1.0/24", tags: elb(tagClusterPrefix+"west", "shared", tagClusterPrefix+"other", "owned")},
			{zone: "c", cidr: "10.0.2.0/24", tags: elb(tagClusterPrefix+"east", "mine")},
			{zone: "d", cidr: "10.0.3.0/24", tags: elb()},
			{zone: "e", cidr: "10.0.4.0/24", tags: elb(tagClusterPrefix+"other", "shared")},
		},
		clusters: []string{"east", "west"},
		want:     []int{0, 1, 3},
	}, {
		name: "cluster tags of another value are named",
		subnets: []subnetSpec{
			{zone: "a", cidr: "10.0.0.0/24", tags: elb(tagClusterPrefix+"east", "mine")},
		},
		clusters: []string{"east"},
		wantErr:  []string{`{0}: kubernetes.io/cluster/east is "mine", needs owned or shared`},
	}, {
		name:  "dualstack needs IPv6 subnets",
		extra: `,"ipAddressType":"dualstack"`,
		subnets: []subnetSpec{
			{zone: "a", cidr: "10.0.0.0/24", tags: elb(), ipv6: true},
			{zone: "b", cidr: "10.0.1.0/24", tags: elb()},
			{zone: "c", cidr: "10.0.2.0/24", tags: elb(), ipv6: true},
		},
		want: []int{0, 2},
	}, {
		name:  "dualstack refusal is named",
		extra: `,"ipAddressType":"dualstack"`, lbType: TypeNetwork,
		subnets: []subnetSpec{{zone: "b", cidr: "10.0.1.0/24", tags: elb()}},
		wantErr: []string{"{0}: no IPv6 CIDR, which ipAddressType dualstack needs"},
	}, {
		name: "explicit subnets need no tags",
		subnets: []subnetSpec{
			{zone: "a", cidr: "10.0.0.0/24"},
			{zone: "b", cidr: "10.0.1.0/24"},
			{zone: "c", cidr: "10.0.2.0/24"},
		},
		explicit: []string{"{1}", "{0}"},
		vpcUnset: true,
		want:     []int{0, 1},
	}, {
		name: "explicit subnets are all checked",
		subnets: []subnetSpec{
			{zone: "a", cidr: "10.0.0.0/24"},
			{zone: "a", cidr: "10.0.1.0/25"},
			{zone: "b", cidr: "10.0.2.0/29"},
			{vpc: 1, zone: "c", cidr: "10.0.3.0/24"},
		},
		explicit: []string{"{0}", "{1}", "{2}", "{3}", missingSubnet},
		wantErr: []string{
			"subnets of the GatewayClassConfig cannot serve an internet-facing application load balancer: ",
			"{1}: second in us-east-1a ({0} taken there)", "{2}: 3 free IPs, needs 8",
			"{3}: in {vpc1}, not the class's {vpc0}", missingSubnet + ": not found",
		},
	}, {
		name: "explicit subnets in two VPCs, and no VPC named",
		subnets: []subnetSpec{
			{zone: "a", cidr: "10.0.0.0/24"},
			{vpc: 1, zone: "b", cidr: "10.0.1.0/24"},
		},
		explicit: []string{"{0}", "{1}"},
		vpcUnset: true,
		wantErr:  []string{"subnets for an internet-facing application load balancer are in several VPCs: ", "{vpc0} ({0})", "{vpc1} ({1})", "set vpc in the GatewayClassConfig"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := motoContext(t)
			ids := createSubnets(ctx, t, srv.URL, tc.subnets)
			expand := func(s string) string {
				for i := len(tc.subnets) - 1; i >= 0; i-- {
					s = strings.ReplaceAll(s, fmt.Sprintf("{%d}", i), ids.subnets[i])
				}
				for i, v := range ids.vpcs {
					s = strings.ReplaceAll(s, fmt.Sprintf("{vpc%d}", i), v)
				}
				return s
			}
			extra := testKeys + tc.extra
			if !tc.vpcUnset {
				extra += `,"vpc":"` + ids.vpcs[0] + `"`
			}
			if len(tc.explicit) > 0 {
				var quoted []string
				for _, e := range tc.explicit {
					quoted = append(quoted, `"`+expand(e)+`"`)
				}
				extra += `,"subnets":[` + strings.Join(quoted, ",") + `]`
			}
			lbType := tc.lbType
			if lbType == "" {
				lbType = TypeApplication
			}
			if lbType == TypeNetwork {
				extra += `,"loadBalancerType":"network"`
			}
			o := motoOptions(t, srv.URL, extra)
			c, err := testAccounts(accountOptions{}).clients(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.network(ctx, o, lbType, tc.clusters)
			if tc.wantErr != nil {
				if err == nil {
					t.Fatalf("network = %+v, want an error", got)
				}
				for _, want := range tc.wantErr {
					if !strings.Contains(err.Error(), expand(want)) {
						t.Errorf("error %q\ndoes not say %q", err, expand(want))
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := Network{VPC: ids.vpcs[0]}
			for _, i := range tc.want {
				want.Subnets = append(want.Subnets, Subnet{ID: ids.subnets[i], AvailabilityZone: mototest.Region + tc.subnets[i].zone, CIDR: tc.subnets[i].cidr})
			}
			sortSubnets(want.Subnets)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("network (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNetworkWithoutVPC discovers across the region's VPCs (moto's default VPC has untagged
// subnets): the tagged subnets decide the VPC, and tagged subnets in two VPCs are refused.
func TestNetworkWithoutVPC(t *testing.T) {
	srv := mototest.Require(t, moto)
	srv.Reset(t, 17)
	ctx := motoContext(t)
	ids := createSubnets(ctx, t, srv.URL, []subnetSpec{
		{zone: "a", cidr: "10.0.0.0/24", tags: elb()},
		{zone: "b", cidr: "10.0.1.0/24", tags: elb()},
	})
	o := motoOptions(t, srv.URL, testKeys)
	a := testAccounts(accountOptions{})
	c, err := a.clients(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.network(ctx, o, TypeApplication, []string{"east"})
	if err != nil {
		t.Fatal(err)
	}
	want := Network{VPC: ids.vpcs[0], Subnets: []Subnet{
		{ID: ids.subnets[0], AvailabilityZone: "us-east-1a", CIDR: "10.0.0.0/24"},
		{ID: ids.subnets[1], AvailabilityZone: "us-east-1b", CIDR: "10.0.1.0/24"},
	}}
	sortSubnets(want.Subnets)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("network (-want +got):\n%s", diff)
	}

	defaults, err := c.EC2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{{Name: awssdk.String("default-for-az"), Values: []string{"true"}}}})
	if err != nil || len(defaults.Subnets) == 0 {
		t.Fatalf("moto's default subnets: %v, %v", defaults, err)
	}
	other := defaults.Subnets[0]
	if _, err := c.EC2.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{*other.SubnetId}, Tags: []ec2types.Tag{{Key: awssdk.String(tagRoleELB), Value: awssdk.String("1")}}}); err != nil {
		t.Fatal(err)
	}
	// Another cluster list: not the cached answer.
	_, err = c.network(ctx, o, TypeApplication, []string{"west"})
	if err == nil || !strings.Contains(err.Error(), "are in several VPCs") || !strings.Contains(err.Error(), *other.VpcId+" ("+*other.SubnetId+")") {
		t.Errorf("network with tagged subnets in two VPCs: %v, want the VPCs named", err)
	}
}

// TestNetworkCache: a discovery is reused for its TTL by every gateway of the account with the
// same inputs; a failed one is not kept.
func TestNetworkCache(t *testing.T) {
	srv := mototest.Require(t, moto)
	t.Parallel()
	ctx := motoContext(t)
	ids := createSubnets(ctx, t, srv.URL, []subnetSpec{
		{zone: "a", cidr: "10.0.0.0/24", tags: elb()},
		{zone: "b", cidr: "10.0.1.0/24", tags: elb()},
	})
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	a := testAccounts(accountOptions{DiscoveryTTL: 5 * time.Minute, Now: func() time.Time { return now }})
	o := motoOptions(t, srv.URL, testKeys+`,"vpc":"`+ids.vpcs[0]+`"`)
	steps := []struct {
		name      string
		advance   time.Duration
		lbType    string
		clusters  []string
		wantCalls float64 // DescribeSubnets calls so far
	}{
		{name: "first discovery", lbType: TypeApplication, clusters: []string{"east"}, wantCalls: 1},
		{name: "another gateway, same inputs", advance: 4 * time.Minute, lbType: TypeApplication, clusters: []string{"east"}, wantCalls: 1},
		{name: "other clusters", lbType: TypeApplication, clusters: []string{"east", "west"}, wantCalls: 2},
		{name: "expired", advance: time.Minute, lbType: TypeApplication, clusters: []string{"east"}, wantCalls: 3},
	}
	for _, s := range steps {
		now = now.Add(s.advance)
		c, err := a.clients(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.network(ctx, o, s.lbType, s.clusters); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if got := counterValue(t, a.metrics.calls.WithLabelValues("EC2", "DescribeSubnets", "")); got != s.wantCalls {
			t.Errorf("%s: %v DescribeSubnets calls, want %v", s.name, got, s.wantCalls)
		}
	}
	// A refusal (one zone for an ALB) is asked again each time: the subnets may be fixed meanwhile.
	c, err := a.clients(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	one := motoOptions(t, srv.URL, testKeys+`,"vpc":"`+ids.vpcs[0]+`","subnets":["`+ids.subnets[0]+`"]`)
	for range 2 {
		if _, err := c.network(ctx, one, TypeApplication, nil); err == nil {
			t.Fatal("one subnet served an ALB")
		}
	}
	if got := counterValue(t, a.metrics.calls.WithLabelValues("EC2", "DescribeSubnets", "")); got != 5 {
		t.Errorf("%v DescribeSubnets calls after two failed discoveries, want 5", got)
	}
}

func sortSubnets(s []Subnet) {
	slices.SortFunc(s, func(a, b Subnet) int { return strings.Compare(a.ID, b.ID) })
}

type createdNetwork struct {
	vpcs, subnets []string
}

// createSubnets makes VPCs (as many as specs name) and the subnets of specs in them, through a
// client of its own.
func createSubnets(ctx context.Context, t testing.TB, endpoint string, specs []subnetSpec) createdNetwork {
	t.Helper()
	cfg, err := mototest.Config(ctx, endpoint)
	if err != nil {
		t.Fatal(err)
	}
	api := ec2.NewFromConfig(cfg)
	var out createdNetwork
	for _, s := range specs {
		for len(out.vpcs) <= s.vpc {
			v, err := api.CreateVpc(ctx, &ec2.CreateVpcInput{CidrBlock: awssdk.String("10.0.0.0/16")})
			if err != nil {
				t.Fatal(err)
			}
			out.vpcs = append(out.vpcs, *v.Vpc.VpcId)
		}
		in := &ec2.CreateSubnetInput{VpcId: &out.vpcs[s.vpc], CidrBlock: &s.cidr, AvailabilityZone: awssdk.String(mototest.Region + s.zone)}
		if s.ipv6 {
			in.Ipv6CidrBlock = awssdk.String(fmt.Sprintf("2001:db8:0:%x::/64", len(out.subnets)))
		}
		sn, err := api.CreateSubnet(ctx, in)
		if err != nil {
			t.Fatalf("subnet %s: %v", s.cidr, err)
		}
		id := *sn.Subnet.SubnetId
		out.subnets = append(out.subnets, id)
		var tags []ec2types.Tag
		for k, v := range s.tags {
			tags = append(tags, ec2types.Tag{Key: awssdk.String(k), Value: awssdk.String(v)})
		}
		if len(tags) > 0 {
			if _, err := api.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{id}, Tags: tags}); err != nil {
				t.Fatal(err)
			}
		}
		for range s.used {
			if _, err := api.CreateNetworkInterface(ctx, &ec2.CreateNetworkInterfaceInput{SubnetId: &id}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return out
}

// TestChooseSubnets covers what moto cannot make: subnets not yet available, equal free addresses,
// IPv6 blocks being removed, and more rejections than an error names.
func TestChooseSubnets(t *testing.T) {
	subnet := func(id, zone string, free int32, mods ...func(*ec2types.Subnet)) ec2types.Subnet {
		s := ec2types.Subnet{
			SubnetId: awssdk.String(id), VpcId: awssdk.String("vpc-1"), AvailabilityZone: awssdk.String(zone),
			CidrBlock: awssdk.String("10.0.0.0/24"), AvailableIpAddressCount: awssdk.Int32(free),
			State: ec2types.SubnetStateAvailable, Tags: []ec2types.Tag{{Key: awssdk.String(tagRoleELB), Value: awssdk.String("1")}},
		}
		for _, m := range mods {
			m(&s)
		}
		return s
	}
	pending := func(s *ec2types.Subnet) { s.State = ec2types.SubnetStatePending }
	ipv6 := func(state ec2types.SubnetCidrBlockStateCode) func(*ec2types.Subnet) {
		return func(s *ec2types.Subnet) {
			s.Ipv6CidrBlockAssociationSet = []ec2types.SubnetIpv6CidrBlockAssociation{{
				Ipv6CidrBlock: awssdk.String("2001:db8::/64"), Ipv6CidrBlockState: &ec2types.SubnetCidrBlockState{State: state},
			}}
		}
	}
	alb := subnetRequest{lbType: TypeApplication, scheme: schemeInternetFacing}
	var many []ec2types.Subnet
	for i := range 25 {
		many = append(many, subnet(fmt.Sprintf("subnet-%02x", i), "us-east-1a", 3))
	}
	tests := []struct {
		name    string
		subnets []ec2types.Subnet
		req     subnetRequest
		want    []string
		wantErr []string
	}{{
		name:    "equal free addresses: the lower ID",
		subnets: []ec2types.Subnet{subnet("subnet-0b", "us-east-1a", 100), subnet("subnet-0a", "us-east-1a", 100), subnet("subnet-0c", "us-east-1b", 9)},
		req:     alb,
		want:    []string{"subnet-0a", "subnet-0c"},
	}, {
		name:    "a subnet not yet available",
		subnets: []ec2types.Subnet{subnet("subnet-0a", "us-east-1a", 100), subnet("subnet-0b", "us-east-1b", 100, pending)},
		req:     alb,
		wantErr: []string{"subnet-0b: state pending, not available"},
	}, {
		name: "IPv6 blocks being removed do not count",
		subnets: []ec2types.Subnet{
			subnet("subnet-0a", "us-east-1a", 100, ipv6(ec2types.SubnetCidrBlockStateCodeAssociated)),
			subnet("subnet-0b", "us-east-1b", 100, ipv6(ec2types.SubnetCidrBlockStateCodeDisassociating)),
		},
		req:     subnetRequest{lbType: TypeApplication, scheme: schemeInternetFacing, dualstack: true},
		wantErr: []string{"subnet-0b: no IPv6 CIDR"},
	}, {
		name:    "at most 20 rejections are named",
		subnets: many,
		req:     subnetRequest{lbType: TypeNetwork, scheme: schemeInternetFacing},
		wantErr: []string{"subnet-13: 3 free IPs, needs 8; and 5 more"},
	}, {
		name:    "nothing tagged: the tag to set",
		subnets: nil,
		req:     subnetRequest{lbType: TypeNetwork, scheme: schemeInternal},
		wantErr: []string{"too few subnets for an internal network load balancer: needs 1 availability zone, found 0; tag subnets with kubernetes.io/role/internal-elb"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := chooseSubnets(tc.subnets, tc.req)
			if tc.wantErr != nil {
				if err == nil {
					t.Fatalf("chooseSubnets = %+v, want an error", got)
				}
				for _, want := range tc.wantErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q\ndoes not say %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, s := range got.Subnets {
				ids = append(ids, s.ID)
			}
			if diff := cmp.Diff(tc.want, ids); diff != "" {
				t.Errorf("chosen subnets (-want +got):\n%s", diff)
			}
		})
	}
}
