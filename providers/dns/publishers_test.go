package dns

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/external-dns/endpoint"

	"github.com/fleetgate/fleetgate/providers/dns/bindtest"
)

// TestPublishers: a class's publisher is kept while its options stay (the delete budget remembers
// held deletions), rebuilt when they change, and rebuilt after a failed pass (a TSIG secret that
// was wrong is read again).
func TestPublishers(t *testing.T) {
	srv := bindtest.Require(t, testZone)
	base := rfc2136Options(srv)
	secret := "d3Jvbmc=" // wrong at first
	base.Secrets = func(context.Context, string, string) (map[string][]byte, error) {
		return map[string][]byte{"secret": []byte(secret)}, nil
	}
	base.Log = testr.New(t)
	s := NewPublishers(base)
	opts := base.DNS

	owners := map[string][]*endpoint.Endpoint{"gw/a": {a("app.example.test", "192.0.2.1")}}
	if _, err := s.Sync(t.Context(), "c", opts, owners); err == nil {
		t.Fatal("Sync with a wrong TSIG secret succeeded")
	}
	secret = srv.Secret
	res, err := s.Sync(t.Context(), "c", opts, owners)
	if err != nil {
		t.Fatalf("Sync after the secret was fixed: %v", err)
	}
	if d := cmp.Diff(Result{Owners: map[string]*OwnerResult{"gw/a": {Created: recs("app.example.test A")}}}, res); d != "" {
		t.Errorf("result (-want +got):\n%s", d)
	}
	first := s.byClass["c"].p
	if _, err := s.Sync(t.Context(), "c", *opts.DeepCopy(), owners); err != nil {
		t.Fatal(err)
	}
	if s.byClass["c"].p != first {
		t.Error("the publisher was rebuilt though the options did not change")
	}
	opts.TTL = new(int64(60))
	res, err = s.Sync(t.Context(), "c", opts, owners)
	if err != nil {
		t.Fatal(err)
	}
	if s.byClass["c"].p == first {
		t.Error("the publisher was kept though the options changed")
	}
	if d := cmp.Diff(Result{Owners: map[string]*OwnerResult{"gw/a": {Updated: recs("app.example.test A")}}}, res); d != "" {
		t.Errorf("result after the TTL changed (-want +got):\n%s", d)
	}
}

// TestPublishersRetire: a class that stops publishing (its spec.dns went, or its config left the
// fleet) has the records it owns removed, within the delete budget: above it they wait out the
// grace period, and Retire says it is not done until then. Records of others stay.
func TestPublishersRetire(t *testing.T) {
	srv := bindtest.Require(t, testZone, foreignZone...)
	clock := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	base := rfc2136Options(srv, func(o *Options) {
		o.DNS.MaxDeletesPerPass = new(int32(2))
		o.DNS.DeleteGracePeriod = &metav1.Duration{Duration: 10 * time.Minute}
		o.Now = clock.now
	})
	base.Log = testr.New(t)
	s := NewPublishers(base)
	foreign := zoneRecords(t, srv)
	owners := map[string][]*endpoint.Endpoint{"gw/a": {a("app.example.test", "192.0.2.1"), a("api.example.test", "192.0.2.1")},
		"gw/b": {a("shop.example.test", "192.0.2.2")}}
	if _, err := s.Sync(t.Context(), "c", base.DNS, owners); err != nil {
		t.Fatal(err)
	}
	if got := len(zoneRecords(t, srv)) - len(foreign); got != 6 {
		t.Fatalf("zone holds %d records of ours, want 3 and their TXT records", got)
	}
	retire := func(step string, wantDone bool, want []string) {
		t.Helper()
		done, err := s.Retire(t.Context(), "c", base.DNS, nil)
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if done != wantDone {
			t.Errorf("%s: done = %v, want %v", step, done, wantDone)
		}
		if d := cmp.Diff(want, zoneRecords(t, srv)); d != "" {
			t.Errorf("%s: zone (-want +got):\n%s", step, d)
		}
		if _, kept := s.byClass["c"]; kept {
			t.Errorf("%s: the publisher of the options c no longer has is kept", step)
		}
		if kept := len(s.retiring) > 0; kept == done {
			t.Errorf("%s: retiring publisher kept = %v with done = %v", step, kept, done)
		}
	}
	retire("above the budget", false, zoneRecords(t, srv))
	clock.t = clock.t.Add(5 * time.Minute)
	retire("within the grace period", false, zoneRecords(t, srv))
	clock.t = clock.t.Add(5 * time.Minute)
	retire("gone for the grace period", true, foreign)

	// Within the budget the records go at once.
	if _, err := s.Sync(t.Context(), "c", base.DNS, map[string][]*endpoint.Endpoint{"gw/b": {a("shop.example.test", "192.0.2.2")}}); err != nil {
		t.Fatal(err)
	}
	retire("within the budget", true, foreign)
}

