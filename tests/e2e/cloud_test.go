package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/compute/apiv1/computepb"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	mcsv1a1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/providers/aws/mototest"
	"github.com/fleetgate/fleetgate/providers/gcp/gcpfake"
	"github.com/fleetgate/fleetgate/tests/testbed"
)

// TestMultiCloud serves one hostname from two fleet gateways at once, an AWS ALB (moto) and a
// GCP global load balancer (the compute fake), each with the backends of both members (a
// ServiceImport): both are Programmed with their address in every member, the route is Accepted
// by both, and each cloud splits the traffic by the members' weights (1:3). Both classes publish
// into one Route53 zone (moto) through the embedded publisher, and both gateways opt into DNS
// weights: the name gets two weighted records, an alias to the ALB and an A record to the GCP
// address, each with its TXT ownership record.
func TestMultiCloud(t *testing.T) {
	const project = "fleet-project"
	m := mototest.ForTest(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "operator")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "operator")
	vpc := motoNetwork(t, m.URL)
	fake := gcpfake.NewServer(t)
	fake.RequireAuth()
	adc, err := fake.NewServiceAccountKey(project, "operator@"+project+".iam.gserviceaccount.com")
	must(t, err)
	adcFile := filepath.Join(t.TempDir(), "adc.json")
	must(t, os.WriteFile(adcFile, adc, 0o600))
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", adcFile)
	// external-dns's provider/aws builds its Route53 client from the operator's environment.
	t.Setenv("AWS_ENDPOINT_URL", m.URL)
	t.Setenv("AWS_REGION", mototest.Region)
	zoneID := route53Zone(t, m.URL, "example.com")

	f := newFleetWith(t, 100, 300, "--fleet-id=e2e-multicloud",
		"--aws-region="+mototest.Region, "--aws-endpoint="+m.URL,
		"--gcp-project="+project, "--gcp-endpoint="+fake.URL())
	ctx := t.Context()
	dns := &v1alpha1.DNSOptions{Provider: v1alpha1.DNSProviderRoute53, Zones: []string{"example.com"},
		Route53: &v1alpha1.DNSRoute53{HostedZoneID: zoneID}}
	for _, c := range f.all {
		for name, spec := range map[string]v1alpha1.GatewayClassConfigSpec{
			"aws": {Provider: v1alpha1.ProviderAWS, Scope: v1alpha1.ScopeFleet, AWS: &v1alpha1.AWSOptions{VPC: vpc}, DNS: dns},
			"gcp": {Provider: v1alpha1.ProviderGCP, Scope: v1alpha1.ScopeFleet, GCP: &v1alpha1.GCPOptions{LoadBalancerType: v1alpha1.GCPGlobal}, DNS: dns},
		} {
			must(t, c.Client.Create(ctx, &v1alpha1.GatewayClassConfig{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}))
			must(t, c.Client.Create(ctx, &gwv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: gwv1.GatewayClassSpec{ControllerName: v1alpha1.ControllerName,
					ParametersRef: &gwv1.ParametersReference{Group: v1alpha1.Group, Kind: "GatewayClassConfig", Name: name}}}))
		}
	}
	for i, c := range []*testbed.Cluster{f.a, f.b} {
		cloudBackend(t, c, fmt.Sprintf("10.0.%d.10", i+1), fmt.Sprintf("europe-west1-%c", 'b'+i))
		for class, weight := range map[string]gwv1.AnnotationValue{"aws": "1", "gcp": "2"} {
			gw := gateway("edge-"+class, class)
			gw.Spec.Infrastructure = &gwv1.GatewayInfrastructure{Annotations: map[gwv1.AnnotationKey]gwv1.AnnotationValue{"fleetgate.dev/dns-weight": weight}}
			must(t, c.Client.Create(ctx, gw))
		}
	}
	r := route("shop", "edge-aws", "shop.example.com", serviceImport("web"))
	r.Spec.ParentRefs = append(r.Spec.ParentRefs, gwv1.ParentReference{Name: "edge-gcp"})
	must(t, f.a.Client.Create(ctx, r))

	// Both gateways are programmed, with one address each, the same in both members.
	addrs := map[string]string{}
	testbed.Eventually(t, 120*time.Second, func() error {
		for _, gw := range []string{"edge-aws", "edge-gcp"} {
			for _, c := range []*testbed.Cluster{f.a, f.b} {
				a, err := gatewayAddress(ctx, c, gw)
				if err != nil {
					return err
				}
				if a == "" {
					return fmt.Errorf("%s: %s not programmed yet", c.Name, gw)
				}
				if prev, ok := addrs[gw]; ok && prev != a {
					return fmt.Errorf("%s has address %s in one member and %s in another", gw, prev, a)
				}
				addrs[gw] = a
			}
		}
		return nil
	})
	t.Logf("addresses: %v", addrs)
	if !strings.HasSuffix(addrs["edge-aws"], ".elb.amazonaws.com") || !strings.HasPrefix(addrs["edge-gcp"], "203.0.113.") {
		t.Errorf("addresses %v: want an ALB hostname and a GCP global IP", addrs)
	}
	// The route is accepted by both parents, in the member that holds it.
	testbed.Eventually(t, 30*time.Second, func() error {
		var got gwv1.HTTPRoute
		if err := f.a.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "shop"}, &got); err != nil {
			return err
		}
		accepted := 0
		for _, p := range got.Status.Parents {
			if meta.IsStatusConditionTrue(p.Conditions, string(gwv1.RouteConditionAccepted)) {
				accepted++
			}
		}
		if accepted != 2 {
			return fmt.Errorf("accepted by %d parents: %+v", accepted, got.Status.Parents)
		}
		return nil
	})

	// GCP: the host's rule splits across a backend service per member, 1:3.
	if w := gcpHostWeights(t, fake, "shop.example.com"); !slices.Equal(w, []uint32{1, 3}) {
		t.Errorf("GCP weights for shop.example.com = %v, want [1 3] (member-a 100, member-b 300)", w)
	}
	// AWS: the host's rule forwards to a target group per member, 1:3.
	if w := awsHostWeights(t, m.URL, "shop.example.com"); !slices.Equal(w, []int32{1, 3}) {
		t.Errorf("AWS weights for shop.example.com = %v, want [1 3]", w)
	}

	// DNS: one weighted record per load balancer, weights 1:2 (× the fleet gateway's member weight).
	var sets []string
	testbed.Eventually(t, 60*time.Second, func() error {
		sets = route53Sets(t, m.URL, zoneID, "shop.example.com")
		var alias, a int
		for _, s := range sets {
			switch {
			case strings.Contains(s, " A set=") && strings.Contains(s, "alias="+addrs["edge-aws"]):
				alias++
			case strings.Contains(s, " A set=") && strings.HasSuffix(s, " "+addrs["edge-gcp"]):
				a++
			}
		}
		if alias != 1 || a != 1 {
			return fmt.Errorf("shop.example.com record sets %q: want one weighted alias to %s and one weighted A %s", sets, addrs["edge-aws"], addrs["edge-gcp"])
		}
		return nil
	})
	t.Logf("shop.example.com in Route53: %q", sets)
	for _, gw := range []string{"edge-aws", "edge-gcp"} {
		testbed.Eventually(t, 30*time.Second, func() error {
			var got gwv1.Gateway
			if err := f.a.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: gw}, &got); err != nil {
				return err
			}
			c := meta.FindStatusCondition(got.Status.Conditions, "fleetgate.dev/DNSPublished")
			if c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "it serves them") || !strings.Contains(c.Message, "weighted") {
				return fmt.Errorf("%s DNSPublished %+v", gw, c)
			}
			return nil
		})
	}
}

