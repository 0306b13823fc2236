package dns

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/google/go-cmp/cmp"
	miekg "github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/external-dns/endpoint"
	"sigs.k8s.io/external-dns/plan"
	"sigs.k8s.io/external-dns/provider"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/providers/dns/bindtest"
)

const (
	testZone  = "example.test"
	testOwner = "fleet-test"
)

// foreignRecords are in the zone before fleetgate: one nobody marked as owned, one owned by
// another external-dns (its TXT ownership record).
var foreignRecords = []string{
	"manual IN A 192.0.2.99",
	"taken IN A 192.0.2.98",
	`a-taken IN TXT "heritage=external-dns,external-dns/owner=other-cluster,external-dns/resource=ingress/x/y"`,
}

// foreignZone is how the zone lists them (zoneRecords).
var foreignZone = []string{
	`a-taken.example.test. TXT "heritage=external-dns,external-dns/owner=other-cluster,external-dns/resource=ingress/x/y"`,
	"manual.example.test. A 192.0.2.99",
	"taken.example.test. A 192.0.2.98",
}

// fakeClock is the guard's clock in tests: it moves only when told.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func rfc2136Options(srv *bindtest.Server, mutate ...func(*Options)) Options {
	o := Options{
		DNS: v1alpha1.DNSOptions{
			Provider: v1alpha1.DNSProviderRFC2136,
			Zones:    []string{srv.Zone},
			OwnerID:  testOwner,
			RFC2136: &v1alpha1.DNSRFC2136{
				Host: srv.Host, Port: int32(srv.Port), Zone: srv.Zone,
				TSIGKeyName: bindtest.KeyName, TSIGAlgorithm: bindtest.Algorithm,
				TSIGSecretRef: v1alpha1.ObjectRef{Namespace: "fleetgate-system", Name: "tsig"},
			},
		},
		Class: "test",
		Secrets: func(_ context.Context, ns, name string) (map[string][]byte, error) {
			if ns != "fleetgate-system" || name != "tsig" {
				return nil, fmt.Errorf("secret %s/%s not found", ns, name)
			}
			return map[string][]byte{"secret": []byte(srv.Secret + "\n")}, nil
		},
	}
	for _, m := range mutate {
		m(&o)
	}
	return o
}

