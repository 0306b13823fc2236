package xds

import (
	"fmt"
	"strconv"
	"testing"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// BenchmarkReceiveOneHost is the proxy's side of a one-host change before Apply: unmarshalling
// the response the server sends and decoding it.
func BenchmarkReceiveOneHost(b *testing.B) {
	for _, n := range benchSizes {
		b.Run("hosts="+strconv.Itoa(n), func(b *testing.B) {
			srv := NewServer(ServerOptions{})
			cfg := withHost(fleetConfig(n), 0, "/v")
			srv.SetConfig("bench/fleet", cfg)
			g := srv.gateways["bench/fleet"]
			wire, err := proto.Marshal(&discoveryv3.DiscoveryResponse{VersionInfo: formatVersion(g.cfg.Version),
				Resources: []*anypb.Any{g.res}, TypeUrl: TypeURL, Nonce: "n"})
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(wire)))
			b.ReportAllocs()
			for b.Loop() {
				var resp discoveryv3.DiscoveryResponse
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
