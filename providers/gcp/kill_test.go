package gcp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/compute/apiv1/computepb"
	gocmp "github.com/google/go-cmp/cmp"
	"google.golang.org/api/option"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/dataplane/ir"
	"github.com/fleetgate/fleetgate/providers"
	"github.com/fleetgate/fleetgate/providers/gcp/gcpfake"
	"github.com/fleetgate/fleetgate/providers/providertest"
)

// The kill test's child process is this test binary run again with envKillChild set (TestMain):
// it provisions and deletes the killModels in a loop until the parent kills it. The fake runs in
// the parent, so that what the child made outlives it.
const (
	envKillChild = "FLEETGATE_GCP_KILL_CHILD" // the fake's URL
	envKillFleet = "FLEETGATE_GCP_KILL_FLEET"
	envKillMode  = "FLEETGATE_GCP_KILL_MODE" // killMixed or killDeletes
	// The HTTPS gateway's two certificates (PEM), which the child rotates between every round.
	envKillCerts = "FLEETGATE_GCP_KILL_CERTS"
	// envKills is how many times TestKillDuringProvisioning kills the child (`make gcp-kill`: 100).
	envKills = "FLEETGATE_GCP_KILLS"
)

// What the child does in each round: killMixed ensures most gateways and deletes a third of them
// (a different third each round); killDeletes ensures every gateway, then deletes every one.
const (
	killMixed   = "mixed"
	killDeletes = "deletes"
)

// The project and region the kill test's and the benchmark's gateways live in.
const (
	killProject = "kill-project"
	killRegion  = "europe-west1"
)

// killMembers are the member clusters of the kill test's gateways: hub in one zone, east (in a
// network of its own) in two.
var killMembers = map[string]Member{
	"hub":  {Zones: []string{"europe-west1-b"}},
	"east": {Network: "east-vpc", Zones: []string{"us-east1-b", "us-east1-c"}},
}

// killOptions are the options of a provider of fleet talking to the fake at opts, with short retries.
func killOptions(fleet string, opts []option.ClientOption) Options {
	return Options{
		Fleet:         fleet,
		Defaults:      v1alpha1.GCPOptions{Project: killProject, Region: killRegion},
		ClientOptions: opts,
		Retries:       testRetries,
		Members: func(context.Context) (map[string]v1alpha1.MemberClusterSpec, error) {
			out := map[string]v1alpha1.MemberClusterSpec{}
			for name, m := range killMembers {
				out[name] = v1alpha1.MemberClusterSpec{Zones: m.Zones, Provider: v1alpha1.ProviderHints{Network: m.Network}}
			}
			return out, nil
		},
	}
}

// killModels are a mixed set of fleet's gateways: a global L7 gateway with four routes to
// backends in both members (NEGs per cluster and zone), a global one with HTTPS and a certificate,
// a regional L7 one on the fleet's reserved address (reservedAddress: the forwarding rule is then
// the only resource Ensure keeps the clusters current on), and network TCP and UDP ones. round
// moves: odd rounds take the second certificate and move east's endpoints out of us-east1-c, so
// that kills land in rotations and in NEG moves between zones.
func killModels(fleet string, certs []ir.Certificate, round int) []*providers.LoadBalancer {
	eastZone := "us-east1-c"
	if round%2 == 1 {
		eastZone = "us-east1-b"
	}
	web := ir.Backend{Name: "apps/web:80", Weight: 1, Endpoints: []ir.Endpoint{
		{Address: "10.0.0.4", Port: 8080, Cluster: "hub", Node: "hub-a"},
		{Address: "10.0.0.5", Port: 8080, Cluster: "hub", Node: "hub-b"},
		{Address: "192.168.0.4", Port: 8080, Cluster: "east", Node: "east-a", Zone: "us-east1-b"},
		{Address: "192.168.0.5", Port: 8080, Cluster: "east", Node: "east-b", Zone: eastZone},
	}}
	api := ir.Backend{Name: "apps/api:80", Weight: 1, Endpoints: []ir.Endpoint{
		{Address: "10.0.0.6", Port: 9090, Cluster: "hub", Node: "hub-a"},
		{Address: "192.168.0.6", Port: 9090, Cluster: "east", Node: "east-b", Zone: eastZone},
	}}
	global := json.RawMessage(`{"loadBalancerType":"global"}`)
	a := l7Model("kill-a", global, 80, nil, []string{"east", "hub"}, routes("kill-a", []ir.Backend{web, api}, "/", "/api", "/static", "/v2")...)
	b := l7Model("kill-b", global, 80, certs[round%2:round%2+1], []string{"hub"}, routes("kill-b", []ir.Backend{web}, "/")...)
	c := l7Model("kill-c", json.RawMessage(`{"loadBalancerType":"regional"}`), 8080, nil, []string{"hub"},
		routes("kill-c", []ir.Backend{{Name: web.Name, Weight: 1, Endpoints: web.Endpoints[:2]}}, "/")...)
	c.Addresses = []providers.Address{{Type: "NamedAddress", Value: reservedAddress(fleet)}}
	network := json.RawMessage(`{"loadBalancerType":"network"}`)
	return []*providers.LoadBalancer{a, b, c, l4Model("kill-d", network, ir.ProtocolTCP, 7000), l4Model("kill-e", network, ir.ProtocolUDP, 5353)}
}

