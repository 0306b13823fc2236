package gcp

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/compute/apiv1/computepb"
	gocmp "github.com/google/go-cmp/cmp"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/providers"
	"github.com/fleetgate/fleetgate/providers/gcp/gcpfake"
)

// TestMembershipChange: a member cluster joining or leaving a fleet gateway changes only the
// record of its clusters on the address and forwarding rules (setLabels): the address keeps its
// IP (GCE refuses to delete an address in use, and a new one would move the gateway), Delete of
// the leaving member alone deletes nothing, and List reports the clusters of the last Ensure.
func TestMembershipChange(t *testing.T) {
	lb, members := goldenModel(t, "global-http")
	p, fake := testProvider(t, members)
	ip := ensure(t, p, lb).Addresses[0].Value
	setLabelsOnAnchors := []string{"POST my-project/global/addresses/", "POST my-project/global/forwardingRules/"}
	anchorCalls := func() []string {
		var out []string
		for _, m := range mutations(fake) {
			if !strings.HasSuffix(m, "/setLabels") {
				out = append(out, m)
				continue
			}
			out = append(out, m[:strings.LastIndex(m[:strings.LastIndex(m, "/")], "/")+1])
		}
		return out
	}
	for _, step := range []struct {
		name     string
		clusters []string
		leaving  []string
	}{
		{name: "west joins", clusters: []string{"east", "hub", "west"}},
		{name: "west leaves", clusters: []string{"east", "hub"}, leaving: []string{"west"}},
	} {
		fake.ResetCalls()
		if step.leaving != nil {
			// What the provisioning engine does: Delete in the leaving clusters, then Ensure.
			del := *lb
			del.Clusters = step.leaving
			if err := p.Delete(context.Background(), &del); err != nil {
				t.Fatalf("%s: Delete: %v", step.name, err)
			}
			if m := mutations(fake); len(m) != 0 {
				t.Errorf("%s: Delete in the leaving cluster alone made %v; the others still hold the gateway", step.name, m)
			}
		}
		lb.Clusters = step.clusters
		st, err := p.Ensure(context.Background(), lb)
		if err != nil {
			t.Fatalf("%s: Ensure: %v", step.name, err)
		}
		if !st.Ready || len(st.Addresses) != 1 || st.Addresses[0].Value != ip {
			t.Errorf("%s: status %+v, want ready on %s still", step.name, st, ip)
		}
		if diff := gocmp.Diff(setLabelsOnAnchors, anchorCalls()); diff != "" {
			t.Errorf("%s: calls (-want +got):\n%s", step.name, diff)
		}
		listed, err := p.List(context.Background())
		if err != nil || len(listed) != 1 || !slices.Equal(listed[0].Clusters, step.clusters) {
			t.Errorf("%s: List = %+v, %v; want the gateway in %v", step.name, listed, err, step.clusters)
		}
	}
	if err := p.Delete(context.Background(), lb); err != nil {
		t.Fatal(err)
	}
	if c := counts(fake); len(c) != 0 {
		t.Errorf("after Delete: %v", c)
	}
}

// TestClusterLabels: member cluster names (DNS subdomains) round-trip through label values; a name
// longer than a label value is left out with a note.
func TestClusterLabels(t *testing.T) {
	long := strings.Repeat("a", 64)
	for _, tt := range []struct {
		clusters []string
		want     []string
		note     bool
	}{
		{clusters: []string{"hub"}, want: []string{"hub"}},
		{clusters: []string{"eu.prod-1", "hub"}, want: []string{"eu.prod-1", "hub"}},
		{clusters: []string{long, "hub"}, want: []string{"hub"}, note: true},
	} {
		lb, members := goldenModel(t, "global-http")
		lb.Clusters = tt.clusters
		s, err := Build(lb, mustDecode(t, lb.Parameters), Env{Members: members}, testFleet)
		if err != nil {
			t.Fatal(err)
		}
		if diff := gocmp.Diff(tt.want, labeledClusters(s.Labels)); diff != "" {
			t.Errorf("%v: recorded clusters (-want +got):\n%s", tt.clusters, diff)
		}
		noted := slices.ContainsFunc(s.Notes, func(n string) bool { return strings.Contains(n, "is not recorded") })
		if noted != tt.note {
			t.Errorf("%v: noted %v, want %v (notes %v)", tt.clusters, noted, tt.note, s.Notes)
		}
	}
}

