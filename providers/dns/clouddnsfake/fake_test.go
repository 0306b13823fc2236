package clouddnsfake

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	dnsv1 "google.golang.org/api/dns/v1"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"

	"github.com/fleetgate/fleetgate/providers/gcp/gcpfake"
)

const proj = "fleet-proj"

// client is the real Cloud DNS client pointed at the fake, without credentials.
func client(t *testing.T, s *Server) *dnsv1.Service {
	t.Helper()
	_, hs := serve(t, s)
	c, err := dnsv1.NewService(t.Context(), option.WithEndpoint(hs+"/"), option.WithHTTPClient(http.DefaultClient))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func serve(t *testing.T, s *Server) (*Server, string) {
	t.Helper()
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	return s, hs.URL
}

func rrset(name, typ string, ttl int64, data ...string) *dnsv1.ResourceRecordSet {
	return &dnsv1.ResourceRecordSet{Name: name, Type: typ, Ttl: ttl, Rrdatas: data}
}

// lines shows a zone as "name TYPE ttl data…" lines.
func lines(sets []*dnsv1.ResourceRecordSet) []string {
	var out []string
	for _, rs := range sets {
		out = append(out, fmt.Sprintf("%s %s %d %s", rs.Name, rs.Type, rs.Ttl, strings.Join(rs.Rrdatas, ",")))
	}
	return out
}

func apiErr(err error) string {
	if ge, ok := errors.AsType[*googleapi.Error](err); ok && len(ge.Errors) > 0 {
		return fmt.Sprintf("%d %s", ge.Code, ge.Errors[0].Reason)
	}
	if err != nil {
		return "other: " + err.Error()
	}
	return ""
}

func mustZone(t *testing.T, s *Server, name, dnsName, visibility string) *dnsv1.ManagedZone {
	t.Helper()
	z, err := s.AddZone(proj, name, dnsName, visibility)
	if err != nil {
		t.Fatal(err)
	}
	return z
}

// TestListZones: every zone of the project over several pages (the client's Pages follows
// nextPageToken), the dnsName filter, maxResults, and a bad page token.
func TestListZones(t *testing.T) {
	s := New()
	mustZone(t, s, "public", "example.test.", "public")
	mustZone(t, s, "private", "example.test.", "private")
	mustZone(t, s, "other", "other.test.", "public")
	if _, err := s.AddZone("another-project", "x", "x.test.", "public"); err != nil {
		t.Fatal(err)
	}
	s.SetPageSize(2)
	c := client(t, s)
	list := func(call *dnsv1.ManagedZonesListCall) ([]string, int) {
		var names []string
		pages := 0
		err := call.Pages(t.Context(), func(r *dnsv1.ManagedZonesListResponse) error {
			pages++
			for _, z := range r.ManagedZones {
				names = append(names, z.Name+" "+z.DnsName+" "+z.Visibility)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return names, pages
	}
	for _, tc := range []struct {
		name  string
		call  *dnsv1.ManagedZonesListCall
		want  []string
		pages int
	}{
		{"all, two pages", c.ManagedZones.List(proj), []string{"other other.test. public", "private example.test. private", "public example.test. public"}, 2},
		{"dnsName", c.ManagedZones.List(proj).DnsName("example.test."), []string{"private example.test. private", "public example.test. public"}, 1},
		{"maxResults 1", c.ManagedZones.List(proj).MaxResults(1), []string{"other other.test. public", "private example.test. private", "public example.test. public"}, 3},
		{"unknown project", c.ManagedZones.List("nobody"), nil, 1},
	} {
		got, pages := list(tc.call)
		if d := cmp.Diff(tc.want, got); d != "" || pages != tc.pages {
			t.Errorf("%s: %d pages (want %d), zones (-want +got):\n%s", tc.name, pages, tc.pages, d)
		}
	}
	_, err := c.ManagedZones.List(proj).PageToken("!!").Do()
	if got := apiErr(err); got != "400 invalid" {
		t.Errorf("bad page token: %s, want 400 invalid", got)
	}
}

// TestListRecordSets: a zone's record sets over pages (SOA and NS at the apex included), found
// by zone name or ID; the name and type filters; type without name; an unknown zone.
func TestListRecordSets(t *testing.T) {
	s := New()
	z := mustZone(t, s, "zone", "example.test.", "public")
	c := client(t, s)
	if _, err := c.Changes.Create(proj, "zone", &dnsv1.Change{Additions: []*dnsv1.ResourceRecordSet{
		rrset("a.example.test.", "A", 300, "192.0.2.1"),
		rrset("a.example.test.", "TXT", 300, `"hello"`),
		rrset("b.example.test.", "AAAA", 60, "2001:db8::1"),
	}}).Do(); err != nil {
		t.Fatal(err)
	}
	s.SetPageSize(2)
	list := func(call *dnsv1.ResourceRecordSetsListCall) []string {
		var out []string
		if err := call.Pages(t.Context(), func(r *dnsv1.ResourceRecordSetsListResponse) error {
			out = append(out, lines(r.Rrsets)...)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	all := []string{
		"a.example.test. A 300 192.0.2.1", `a.example.test. TXT 300 "hello"`, "b.example.test. AAAA 60 2001:db8::1",
		"example.test. NS 21600 ns-cloud-a1.googledomains.com.,ns-cloud-a2.googledomains.com.",
		"example.test. SOA 21600 ns-cloud-a1.googledomains.com. cloud-dns-hostmaster.google.com. 1 21600 3600 259200 300",
	}
	for _, tc := range []struct {
		name string
		call *dnsv1.ResourceRecordSetsListCall
		want []string
	}{
		{"all, by name", c.ResourceRecordSets.List(proj, "zone"), all},
		{"all, by ID", c.ResourceRecordSets.List(proj, fmt.Sprint(z.Id)), all},
		{"name", c.ResourceRecordSets.List(proj, "zone").Name("a.example.test."), all[:2]},
		{"name and type", c.ResourceRecordSets.List(proj, "zone").Name("a.example.test.").Type("TXT"), all[1:2]},
	} {
		if d := cmp.Diff(tc.want, list(tc.call)); d != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, d)
		}
	}
	_, err := c.ResourceRecordSets.List(proj, "zone").Type("A").Do()
	if got := apiErr(err); got != "400 invalid" {
		t.Errorf("type without name: %s, want 400 invalid", got)
	}
	_, err = c.ResourceRecordSets.List(proj, "missing").Do()
	if got := apiErr(err); got != "404 notFound" {
		t.Errorf("unknown zone: %s, want 404 notFound", got)
	}
}

// TestChanges: what changes.create accepts and refuses, and that a refused change applies
// nothing (a change is atomic).
func TestChanges(t *testing.T) {
	www := rrset("www.example.test.", "A", 300, "192.0.2.1", "192.0.2.2")
	start := []string{
		"alias.example.test. CNAME 300 lb.example.net.",
		"www.example.test. A 300 192.0.2.1,192.0.2.2",
	}
	many := make([]*dnsv1.ResourceRecordSet, MaxAdditionsPerChange+1)
	for i := range many {
		many[i] = rrset(fmt.Sprintf("n%d.example.test.", i), "A", 300, "192.0.2.1")
	}
	big := make([]*dnsv1.ResourceRecordSet, 5)
	for i := range big {
		big[i] = rrset(fmt.Sprintf("t%d.example.test.", i), "TXT", 300, strings.Repeat("x", MaxRrdataBytes/4))
	}
	for _, tc := range []struct {
		name    string
		change  dnsv1.Change
		wantErr string
		want    []string
	}{{
		name:   "add",
		change: dnsv1.Change{Additions: []*dnsv1.ResourceRecordSet{rrset("New.Example.Test.", "AAAA", 60, "2001:db8::1")}},
		want:   []string{start[0], "new.example.test. AAAA 60 2001:db8::1", start[1]},
	}, {
		name: "replace: delete exactly what is there (any order of data), add the new set",
		change: dnsv1.Change{
			Deletions: []*dnsv1.ResourceRecordSet{rrset("www.example.test.", "A", 300, "192.0.2.2", "192.0.2.1")},
			Additions: []*dnsv1.ResourceRecordSet{rrset("www.example.test.", "A", 60, "192.0.2.3")},
		},
		want: []string{start[0], "www.example.test. A 60 192.0.2.3"},
	}, {
		name:   "delete",
		change: dnsv1.Change{Deletions: []*dnsv1.ResourceRecordSet{www}},
		want:   start[:1],
	}, {
		name:    "add an existing name and type",
		change:  dnsv1.Change{Additions: []*dnsv1.ResourceRecordSet{rrset("www.example.test.", "A", 300, "192.0.2.9")}},
		wantErr: "409 alreadyExists",
	}, {
		name:    "add the same set twice in one change",
		change:  dnsv1.Change{Additions: []*dnsv1.ResourceRecordSet{rrset("x.example.test.", "A", 300, "192.0.2.9"), rrset("x.example.test.", "A", 300, "192.0.2.9")}},
		wantErr: "409 alreadyExists",
	}, {
		name:    "delete a missing set",
		change:  dnsv1.Change{Deletions: []*dnsv1.ResourceRecordSet{rrset("gone.example.test.", "A", 300, "192.0.2.1")}},
		wantErr: "404 notFound",
	}, {
		name:    "delete with another TTL",
		change:  dnsv1.Change{Deletions: []*dnsv1.ResourceRecordSet{rrset("www.example.test.", "A", 60, "192.0.2.1", "192.0.2.2")}},
		wantErr: "412 conditionNotMet",
	}, {
		name:    "delete with other data",
		change:  dnsv1.Change{Deletions: []*dnsv1.ResourceRecordSet{rrset("www.example.test.", "A", 300, "192.0.2.1")}},
		wantErr: "412 conditionNotMet",
	}, {
		name: "atomic: a good addition with a bad deletion applies nothing",
		change: dnsv1.Change{
			Additions: []*dnsv1.ResourceRecordSet{rrset("ok.example.test.", "A", 300, "192.0.2.5")},
			Deletions: []*dnsv1.ResourceRecordSet{rrset("gone.example.test.", "A", 300, "192.0.2.1")},
		},
		wantErr: "404 notFound",
	}, {
		name:    "a CNAME beside an A",
		change:  dnsv1.Change{Additions: []*dnsv1.ResourceRecordSet{rrset("www.example.test.", "CNAME", 300, "lb.example.net.")}},
		wantErr: "400 cnameResourceRecordSetConflict",
	}, {
		name:    "an A beside a CNAME",
		change:  dnsv1.Change{Additions: []*dnsv1.ResourceRecordSet{rrset("alias.example.test.", "A", 300, "192.0.2.1")}},
		wantErr: "400 cnameResourceRecordSetConflict",
	}, {
		name:    "a CNAME with two targets",
		change:  dnsv1.Change{Additions: []*dnsv1.ResourceRecordSet{rrset("c.example.test.", "CNAME", 300, "a.example.net.", "b.example.net.")}},
		wantErr: "400 invalidRecordCount",
	}, {
		name:    "a name outside the zone",
		change:  dnsv1.Change{Additions: []*dnsv1.ResourceRecordSet{rrset("www.example.org.", "A", 300, "192.0.2.1")}},
		wantErr: "400 invalidValue",
	}, {
		name:    "a name without the final dot",
		change:  dnsv1.Change{Additions: []*dnsv1.ResourceRecordSet{rrset("x.example.test", "A", 300, "192.0.2.1")}},
		wantErr: "400 invalidValue",
	}, {
		name:    "an A record that is no IPv4 address",
		change:  dnsv1.Change{Additions: []*dnsv1.ResourceRecordSet{rrset("x.example.test.", "A", 300, "2001:db8::1")}},
		wantErr: "400 invalidValue",
	}, {
		name:    "a set without records",
		change:  dnsv1.Change{Additions: []*dnsv1.ResourceRecordSet{rrset("x.example.test.", "A", 300)}},
		wantErr: "400 invalidValue",
	}, {
		name:    "an empty change",
		wantErr: "400 required",
	}, {
		name:    "more additions than a change may hold",
		change:  dnsv1.Change{Additions: many},
		wantErr: "413 quotaExceeded",
	}, {
		name:    "more record data than a change may hold",
		change:  dnsv1.Change{Additions: big},
		wantErr: "413 quotaExceeded",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			s := New()
			mustZone(t, s, "zone", "example.test.", "public")
			c := client(t, s)
			if _, err := c.Changes.Create(proj, "zone", &dnsv1.Change{Additions: []*dnsv1.ResourceRecordSet{www, rrset("alias.example.test.", "CNAME", 300, "lb.example.net.")}}).Do(); err != nil {
				t.Fatal(err)
			}
			done, err := c.Changes.Create(proj, "zone", &tc.change).Do()
			if got := apiErr(err); got != tc.wantErr {
				t.Fatalf("error %q, want %q", got, tc.wantErr)
			}
			want := tc.want
			if tc.wantErr != "" {
				want = start
			} else {
				got, err := c.Changes.Get(proj, "zone", done.Id).Do()
				if err != nil || got.Status != "done" || done.Status != "done" {
					t.Errorf("changes.get %s: %v status %q (create said %q), want done", done.Id, err, got.Status, done.Status)
				}
			}
			if d := cmp.Diff(want, lines(s.RecordSets(proj, "zone"))); d != "" {
				t.Errorf("zone (-want +got):\n%s", d)
			}
		})
	}
}

// TestAuth: with RequireAuth, a call needs a token from gcpfake's token endpoint, which the real
// client gets with a service account key (JWT-bearer grant, Cloud DNS scope).
func TestAuth(t *testing.T) {
	tokens := gcpfake.NewServer(t)
	key, err := tokens.NewServiceAccountKey(proj, "dns@fleet-proj.iam.gserviceaccount.com")
	if err != nil {
		t.Fatal(err)
	}
	s := New()
	s.RequireAuth(tokens)
	mustZone(t, s, "zone", "example.test.", "public")
	_, hs := serve(t, s)
	list := func(opts ...option.ClientOption) error {
		c, err := dnsv1.NewService(t.Context(), append(opts, option.WithEndpoint(hs+"/"), option.WithScopes(dnsv1.NdevClouddnsReadwriteScope))...)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.ManagedZones.List(proj).Do()
		return err
	}
	if err := list(option.WithAuthCredentialsJSON(option.ServiceAccount, key)); err != nil {
		t.Errorf("with the key: %v", err)
	}
	if got := apiErr(list(option.WithHTTPClient(http.DefaultClient))); got != "401 required" {
		t.Errorf("without a token: %s, want 401 required", got)
	}
	tokens.Revoke("dns@fleet-proj.iam.gserviceaccount.com")
	if err := list(option.WithAuthCredentialsJSON(option.ServiceAccount, key)); err == nil || strings.HasPrefix(apiErr(err), "2") {
		t.Errorf("with a revoked key: %v, want the token exchange to fail", err)
	}
}

// TestProxy: through the proxy, https://dns.<domain>/ reaches the routed fake over TLS that the
// proxy's CA signs; an unrouted host gets no tunnel, and the proxy is no plain HTTP proxy.
func TestProxy(t *testing.T) {
	p, err := NewProxy()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	s := New()
	mustZone(t, s, "zone", "example.test.", "public")
	remove := p.Route("dns.universe.test", s)
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(p.CAPEM()) {
		t.Fatal("CA PEM")
	}
	proxyURL, _ := url.Parse(p.URL())
	hc := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL), TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}}
	c, err := dnsv1.NewService(context.Background(), option.WithEndpoint("https://dns.universe.test/"), option.WithHTTPClient(hc))
	if err != nil {
		t.Fatal(err)
	}
	zones, err := c.ManagedZones.List(proj).Do()
	if err != nil || len(zones.ManagedZones) != 1 {
		t.Fatalf("through the proxy: %v, %v", zones, err)
	}
	if d := cmp.Diff([]Call{{Method: http.MethodGet, Host: "dns.universe.test", Path: "/dns/v1/projects/fleet-proj/managedZones", Status: 200}}, s.Calls()); d != "" {
		t.Errorf("calls (-want +got):\n%s", d)
	}
	if _, err := hc.Get("https://dns.elsewhere.test/"); err == nil || !strings.Contains(err.Error(), "Bad Gateway") {
		t.Errorf("unrouted host: %v, want the CONNECT refused", err)
	}
	remove()
	if _, err := c.ManagedZones.List(proj).Do(); err == nil {
		t.Error("after the route was removed: the call went through")
	}
	resp, err := http.Get(p.URL() + "/dns/v1/projects/p/managedZones")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("plain GET to the proxy: %d %s, want 405", resp.StatusCode, body)
	}
}
