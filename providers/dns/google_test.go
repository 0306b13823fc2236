package dns

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/google/go-cmp/cmp"
	dnsv1 "google.golang.org/api/dns/v1"
	"sigs.k8s.io/external-dns/endpoint"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/providers/dns/clouddnsfake"
	"github.com/fleetgate/fleetgate/providers/gcp/gcpfake"
)

// googleProxy serves each Google test's Cloud DNS fake at https://dns.<its universe domain>/.
// external-dns's provider/google takes no endpoint: its client goes to that address through
// the process's HTTPS_PROXY and trusts it through SSL_CERT_FILE, which Go reads once per process,
// so TestMain starts the proxy and sets both before any test runs (startGoogleProxy).
var googleProxy *clouddnsfake.Proxy

const googleProject = "fleet-dns-test"

// startGoogleProxy starts googleProxy and points the process's HTTPS traffic at it: every HTTPS
// request of this test binary goes through the proxy, which answers only for the hosts the tests
// route (loopback addresses, such as moto's and the token endpoint's, are never proxied).
func startGoogleProxy() (stop func(), _ error) {
	p, err := clouddnsfake.NewProxy()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "fleetgate-clouddns-")
	if err != nil {
		return nil, err
	}
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, p.CAPEM(), 0o600); err != nil {
		return nil, err
	}
	for _, k := range []string{"https_proxy", "NO_PROXY", "no_proxy", "HTTP_PROXY", "http_proxy"} {
		if err := os.Unsetenv(k); err != nil {
			return nil, err
		}
	}
	for k, v := range map[string]string{"HTTPS_PROXY": p.URL(), "SSL_CERT_FILE": ca, "SSL_CERT_DIR": dir} {
		if err := os.Setenv(k, v); err != nil {
			return nil, err
		}
	}
	googleProxy = p
	return func() {
		_ = p.Close()
		_ = os.RemoveAll(dir)
	}, nil
}

// googleEnv is one test's Google: a Cloud DNS fake in its own universe domain, reached only with
// a token from a service account key (GOOGLE_APPLICATION_CREDENTIALS) whose token_uri is
// gcpfake's token endpoint.
type googleEnv struct {
	fake   *clouddnsfake.Server
	tokens *gcpfake.Server
	domain string
}

const googleAccount = "fleetgate-dns@fleet-dns-test.iam.gserviceaccount.com"

func newGoogleEnv(t *testing.T) *googleEnv {
	t.Helper()
	if googleProxy == nil {
		t.Fatal("TestMain did not start the Cloud DNS proxy")
	}
	e := &googleEnv{
		fake:   clouddnsfake.New(),
		tokens: gcpfake.NewServer(t),
		domain: strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name())) + ".fleetgate.test",
	}
	e.fake.RequireAuth(e.tokens)
	key, err := e.tokens.NewServiceAccountKey(googleProject, googleAccount)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "key.json")
	if err := os.WriteFile(keyFile, key, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", keyFile)
	t.Setenv("GOOGLE_CLOUD_UNIVERSE_DOMAIN", e.domain)
	t.Cleanup(googleProxy.Route("dns."+e.domain, e.fake))
	return e
}

func (e *googleEnv) zone(t *testing.T, name, dnsName, visibility string) *dnsv1.ManagedZone {
	t.Helper()
	z, err := e.fake.AddZone(googleProject, name, dnsName, visibility)
	if err != nil {
		t.Fatal(err)
	}
	return z
}

// records lists a zone as rfc2136_test.go's zoneRecords does: "name TYPE value", one line a
// value, sorted, without the apex SOA and NS.
func (e *googleEnv) records(zone string) []string {
	var out []string
	for _, rs := range e.fake.RecordSets(googleProject, zone) {
		for _, d := range rs.Rrdatas {
			out = append(out, rs.Name+" "+rs.Type+" "+d)
		}
	}
	slices.Sort(out)
	return out
}

func googleOptions(managedZone string) Options {
	return Options{
		DNS: v1alpha1.DNSOptions{
			Provider: v1alpha1.DNSProviderGoogle, Zones: []string{testZone}, OwnerID: testOwner,
			Google: &v1alpha1.DNSGoogle{Project: googleProject, ManagedZone: managedZone},
		},
		Class: "test",
	}
}