// reservedAddress is the name of the regional address reserved for fleet's kill-c, as a user would.
func reservedAddress(fleet string) string { return "kill-c-" + shortHash(8, fleet) }

// routes are one route per path, each to backends.
func routes(gateway string, backends []ir.Backend, paths ...string) []ir.Route {
	var out []ir.Route
	for i, p := range paths {
		out = append(out, ir.Route{Name: fmt.Sprintf("HTTPRoute/apps/%s/%d/0", gateway, i),
			Match: ir.Match{Path: &ir.StringMatch{Type: ir.MatchPrefix, Value: p}}, Backends: backends})
	}
	return out
}

// l7Model is a gateway of an Application Load Balancer class: HTTP on port, and HTTPS on 443
// when certs are given, both with rs.
func l7Model(name string, params json.RawMessage, port uint32, certs []ir.Certificate, clusters []string, rs ...ir.Route) *providers.LoadBalancer {
	key := "apps/" + name
	vh := []ir.VirtualHost{{Hostname: name + ".example.com", Routes: rs}}
	lb := &providers.LoadBalancer{Gateway: key, Namespace: "apps", Name: name, Provider: "gcp", Scope: "Fleet",
		Clusters: clusters, Parameters: params,
		Routing: &ir.Config{Gateway: key, Listeners: []ir.Listener{{Name: "http", Port: port, Protocol: ir.ProtocolHTTP, VirtualHosts: vh}}}}
	if len(certs) > 0 {
		lb.Routing.Listeners = append(lb.Routing.Listeners, ir.Listener{Name: "https", Port: 443, Protocol: ir.ProtocolHTTPS,
			Certificates: certs, VirtualHosts: vh})
	}
	return lb
}

// l4Model is a gateway of the network class: one TCP or UDP listener to two endpoints in hub.
func l4Model(name string, params json.RawMessage, protocol ir.Protocol, port uint32) *providers.LoadBalancer {
	key := "hub/apps/" + name
	be := ir.Backend{Name: fmt.Sprintf("hub/apps/%s:%d", name, port), Weight: 1, Endpoints: []ir.Endpoint{
		{Address: "10.0.1.10", Port: port, Cluster: "hub", Node: "hub-a"},
		{Address: "10.0.1.11", Port: port, Cluster: "hub", Node: "hub-b"},
	}}
	return &providers.LoadBalancer{Gateway: key, Namespace: "apps", Name: name, Provider: "gcp", Scope: "Cluster",
		Clusters: []string{"hub"}, Parameters: params,
		Routing: &ir.Config{Gateway: key, Listeners: []ir.Listener{{Name: "l4", Port: port, Protocol: protocol,
			L4: &ir.L4Route{Name: "TCPRoute/apps/" + name + "/0", Backends: []ir.Backend{be}}}}}}
}

// killCertificates are two certificates of kill-b.example.com, as the child gets them (JSON).
func killCertificates(t testing.TB) (env string, certs []ir.Certificate) {
	t.Helper()
	for range 2 {
		crt, key := selfSigned(t, "kill-b.example.com")
		certs = append(certs, ir.Certificate{Name: "apps/kill-b-tls", Hostnames: []string{"kill-b.example.com"}, CertPEM: crt, KeyPEM: key})
	}
	b, err := json.Marshal(certs)
	if err != nil {
		t.Fatal(err)
	}
	return string(b), certs
}

