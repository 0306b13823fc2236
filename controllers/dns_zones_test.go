package controllers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/go-logr/logr/testr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/external-dns/endpoint"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/providers"
)

// zoneCalls records what the embedded publishers were asked, as "publish name" and
// "retire name provider zones [keep domains]" lines; retire answers from done and fail.
type zoneCalls struct {
	calls []string
	done  map[string]bool
	fail  error
	// published, when set, is called with each config as it is published.
	published func(config string)
}

func (z *zoneCalls) Publish(_ context.Context, config string, _ v1alpha1.DNSOptions, _ map[string][]*endpoint.Endpoint) (map[string]providers.DNSOwnerOutcome, error) {
	z.calls = append(z.calls, "publish "+config)
	if z.published != nil {
		z.published(config)
	}
	return nil, nil
}

func (z *zoneCalls) Retire(_ context.Context, config string, opts v1alpha1.DNSOptions, keep []string) (bool, error) {
	call := fmt.Sprintf("retire %s %s %s", config, opts.Provider, strings.Join(opts.Zones, ","))
	if opts.OwnerID != "" {
		call += " owner " + opts.OwnerID
	}
	if keep != nil {
		call += " keep " + strings.Join(keep, ",")
	}
	z.calls = append(z.calls, call)
	return z.done[config], z.fail
}

