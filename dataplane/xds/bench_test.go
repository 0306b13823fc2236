package xds

import (
	"fmt"
	"strconv"
	"testing"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/go-logr/logr"
	"google.golang.org/protobuf/proto"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// fleetConfig is the fleet convergence benchmark's gateway: n hostnames rN.example.com, each with
// one route to one backend.
func fleetConfig(n int) *ir.Config {
	vhosts := make([]ir.VirtualHost, n)
	for i := range vhosts {
		vhosts[i] = fleetHost(i, "/")
	}
	return &ir.Config{Listeners: []ir.Listener{{Name: "http-80", Port: 80, Protocol: ir.ProtocolHTTP, VirtualHosts: vhosts}}}
}

func fleetHost(i int, path string) ir.VirtualHost {
	name := "r" + strconv.Itoa(i)
	return ir.VirtualHost{Hostname: name + ".example.com", Routes: []ir.Route{{
		Name:  "HTTPRoute/bench/" + name + "/0/0",
		Match: ir.Match{Path: &ir.StringMatch{Type: ir.MatchPrefix, Value: path}},
		Backends: []ir.Backend{{Name: "member-a/bench/echo:9080", Weight: 1,
			Endpoints: []ir.Endpoint{{Address: "198.18.0.51", Port: 9080, Cluster: "member-a"}}}},
	}}}
}

// withHost returns a copy of cfg, as translation would make it, whose host i routes path.
func withHost(cfg *ir.Config, i int, path string) *ir.Config {
	next := *cfg
	next.Listeners = []ir.Listener{cfg.Listeners[0]}
	next.Listeners[0].VirtualHosts = append([]ir.VirtualHost(nil), cfg.Listeners[0].VirtualHosts...)
	next.Listeners[0].VirtualHosts[i] = fleetHost(i, path)
	return &next
}

var benchSizes = []int{3000, 100000}

// BenchmarkPublishOneHost is the operator's side of a one-host change: SetConfig of a config in
// which one virtual host of n differs from the current one.
func BenchmarkPublishOneHost(b *testing.B) {
	for _, n := range benchSizes {
		b.Run("hosts="+strconv.Itoa(n), func(b *testing.B) {
			srv := NewServer(ServerOptions{Logger: logr.Discard()})
			cfg := fleetConfig(n)
			srv.SetConfig("bench/fleet", cfg)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				cfg = withHost(cfg, i%n, fmt.Sprintf("/v%d", i))
				b.StartTimer()
				srv.SetConfig("bench/fleet", cfg)
			}
		})
	}
}

// BenchmarkReceiveOneHost is the proxy's side of a one-host change before Apply: unmarshalling
// the response the server sends and decoding it.
func BenchmarkReceiveOneHost(b *testing.B) {
	for _, n := range benchSizes {
		b.Run("hosts="+strconv.Itoa(n), func(b *testing.B) {
			srv := NewServer(ServerOptions{})
			cfg := fleetConfig(n)
			srv.SetConfig("bench/fleet", cfg)
			sub := srv.subscribe("bench/fleet", "bench", 0, map[string]string{})
			if _, ok := srv.answer(sub, srv.next(sub).GetNonce(), "", false); !ok {
				b.Fatal("no first response")
			}
			srv.SetConfig("bench/fleet", withHost(cfg, 0, "/v"))
			wire, err := proto.Marshal(srv.next(sub))
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(wire)))
			b.ReportAllocs()
			for b.Loop() {
				var resp discoveryv3.DeltaDiscoveryResponse
				if err := proto.Unmarshal(wire, &resp); err != nil {
					b.Fatal(err)
				}
				if _, err := decodeResponse(&resp, "bench/fleet", nil); err != nil {
					b.Fatal(fmt.Errorf("decode: %w", err))
				}
			}
		})
	}
}
