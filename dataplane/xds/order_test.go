package xds

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"

	"github.com/fleetgate/fleetgate/dataplane/ir"
	"github.com/fleetgate/fleetgate/dataplane/ir/irtest"
)

// TestSetConfigFindsHostsInAnyOrder: SetConfig finds the hosts of the current config by their
// place in it first, and by name when they moved. Whatever configs come one after another (hosts
// dropped, added, changed, listed in another order, moved to another listener), the server then
// holds what a new server given only the last config holds, and a duplicate host is refused.
func TestSetConfigFindsHostsInAnyOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	host := func(i int) ir.VirtualHost { return irtest.FleetHost(i, fmt.Sprintf("/p%d", rng.IntN(3))) }
	srv := NewServer(ServerOptions{Logger: logr.Discard()})
	const gw = "ns/gw"
	for step := range 300 {
		cfg := &ir.Config{Listeners: []ir.Listener{
			{Name: "http-80", Port: 80, Protocol: ir.ProtocolHTTP},
			{Name: "http-8080", Port: 8080, Protocol: ir.ProtocolHTTP},
		}}
		for i := range 40 {
			if rng.IntN(4) > 0 {
				l := &cfg.Listeners[rng.IntN(2)*boolInt(step%7 == 0)] // now and then, hosts change listener
				l.VirtualHosts = append(l.VirtualHosts, host(i))
			}
		}
		for _, l := range cfg.Listeners {
			if rng.IntN(3) == 0 {
				rng.Shuffle(len(l.VirtualHosts), func(i, j int) { l.VirtualHosts[i], l.VirtualHosts[j] = l.VirtualHosts[j], l.VirtualHosts[i] })
			}
		}
		if srv.SetConfig(gw, cfg) == 0 {
			t.Fatalf("step %d: config refused", step)
		}
		fresh := NewServer(ServerOptions{Logger: logr.Discard()})
		fresh.SetConfig(gw, cfg)
		if diff := cmp.Diff(hostVersions(fresh.gateways[gw]), hostVersions(srv.gateways[gw])); diff != "" {
			t.Fatalf("step %d: hosts (-new server +server):\n%s", step, diff)
		}
		if g := srv.gateways[gw]; g.count != fresh.gateways[gw].count {
			t.Fatalf("step %d: count %d, want %d", step, g.count, fresh.gateways[gw].count)
		}
		if l := &cfg.Listeners[0]; len(l.VirtualHosts) > 1 && rng.IntN(10) == 0 {
			dup := *cfg
			dup.Listeners = []ir.Listener{*l, cfg.Listeners[1]}
			dup.Listeners[0].VirtualHosts = append(slices.Clone(l.VirtualHosts), l.VirtualHosts[rng.IntN(len(l.VirtualHosts))])
			if v := srv.SetConfig(gw, &dup); v != 0 {
				t.Fatalf("step %d: a duplicate host was taken (version %d)", step, v)
			}
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// hostVersions is every host of g by listener and hostname, with the version of its encoding.
func hostVersions(g *gatewayState) map[string]map[string]string {
	out := map[string]map[string]string{}
	for l, hosts := range g.hosts {
		out[l] = map[string]string{}
		for h, r := range maps.All(hosts) {
			out[l][h] = r.enc.version
		}
	}
	return out
}
