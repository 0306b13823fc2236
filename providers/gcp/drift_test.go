package gcp

import (
	"context"
	"slices"
	"strings"
	"testing"

	"cloud.google.com/go/compute/apiv1/computepb"
	gocmp "github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/protobuf/proto"

	"github.com/fleetgate/fleetgate/providers"
)

func TestDrift(t *testing.T) {
	link := apiBase + "projects/p/global/backendServices/bs"
	want := &computepb.BackendService{
		Name: proto.String("bs"), Protocol: proto.String("HTTP"), HealthChecks: []string{apiBase + "projects/p/global/healthChecks/hc"},
		Backends:  []*computepb.Backend{{Group: proto.String(link), BalancingMode: proto.String("RATE"), MaxRatePerEndpoint: proto.Float32(1e6)}},
		EnableCDN: proto.Bool(false),
	}
	for _, tt := range []struct {
		name   string
		change func(*computepb.BackendService)
		want   string
	}{
		{name: "as written", change: func(*computepb.BackendService) {}},
		{name: "fields GCE fills in", change: func(h *computepb.BackendService) {
			h.Id, h.Fingerprint, h.SelfLink, h.TimeoutSec = proto.Uint64(7), proto.String("fp"), proto.String(link), proto.Int32(30)
			h.Backends[0].CapacityScaler = proto.Float32(1)
		}},
		{name: "a false GCE leaves out", change: func(h *computepb.BackendService) { h.EnableCDN = nil }},
		{name: "a partial link", change: func(h *computepb.BackendService) { h.HealthChecks = []string{"projects/p/global/healthChecks/hc"} }},
		{name: "another description", change: func(h *computepb.BackendService) { h.Description = proto.String("ownership record") }},
		{name: "a scalar", change: func(h *computepb.BackendService) { h.Protocol = proto.String("HTTPS") }, want: "protocol"},
		{name: "a true where false was written", change: func(h *computepb.BackendService) { h.EnableCDN = proto.Bool(true) }, want: "enableCDN"},
		{name: "a field removed", change: func(h *computepb.BackendService) { h.Protocol = nil }, want: "protocol"},
		{name: "another link", change: func(h *computepb.BackendService) { h.HealthChecks = []string{"projects/p/global/healthChecks/other"} }, want: "healthChecks[0]"},
		{name: "a list grown", change: func(h *computepb.BackendService) { h.HealthChecks = append(h.HealthChecks, "x") }, want: "healthChecks"},
		{name: "inside a list's message", change: func(h *computepb.BackendService) { h.Backends[0].MaxRatePerEndpoint = proto.Float32(1) }, want: "backends[0].maxRatePerEndpoint"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			have := proto.Clone(want).(*computepb.BackendService)
			tt.change(have)
			if got := drift(KindBackendService, want, have); got != tt.want {
				t.Errorf("drift = %q, want %q", got, tt.want)
			}
		})
	}
	t.Run("labels", func(t *testing.T) {
		want := &computepb.Address{Labels: map[string]string{"a": "1"}}
		for have, diff := range map[*computepb.Address]string{
			{Labels: map[string]string{"a": "1"}}:          "",
			{Labels: map[string]string{"a": "2"}}:          "labels[a]",
			{Labels: map[string]string{"b": "1"}}:          "labels[a]",
			{Labels: map[string]string{"a": "1", "b": ""}}: "labels",
		} {
			if got := drift(KindAddress, want, have); got != diff {
				t.Errorf("labels %v: drift = %q, want %q", have.Labels, got, diff)
			}
		}
	})
}

