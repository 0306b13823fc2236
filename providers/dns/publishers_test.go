package dns

import (
	"context"
	"testing"

	"github.com/go-logr/logr/testr"
	"github.com/google/go-cmp/cmp"
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
	s.Forget("c")
	if _, ok := s.byClass["c"]; ok {
		t.Error("Forget kept the publisher")
	}
}
