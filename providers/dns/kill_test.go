package dns

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/external-dns/endpoint"

	"github.com/fleetgate/fleetgate/providers/dns/bindtest"
	"github.com/fleetgate/fleetgate/providers/providertest"
)

// The kill test's child is this test binary run again with envKillChild set (TestMain): it syncs
// killSet(0), killSet(1), killSet(2), ... against the BIND9 the parent started, until killed.
const (
	envKillChild  = "FLEETGATE_DNS_KILL_CHILD" // host:port:zone of the server
	envKillSecret = "FLEETGATE_DNS_KILL_SECRET"
)

// killSet is round's desired records: even rounds and odd rounds differ in targets, names,
// record types and owners, so that every pass creates, updates and deletes.
func killSet(round int) map[string][]*endpoint.Endpoint {
	names := func(prefix string, n int, mk func(string) *endpoint.Endpoint) []*endpoint.Endpoint {
		var eps []*endpoint.Endpoint
		for i := range n {
			eps = append(eps, mk(fmt.Sprintf("%s%d.example.test", prefix, i)))
		}
		return eps
	}
	if round%2 == 0 {
		return map[string][]*endpoint.Endpoint{
			"gw/k0": names("x", 5, func(n string) *endpoint.Endpoint { return a(n, "192.0.2.1") }),
			"gw/k1": names("y", 3, func(n string) *endpoint.Endpoint { return cname(n, "lb.example.net") }),
			"gw/k2": {a("z0.example.test", "192.0.2.7", "192.0.2.8")},
		}
	}
	return map[string][]*endpoint.Endpoint{
		"gw/k0": names("x", 3, func(n string) *endpoint.Endpoint { return a(n, "192.0.2.2") }),
		"gw/k2": {a("z0.example.test", "192.0.2.9")},
		"gw/k3": names("w", 4, func(n string) *endpoint.Endpoint { return a(n, "203.0.113.4", "203.0.113.5") }),
	}
}

func runKillChild() int {
	hostPort, zone, _ := strings.Cut(os.Getenv(envKillChild), "/")
	host, portStr, _ := strings.Cut(hostPort, ":")
	port, _ := strconv.Atoi(portStr)
	srv := &bindtest.Server{Host: host, Port: port, Zone: zone, Secret: os.Getenv(envKillSecret)}
	o := rfc2136Options(srv, func(o *Options) { o.DNS.MaxDeletesPerPass = new(int32(1000)); o.Log = logr.Discard() })
	p, err := New(context.Background(), o)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	out := bufio.NewWriter(os.Stdout)
	for round := 0; ; round++ {
		fmt.Fprintln(out, "sync")
		_ = out.Flush()
		_, _ = p.Sync(context.Background(), killSet(round)) // a failed pass is retried by the next
		fmt.Fprintln(out, "done")
		_ = out.Flush()
	}
}

// killOnce starts a child, lets it begin syncs passes, kills it delay later and tells whether
// the kill landed "during" a pass or "between" passes.
func killOnce(t *testing.T, env []string, syncs int, delay time.Duration) string {
	t.Helper()
	if providertest.KillOnce(t, providertest.KillPlan{Env: env, Op: "sync", N: syncs, Delay: delay}) == "sync" {
		return "during"
	}
	return "between"
}

// TestKillDuringSync SIGKILLs a process syncing alternating record sets to a real BIND9, 20
// times at random points, then syncs a third set with a fresh publisher: the zone must hold
// exactly that set, each record with its TXT ownership record (no orphan record, no orphan or
// lost ownership, no record lost), and a second pass must change nothing.
func TestKillDuringSync(t *testing.T) {
	srv := bindtest.Require(t, testZone, foreignRecords...)
	env := append(os.Environ(), envKillChild+"="+srv.Addr+"/"+srv.Zone, envKillSecret+"="+srv.Secret)
	rng := rand.New(rand.NewPCG(20, 26))
	during := map[string]int{}
	for i := range 20 {
		during[killOnce(t, env, 1+rng.IntN(6), time.Duration(rng.IntN(8000))*time.Microsecond)]++
		if o := orphans(zoneRecords(t, srv)); len(o) > 0 {
			t.Errorf("after kill %d, records and ownership records without each other: %v", i+1, o)
		}
	}
	t.Logf("20 kills, killed: %v", during)

	final := map[string][]*endpoint.Endpoint{
		"gw/k0": {a("x0.example.test", "198.51.100.1"), a("x5.example.test", "198.51.100.1")},
		"gw/k1": {cname("y0.example.test", "other.example.net")},
		"gw/k3": {},
	}
	p := newRFC2136(t, srv, func(o *Options) { o.DNS.MaxDeletesPerPass = new(int32(1000)) })
	res, err := p.Sync(t.Context(), final)
	if err != nil {
		t.Fatal(err)
	}
	for key, o := range res.Owners {
		if len(o.Conflicts)+len(o.Held)+len(o.Refused) > 0 {
			t.Errorf("%s after the kills: conflicts %v, held %v, refused %v", key, o.Conflicts, o.Held, o.Refused)
		}
	}
	want := slices.Concat(foreignZone, []string{
		`a-x0.example.test. TXT ` + ownerTXT("gw/k0"),
		`a-x5.example.test. TXT ` + ownerTXT("gw/k0"),
		`cname-y0.example.test. TXT ` + ownerTXT("gw/k1"),
		"x0.example.test. A 198.51.100.1",
		"x5.example.test. A 198.51.100.1",
		"y0.example.test. CNAME other.example.net.",
	})
	slices.Sort(want)
	if d := cmp.Diff(want, zoneRecords(t, srv)); d != "" {
		t.Errorf("zone after the kills and one pass (-want +got):\n%s", d)
	}
	res, err = p.Sync(t.Context(), final)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(Result{}, res); d != "" {
		t.Errorf("second pass (-want +got):\n%s", d)
	}
}

// orphans are the zone's records (zoneRecords lines) of fleetgate without a TXT ownership
// record, and its ownership records without a record; manual.example.test is nobody's.
func orphans(zone []string) []string {
	records, owned := map[string]bool{}, map[string]bool{}
	for _, l := range zone {
		f := strings.Fields(l)
		switch name, typ := f[0], f[1]; {
		case typ == "TXT":
			owned[name] = true
		case name != "manual.example.test.":
			records[strings.ToLower(typ)+"-"+name] = true
		}
	}
	var out []string
	for r := range records {
		if !owned[r] {
			out = append(out, "record "+r)
		}
	}
	for o := range owned {
		if !records[o] {
			out = append(out, "ownership "+o)
		}
	}
	slices.Sort(out)
	return out
}