// route53Zone creates a public hosted zone in moto and returns its ID.
func route53Zone(t *testing.T, endpoint, name string) string {
	t.Helper()
	cfg, err := mototest.Config(t.Context(), endpoint)
	must(t, err)
	out, err := route53.NewFromConfig(cfg).CreateHostedZone(t.Context(), &route53.CreateHostedZoneInput{
		Name: aws.String(name), CallerReference: aws.String(t.Name())})
	must(t, err)
	return strings.TrimPrefix(aws.ToString(out.HostedZone.Id), "/hostedzone/")
}

// route53Sets lists the record sets of name and its ownership records, one line each:
// "name TYPE set=<id> weight=<w> [alias=<target>] values...".
func route53Sets(t *testing.T, endpoint, zoneID, name string) []string {
	t.Helper()
	cfg, err := mototest.Config(t.Context(), endpoint)
	must(t, err)
	out, err := route53.NewFromConfig(cfg).ListResourceRecordSets(t.Context(), &route53.ListResourceRecordSetsInput{HostedZoneId: aws.String(zoneID)})
	must(t, err)
	var sets []string
	for _, rs := range out.ResourceRecordSets {
		n := strings.TrimSuffix(aws.ToString(rs.Name), ".")
		if n != name && !strings.HasSuffix(n, "-"+name) {
			continue
		}
		s := fmt.Sprintf("%s %s set=%s weight=%d", n, rs.Type, aws.ToString(rs.SetIdentifier), aws.ToInt64(rs.Weight))
		if rs.AliasTarget != nil {
			s += " alias=" + strings.TrimSuffix(aws.ToString(rs.AliasTarget.DNSName), ".")
		}
		for _, r := range rs.ResourceRecords {
			s += " " + aws.ToString(r.Value)
		}
		sets = append(sets, s)
	}
	slices.Sort(sets)
	return sets
}

