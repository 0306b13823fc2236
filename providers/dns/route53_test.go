package dns

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	route53types "github.com/aws/aws-sdk-go-v2/service/route53/types"
	"github.com/go-logr/logr/testr"
	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/external-dns/endpoint"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/providers/aws/mototest"
)

// albHost is a load balancer hostname in us-east-1's ELB zone, as moto names them.
const albHost = "gw-alb-1.us-east-1.elb.amazonaws.com"

// route53Env points the process's AWS environment, which external-dns's provider/aws reads, at
// moto.
func route53Env(t *testing.T, url string) {
	t.Helper()
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL": url, "AWS_REGION": mototest.Region,
		"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_SESSION_TOKEN": "",
		"AWS_EC2_METADATA_DISABLED": "true", "AWS_PROFILE": "",
		"AWS_CONFIG_FILE": t.TempDir() + "/none", "AWS_SHARED_CREDENTIALS_FILE": t.TempDir() + "/none",
	} {
		t.Setenv(k, v)
	}
}

// route53Zone starts moto, points the AWS environment at it and creates the hosted zone
// example.test: a client of moto's Route 53 and the zone's ID.
func route53Zone(t *testing.T) (*route53.Client, string) {
	t.Helper()
	m := mototest.ForTest(t)
	route53Env(t, m.URL)
	cfg, err := mototest.Config(t.Context(), m.URL)
	if err != nil {
		t.Fatal(err)
	}
	r53 := route53.NewFromConfig(cfg)
	hz, err := r53.CreateHostedZone(t.Context(), &route53.CreateHostedZoneInput{Name: new("example.test"), CallerReference: new("fleetgate-test")})
	if err != nil {
		t.Fatal(err)
	}
	return r53, strings.TrimPrefix(awssdk.ToString(hz.HostedZone.Id), "/hostedzone/")
}

