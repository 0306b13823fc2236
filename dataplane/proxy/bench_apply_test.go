package proxy

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fleetgate/fleetgate/dataplane/ir"
	"github.com/fleetgate/fleetgate/dataplane/ir/irtest"
)

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
			cfg := irtest.FleetConfig(n)
			cfg.Gateway, cfg.Version = "bench/fleet", 1
			if err := s.Apply(cfg); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				u := &ir.Update{Gateway: cfg.Gateway, Version: uint64(i) + 2,
					Hosts: []ir.ListenerHost{{Listener: "http-80", Host: irtest.FleetHost(i%n, fmt.Sprintf("/v%d", i))}}}
				b.StartTimer()
				if err := s.Update(u); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