// TestPublishersRetireWhereItMovedFrom: a class whose spec.dns moved from the zone example.test to
// api.example.test publishes only there from then on, so the records it left under example.test stay
// until Retire removes them; the names under api.example.test, which it still publishes, stay.
func TestPublishersRetireWhereItMovedFrom(t *testing.T) {
	srv := bindtest.Require(t, testZone, foreignZone...)
	base := rfc2136Options(srv)
	base.Log = testr.New(t)
	s := NewPublishers(base)
	foreign := zoneRecords(t, srv)
	before := base.DNS
	if _, err := s.Sync(t.Context(), "c", before, map[string][]*endpoint.Endpoint{
		"gw/a": {a("app.example.test", "192.0.2.1"), a("v1.api.example.test", "192.0.2.1")},
		"gw/b": {a("shop.example.test", "192.0.2.2")}}); err != nil {
		t.Fatal(err)
	}
	after := *before.DeepCopy()
	after.Zones = []string{"api.example.test"}
	for range 2 {
		if _, err := s.Sync(t.Context(), "c", after, map[string][]*endpoint.Endpoint{
			"gw/a": {a("v1.api.example.test", "192.0.2.1")}, "gw/b": {}}); err != nil {
			t.Fatal(err)
		}
	}
	ours := func(names ...string) []string {
		want := slices.Clone(foreign)
		for _, n := range names {
			ip := map[string]string{"app": "192.0.2.1", "v1.api": "192.0.2.1", "shop": "192.0.2.2"}[n]
			gw := map[string]string{"app": "gw/a", "v1.api": "gw/a", "shop": "gw/b"}[n]
			want = append(want, n+".example.test. A "+ip,
				fmt.Sprintf(`a-%s.example.test. TXT "heritage=external-dns,external-dns/owner=%s,external-dns/resource=%s"`, n, testOwner, gw))
		}
		slices.Sort(want)
		return want
	}
	if d := cmp.Diff(ours("app", "shop", "v1.api"), zoneRecords(t, srv)); d != "" {
		t.Fatalf("zone after the move, before the retirement (-want +got):\n%s", d)
	}
	done, err := s.Retire(t.Context(), "c", before, after.Zones)
	if err != nil || !done {
		t.Fatalf("Retire = %v, %v; want done", done, err)
	}
	if d := cmp.Diff(ours("v1.api"), zoneRecords(t, srv)); d != "" {
		t.Errorf("zone after the retirement (-want +got):\n%s", d)
	}
	if s.byClass["c"] == nil || len(s.retiring) != 0 {
		t.Errorf("publishers after the retirement: class %v, retiring %d; want the class's and none retiring", s.byClass["c"], len(s.retiring))
	}
}

// TestPublishersDropAbandonedRetirement: a retirement the controller stops asking for (its class
// publishes there again) is dropped at the class's next publication but one, not kept for good.
func TestPublishersDropAbandonedRetirement(t *testing.T) {
	srv := bindtest.Require(t, testZone)
	base := rfc2136Options(srv, func(o *Options) { o.DNS.MaxDeletesPerPass = new(int32(0)) })
	base.Log = testr.New(t)
	s := NewPublishers(base)
	owners := map[string][]*endpoint.Endpoint{"gw/a": {a("app.example.test", "192.0.2.1")}}
	if _, err := s.Sync(t.Context(), "c", base.DNS, owners); err != nil {
		t.Fatal(err)
	}
	if done, err := s.Retire(t.Context(), "c", base.DNS, nil); err != nil || done {
		t.Fatalf("Retire = %v, %v; want held back by the budget", done, err)
	}
	for pass, want := range []int{1, 0} {
		if _, err := s.Sync(t.Context(), "c", base.DNS, owners); err != nil {
			t.Fatal(err)
		}
		if len(s.retiring) != want {
			t.Errorf("after publication %d without Retire: %d retiring publishers, want %d", pass+1, len(s.retiring), want)
		}
	}
}

// TestPublishersShareAZone: two classes of one fleet publishing into the same zone each own only
// their gateways' records: a pass of one never deletes the other's (with one owner ID for both,
// each took the other's gateways for gone and deleted their names).
func TestPublishersShareAZone(t *testing.T) {
	srv := bindtest.Require(t, testZone)
	base := rfc2136Options(srv, func(o *Options) { o.DNS.OwnerID = ""; o.FleetID = "fleet-1" })
	base.Log = testr.New(t)
	s := NewPublishers(base)
	if _, err := s.Sync(t.Context(), "alb", base.DNS, map[string][]*endpoint.Endpoint{"gw/alb": {a("shop.example.test", "192.0.2.1")}}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		res, err := s.Sync(t.Context(), "proxy", base.DNS, map[string][]*endpoint.Endpoint{"gw/proxy": {a("api.example.test", "192.0.2.2")}})
		if err != nil {
			t.Fatal(err)
		}
		if r := res.Owners["gw/alb"]; r != nil {
			t.Errorf("class proxy's pass touched class alb's gateway: %+v", r)
		}
	}
	want := []string{
		`a-api.example.test. TXT "heritage=external-dns,external-dns/owner=fleet-1-proxy,external-dns/resource=gw/proxy"`,
		`a-shop.example.test. TXT "heritage=external-dns,external-dns/owner=fleet-1-alb,external-dns/resource=gw/alb"`,
		"api.example.test. A 192.0.2.2",
		"shop.example.test. A 192.0.2.1",
	}
	if d := cmp.Diff(want, zoneRecords(t, srv)); d != "" {
		t.Errorf("zone (-want +got):\n%s", d)
	}
}
