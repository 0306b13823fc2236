package controllers

import (
	"context"
	"errors"
	"testing"

	"github.com/go-logr/logr/testr"
	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/external-dns/endpoint"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/providers"
)

// zoneCalls records what the embedded publishers were asked, as "publish name" and
// "retire name zone" lines; retire answers from done and fail.
type zoneCalls struct {
	calls []string
	done  map[string]bool
	fail  error
}

func (z *zoneCalls) Publish(_ context.Context, config string, _ v1alpha1.DNSOptions, _ map[string][]*endpoint.Endpoint) (map[string]providers.DNSOwnerOutcome, error) {
	z.calls = append(z.calls, "publish "+config)
	return nil, nil
}

func (z *zoneCalls) Retire(_ context.Context, config string, opts v1alpha1.DNSOptions) (bool, error) {
	z.calls = append(z.calls, "retire "+config+" "+opts.Zones[0])
	return z.done[config], z.fail
}

// TestSyncZonesRetires: a config that published last time and no longer does (its spec.dns went,
// or it left the fleet with its member) has its records removed with the options it last had,
// pass after pass until the removal is done (the delete budget can hold it back); one that comes
// back publishes again instead, and a failed removal is reported and tried again.
func TestSyncZonesRetires(t *testing.T) {
	z := &zoneCalls{done: map[string]bool{}}
	p := &dnsPublisher{o: DNSOptions{Sync: z}, log: testr.New(t)}
	zone := func(name string) DNSZoneRecords {
		return DNSZoneRecords{Options: v1alpha1.DNSOptions{Provider: v1alpha1.DNSProviderRFC2136, Zones: []string{name}}}
	}
	pass := func(step string, zones map[string]DNSZoneRecords, wantErr bool, want ...string) {
		t.Helper()
		z.calls = nil
		_, err := p.syncZones(t.Context(), zones, nil)
		if (err != nil) != wantErr {
			t.Errorf("%s: err = %v, want an error: %v", step, err, wantErr)
		}
		if d := cmp.Diff(want, z.calls); d != "" {
			t.Errorf("%s: calls (-want +got):\n%s", step, d)
		}
	}
	pass("both publish", map[string]DNSZoneRecords{"a": zone("a.test"), "b": zone("b.test")}, false, "publish a", "publish b")
	pass("b goes", map[string]DNSZoneRecords{"a": zone("a.test")}, false, "publish a", "retire b b.test")
	pass("b held back", map[string]DNSZoneRecords{"a": zone("a.test")}, false, "publish a", "retire b b.test")
	z.fail = errors.New("zone unreachable")
	pass("b fails", map[string]DNSZoneRecords{"a": zone("a.test")}, true, "publish a", "retire b b.test")
	z.fail = nil
	z.done["b"] = true
	pass("b done", map[string]DNSZoneRecords{"a": zone("a.test")}, false, "publish a", "retire b b.test")
	pass("b retired", map[string]DNSZoneRecords{"a": zone("a.test")}, false, "publish a")
	pass("a goes, into another zone", map[string]DNSZoneRecords{"c": zone("c.test")}, false, "publish c", "retire a a.test")
	pass("a comes back", map[string]DNSZoneRecords{"a": zone("a2.test"), "c": zone("c.test")}, false, "publish a", "publish c")
	pass("a stays", map[string]DNSZoneRecords{"a": zone("a2.test"), "c": zone("c.test")}, false, "publish a", "publish c")
	z.done["a"] = true
	pass("a goes again, from its last zone", map[string]DNSZoneRecords{"c": zone("c.test")}, false, "publish c", "retire a a2.test")
}
