package aws

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/fleetgate/fleetgate/dataplane/ir"
	"github.com/fleetgate/fleetgate/providers"
)

// routesModel is a gateway with n routes on one host, each to its own backend in two clusters.
func routesModel(n int) *providers.LoadBalancer {
	var routes []ir.Route
	for i := range n {
		routes = append(routes, numberedRoute(i))
	}
	return testModel(httpListener(80,
		ir.VirtualHost{Hostname: "*", Routes: routes},
		ir.VirtualHost{Hostname: "a.example.com", Routes: []ir.Route{numberedRoute(1000)}},
	))
}

func numberedRoute(i int) ir.Route {
	return ir.Route{
		Name:  fmt.Sprintf("HTTPRoute/infra/r%d/0/0", i),
		Match: ir.Match{Path: prefix(fmt.Sprintf("/r%d", i))},
		Backends: []ir.Backend{backend(fmt.Sprintf("hub/infra/svc%d:80", i), 1,
			ep("hub", fmt.Sprintf("10.0.0.%d", i%250+1), 8080, 0), ep("east", fmt.Sprintf("10.0.1.%d", i%250+1), 8080, 2))},
	}
}

// TestBuildDeterministic: the same input gives the same Stack, whatever the order of maps,
// clusters, virtual hosts and endpoints.
func TestBuildDeterministic(t *testing.T) {
	opts := albOptions()
	opts.Tags = map[string]string{"a": "1", "b": "2", "c": "3"}
	first := routesModel(20)
	first.Labels = map[string]string{"x": "1", "y": "2"}
	want, err := Build(first, opts, testNetwork(), testFleet)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 20 {
		m := routesModel(20)
		m.Labels = map[string]string{"y": "2", "x": "1"}
		slices.Reverse(m.Clusters)
		l := &m.Routing.Listeners[0]
		slices.Reverse(l.VirtualHosts)
		for _, vh := range l.VirtualHosts {
			for _, r := range vh.Routes {
				for _, be := range r.Backends {
					rng.Shuffle(len(be.Endpoints), func(i, j int) { be.Endpoints[i], be.Endpoints[j] = be.Endpoints[j], be.Endpoints[i] })
				}
			}
		}
		net := testNetwork()
		slices.Reverse(net.Subnets)
		got, err := Build(m, opts, net, testFleet)
		if err != nil {
			t.Fatalf("Build: %v", err)
		}
		if diff := gocmp.Diff(want, got); diff != "" {
			t.Fatalf("Build of the same input differs (-first +again):\n%s", diff)
		}
	}
}

// TestBuildStable: adding a route to a gateway of 50 leaves every other rule, target group and
// name as it was, and (through assignPriorities) every other rule's priority.
func TestBuildStable(t *testing.T) {
	before, err := Build(routesModel(50), albOptions(), testNetwork(), testFleet)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	m := routesModel(50)
	vh := &m.Routing.Listeners[0].VirtualHosts[0]
	vh.Routes = slices.Insert(vh.Routes, 25, numberedRoute(500))
	after, err := Build(m, albOptions(), testNetwork(), testFleet)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	if before.LoadBalancer.Name != after.LoadBalancer.Name {
		t.Errorf("load balancer renamed %s → %s", before.LoadBalancer.Name, after.LoadBalancer.Name)
	}
	if got, want := len(after.Rules), len(before.Rules)+1; got != want {
		t.Fatalf("%d rules after adding one to %d", got, len(before.Rules))
	}
	rules := map[string]Rule{}
	for _, r := range after.Rules {
		rules[r.ID] = r
	}
	for _, r := range before.Rules {
		if diff := gocmp.Diff(r, rules[r.ID]); diff != "" {
			t.Errorf("rule %s (%s) changed (-before +after):\n%s", r.ID, r.Origin, diff)
		}
	}
	tgs := map[string]TargetGroup{}
	for _, tg := range after.TargetGroups {
		tgs[tg.ID] = tg
	}
	for _, tg := range before.TargetGroups {
		if diff := gocmp.Diff(tg, tgs[tg.ID]); diff != "" {
			t.Errorf("target group %s changed (-before +after):\n%s", tg.ID, diff)
		}
	}
	if got, want := len(after.TargetGroups), len(before.TargetGroups)+2; got != want {
		t.Errorf("%d target groups, want %d (the new backend in two clusters)", got, want)
	}
	old := assignPriorities(ruleIDs(before), nil)
	renewed := assignPriorities(ruleIDs(after), old)
	for id, p := range old {
		if renewed[id] != p {
			t.Errorf("rule %s: priority %d → %d", id, p, renewed[id])
		}
	}
}

func ruleIDs(s *Stack) []string {
	ids := make([]string, len(s.Rules))
	for i, r := range s.Rules {
		ids[i] = r.ID
	}
	return ids
}
