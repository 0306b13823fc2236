package xds

import (
	"fmt"
	"strconv"
	"testing"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"
)

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