// zoneSets lists a hosted zone's record sets but its SOA and NS, one line each.
func zoneSets(t *testing.T, c *route53.Client, zoneID string) []string {
	t.Helper()
	var out []string
	p := route53.NewListResourceRecordSetsPaginator(c, &route53.ListResourceRecordSetsInput{HostedZoneId: &zoneID})
	for p.HasMorePages() {
		page, err := p.NextPage(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, rs := range page.ResourceRecordSets {
			if rs.Type == route53types.RRTypeSoa || rs.Type == route53types.RRTypeNs {
				continue
			}
			s := strings.TrimSuffix(awssdk.ToString(rs.Name), ".") + " " + string(rs.Type)
			if rs.SetIdentifier != nil {
				s += fmt.Sprintf(" set=%s weight=%d", *rs.SetIdentifier, awssdk.ToInt64(rs.Weight))
			}
			if at := rs.AliasTarget; at != nil {
				s += fmt.Sprintf(" alias=%s zone=%s evaluateTargetHealth=%v", strings.TrimSuffix(awssdk.ToString(at.DNSName), "."), awssdk.ToString(at.HostedZoneId), at.EvaluateTargetHealth)
			}
			for _, r := range rs.ResourceRecords {
				s += " " + awssdk.ToString(r.Value)
			}
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

func weighted(e *endpoint.Endpoint, set, weight string) *endpoint.Endpoint {
	return e.WithSetIdentifier(set).WithProviderSpecific("aws/weight", weight)
}

// TestRoute53Weighted publishes, through external-dns's provider/aws on moto, one name served by
// two gateways as weighted records (an alias to an ALB, and an A record), and a plain alias to
// the ALB; a second pass changes nothing, a weight change is an update, and a gateway that is
// gone takes its weighted record with it.
func TestRoute53Weighted(t *testing.T) {
	r53, zoneID := route53Zone(t)

	p, err := New(t.Context(), Options{
		DNS: v1alpha1.DNSOptions{
			Provider: v1alpha1.DNSProviderRoute53, Zones: []string{"example.test"},
			Route53: &v1alpha1.DNSRoute53{HostedZoneID: zoneID},
		},
		FleetID: "fleet", Class: "test", Log: testr.New(t), // owner ID fleet-test: testOwner
	})
	if err != nil {
		t.Fatal(err)
	}
	owners := func(albWeight string) map[string][]*endpoint.Endpoint {
		return map[string][]*endpoint.Endpoint{
			"gw/alb": {
				weighted(cname("app.example.test", albHost), "gw/alb", albWeight).WithProviderSpecific("aws/evaluate-target-health", "true"),
				cname("alb.example.test", albHost).WithProviderSpecific("aws/evaluate-target-health", "false"),
			},
			"gw/gcp": {weighted(a("app.example.test", "203.0.113.7"), "gw/gcp", "70")},
		}
	}
	txt := func(kind, name, set, resource, weight string) string {
		s := kind + "-" + name + " TXT"
		if set != "" {
			s += " set=" + set + " weight=" + weight
		}
		return s + ` "heritage=external-dns,external-dns/owner=` + testOwner + `,external-dns/resource=` + resource + `"`
	}
	albZone := "Z35SXDOTRQ7X7K" // us-east-1's ELB zone, from the hostname
	zone := func(albWeight string, gcp bool) []string {
		z := []string{
			"alb.example.test A alias=" + albHost + " zone=" + albZone + " evaluateTargetHealth=false",
			"alb.example.test AAAA alias=" + albHost + " zone=" + albZone + " evaluateTargetHealth=false",
			"app.example.test A set=gw/alb weight=" + albWeight + " alias=" + albHost + " zone=" + albZone + " evaluateTargetHealth=true",
			"app.example.test AAAA set=gw/alb weight=" + albWeight + " alias=" + albHost + " zone=" + albZone + " evaluateTargetHealth=true",
			txt("a", "alb.example.test", "", "gw/alb", ""),
			txt("aaaa", "alb.example.test", "", "gw/alb", ""),
			txt("a", "app.example.test", "gw/alb", "gw/alb", albWeight),
			txt("aaaa", "app.example.test", "gw/alb", "gw/alb", albWeight),
		}
		if gcp {
			z = append(z, "app.example.test A set=gw/gcp weight=70 203.0.113.7", txt("a", "app.example.test", "gw/gcp", "gw/gcp", "70"))
		}
		slices.Sort(z)
		return z
	}
	steps := []struct {
		name   string
		owners map[string][]*endpoint.Endpoint
		want   Result
		zone   []string
	}{{
		name:   "create",
		owners: owners("30"),
		want: Result{Owners: map[string]*OwnerResult{
			"gw/alb": {Created: []Record{
				{Name: "alb.example.test", Type: "A"}, {Name: "alb.example.test", Type: "AAAA"},
				{Name: "app.example.test", Type: "A", SetIdentifier: "gw/alb"}, {Name: "app.example.test", Type: "AAAA", SetIdentifier: "gw/alb"},
			}},
			"gw/gcp": {Created: []Record{{Name: "app.example.test", Type: "A", SetIdentifier: "gw/gcp"}}},
		}},
		zone: zone("30", true),
	}, {
		name:   "again: nothing to do",
		owners: owners("30"),
		zone:   zone("30", true),
	}, {
		name:   "a weight changes",
		owners: owners("50"),
		want: Result{Owners: map[string]*OwnerResult{"gw/alb": {Updated: []Record{
			{Name: "app.example.test", Type: "A", SetIdentifier: "gw/alb"}, {Name: "app.example.test", Type: "AAAA", SetIdentifier: "gw/alb"},
		}}}},
		zone: zone("50", true),
	}, {
		name: "a gateway wants the weighted name plain",
		owners: func() map[string][]*endpoint.Endpoint {
			o := owners("50")
			o["gw/plain"] = []*endpoint.Endpoint{a("app.example.test", "198.51.100.9")}
			return o
		}(),
		want: Result{Owners: map[string]*OwnerResult{"gw/plain": {Conflicts: []Skip{{
			Record: Record{Name: "app.example.test", Type: "A"}, Reason: ReasonOtherGateway,
			Message: "app.example.test is published as weighted records (with set identifiers) by other gateways",
		}}}}},
		zone: zone("50", true),
	}, {
		name:   "gw/gcp is gone",
		owners: map[string][]*endpoint.Endpoint{"gw/alb": owners("50")["gw/alb"]},
		want: Result{Owners: map[string]*OwnerResult{"gw/gcp": {Deleted: []Record{
			{Name: "app.example.test", Type: "A", SetIdentifier: "gw/gcp"},
		}}}},
		zone: zone("50", false),
	}}
	for _, s := range steps {
		res, err := p.Sync(t.Context(), s.owners)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if d := cmp.Diff(s.want, res); d != "" {
			t.Errorf("%s: result (-want +got):\n%s", s.name, d)
		}
		if d := cmp.Diff(s.zone, zoneSets(t, r53, zoneID)); d != "" {
			t.Errorf("%s: hosted zone (-want +got):\n%s", s.name, d)
		}
	}
}

// TestRoute53RetireWhereItMovedFrom: on Route 53 (moto), a class whose spec.dns narrowed from
// example.test to api.example.test retires the names it left in the hosted zone, and keeps those
// under api.example.test, which it still publishes: the exclusions hold for provider/aws's zone
// and record selection too.
func TestRoute53RetireWhereItMovedFrom(t *testing.T) {
	r53, zoneID := route53Zone(t)
	s := NewPublishers(Options{FleetID: "fleet", Log: testr.New(t)})
	before := v1alpha1.DNSOptions{Provider: v1alpha1.DNSProviderRoute53, Zones: []string{"example.test"},
		Route53: &v1alpha1.DNSRoute53{HostedZoneID: zoneID}}
	after := *before.DeepCopy()
	after.Zones = []string{"api.example.test"}
	if _, err := s.Sync(t.Context(), "test", before, map[string][]*endpoint.Endpoint{
		"gw/a": {a("app.example.test", "203.0.113.1"), a("v1.api.example.test", "203.0.113.1")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Sync(t.Context(), "test", after, map[string][]*endpoint.Endpoint{"gw/a": {a("v1.api.example.test", "203.0.113.1")}}); err != nil {
		t.Fatal(err)
	}
	sets := func(names ...string) []string {
		var out []string
		for _, n := range names {
			out = append(out, n+".example.test A 203.0.113.1",
				`a-`+n+`.example.test TXT "heritage=external-dns,external-dns/owner=`+testOwner+`,external-dns/resource=gw/a"`)
		}
		slices.Sort(out)
		return out
	}
	if d := cmp.Diff(sets("app", "v1.api"), zoneSets(t, r53, zoneID)); d != "" {
		t.Fatalf("hosted zone after the move (-want +got):\n%s", d)
	}
	done, err := s.Retire(t.Context(), "test", before, after.Zones)
	if err != nil || !done {
		t.Fatalf("Retire = %v, %v; want done", done, err)
	}
	if d := cmp.Diff(sets("v1.api"), zoneSets(t, r53, zoneID)); d != "" {
		t.Errorf("hosted zone after the retirement (-want +got):\n%s", d)
	}
}