// runKillChild is the child's main. It announces every operation on stdout ("ensure GW",
// "delete GW", then "done") so that the parent can aim its kills.
func runKillChild(endpoint string) int {
	var certs []ir.Certificate
	if err := json.Unmarshal([]byte(os.Getenv(envKillCerts)), &certs); err != nil || len(certs) != 2 {
		fmt.Fprintf(os.Stderr, "%s: want two certificates: %v\n", envKillCerts, err)
		return 2
	}
	p, err := New(killOptions(os.Getenv(envKillFleet), []option.ClientOption{option.WithEndpoint(endpoint), option.WithoutAuthentication()}))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	deletes := os.Getenv(envKillMode) == killDeletes
	out := bufio.NewWriter(os.Stdout)
	announce := func(s string) {
		fmt.Fprintln(out, s)
		_ = out.Flush()
	}
	ctx := context.Background()
	for round := 0; ; round++ {
		for i, lb := range killModels(os.Getenv(envKillFleet), certs, round) {
			if (!deletes && (round+i)%3 == 2) || (deletes && round%2 == 1) {
				announce("delete " + lb.Name)
				_ = p.Delete(ctx, lb) // errors are retried by the next round
			} else {
				announce("ensure " + lb.Name)
				_, _ = p.Ensure(ctx, lb)
			}
			announce("done")
		}
	}
}

// killPlan is where the parent kills the child: delay after the n-th announcement of op.
type killPlan struct {
	mode  string
	op    string // "ensure" or "delete"
	n     int
	delay time.Duration
}

// newKillPlan aims at a deletion or a provisioning step; the delays cover one operation against
// the fake (an Ensure takes 4-30 ms, a Delete 4-15 ms).
func newKillPlan(rng *rand.Rand, deleting bool) killPlan {
	if deleting {
		return killPlan{mode: killDeletes, op: "delete", n: 1 + rng.IntN(5), delay: time.Duration(rng.IntN(15_000)) * time.Microsecond}
	}
	return killPlan{mode: killMixed, op: "ensure", n: 1 + rng.IntN(8), delay: time.Duration(rng.IntN(30_000)) * time.Microsecond}
}

// killOnce starts a child, kills it as plan says and returns what it was doing when killed:
// "ensure kill-b", "delete kill-c", or "between" operations.
func killOnce(t *testing.T, env []string, plan killPlan) string {
	t.Helper()
	last := providertest.KillOnce(t, providertest.KillPlan{Env: slices.Concat(env, []string{envKillMode + "=" + plan.mode}),
		Op: plan.op, N: plan.n, Delay: plan.delay})
	if last == "done" || last == "" {
		return "between"
	}
	return last
}