func newRFC2136(t *testing.T, srv *bindtest.Server, mutate ...func(*Options)) *Publisher {
	t.Helper()
	o := rfc2136Options(srv, mutate...)
	o.Log = testr.New(t)
	p, err := New(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// zoneRecords lists the zone as "name TYPE value" lines, sorted, without the SOA and the NS.
func zoneRecords(t *testing.T, srv *bindtest.Server) []string {
	t.Helper()
	rrs, err := srv.Transfer()
	if err != nil {
		t.Fatalf("AXFR: %v", err)
	}
	var out []string
	for _, rr := range rrs {
		h := rr.Header()
		if h.Rrtype == miekg.TypeNS || h.Name == "ns."+srv.Zone+"." {
			continue
		}
		out = append(out, h.Name+" "+miekg.TypeToString[h.Rrtype]+" "+strings.TrimPrefix(rr.String(), h.String()))
	}
	sort.Strings(out)
	return out
}

// answer is what a resolver gets for name: the values, sorted.
func answer(t *testing.T, srv *bindtest.Server, name string, typ uint16) []string {
	t.Helper()
	rrs, err := srv.Query(name, typ)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, rr := range rrs {
		out = append(out, strings.TrimPrefix(rr.String(), rr.Header().String()))
	}
	sort.Strings(out)
	return out
}

func ownerTXT(resource string) string {
	return fmt.Sprintf(`"heritage=external-dns,external-dns/owner=%s,external-dns/resource=%s"`, testOwner, resource)
}

func a(name string, ips ...string) *endpoint.Endpoint {
	return endpoint.NewEndpoint(name, endpoint.RecordTypeA, ips...)
}

func cname(name, target string) *endpoint.Endpoint {
	return endpoint.NewEndpoint(name, endpoint.RecordTypeCNAME, target)
}

func recs(rs ...string) []Record {
	var out []Record
	for _, r := range rs {
		name, typ, _ := strings.Cut(r, " ")
		out = append(out, Record{Name: name, Type: typ})
	}
	return out
}

// TestRFC2136Publish walks one zone on a real BIND9 through a gateway's life: records (a
// multi-target A set, a CNAME) appear with their TXT ownership records, change, are kept while
// their owner's set is unknown, and vanish when it is empty or the owner is gone; a record nobody
// marked and one another owner holds are reported as conflicts and never touched.
func TestRFC2136Publish(t *testing.T) {
	srv := bindtest.Require(t, testZone, foreignRecords...)
	reg := prometheus.NewPedanticRegistry()
	p := newRFC2136(t, srv, func(o *Options) { o.Metrics = reg })

	steps := []struct {
		name   string
		owners map[string][]*endpoint.Endpoint
		want   Result
		zone   []string
	}{{
		name: "create",
		owners: map[string][]*endpoint.Endpoint{
			"gw/a": {a("app.example.test", "192.0.2.2", "192.0.2.1")},
			"gw/b": {cname("www.example.test", "lb.example.net")},
		},
		want: Result{Owners: map[string]*OwnerResult{
			"gw/a": {Created: recs("app.example.test A")},
			"gw/b": {Created: recs("www.example.test CNAME")},
		}},
		zone: []string{
			`a-app.example.test. TXT ` + ownerTXT("gw/a"),
			"app.example.test. A 192.0.2.1",
			"app.example.test. A 192.0.2.2",
			`cname-www.example.test. TXT ` + ownerTXT("gw/b"),
			"www.example.test. CNAME lb.example.net.",
		},
	}, {
		name: "change, and conflicts with records fleetgate did not create",
		owners: map[string][]*endpoint.Endpoint{
			"gw/a": {a("app.example.test", "192.0.2.3")},
			"gw/b": {
				cname("www.example.test", "lb.example.net"),
				a("manual.example.test", "192.0.2.50"),
				a("taken.example.test", "192.0.2.51"),
				a("app.example.test", "192.0.2.52"),
			},
		},
		want: Result{Owners: map[string]*OwnerResult{
			"gw/a": {Updated: recs("app.example.test A")},
			"gw/b": {Conflicts: []Skip{
				{Record: Record{Name: "app.example.test", Type: "A"}, Reason: ReasonOtherGateway, Message: "app.example.test is published by gateway gw/a"},
				{Record: Record{Name: "manual.example.test", Type: "A"}, Reason: ReasonOwnedElsewhere, Message: `manual.example.test is held by a A record fleetgate did not create (owner ""); it is left alone`},
				{Record: Record{Name: "taken.example.test", Type: "A"}, Reason: ReasonOwnedElsewhere, Message: `taken.example.test is held by a A record fleetgate did not create (owner "other-cluster"); it is left alone`},
			}},
		}},
		zone: []string{
			`a-app.example.test. TXT ` + ownerTXT("gw/a"),
			"app.example.test. A 192.0.2.3",
			`cname-www.example.test. TXT ` + ownerTXT("gw/b"),
			"www.example.test. CNAME lb.example.net.",
		},
	}, {
		name: "an unknown set keeps its records; an empty one publishes nothing",
		owners: map[string][]*endpoint.Endpoint{
			"gw/a": nil,
			"gw/b": {},
		},
		want: Result{Owners: map[string]*OwnerResult{
			"gw/b": {Deleted: recs("www.example.test CNAME")},
		}},
		zone: []string{
			`a-app.example.test. TXT ` + ownerTXT("gw/a"),
			"app.example.test. A 192.0.2.3",
		},
	}, {
		name:   "a gateway that is gone loses its records",
		owners: map[string][]*endpoint.Endpoint{"gw/b": {}},
		want: Result{Owners: map[string]*OwnerResult{
			"gw/a": {Deleted: recs("app.example.test A")},
		}},
	}, {
		name:   "nothing left to do",
		owners: map[string][]*endpoint.Endpoint{},
	}}
	for _, s := range steps {
		res, err := p.Sync(t.Context(), s.owners)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if d := cmp.Diff(s.want, res); d != "" {
			t.Errorf("%s: result (-want +got):\n%s", s.name, d)
		}
		want := slices.Concat(foreignZone, s.zone)
		sort.Strings(want)
		if d := cmp.Diff(want, zoneRecords(t, srv)); d != "" {
			t.Errorf("%s: zone (-want +got):\n%s", s.name, d)
		}
	}
	// What a resolver sees of the foreign records, after all that.
	if d := cmp.Diff([]string{"192.0.2.99"}, answer(t, srv, "manual.example.test", miekg.TypeA)); d != "" {
		t.Errorf("manual.example.test (-want +got):\n%s", d)
	}
	if got := testutil.ToFloat64(p.metrics.conflicts); got != 0 {
		t.Errorf("conflicts gauge after the last pass = %v, want 0", got)
	}
	if n, err := testutil.GatherAndCount(reg, "fleetgate_dns_record_changes_total"); err != nil || n != 3 {
		t.Errorf("record change series = %d (%v), want 3", n, err)
	}
}

// TestRFC2136Resolves: right after Sync returns, a resolver gets the new name's A set (both
// targets) and its TXT ownership record. It measures Sync → answer over 50 names.
func TestRFC2136Resolves(t *testing.T) {
	srv := bindtest.Require(t, testZone)
	p := newRFC2136(t, srv)
	var eps []*endpoint.Endpoint
	var took []time.Duration
	for i := range 50 {
		name := fmt.Sprintf("svc%02d.example.test", i)
		eps = append(eps, a(name, "192.0.2.10", fmt.Sprintf("198.51.100.%d", i+1)))
		start := time.Now()
		if _, err := p.Sync(t.Context(), map[string][]*endpoint.Endpoint{"gw/many": eps}); err != nil {
			t.Fatal(err)
		}
		got := answer(t, srv, name, miekg.TypeA)
		took = append(took, time.Since(start))
		if d := cmp.Diff([]string{"192.0.2.10", fmt.Sprintf("198.51.100.%d", i+1)}, got); d != "" {
			t.Fatalf("%s right after Sync (-want +got):\n%s", name, d)
		}
		if d := cmp.Diff([]string{ownerTXT("gw/many")}, answer(t, srv, "a-"+name, miekg.TypeTXT)); d != "" {
			t.Fatalf("a-%s right after Sync (-want +got):\n%s", name, d)
		}
	}
	slices.Sort(took)
	t.Logf("Sync → answer over %d names (zone growing to %d records): p50 %v, p99 %v, max %v",
		len(took), 2*len(took), took[len(took)/2], took[len(took)*99/100], took[len(took)-1])
}

// TestRFC2136Refused: records that cannot be published are reported, and nothing reaches the zone.
func TestRFC2136Refused(t *testing.T) {
	srv := bindtest.Require(t, testZone)
	p := newRFC2136(t, srv)
	weighted := a("w.example.test", "192.0.2.1").WithSetIdentifier("cluster-1").
		WithProviderSpecific("aws/weight", "10")
	res, err := p.Sync(t.Context(), map[string][]*endpoint.Endpoint{"gw/a": {
		a("empty.example.test"),
		a("app.example.org", "192.0.2.1"),
		weighted,
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := Result{Owners: map[string]*OwnerResult{"gw/a": {Refused: []Skip{
		{Record: Record{Name: "app.example.org", Type: "A"}, Reason: ReasonOutsideZones, Message: "app.example.org is under none of the zones example.test"},
		{Record: Record{Name: "empty.example.test", Type: "A"}, Reason: ReasonNoTargets, Message: "the record has no targets; an empty record set is never published"},
		{Record: Record{Name: "w.example.test", Type: "A", SetIdentifier: "cluster-1"}, Reason: ReasonNoWeights, Message: `DNS provider rfc2136 has no weighted records (set identifier "cluster-1")`},
	}}}}
	if d := cmp.Diff(want, res); d != "" {
		t.Errorf("result (-want +got):\n%s", d)
	}
	if got := zoneRecords(t, srv); len(got) != 0 {
		t.Errorf("zone holds %v, want nothing", got)
	}
}

// TestRFC2136DeleteBudget: a pass that would delete more than maxDeletesPerPass records deletes
// none of them, until their owners have been gone (or their deletions held) for the grace period;
// deletions within the budget go at once.
func TestRFC2136DeleteBudget(t *testing.T) {
	srv := bindtest.Require(t, testZone)
	clock := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	p := newRFC2136(t, srv, func(o *Options) {
		o.DNS.MaxDeletesPerPass = new(int32(3))
		o.DNS.DeleteGracePeriod = &metav1.Duration{Duration: 10 * time.Minute}
		o.Now = clock.now
	})
	set := func(prefix string, n int) []*endpoint.Endpoint {
		var eps []*endpoint.Endpoint
		for i := range n {
			eps = append(eps, a(fmt.Sprintf("%s%d.example.test", prefix, i), "192.0.2.1"))
		}
		return eps
	}
	names := func(prefix string, n int) []Record {
		var out []Record
		for i := range n {
			out = append(out, Record{Name: fmt.Sprintf("%s%d.example.test", prefix, i), Type: "A"})
		}
		return out
	}
	sync := func(step string, owners map[string][]*endpoint.Endpoint, want Result, records int) {
		t.Helper()
		res, err := p.Sync(t.Context(), owners)
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if d := cmp.Diff(want, res); d != "" {
			t.Errorf("%s: result (-want +got):\n%s", step, d)
		}
		if got := len(zoneRecords(t, srv)); got != 2*records {
			t.Errorf("%s: zone holds %d records, want %d (and their TXT records)", step, got/2, records)
		}
	}
	sync("create", map[string][]*endpoint.Endpoint{"gw/a": set("a", 5), "gw/b": set("b", 2), "gw/c": set("c", 2)},
		Result{Owners: map[string]*OwnerResult{"gw/a": {Created: names("a", 5)}, "gw/b": {Created: names("b", 2)}, "gw/c": {Created: names("c", 2)}}}, 9)
	sync("within the budget: gw/c gone, gw/b shrinks", map[string][]*endpoint.Endpoint{"gw/a": set("a", 5), "gw/b": set("b", 1)},
		Result{Owners: map[string]*OwnerResult{"gw/b": {Deleted: names("b", 2)[1:]}, "gw/c": {Deleted: names("c", 2)}}}, 6)
	sync("above it: gw/a's set comes back empty", map[string][]*endpoint.Endpoint{"gw/a": {}, "gw/b": set("b", 1)},
		Result{Owners: map[string]*OwnerResult{"gw/a": {Held: names("a", 5)}}}, 6)
	clock.t = clock.t.Add(5 * time.Minute)
	sync("above it, gw/b gone too", map[string][]*endpoint.Endpoint{"gw/a": {}},
		Result{Owners: map[string]*OwnerResult{"gw/a": {Held: names("a", 5)}, "gw/b": {Held: names("b", 1)}}}, 6)
	clock.t = clock.t.Add(5 * time.Minute)
	sync("gw/a held for the grace period, gw/b gone for less", map[string][]*endpoint.Endpoint{"gw/a": {}},
		Result{Owners: map[string]*OwnerResult{"gw/a": {Deleted: names("a", 5)}, "gw/b": {Deleted: names("b", 1)}}}, 0)
}

// TestRFC2136ManyRecords: a pass larger than one DNS UPDATE message goes out in pieces, each
// record with its ownership record.
func TestRFC2136ManyRecords(t *testing.T) {
	srv := bindtest.Require(t, testZone)
	p := newRFC2136(t, srv)
	var eps []*endpoint.Endpoint
	for i := range 2*applyChunk + 30 {
		eps = append(eps, a(fmt.Sprintf("n%03d.example.test", i), "192.0.2.1", "192.0.2.2"))
	}
	res, err := p.Sync(t.Context(), map[string][]*endpoint.Endpoint{"gw/big": eps})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(res.Owners["gw/big"].Created); got != len(eps) {
		t.Errorf("created %d records, want %d", got, len(eps))
	}
	zone := zoneRecords(t, srv)
	if o := orphans(zone); len(o) > 0 {
		t.Errorf("records and ownership records without each other: %v", o)
	}
	if got, want := len(zone), 3*len(eps); got != want { // two A records and a TXT record a name
		t.Errorf("zone holds %d records, want %d", got, want)
	}
}

// TestRFC2136Wildcard: a wildcard name is published, answers for any name under it, and its
// ownership record (a-wildcard.<parent>) is recognised by the next pass, which changes nothing.
func TestRFC2136Wildcard(t *testing.T) {
	srv := bindtest.Require(t, testZone)
	p := newRFC2136(t, srv)
	owners := map[string][]*endpoint.Endpoint{"gw/w": {a("*.apps.example.test", "192.0.2.5")}}
	for i, want := range []Result{
		{Owners: map[string]*OwnerResult{"gw/w": {Created: recs("*.apps.example.test A")}}},
		{},
	} {
		res, err := p.Sync(t.Context(), owners)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want, res); d != "" {
			t.Errorf("pass %d: result (-want +got):\n%s", i+1, d)
		}
	}
	if d := cmp.Diff([]string{"192.0.2.5"}, answer(t, srv, "anything.apps.example.test", miekg.TypeA)); d != "" {
		t.Errorf("anything.apps.example.test (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{ownerTXT("gw/w")}, answer(t, srv, "a-wildcard.apps.example.test", miekg.TypeTXT)); d != "" {
		t.Errorf("ownership record (-want +got):\n%s", d)
	}
}

// droppingProvider accepts every change and carries out all but the creation of one name: a
// provider that acknowledges what it then does not serve.
type droppingProvider struct {
	provider.Provider
	drop string
}

func (d droppingProvider) ApplyChanges(ctx context.Context, c *plan.Changes) error {
	kept := *c
	kept.Create = slices.DeleteFunc(slices.Clone(c.Create), func(e *endpoint.Endpoint) bool {
		return strings.HasSuffix(e.DNSName, d.drop)
	})
	return d.Provider.ApplyChanges(ctx, &kept)
}

// TestRFC2136ReadBack: the records a pass wrote are read back from the zone, and one the server
// does not hold as written is reported Unserved (what the Gateway's status calls served is what
// the zone answers); the next pass writes it again.
func TestRFC2136ReadBack(t *testing.T) {
	srv := bindtest.Require(t, testZone)
	o := rfc2136Options(srv)
	o.Log = testr.New(t)
	filter := endpoint.NewDomainFilter(o.DNS.Zones)
	real, _, err := newProvider(t.Context(), o, filter)
	if err != nil {
		t.Fatal(err)
	}
	owners := map[string][]*endpoint.Endpoint{"gw/a": {a("app.example.test", "192.0.2.1"), a("api.example.test", "192.0.2.2")}}

	p, err := newPublisher(o, droppingProvider{real, "api.example.test"}, false, filter, testOwner)
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Sync(t.Context(), owners)
	if err != nil {
		t.Fatal(err)
	}
	want := Result{Owners: map[string]*OwnerResult{"gw/a": {
		Created:  recs("api.example.test A", "app.example.test A"),
		Unserved: recs("api.example.test A"),
	}}}
	if d := cmp.Diff(want, res); d != "" {
		t.Errorf("with a provider dropping api.example.test (-want +got):\n%s", d)
	}

	p, err = newPublisher(o, real, false, filter, testOwner)
	if err != nil {
		t.Fatal(err)
	}
	if res, err = p.Sync(t.Context(), owners); err != nil {
		t.Fatal(err)
	}
	want = Result{Owners: map[string]*OwnerResult{"gw/a": {Created: recs("api.example.test A")}}}
	if d := cmp.Diff(want, res); d != "" {
		t.Errorf("next pass on the real server (-want +got):\n%s", d)
	}
	if got := answer(t, srv, "api.example.test", miekg.TypeA); !slices.Equal(got, []string{"192.0.2.2"}) {
		t.Errorf("api.example.test A = %v, want [192.0.2.2]", got)
	}
}
