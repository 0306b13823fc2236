package xds

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/go-logr/logr"
	"google.golang.org/protobuf/proto"

	"github.com/fleetgate/fleetgate/dataplane/ir"
	"github.com/fleetgate/fleetgate/dataplane/ir/irtest"
)

// withHost returns a copy of cfg, as translation would make it, whose host i routes path.
func withHost(cfg *ir.Config, i int, path string) *ir.Config {
	return irtest.WithHost(cfg, i, irtest.FleetHost(i, path))
}

var benchSizes = []int{3000, 100000}

// BenchmarkPublishOneHost is the operator's side of a one-host change: SetConfig of a config in
// which one virtual host of n differs from the current one.
func BenchmarkPublishOneHost(b *testing.B) {
	for _, n := range benchSizes {
		b.Run("hosts="+strconv.Itoa(n), func(b *testing.B) {
			srv := NewServer(ServerOptions{Logger: logr.Discard()})
			cfg := irtest.FleetConfig(n)
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

// BenchmarkPublishOneHostAfterRebuild is BenchmarkPublishOneHost after one config whose hosts
// were all rebuilt, equal: a translation pass that built every host again (its route memo dropped).
func BenchmarkPublishOneHostAfterRebuild(b *testing.B) {
	for _, n := range benchSizes {
		b.Run("hosts="+strconv.Itoa(n), func(b *testing.B) {
			srv := NewServer(ServerOptions{Logger: logr.Discard()})
			srv.SetConfig("bench/fleet", irtest.FleetConfig(n))
			cfg := irtest.FleetConfig(n)
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

// BenchmarkPublishOneHostCerts is BenchmarkPublishOneHost with an HTTPS listener of 10k
// certificates beside the hosts (a certificate per hostname, as cert-manager makes them), handed
// over again with every config as translation does: new Certificate values, the Secrets' PEM.
func BenchmarkPublishOneHostCerts(b *testing.B) {
	const n, certs = 100000, 10000
	pem := []byte(strings.Repeat("A", 1200))
	cfg := irtest.FleetConfig(n)
	https := ir.Listener{Name: "https-443", Port: 443, Protocol: ir.ProtocolHTTPS}
	for i := range certs {
		https.Certificates = append(https.Certificates, ir.Certificate{Name: "bench/c" + strconv.Itoa(i),
			Hostnames: []string{"r" + strconv.Itoa(i) + ".example.com"}, CertPEM: pem[:len(pem)-i%7], KeyPEM: pem[:200]})
	}
	cfg.Listeners = append(cfg.Listeners, https)
	withHostCerts := func(cfg *ir.Config, i int, path string) *ir.Config {
		next := *cfg
		next.Listeners = slices.Clone(cfg.Listeners)
		next.Listeners[0].VirtualHosts = slices.Clone(cfg.Listeners[0].VirtualHosts)
		next.Listeners[0].VirtualHosts[i] = irtest.FleetHost(i, path)
		next.Listeners[1].Certificates = slices.Clone(cfg.Listeners[1].Certificates)
		return &next
	}
	srv := NewServer(ServerOptions{Logger: logr.Discard()})
	srv.SetConfig("bench/fleet", cfg)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		cfg = withHostCerts(cfg, i%n, fmt.Sprintf("/v%d", i))
		b.StartTimer()
		srv.SetConfig("bench/fleet", cfg)
	}
}

// BenchmarkReceiveOneHost is the proxy's side of a one-host change before Apply: unmarshalling
// the response the server sends and decoding it.
func BenchmarkReceiveOneHost(b *testing.B) {
	for _, n := range benchSizes {
		b.Run("hosts="+strconv.Itoa(n), func(b *testing.B) {
			srv := NewServer(ServerOptions{})
			cfg := irtest.FleetConfig(n)
			srv.SetConfig("bench/fleet", cfg)
			sub := srv.subscribe("bench/fleet", "bench", WireV2, 0, map[string]string{})
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
				if _, _, err := decodeResponse(&resp, "bench/fleet", WireVersions(), nil); err != nil {
					b.Fatal(fmt.Errorf("decode: %w", err))
				}
			}
		})
	}
}