// listed reads every resource of the Stack the way the deployer sees them.
func listed(t *testing.T, p *Provider, lb *providers.LoadBalancer) (*Stack, map[resKey]*live) {
	t.Helper()
	o := mustDecode(t, lb.Parameters)
	d, _, err := p.deployer(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	env, err := p.env(context.Background(), lb)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Build(lb, o, env, testFleet)
	if err != nil {
		t.Fatal(err)
	}
	owned, err := d.observe(context.Background(), s.Prefix)
	if err != nil {
		t.Fatal(err)
	}
	return s, owned
}

// updates are the resources a run's mutations updated in place (PUT), by collection.
func updates(mutations []string) []string {
	var out []string
	for _, m := range mutations {
		if verb, path, _ := strings.Cut(m, " "); verb == "PUT" {
			parts := strings.Split(path, "/")
			out = append(out, parts[len(parts)-2])
		}
	}
	slices.Sort(out)
	return out
}

// TestDriftRestored: changes made to fleetgate's resources outside fleetgate (the ownership record
// left as it was, so the spec hash still matches) are found by comparing what is listed with the
// Stack, and restored with one update each; the run after that makes no call.
func TestDriftRestored(t *testing.T) {
	lb, members := goldenModel(t, "global-http")
	p, fake := testProvider(t, members)
	ensure(t, p, lb)
	s, owned := listed(t, p, lb)
	cl, _, err := p.accounts.clients(context.Background(), mustDecode(t, lb.Parameters))
	if err != nil {
		t.Fatal(err)
	}
	changed := map[Kind]bool{}
	for _, r := range s.Resources {
		l := owned[r.key()]
		if l == nil || changed[r.Kind] {
			continue
		}
		m := proto.Clone(l.msg)
		switch v := m.(type) {
		case *computepb.Firewall:
			v.SourceRanges = []string{"0.0.0.0/0"}
		case *computepb.HealthCheck:
			if v.HttpHealthCheck == nil {
				continue
			}
			v.HttpHealthCheck.RequestPath = proto.String("/other")
		case *computepb.BackendService:
			if len(v.Backends) == 0 {
				continue
			}
			v.Backends[0].MaxRatePerEndpoint = proto.Float32(1)
		case *computepb.UrlMap:
			if len(v.HostRules) == 0 {
				continue
			}
			v.HostRules[0].Hosts = append(v.HostRules[0].Hosts, "evil.example.com")
		default:
			continue
		}
		if err := cl.put(context.Background(), r.Scope, r.Name, m); err != nil {
			t.Fatalf("changing %s %s outside fleetgate: %v", r.Kind, r.Name, err)
		}
		changed[r.Kind] = true
	}
	if len(changed) != 4 {
		t.Fatalf("changed %v, want one resource of each updatable kind", changed)
	}

	fake.ResetCalls()
	ensure(t, p, lb)
	if diff := gocmp.Diff([]string{"backendServices", "firewalls", "healthChecks", "urlMaps"}, updates(mutations(fake))); diff != "" {
		t.Errorf("updates (-want +got):\n%s\nall calls: %v", diff, mutations(fake))
	}
	for k := range changed {
		if n := testutil.ToFloat64(p.accounts.metrics.restored.WithLabelValues(k.String())); n != 1 {
			t.Errorf("fleetgate_gcp_drift_restored_total{kind=%q} = %v, want 1", k, n)
		}
	}
	s, owned = listed(t, p, lb)
	for _, r := range s.Resources {
		if l := owned[r.key()]; l != nil && r.Kind.updatable() {
			if field := drift(r.Kind, r.Msg, l.msg); field != "" {
				t.Errorf("%s %s: %s still differs", r.Kind, r.Name, field)
			}
		}
	}
	fake.ResetCalls()
	ensure(t, p, lb)
	if m := mutations(fake); len(m) != 0 {
		t.Errorf("steady state after restoring: %v", m)
	}
}

// TestDriftNormalForm: where GCE keeps a written value in a form of its own (here, the firewall
// rules' source ranges in another order), the first run that sees it restores it once, reads it
// back and takes that form as the resource's: later runs make no call, and a real change is still
// restored.
func TestDriftNormalForm(t *testing.T) {
	lb, members := goldenModel(t, "global-http")
	p, fake := testProvider(t, members)
	fake.SetNormalizer(func(coll string, m proto.Message) {
		if fw, ok := m.(*computepb.Firewall); ok && coll == "firewalls" {
			slices.Reverse(fw.SourceRanges)
		}
	})
	ensure(t, p, lb)
	fake.ResetCalls()
	ensure(t, p, lb)
	if diff := gocmp.Diff([]string{"firewalls", "firewalls"}, updates(mutations(fake))); diff != "" {
		t.Errorf("first run after the normalised writes: updates (-want +got):\n%s", diff)
	}
	for i := range 2 {
		fake.ResetCalls()
		ensure(t, p, lb)
		if m := mutations(fake); len(m) != 0 {
			t.Fatalf("run %d after taking GCE's form: %v", i+1, m)
		}
	}

	// Someone opens a rule to the world: restored, though a form of it is remembered.
	s, owned := listed(t, p, lb)
	cl, _, err := p.accounts.clients(context.Background(), mustDecode(t, lb.Parameters))
	if err != nil {
		t.Fatal(err)
	}
	fake.SetNormalizer(nil)
	for _, r := range s.Resources {
		if r.Kind != KindFirewall {
			continue
		}
		m := proto.Clone(owned[r.key()].msg).(*computepb.Firewall)
		m.SourceRanges = append(m.SourceRanges, "0.0.0.0/0")
		if err := cl.put(context.Background(), r.Scope, r.Name, m); err != nil {
			t.Fatal(err)
		}
		break
	}
	fake.ResetCalls()
	ensure(t, p, lb)
	if diff := gocmp.Diff([]string{"firewalls"}, updates(mutations(fake))); diff != "" {
		t.Errorf("after a change outside fleetgate: updates (-want +got):\n%s", diff)
	}
}