// TestSyncZonesRetires: records published under a spec.dns that went or changed are removed with
// the options they were published with, pass after pass until the removal is done (the delete
// budget can hold it back): those of a config that no longer publishes (its spec.dns went, or it
// left the fleet with its member), and those a config left behind in the zones, provider or owner
// ID it moved away from, without the domains it still publishes into under the same owner ID. A
// config that comes back publishes again instead, and a failed removal is reported and tried
// again.
func TestSyncZonesRetires(t *testing.T) {
	scheme, err := NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	members := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		&v1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "member-1"}},
		&v1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "member-2"}}).Build()
	z := &zoneCalls{done: map[string]bool{}}
	p := &dnsPublisher{o: DNSOptions{Sync: z}, live: members, log: testr.New(t)}
	dns := func(provider v1alpha1.DNSProvider, owner string, zones ...string) v1alpha1.DNSOptions {
		return v1alpha1.DNSOptions{Provider: provider, OwnerID: owner, Zones: zones}
	}
	zone := func(zones ...string) DNSZoneRecords {
		return DNSZoneRecords{Options: dns(v1alpha1.DNSProviderRFC2136, "", zones...), Cluster: v1alpha1.HubCluster}
	}
	clusters := []string{v1alpha1.HubCluster}
	pass := func(step string, zones map[string]DNSZoneRecords, wantErr bool, want ...string) {
		t.Helper()
		z.calls = nil
		_, err := p.syncZones(t.Context(), zones, nil, clusters)
		if (err != nil) != wantErr {
			t.Errorf("%s: err = %v, want an error: %v", step, err, wantErr)
		}
		if d := cmp.Diff(want, z.calls); d != "" {
			t.Errorf("%s: calls (-want +got):\n%s", step, d)
		}
	}
	pass("both publish", map[string]DNSZoneRecords{"a": zone("a.test"), "b": zone("b.test")}, false, "publish a", "publish b")
	pass("b goes", map[string]DNSZoneRecords{"a": zone("a.test")}, false, "publish a", "retire b rfc2136 b.test")
	pass("b held back", map[string]DNSZoneRecords{"a": zone("a.test")}, false, "publish a", "retire b rfc2136 b.test")
	z.fail = errors.New("zone unreachable")
	pass("b fails", map[string]DNSZoneRecords{"a": zone("a.test")}, true, "publish a", "retire b rfc2136 b.test")
	z.fail = nil
	z.done["b"] = true
	pass("b done", map[string]DNSZoneRecords{"a": zone("a.test")}, false, "publish a", "retire b rfc2136 b.test")
	pass("b retired", map[string]DNSZoneRecords{"a": zone("a.test")}, false, "publish a")
	pass("a goes, into another zone", map[string]DNSZoneRecords{"c": zone("c.test")}, false, "publish c", "retire a rfc2136 a.test")
	pass("a comes back into another zone", map[string]DNSZoneRecords{"a": zone("a2.test"), "c": zone("c.test")}, false,
		"publish a", "publish c", "retire a rfc2136 a.test keep a2.test")
	z.done["a"] = true
	pass("a.test emptied", map[string]DNSZoneRecords{"a": zone("a2.test"), "c": zone("c.test")}, false,
		"publish a", "publish c", "retire a rfc2136 a.test keep a2.test")
	pass("a stays", map[string]DNSZoneRecords{"a": zone("a2.test"), "c": zone("c.test")}, false, "publish a", "publish c")
	pass("a goes again, from its last zone", map[string]DNSZoneRecords{"c": zone("c.test")}, false, "publish c", "retire a rfc2136 a2.test")

	// c's spec.dns changes in place.
	z.done = map[string]bool{}
	pass("c adds a zone", map[string]DNSZoneRecords{"c": zone("c.test", "d.test")}, false, "publish c")
	pass("c drops it", map[string]DNSZoneRecords{"c": zone("C.test.")}, false, "publish c", "retire c rfc2136 d.test keep C.test.")
	pass("c takes it back before it is emptied", map[string]DNSZoneRecords{"c": zone("c.test", "d.test")}, false, "publish c")
	moved := DNSZoneRecords{Options: dns(v1alpha1.DNSProviderRoute53, "", "c.test", "d.test")}
	pass("c moves to another provider", map[string]DNSZoneRecords{"c": moved}, false, "publish c", "retire c rfc2136 c.test,d.test")
	owned := DNSZoneRecords{Options: dns(v1alpha1.DNSProviderRoute53, "team-c", "c.test", "d.test")}
	pass("c takes another owner ID", map[string]DNSZoneRecords{"c": owned}, false,
		"publish c", "retire c rfc2136 c.test,d.test", "retire c route53 c.test,d.test")
	z.done["c"] = true
	pass("both retired", map[string]DNSZoneRecords{"c": owned}, false,
		"publish c", "retire c rfc2136 c.test,d.test", "retire c route53 c.test,d.test")
	pass("c publishes alone", map[string]DNSZoneRecords{"c": owned}, false, "publish c")

	// A config of a member is unknown while the member is registered and not read (unreachable),
	// and retired once the member is read without it (it leaves the fleet: read as empty) or is
	// no longer registered.
	m1, m2 := zone("m.test"), zone("n.test")
	m1.Cluster, m2.Cluster = "member-1", "member-2"
	clusters = []string{v1alpha1.HubCluster, "member-1", "member-2"}
	pass("m and n publish", map[string]DNSZoneRecords{"c": owned, "m": m1, "n": m2}, false, "publish c", "publish m", "publish n")
	clusters = []string{v1alpha1.HubCluster}
	pass("members unreachable", map[string]DNSZoneRecords{"c": owned}, false, "publish c")
	pass("still unreachable", map[string]DNSZoneRecords{"c": owned}, false, "publish c")
	clusters = []string{v1alpha1.HubCluster, "member-1"}
	z.done["m"], z.done["n"] = true, true
	pass("member-1 read without m", map[string]DNSZoneRecords{"c": owned}, false, "publish c", "retire m rfc2136 m.test")
	if err := members.Delete(t.Context(), &v1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "member-2"}}); err != nil {
		t.Fatal(err)
	}
	pass("member-2 deregistered", map[string]DNSZoneRecords{"c": owned}, false, "publish c", "retire n rfc2136 n.test")
}