// TestKillDuringProvisioning SIGKILLs a process that provisions and deletes a mixed set of
// gateways, at random points (FLEETGATE_GCP_KILLS times, 10 by default; every other time while it
// deletes, the last time while it provisions); after each kill List must find every gateway left
// with its clusters. Then a fresh provider converges: the project must hold exactly what a clean
// run (another fleet) makes, a second pass must make no mutating call, and Delete must leave
// nothing of either fleet.
func TestKillDuringProvisioning(t *testing.T) {
	kills := 10
	if v := os.Getenv(envKills); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("%s=%q: %v", envKills, v, err)
		}
		kills = n
	}
	fake := gcpfake.NewServer(t)
	fleet := "kill-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	for _, f := range []string{fleet, fleet + "-clean"} {
		insertAddress(t, fake, killProject, killRegion, reservedAddress(f))
	}
	certsEnv, certs := killCertificates(t)
	env := append(os.Environ(), envKillChild+"="+fake.URL(), envKillFleet+"="+fleet, envKillCerts+"="+certsEnv)
	rng := rand.New(rand.NewPCG(uint64(kills), 17))
	start := time.Now()
	during := map[string]int{}
	for i := range kills {
		during[killOnce(t, env, newKillPlan(rng, (kills-i)%2 == 0))]++
		checkListed(t, fake, fleet, killModels(fleet, certs, 0))
	}
	t.Logf("%d kills in %v, killed during: %v", kills, time.Since(start).Round(time.Millisecond), during)
	left, dups := kindCounts(inventory(t, fake, fleet)), 0
	for _, rs := range describeFleet(t, fake, fleet) {
		dups += len(slices.DeleteFunc(rs, func(r string) bool { id, _, _ := strings.Cut(r, ": "); return !strings.Contains(id, "#") }))
	}
	t.Logf("what the kills left: %v, duplicates among it: %d", left, dups)

	killed := converge(t, fake, fleet, killModels(fleet, certs, 0))
	clean := converge(t, fake, fleet+"-clean", killModels(fleet+"-clean", certs, 0))
	if d := gocmp.Diff(clean, killed); d != "" {
		t.Errorf("after %d kills the project differs from a clean run's (-clean +killed):\n%s", kills, d)
	}
	for _, f := range []string{fleet, fleet + "-clean"} {
		p, err := New(killOptions(f, fake.NoAuth()))
		if err != nil {
			t.Fatal(err)
		}
		for _, lb := range killModels(f, certs, 0) {
			if err := p.Delete(t.Context(), lb); err != nil {
				t.Fatalf("fleet %s: Delete %s: %v", f, lb.Gateway, err)
			}
		}
		left := inventory(t, fake, f)
		t.Logf("fleet %s: leaked after Delete: %v", f, kindCounts(left))
		if len(left) > 0 {
			t.Errorf("fleet %s: left after Delete: %v", f, left)
		}
		if owned, err := p.List(t.Context()); err != nil || len(owned) > 0 {
			t.Errorf("fleet %s: List after Delete = %v, %v; want nothing", f, owned, err)
		}
		p.Close()
	}
	if diff := gocmp.Diff(map[string]int{"addresses": 2}, counts(fake)); diff != "" {
		t.Errorf("the project holds more than the two reserved addresses (-want +got):\n%s", diff)
	}
	t.Logf("kills, convergence and cleanup took %v", time.Since(start).Round(time.Millisecond))
}

// checkListed checks, after each kill, that List finds each of fleet's gateways with resources
// left in the fake with the clusters of its model: the orphan sweep deletes a gateway only in
// clusters it knows, so a gateway listed without them would stay forever once its Gateway objects
// are gone (the operator was down when they were deleted).
func checkListed(t *testing.T, fake *gcpfake.Server, fleet string, models []*providers.LoadBalancer) {
	t.Helper()
	p, err := New(killOptions(fleet, fake.NoAuth()))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	listed, err := p.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	left := describeFleet(t, fake, fleet)
	if len(listed) != len(left) {
		t.Errorf("List found %d gateways, the fake holds resources of %d", len(listed), len(left))
	}
	for _, lb := range listed {
		i := slices.IndexFunc(models, func(m *providers.LoadBalancer) bool { return m.Gateway == lb.Gateway })
		if i < 0 || !slices.Equal(lb.Clusters, models[i].Clusters) {
			t.Errorf("List found %s in clusters %v, want those of its model", lb.Gateway, lb.Clusters)
		}
	}
}

// converge Ensures models with a fresh provider of fleet until each is ready, checks that one
// more pass makes no mutating call, and returns the fleet's resources by gateway, described so
// that two fleets compare (no names, links or addresses).
func converge(t *testing.T, fake *gcpfake.Server, fleet string, models []*providers.LoadBalancer) map[string][]string {
	t.Helper()
	p, err := New(killOptions(fleet, fake.NoAuth()))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, lb := range models {
		var st providers.Status
		for attempt := 0; attempt < 3 && !st.Ready; attempt++ {
			if st, err = p.Ensure(t.Context(), lb); err != nil {
				t.Fatalf("fleet %s: Ensure %s: %v", fleet, lb.Gateway, err)
			}
		}
		if !st.Ready {
			t.Fatalf("fleet %s: %s not ready after 3 Ensures: %+v", fleet, lb.Gateway, st)
		}
	}
	fake.ResetCalls()
	for _, lb := range models {
		if _, err := p.Ensure(t.Context(), lb); err != nil {
			t.Fatalf("fleet %s: Ensure %s again: %v", fleet, lb.Gateway, err)
		}
	}
	if m := mutations(fake); len(m) > 0 {
		t.Errorf("fleet %s: a pass over converged gateways made mutating calls: %v", fleet, m)
	}
	return describeFleet(t, fake, fleet)
}