// motoNetwork makes a VPC with two subnets tagged for internet-facing load balancers.
func motoNetwork(t *testing.T, endpoint string) string {
	cfg, err := mototest.Config(t.Context(), endpoint)
	must(t, err)
	c := ec2.NewFromConfig(cfg)
	vpc, err := c.CreateVpc(t.Context(), &ec2.CreateVpcInput{CidrBlock: aws.String("10.0.0.0/16")})
	must(t, err)
	for i, az := range []string{"us-east-1a", "us-east-1b"} {
		_, err := c.CreateSubnet(t.Context(), &ec2.CreateSubnetInput{VpcId: vpc.Vpc.VpcId, AvailabilityZone: aws.String(az),
			CidrBlock: aws.String(fmt.Sprintf("10.0.%d.0/24", i+1)),
			TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeSubnet,
				Tags: []ec2types.Tag{{Key: aws.String("kubernetes.io/role/elb"), Value: aws.String("1")}}}}})
		must(t, err)
	}
	return *vpc.Vpc.VpcId
}

// cloudBackend publishes Service web in c with one endpoint (its zone and node, as GCE needs
// them) and exports it to the fleet.
func cloudBackend(t *testing.T, c *testbed.Cluster, ip, zone string) {
	ctx := t.Context()
	must(t, c.Client.Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}))
	must(t, c.Client.Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-1",
			Labels: map[string]string{discoveryv1.LabelServiceName: "web", discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080)}},
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
			Zone: ptr.To(zone), NodeName: ptr.To("node-" + c.Name)}},
	}))
	must(t, c.Client.Create(ctx, &mcsv1a1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}}))
}

// gcpHostWeights are the weights of the route rule serving host, sorted.
func gcpHostWeights(t *testing.T, fake *gcpfake.Server, host string) []uint32 {
	t.Helper()
	for _, k := range fake.Keys("urlMaps") {
		um, _ := gcpfake.Get[*computepb.UrlMap](fake, k)
		for _, hr := range um.GetHostRules() {
			if !slices.Contains(hr.GetHosts(), host) {
				continue
			}
			for _, pm := range um.GetPathMatchers() {
				if pm.GetName() != hr.GetPathMatcher() {
					continue
				}
				for _, r := range pm.GetRouteRules() {
					var ws []uint32
					for _, w := range r.GetRouteAction().GetWeightedBackendServices() {
						ws = append(ws, w.GetWeight())
					}
					slices.Sort(ws)
					return ws
				}
			}
		}
	}
	t.Fatalf("no URL map serves %s", host)
	return nil
}

// awsHostWeights are the forward weights of the ALB rule on host, sorted.
func awsHostWeights(t *testing.T, endpoint, host string) []int32 {
	t.Helper()
	cfg, err := mototest.Config(t.Context(), endpoint)
	must(t, err)
	c := elb.NewFromConfig(cfg)
	lbs, err := c.DescribeLoadBalancers(t.Context(), &elb.DescribeLoadBalancersInput{})
	must(t, err)
	for _, lb := range lbs.LoadBalancers {
		ls, err := c.DescribeListeners(t.Context(), &elb.DescribeListenersInput{LoadBalancerArn: lb.LoadBalancerArn})
		must(t, err)
		for _, l := range ls.Listeners {
			rules, err := c.DescribeRules(t.Context(), &elb.DescribeRulesInput{ListenerArn: l.ListenerArn})
			must(t, err)
			for _, r := range rules.Rules {
				for _, cond := range r.Conditions {
					if cond.HostHeaderConfig == nil || !slices.Contains(cond.HostHeaderConfig.Values, host) {
						continue
					}
					var ws []int32
					for _, a := range r.Actions {
						if a.ForwardConfig != nil {
							for _, tg := range a.ForwardConfig.TargetGroups {
								ws = append(ws, aws.ToInt32(tg.Weight))
							}
						}
					}
					slices.Sort(ws)
					return ws
				}
			}
		}
	}
	t.Fatalf("no ALB rule serves %s", host)
	return nil
}