// TestDNSLedger: where the embedded publishers published is kept in a ConfigMap before they
// publish there, so that an operator started after a config was deleted, or its spec.dns edited,
// retires what the config left; what is published as the ledger says is kept.
func TestDNSLedger(t *testing.T) {
	scheme, err := NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	cl := fake.NewClientBuilder().WithScheme(scheme).WithObjects(&v1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "member-1"}}).Build()
	z := &zoneCalls{done: map[string]bool{"a": true, "b": true}}
	ledger := func() []dnsPlace {
		t.Helper()
		var cm corev1.ConfigMap
		if err := cl.Get(t.Context(), client.ObjectKey{Namespace: "fleetgate-system", Name: DNSLedgerName}, &cm); err != nil {
			t.Fatalf("reading the ledger: %v", err)
		}
		var places []dnsPlace
		if err := json.Unmarshal([]byte(cm.Data[dnsLedgerKey]), &places); err != nil {
			t.Fatal(err)
		}
		return places
	}
	operator := func() *dnsPublisher {
		return newDNSPublisher(cl, cl, DNSOptions{Namespace: "fleetgate-system", Sync: z}, nil, testr.New(t))
	}
	opts := func(zones ...string) v1alpha1.DNSOptions {
		return v1alpha1.DNSOptions{Provider: v1alpha1.DNSProviderRFC2136, Zones: zones}
	}
	zone := func(cluster string, zones ...string) DNSZoneRecords {
		return DNSZoneRecords{Options: opts(zones...), Cluster: cluster}
	}
	clusters := []string{v1alpha1.HubCluster, "member-1"}
	pass := func(p *dnsPublisher, step string, zones map[string]DNSZoneRecords, want ...string) {
		t.Helper()
		z.calls = nil
		if _, err := p.syncZones(t.Context(), zones, nil, clusters); err != nil {
			t.Errorf("%s: %v", step, err)
		}
		if d := cmp.Diff(want, z.calls); d != "" {
			t.Errorf("%s: calls (-want +got):\n%s", step, d)
		}
	}

	first := operator()
	z.published = func(config string) {
		if !slices.ContainsFunc(ledger(), func(pl dnsPlace) bool { return pl.Config == config }) {
			t.Errorf("%s published before the ledger held it: %+v", config, ledger())
		}
	}
	pass(first, "a, b and c publish", map[string]DNSZoneRecords{"a": zone(v1alpha1.HubCluster, "a.test"),
		"b": zone(v1alpha1.HubCluster, "b.test", "b2.test"), "c": zone("member-1", "c.test")}, "publish a", "publish b", "publish c")
	z.published = nil
	want := []dnsPlace{{Config: "a", DNS: opts("a.test"), Cluster: v1alpha1.HubCluster},
		{Config: "b", DNS: opts("b.test", "b2.test"), Cluster: v1alpha1.HubCluster}, {Config: "c", DNS: opts("c.test"), Cluster: "member-1"}}
	if d := cmp.Diff(want, ledger()); d != "" {
		t.Fatalf("ledger (-want +got):\n%s", d)
	}

	// While no operator runs: a is deleted, b narrowed to b.test, member-1 becomes unreachable.
	clusters = []string{v1alpha1.HubCluster}
	second := operator()
	pass(second, "after a restart", map[string]DNSZoneRecords{"b": zone(v1alpha1.HubCluster, "b.test")},
		"publish b", "retire a rfc2136 a.test", "retire b rfc2136 b2.test keep b.test")
	want = []dnsPlace{{Config: "b", DNS: opts("b.test"), Cluster: v1alpha1.HubCluster}, {Config: "c", DNS: opts("c.test"), Cluster: "member-1"}}
	if d := cmp.Diff(want, ledger()); d != "" {
		t.Errorf("ledger after the restart (-want +got):\n%s", d)
	}
	clusters = []string{v1alpha1.HubCluster, "member-1"}
	pass(operator(), "member-1 back, with c as before", map[string]DNSZoneRecords{"b": zone(v1alpha1.HubCluster, "b.test"),
		"c": zone("member-1", "c.test")}, "publish b", "publish c")
	if d := cmp.Diff(want, ledger()); d != "" {
		t.Errorf("ledger after member-1 is back (-want +got):\n%s", d)
	}
}
