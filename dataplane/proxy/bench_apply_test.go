package proxy

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

func fleetHost(i int, path string) ir.VirtualHost {
	name := "r" + strconv.Itoa(i)
	return ir.VirtualHost{Hostname: name + ".example.com", Routes: []ir.Route{{
		Name:  "HTTPRoute/bench/" + name + "/0/0",
		Match: ir.Match{Path: &ir.StringMatch{Type: ir.MatchPrefix, Value: path}},
		Backends: []ir.Backend{{Name: "member-a/bench/echo:9080", Weight: 1,
			Endpoints: []ir.Endpoint{{Address: "198.18.0.51", Port: 9080, Cluster: "member-a"}}}},
	}}}
}

// BenchmarkApplyOneHost is the proxy's side of a one-host change in a table of n once decoded:
// validating, compiling and swapping (Update).
func BenchmarkApplyOneHost(b *testing.B) {
	for _, n := range []int{3000, 100000} {
		b.Run("hosts="+strconv.Itoa(n), func(b *testing.B) {
			s, err := New(Options{Address: "127.0.0.1", PortMap: func(uint32) uint32 { return 0 }, Registry: prometheus.NewRegistry()})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Shutdown(b.Context()) //nolint:errcheck // bench
			vhosts := make([]ir.VirtualHost, n)
			for i := range vhosts {
				vhosts[i] = fleetHost(i, "/")
			}
			cfg := &ir.Config{Gateway: "bench/fleet", Version: 1, Listeners: []ir.Listener{{Name: "http-80", Port: 80, Protocol: ir.ProtocolHTTP, VirtualHosts: vhosts}}}
			if err := s.Apply(cfg); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				u := &ir.Update{Gateway: cfg.Gateway, Version: uint64(i) + 2,
					Hosts: []ir.ListenerHost{{Listener: "http-80", Host: fleetHost(i%n, fmt.Sprintf("/v%d", i))}}}
				b.StartTimer()
				if err := s.Update(u); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
