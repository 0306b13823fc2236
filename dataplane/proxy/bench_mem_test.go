package proxy

import (
	"runtime"
	"strconv"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fleetgate/fleetgate/dataplane/ir"
	"github.com/fleetgate/fleetgate/dataplane/ir/irtest"
)

// BenchmarkTableMemory reports the heap a served table of 100k hostnames keeps live, per hostname
// (bytes/host: runtime.MemStats.HeapAlloc after a GC, with the table in service and the config it
// was compiled from dropped), for two shapes: the dataplane benchmark's (three routes per host, the
// same route names and backend everywhere; tests/bench/dataplane/genconfig.py) and the fleet
// convergence benchmark's (one route per host, named after its HTTPRoute; irtest.FleetConfig).
func BenchmarkTableMemory(b *testing.B) {
	const n = 100000
	be := ir.Backend{Name: "bench/default/echo:80", Weight: 1, Endpoints: []ir.Endpoint{{Address: "127.0.0.1", Port: 8080}}}
	shapes := []struct {
		name string
		cfg  func() *ir.Config
	}{
		{"genconfig", func() *ir.Config { return genConfig(n, 80, be) }},
		{"fleet", func() *ir.Config {
			cfg := irtest.FleetConfig(n)
			cfg.Version = 1
			return cfg
		}},
	}
	for _, sh := range shapes {
		b.Run(sh.name+"/hosts="+strconv.Itoa(n), func(b *testing.B) {
			var perHost float64
			for b.Loop() {
				perHost = tableBytesPerHost(b, sh.cfg, n)
			}
			b.ReportMetric(perHost, "bytes/host")
		})
	}
}

// tableBytesPerHost applies the config cfg makes to a new Server and returns the live heap it
// added, per host.
func tableBytesPerHost(b *testing.B, cfg func() *ir.Config, n int) float64 {
	b.Helper()
	before := liveHeap()
	s, err := New(Options{Address: "127.0.0.1", PortMap: func(uint32) uint32 { return 0 }, Registry: prometheus.NewRegistry()})
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Apply(cfg()); err != nil {
		b.Fatal(err)
	}
	after := liveHeap()
	runtime.KeepAlive(s)
	if err := s.Shutdown(b.Context()); err != nil {
		b.Fatal(err)
	}
	return float64(after-before) / float64(n)
}

func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// genConfig is the config tests/bench/dataplane/genconfig.py writes: n hostnames with the same
// three routes to one backend.
func genConfig(n int, port uint32, be ir.Backend) *ir.Config {
	routes := []ir.Route{
		{Name: "exact", Match: ir.Match{Path: exact("/healthz")}, Backends: []ir.Backend{be}},
		{Name: "api", Match: ir.Match{Path: prefix("/api")}, Backends: []ir.Backend{be}},
		{Name: "root", Match: ir.Match{Path: prefix("/")}, Backends: []ir.Backend{be}},
	}
	vhosts := make([]ir.VirtualHost, n)
	for i := range vhosts {
		// Each host gets its own copy, as decoding the benchmark's JSON makes it.
		rs := make([]ir.Route, len(routes))
		copy(rs, routes)
		for j := range rs {
			p := *rs[j].Match.Path
			rs[j].Match.Path = &p
			rs[j].Backends = []ir.Backend{be}
		}
		vhosts[i] = ir.VirtualHost{Hostname: "host" + strconv.Itoa(i) + ".example.com", Routes: rs}
	}
	return &ir.Config{Version: 1, Listeners: []ir.Listener{{Name: "http", Port: port, Protocol: ir.ProtocolHTTP, VirtualHosts: vhosts}}}
}