func newGoogle(t *testing.T, ctx context.Context, managedZone string) *Publisher {
	t.Helper()
	o := googleOptions(managedZone)
	o.Log = testr.New(t)
	p, err := New(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestGooglePublish walks a Cloud DNS zone through a gateway's life with external-dns's
// provider/google, its real client going through the proxy to the fake with a token from the
// fake token endpoint: records appear with their TXT ownership records, change (the old set
// deleted exactly as it is, or Cloud DNS refuses the change), are kept while their owner's set is
// unknown, and vanish when it is empty or the owner is gone; records nobody marked and one
// another owner holds are reported and never touched. A pass with nothing to do changes nothing,
// and the records are listed over several pages.
func TestGooglePublish(t *testing.T) {
	env := newGoogleEnv(t)
	env.zone(t, "example-test", testZone+".", "public")
	if err := env.fake.Apply(googleProject, "example-test", &dnsv1.Change{Additions: []*dnsv1.ResourceRecordSet{
		{Name: "manual.example.test.", Type: "A", Ttl: 300, Rrdatas: []string{"192.0.2.99"}},
		{Name: "taken.example.test.", Type: "A", Ttl: 300, Rrdatas: []string{"192.0.2.98"}},
		{Name: "a-taken.example.test.", Type: "TXT", Ttl: 300, Rrdatas: []string{`"heritage=external-dns,external-dns/owner=other-cluster,external-dns/resource=ingress/x/y"`}},
	}}); err != nil {
		t.Fatal(err)
	}
	env.fake.SetPageSize(3)
	// The publisher outlives the context it was built with, as Publishers keeps it past the
	// pass that built it.
	buildCtx, cancel := context.WithCancel(t.Context())
	p := newGoogle(t, buildCtx, "")
	cancel()

	steps := []struct {
		name    string
		owners  map[string][]*endpoint.Endpoint
		want    Result
		zone    []string
		changes int
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
		changes: 1,
	}, {
		name:   "again: nothing to do",
		owners: map[string][]*endpoint.Endpoint{"gw/a": {a("app.example.test", "192.0.2.1", "192.0.2.2")}, "gw/b": {cname("www.example.test", "lb.example.net")}},
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
		changes: 1,
	}, {
		name:   "an unknown set keeps its records; an empty one publishes nothing",
		owners: map[string][]*endpoint.Endpoint{"gw/a": nil, "gw/b": {}},
		want:   Result{Owners: map[string]*OwnerResult{"gw/b": {Deleted: recs("www.example.test CNAME")}}},
		zone: []string{
			`a-app.example.test. TXT ` + ownerTXT("gw/a"),
			"app.example.test. A 192.0.2.3",
		},
		changes: 1,
	}, {
		name:    "a gateway that is gone loses its records",
		owners:  map[string][]*endpoint.Endpoint{"gw/b": {}},
		want:    Result{Owners: map[string]*OwnerResult{"gw/a": {Deleted: recs("app.example.test A")}}},
		changes: 1,
	}, {
		name:   "nothing left to do",
		owners: map[string][]*endpoint.Endpoint{},
	}}
	for _, s := range steps {
		env.fake.ResetCalls()
		res, err := p.Sync(t.Context(), s.owners)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if d := cmp.Diff(s.want, res); d != "" {
			t.Errorf("%s: result (-want +got):\n%s", s.name, d)
		}
		want := slices.Concat(foreignZone, s.zone)
		slices.Sort(want)
		if d := cmp.Diff(want, env.records("example-test")); d != "" {
			t.Errorf("%s: zone (-want +got):\n%s", s.name, d)
		}
		calls := env.fake.Calls()
		if got := env.fake.Changes(); got != s.changes {
			t.Errorf("%s: %d changes.create calls, want %d", s.name, got, s.changes)
		}
		pages := 0
		for _, c := range calls {
			if c.Host != "dns."+env.domain || c.Status != http.StatusOK {
				t.Errorf("%s: call %+v, want one to dns.%s answered 200", s.name, c, env.domain)
			}
			if strings.HasSuffix(c.Path, "/rrsets") {
				pages++
			}
		}
		// 9 record sets with SOA and NS, 3 a page: the provider followed nextPageToken.
		if s.name == "again: nothing to do" && pages != 3 {
			t.Errorf("%s: %d rrsets.list pages, want the zone listed over 3", s.name, pages)
		}
	}
}

// TestGoogleRefused: Cloud DNS through external-dns v0.22.0 has no weighted records (the
// provider writes no routing policy), so a record with a set identifier is refused, like one
// with no targets or outside the zones; nothing reaches the zone.
func TestGoogleRefused(t *testing.T) {
	env := newGoogleEnv(t)
	env.zone(t, "example-test", testZone+".", "public")
	p := newGoogle(t, t.Context(), "")
	res, err := p.Sync(t.Context(), map[string][]*endpoint.Endpoint{"gw/a": {
		a("empty.example.test"),
		a("app.example.org", "192.0.2.1"),
		a("w.example.test", "192.0.2.1").WithSetIdentifier("cluster-1").WithProviderSpecific("aws/weight", "10"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := Result{Owners: map[string]*OwnerResult{"gw/a": {Refused: []Skip{
		{Record: Record{Name: "app.example.org", Type: "A"}, Reason: ReasonOutsideZones, Message: "app.example.org is under none of the zones example.test"},
		{Record: Record{Name: "empty.example.test", Type: "A"}, Reason: ReasonNoTargets, Message: "the record has no targets; an empty record set is never published"},
		{Record: Record{Name: "w.example.test", Type: "A", SetIdentifier: "cluster-1"}, Reason: ReasonNoWeights, Message: `DNS provider google has no weighted records (set identifier "cluster-1")`},
	}}}}
	if d := cmp.Diff(want, res); d != "" {
		t.Errorf("result (-want +got):\n%s", d)
	}
	if got := env.records("example-test"); len(got) != 0 || env.fake.Changes() != 0 {
		t.Errorf("zone holds %v after %d changes, want nothing", got, env.fake.Changes())
	}
}

// TestGoogleManagedZone: of a public and a private zone with the same DNS name (split horizon),
// spec.dns.google.managedZone picks one, by name or by numeric ID; the other is never written.
func TestGoogleManagedZone(t *testing.T) {
	env := newGoogleEnv(t)
	env.zone(t, "public", testZone+".", "public")
	private := env.zone(t, "private", testZone+".", "private")
	for _, c := range []struct{ filter, zone, other, ip string }{
		{"public", "public", "private", "192.0.2.1"},
		{fmt.Sprint(private.Id), "private", "public", "192.0.2.2"},
	} {
		env.fake.ResetCalls()
		p := newGoogle(t, t.Context(), c.filter)
		if _, err := p.Sync(t.Context(), map[string][]*endpoint.Endpoint{"gw/" + c.zone: {a(c.zone+".example.test", c.ip)}}); err != nil {
			t.Fatalf("managedZone %q: %v", c.filter, err)
		}
		want := []string{"a-" + c.zone + ".example.test. TXT " + ownerTXT("gw/"+c.zone), c.zone + ".example.test. A " + c.ip}
		if d := cmp.Diff(want, env.records(c.zone)); d != "" {
			t.Errorf("managedZone %q: zone %s (-want +got):\n%s", c.filter, c.zone, d)
		}
		for _, call := range env.fake.Calls() {
			if strings.Contains(call.Path, "/managedZones/"+c.other+"/") {
				t.Errorf("managedZone %q: a call to the other zone: %+v", c.filter, call)
			}
		}
	}
	if got := env.records("public"); len(got) != 2 {
		t.Errorf("public zone after the private zone's pass: %v, want its own 2 records only", got)
	}
}

// TestGoogleManyRecords: a pass larger than one Sync chunk goes out as one Cloud DNS change a
// chunk (external-dns's batch size holds a whole chunk), each record with its ownership record,
// so no change leaves a record without its owner.
func TestGoogleManyRecords(t *testing.T) {
	env := newGoogleEnv(t)
	env.zone(t, "example-test", testZone+".", "public")
	p := newGoogle(t, t.Context(), "")
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
	if got, want := env.fake.Changes(), (len(eps)+googleChunk-1)/googleChunk; got != want {
		t.Errorf("%d changes.create calls, want %d (one a chunk of %d)", got, want, googleChunk)
	}
	zone := env.records("example-test")
	if o := orphans(zone); len(o) > 0 {
		t.Errorf("records and ownership records without each other: %v", o)
	}
	if got, want := len(zone), 3*len(eps); got != want {
		t.Errorf("zone holds %d records, want %d", got, want)
	}
}

// TestGoogleCredentials: without a key file New fails and says why; once the service account's
// key is revoked the token exchange fails, Sync says so, and the zone is untouched.
func TestGoogleCredentials(t *testing.T) {
	env := newGoogleEnv(t)
	env.zone(t, "example-test", testZone+".", "public")
	keyFile := os.Getenv("GOOGLE_APPLICATION_CREDENTIALS")
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", keyFile+".missing")
	if _, err := New(t.Context(), googleOptions("")); err == nil || !strings.Contains(err.Error(), "dns: google provider for project "+googleProject) || !strings.Contains(err.Error(), "key.json.missing") {
		t.Errorf("New without the key file: %v, want the provider's error naming the file", err)
	}
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", keyFile)
	p := newGoogle(t, t.Context(), "")
	env.tokens.Revoke(googleAccount)
	_, err := p.Sync(t.Context(), map[string][]*endpoint.Endpoint{"gw/a": {a("app.example.test", "192.0.2.1")}})
	if err == nil || !strings.Contains(err.Error(), "Invalid JWT Signature") {
		t.Errorf("Sync with a revoked key: %v, want the token endpoint's refusal", err)
	}
	if got := env.records("example-test"); len(got) != 0 {
		t.Errorf("zone holds %v, want nothing", got)
	}
}

// TestGoogleSyncLatency: right after Sync returns, the zone holds the new name's set (both
// targets) and its ownership record. It measures Sync (list zones, list records over pages,
// one change, through the proxy and TLS) over 50 names.
func TestGoogleSyncLatency(t *testing.T) {
	env := newGoogleEnv(t)
	env.zone(t, "example-test", testZone+".", "public")
	p := newGoogle(t, t.Context(), "")
	var eps []*endpoint.Endpoint
	var took []time.Duration
	for i := range 50 {
		name := fmt.Sprintf("svc%02d.example.test", i)
		eps = append(eps, a(name, "192.0.2.10", fmt.Sprintf("198.51.100.%d", i+1)))
		start := time.Now()
		if _, err := p.Sync(t.Context(), map[string][]*endpoint.Endpoint{"gw/many": eps}); err != nil {
			t.Fatal(err)
		}
		took = append(took, time.Since(start))
		zone := env.records("example-test")
		for _, want := range []string{
			name + ". A 192.0.2.10", fmt.Sprintf("%s. A 198.51.100.%d", name, i+1), "a-" + name + ". TXT " + ownerTXT("gw/many"),
		} {
			if !slices.Contains(zone, want) {
				t.Fatalf("after Sync %d the zone lacks %q", i, want)
			}
		}
	}
	slices.Sort(took)
	t.Logf("Sync over %d names (zone growing to %d record sets, %d a page): p50 %v, p99 %v, max %v",
		len(took), 2*len(took), clouddnsfake.DefaultPageSize, took[len(took)/2], took[len(took)*99/100], took[len(took)-1])
}

// TestGoogleRetireWhereItMovedFrom: on Cloud DNS (the fake, through provider/google's real
// client), a class whose spec.dns went from the zones example.test and other.test to other.test
// alone retires the names it left in example.test and keeps those in other.test. (provider/google
// picks managed zones by their DNS name, so zones here name whole managed zones.)
func TestGoogleRetireWhereItMovedFrom(t *testing.T) {
	env := newGoogleEnv(t)
	env.zone(t, "example-test", testZone+".", "public")
	env.zone(t, "other-test", "other.test.", "public")
	base := googleOptions("")
	base.Log = testr.New(t)
	s := NewPublishers(base)
	before := *base.DNS.DeepCopy()
	before.Zones = []string{testZone, "other.test"}
	after := *base.DNS.DeepCopy()
	after.Zones = []string{"other.test"}
	if _, err := s.Sync(t.Context(), "test", before, map[string][]*endpoint.Endpoint{
		"gw/a": {a("app.example.test", "192.0.2.1"), a("app.other.test", "192.0.2.1")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Sync(t.Context(), "test", after, map[string][]*endpoint.Endpoint{"gw/a": {a("app.other.test", "192.0.2.1")}}); err != nil {
		t.Fatal(err)
	}
	records := func(name string) []string {
		return []string{`a-` + name + `. TXT "heritage=external-dns,external-dns/owner=` + testOwner + `,external-dns/resource=gw/a"`,
			name + ". A 192.0.2.1"}
	}
	if d := cmp.Diff(records("app.example.test"), env.records("example-test")); d != "" {
		t.Fatalf("example.test after the move (-want +got):\n%s", d)
	}
	done, err := s.Retire(t.Context(), "test", before, after.Zones)
	if err != nil || !done {
		t.Fatalf("Retire = %v, %v; want done", done, err)
	}
	if got := env.records("example-test"); len(got) != 0 {
		t.Errorf("example.test after the retirement: %q, want no records of ours", got)
	}
	if d := cmp.Diff(records("app.other.test"), env.records("other-test")); d != "" {
		t.Errorf("other.test after the retirement (-want +got):\n%s", d)
	}
}
