package aws

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

	"github.com/google/go-cmp/cmp"

	"github.com/fleetgate/fleetgate/dataplane/ir"
	"github.com/fleetgate/fleetgate/providers"
	"github.com/fleetgate/fleetgate/providers/aws/mototest"
	"github.com/fleetgate/fleetgate/providers/providertest"
)

// The kill test's child process is this test binary run again with envKillChild set (TestMain):
// it provisions and deletes the killModels in a loop until the parent kills it.
const (
	envKillChild = "FLEETGATE_AWS_KILL_CHILD" // the moto endpoint
	envKillFleet = "FLEETGATE_AWS_KILL_FLEET"
	envKillVPC   = "FLEETGATE_AWS_KILL_VPC"
	envKillMode  = "FLEETGATE_AWS_KILL_MODE" // killMixed or killDeletes
	envKillCert  = "FLEETGATE_AWS_KILL_CERT" // the HTTPS gateway's PEM certificate and key
	envKillKey   = "FLEETGATE_AWS_KILL_KEY"
	// envKills is how many times TestKillDuringProvisioning kills the child (`make aws-kill`: 100).
	envKills = "FLEETGATE_AWS_KILLS"
)

// What the child does in each round: killMixed ensures most gateways and deletes a third of them
// (a different third each round); killDeletes ensures every gateway, then deletes every one.
const (
	killMixed   = "mixed"
	killDeletes = "deletes"
)

// killModels are a mixed set: two ALB gateways (one with four routes, one with HTTPS and a
// certificate imported to ACM) and two NLB gateways (TCP, UDP).
func killModels(vpc string, crt, key []byte) []*providers.LoadBalancer {
	alb := json.RawMessage(`{"loadBalancerType":"application","vpc":"` + vpc + `"}`)
	nlb := json.RawMessage(`{"loadBalancerType":"network","vpc":"` + vpc + `"}`)
	return []*providers.LoadBalancer{
		httpModel("kill-a", alb, nil, nil, "/", "/api", "/static", "/v2"),
		httpModel("kill-b", alb, crt, key),
		l4Model("kill-c", nlb, ir.ProtocolTCP, 7000),
		l4Model("kill-d", nlb, ir.ProtocolUDP, 5353),
	}
}