// TestListWithoutAnchors: a gateway on a reserved address whose Delete stopped after its forwarding
// rule (the only resource recording clusters that Ensure keeps current) still lists with its
// clusters, from the others' records: the orphan sweep deletes only in clusters it knows.
func TestListWithoutAnchors(t *testing.T) {
	lb, members := goldenModel(t, "regional-named-address")
	p, fake := testProvider(t, members)
	o := mustDecode(t, lb.Parameters)
	insertAddress(t, fake, o.Project, o.Region, "web-ip")
	ensure(t, p, lb)
	fake.Inject(func(c gcpfake.Call) bool {
		return c.Method == "DELETE" && !strings.Contains(c.Path, "/forwardingRules/")
	},
		gcpfake.Fault{Code: 503, Reason: "backendError"}, testRetries.MaxAttempts)
	if err := p.Delete(context.Background(), lb); err == nil {
		t.Fatal("Delete succeeded through the injected faults")
	}
	if n := fake.Count("forwardingRules"); n != 0 {
		t.Fatalf("%d forwarding rules left, want the Delete to have stopped after them", n)
	}
	listed, err := p.List(context.Background())
	if err != nil || len(listed) != 1 || !slices.Equal(listed[0].Clusters, lb.Clusters) {
		t.Fatalf("List = %+v, %v; want %s in %v", listed, err, lb.Gateway, lb.Clusters)
	}
	if err := p.Delete(context.Background(), &listed[0]); err != nil {
		t.Fatal(err)
	}
	if diff := gocmp.Diff(map[string]int{"addresses": 1}, counts(fake)); diff != "" {
		t.Errorf("left after Delete (-want: the reserved address +got):\n%s", diff)
	}
}

// TestFirewallTargetTags: without network tags a passthrough gateway's firewall rules admit their
// clients to every VM of the network and its status says so; once the member names its nodes'
// tags, the rules are replaced by rules targeting them (nothing untargeted is left, nothing
// leaks) and the warning goes; the class's tags serve members that name none.
func TestFirewallTargetTags(t *testing.T) {
	lb, members := goldenModel(t, "network")
	p, fake := testProvider(t, members)
	rules := func() map[string][]string {
		out := map[string][]string{}
		for _, k := range fake.Keys("firewalls") {
			fw, ok := gcpfake.Get[*computepb.Firewall](fake, k)
			if !ok {
				t.Fatalf("firewall %s unreadable", k)
			}
			var allowed []string
			for _, a := range fw.GetAllowed() {
				allowed = append(allowed, a.GetIPProtocol()+":"+strings.Join(a.GetPorts(), ","))
			}
			out[strings.Join(allowed, " ")] = fw.GetTargetTags()
		}
		return out
	}
	warned := func(st providers.Status) bool { return strings.Contains(st.Message, "to every VM of network default") }

	st := ensure(t, p, lb)
	if diff := gocmp.Diff(map[string][]string{"tcp:53": nil, "udp:53": nil}, rules()); diff != "" {
		t.Errorf("untagged rules (-want +got):\n%s", diff)
	}
	if !warned(st) {
		t.Errorf("status message %q does not say the rules reach every VM", st.Message)
	}

	for _, step := range []struct {
		name          string
		class, member []string
		want          []string
	}{
		{name: "member tags", member: []string{"gke-east-b", "gke-east-a"}, want: []string{"gke-east-a", "gke-east-b"}},
		{name: "class tags", class: []string{"dns-nodes"}, want: []string{"dns-nodes"}},
		{name: "member tags override the class's", class: []string{"dns-nodes"}, member: []string{"gke-east-a"}, want: []string{"gke-east-a"}},
	} {
		m := members["east"]
		m.NetworkTags = step.member
		members["east"] = m // the provider reads the members on every Ensure
		o := mustDecode(t, lb.Parameters)
		o.TargetTags = step.class
		params, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		lb.Parameters = params
		st := ensure(t, p, lb)
		if diff := gocmp.Diff(map[string][]string{"tcp:53": step.want, "udp:53": step.want}, rules()); diff != "" {
			t.Errorf("%s: rules (-want +got):\n%s", step.name, diff)
		}
		if warned(st) {
			t.Errorf("%s: status message %q still warns", step.name, st.Message)
		}
	}
	if err := p.Delete(context.Background(), lb); err != nil {
		t.Fatal(err)
	}
	if c := counts(fake); len(c) != 0 {
		t.Errorf("after Delete: %v", c)
	}
}

// TestAccountsIdlePruned: the clients of a project nobody asked for within the idle TTL are closed
// and dropped the next time any project is asked for; clients in use are kept, and a dropped
// project comes back with new clients.
func TestAccountsIdlePruned(t *testing.T) {
	p, _ := testProvider(t, nil)
	a := p.accounts
	now := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	a.now = func() time.Time { return now }
	ctx := context.Background()
	in := func(project string) v1alpha1.GCPOptions {
		return v1alpha1.GCPOptions{Project: project, Endpoint: "http://127.0.0.1:1"}
	}
	get := func(project string) *clients {
		t.Helper()
		c, _, err := a.clients(ctx, in(project))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	held := func() []string {
		a.mu.Lock()
		defer a.mu.Unlock()
		return slices.Sorted(maps.Keys(a.byKey))
	}
	mine, other := get("my-project"), get("other-project")
	now = now.Add(40 * time.Minute)
	if get("my-project") != mine {
		t.Fatal("clients in use were replaced")
	}
	now = now.Add(30 * time.Minute) // other-project idle 70 minutes, my-project 30
	if get("my-project") != mine {
		t.Fatal("clients in use were replaced")
	}
	if got := held(); len(got) != 1 || !strings.Contains(got[0], "project my-project,") {
		t.Errorf("clients held %v, want my-project's only", got)
	}
	if get("other-project") == other {
		t.Error("a dropped project came back with its old clients")
	}
}