// resource is one resource of a fleet in the fake, described without what differs between fleets.
type resource struct {
	gateway string
	// id is the kind, scope and ownership record's resource ID ("backendService global bs/…").
	id string
	// what is the resource as stored, with names of the fleet made "fg-FLEET-" and without what the
	// fake assigns (IDs, links, fingerprints, addresses), a NEG's endpoints,
	// and for a forwarding rule not on its gateway's address, its IP.
	what string
}

// inventory lists every resource of fleet in the fake, found by its ownership record.
func inventory(t *testing.T, fake *gcpfake.Server, fleet string) []resource {
	t.Helper()
	var out []resource
	prefix, label := fleetPrefix(fleet), shortHash(fleetHashLen, fleet)
	// The IPs of the gateways' own addresses by gateway and scope: a forwarding rule must serve on
	// its gateway's address, whatever IP the fake allocated to it (one on a reserved address is
	// not compared).
	ips := map[string]string{}
	for _, coll := range allCollections {
		for _, key := range fake.Keys(coll) {
			m, ok := gcpfake.Get[proto.Message](fake, key)
			if !ok {
				continue // deleted since Keys
			}
			o, ok := parseOwner(m.(named).GetDescription())
			if !ok || o.Fleet != fleet {
				continue
			}
			parts := strings.Split(key, "/") // projects/P/global/C/N or projects/P/{regions,zones}/S/C/N
			scope := strings.Join(parts[2:len(parts)-2], "/")
			what := normalized(t, m, prefix, label) + endpointsOf(fake, key)
			switch v := m.(type) {
			case *computepb.Address:
				ips[o.Gateway+" "+scope] = v.GetAddress()
			case *computepb.ForwardingRule:
				if own, ok := ips[o.Gateway+" "+scope]; ok && own != v.GetIPAddress() {
					what += " ip=" + v.GetIPAddress() + ", not the gateway's address " + own
				}
			}
			out = append(out, resource{gateway: o.Gateway, id: coll + " " + scope + " " + o.Resource, what: what})
		}
	}
	return out
}

// normalized is m as JSON (sorted keys) without the fields the fake assigns, with the fleet's
// name prefix and label made fleet-neutral.
func normalized(t *testing.T, m proto.Message, prefix, label string) string {
	t.Helper()
	b, err := protojson.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"id", "creationTimestamp", "selfLink", "fingerprint", "labelFingerprint", "description",
		"address", "IPAddress", "users", "status", "name"} {
		delete(v, f)
	}
	if b, err = json.Marshal(v); err != nil {
		t.Fatal(err)
	}
	s := strings.ReplaceAll(string(b), prefix, "fg-FLEET-")
	return strings.ReplaceAll(s, `"`+label+`"`, `"FLEET"`)
}

// endpointsOf lists a NEG's endpoints, sorted; "" for other kinds.
func endpointsOf(fake *gcpfake.Server, key string) string {
	if !strings.Contains(key, "/networkEndpointGroups/") {
		return ""
	}
	var eps []string
	for _, e := range fake.Endpoints(key) {
		eps = append(eps, endpointKey(e))
	}
	slices.Sort(eps)
	return " endpoints=" + strings.Join(eps, ",")
}

// describeFleet is the fleet's resources by gateway, each as its ID and description, so that two
// fleets compare and a duplicate (a second resource of one ID) shows as an ID with "#2".
func describeFleet(t *testing.T, fake *gcpfake.Server, fleet string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	seen := map[string]int{}
	for _, r := range inventory(t, fake, fleet) {
		id := r.gateway + " " + r.id
		seen[id]++
		if n := seen[id]; n > 1 {
			r.id += "#" + strconv.Itoa(n)
		}
		out[r.gateway] = append(out[r.gateway], r.id+": "+r.what)
	}
	for k := range out {
		slices.Sort(out[k])
	}
	return out
}

// kindCounts counts resources by collection.
func kindCounts(rs []resource) map[string]int {
	out := map[string]int{}
	for _, r := range rs {
		kind, _, _ := strings.Cut(r.id, " ")
		out[kind]++
	}
	return out
}