// runKillChild is the child's main. It announces every operation on stdout ("ensure GW",
// "delete GW", then "done") so that the parent can aim its kills.
func runKillChild(endpoint string) int {
	p, err := New(testOptions(endpoint, os.Getenv(envKillFleet)))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	models := killModels(os.Getenv(envKillVPC), []byte(os.Getenv(envKillCert)), []byte(os.Getenv(envKillKey)))
	deletes := os.Getenv(envKillMode) == killDeletes
	out := bufio.NewWriter(os.Stdout)
	announce := func(s string) {
		fmt.Fprintln(out, s)
		_ = out.Flush()
	}
	ctx := context.Background()
	for round := 0; ; round++ {
		for i, lb := range models {
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

// newKillPlan aims at a deletion or a provisioning step; the delays cover one operation of moto's.
func newKillPlan(rng *rand.Rand, deleting bool) killPlan {
	if deleting {
		return killPlan{mode: killDeletes, op: "delete", n: 1 + rng.IntN(4), delay: time.Duration(rng.IntN(250)) * time.Millisecond}
	}
	return killPlan{mode: killMixed, op: "ensure", n: 1 + rng.IntN(6), delay: time.Duration(rng.IntN(400)) * time.Millisecond}
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
// gateways, at random points (FLEETGATE_AWS_KILLS times, 10 by default; every other time while it
// deletes, the last time while it provisions), then lets a fresh provider converge: the account
// must hold exactly what a clean run (another fleet) makes, a second pass must make no mutating
// call, and Delete must leave nothing of either fleet.
func TestKillDuringProvisioning(t *testing.T) {
	m := mototest.Require(t, moto)
	kills := 10
	if v := os.Getenv(envKills); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("%s=%q: %v", envKills, v, err)
		}
		kills = n
	}
	vpc := motoVPC(t, m.URL)
	fleet := "kill-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	cert := selfSigned(t, "kill-b.example.com", 1)
	env := append(os.Environ(), envKillChild+"="+m.URL, envKillFleet+"="+fleet, envKillVPC+"="+vpc,
		envKillCert+"="+string(cert.CertPEM), envKillKey+"="+string(cert.KeyPEM))
	rng := rand.New(rand.NewPCG(uint64(kills), 17))
	start := time.Now()
	during := map[string]int{}
	for i := range kills {
		during[killOnce(t, env, newKillPlan(rng, (kills-i)%2 == 0))]++
	}
	t.Logf("%d kills in %v, killed during: %v", kills, time.Since(start).Round(time.Millisecond), during)
	left, dups := kindCounts(inventory(t, m.URL, fleet)), 0
	for _, rs := range describeFleet(t, m.URL, fleet) {
		dups += len(slices.DeleteFunc(rs, func(r string) bool { id, _, _ := strings.Cut(r, ": "); return !strings.Contains(id, "#") }))
	}
	t.Logf("what the kills left: %v, duplicates among it: %d", left, dups)

	models := killModels(vpc, cert.CertPEM, cert.KeyPEM)
	killed := converge(t, m.URL, fleet, models)
	clean := converge(t, m.URL, fleet+"-clean", models)
	if d := cmp.Diff(clean, killed); d != "" {
		t.Errorf("after %d kills the account differs from a clean run's (-clean +killed):\n%s", kills, d)
	}
	for _, f := range []string{fleet, fleet + "-clean"} {
		p, err := New(testOptions(m.URL, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, lb := range models {
			if err := p.Delete(t.Context(), lb); err != nil {
				t.Fatalf("fleet %s: Delete %s: %v", f, lb.Gateway, err)
			}
		}
		left := inventory(t, m.URL, f)
		t.Logf("fleet %s: leaked after Delete: %v", f, kindCounts(left))
		if len(left) > 0 {
			t.Errorf("fleet %s: left after Delete: %v", f, left)
		}
		if owned, err := p.List(t.Context()); err != nil || len(owned) > 0 {
			t.Errorf("fleet %s: List after Delete = %v, %v; want nothing", f, owned, err)
		}
	}
	t.Logf("kills, convergence and cleanup took %v", time.Since(start).Round(time.Millisecond))
}

// converge Ensures models with a fresh provider of fleet until each is ready (a new load balancer
// is active on its second look), checks that one more pass makes no mutating call, and returns
// the fleet's resources by gateway, described so that two fleets compare (no ARNs or names).
func converge(t *testing.T, endpoint, fleet string, models []*providers.LoadBalancer) map[string][]string {
	t.Helper()
	shim := mototest.NewFaults(endpoint)
	defer shim.Close()
	p, err := New(testOptions(shim.URL(), fleet))
	if err != nil {
		t.Fatal(err)
	}
	for _, lb := range models {
		var st providers.Status
		for attempt := 0; attempt < 3 && !st.Ready; attempt++ {
			var err error
			if st, err = p.Ensure(t.Context(), lb); err != nil {
				t.Fatalf("fleet %s: Ensure %s: %v", fleet, lb.Gateway, err)
			}
		}
		if !st.Ready {
			t.Fatalf("fleet %s: %s not ready after 3 Ensures: %+v", fleet, lb.Gateway, st)
		}
	}
	shim.Reset()
	for _, lb := range models {
		if _, err := p.Ensure(t.Context(), lb); err != nil {
			t.Fatalf("fleet %s: Ensure %s again: %v", fleet, lb.Gateway, err)
		}
	}
	var mutations []string
	shim.Count(func(r mototest.Request) bool {
		if r.Mutating() {
			mutations = append(mutations, r.Action)
		}
		return false
	})
	if len(mutations) > 0 {
		t.Errorf("fleet %s: a pass over converged gateways made mutating calls: %v", fleet, mutations)
	}
	return describeFleet(t, endpoint, fleet)
}

// describeFleet is the fleet's resources by gateway, each as its stable ID and description, so
// that two fleets compare (no ARNs or names) and a duplicate shows as an ID with "#2".
func describeFleet(t *testing.T, endpoint, fleet string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, r := range inventory(t, endpoint, fleet) {
		out[r.gateway] = append(out[r.gateway], r.id+": "+r.what)
	}
	for k := range out {
		slices.Sort(out[k])
	}
	return out
}

// kindCounts counts resources by kind (lb, listener, rule, tg, sg, certificate).
func kindCounts(rs []resource) map[string]int {
	out := map[string]int{}
	for _, r := range rs {
		kind, _, _ := strings.Cut(r.what, " ")
		out[kind]++
	}
	return out
}
