package agent

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/fleetgate/fleetgate/dataplane/ir"
	"github.com/fleetgate/fleetgate/dataplane/proxy"
	"github.com/fleetgate/fleetgate/dataplane/xds"
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

// BenchmarkOneHostChange times one virtual host changing in a gateway of n, end to end: the
// operator publishes (SetConfig), the proxy receives, decodes and applies it over a real mTLS
// stream, and its ACK reaches the operator.
func BenchmarkOneHostChange(b *testing.B) {
	for _, n := range []int{3000, 100000} {
		b.Run("hosts="+strconv.Itoa(n), func(b *testing.B) { benchOneHostChange(b, n) })
	}
}

func benchOneHostChange(b *testing.B, n int) {
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	const gateway = "bench/fleet"
	ca, err := xds.NewCA("bench", time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	serverKP, err := ca.IssueServer([]string{"127.0.0.1"}, time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	serverTLS, err := xds.ServerTLSConfig(serverKP, ca.CertPEM())
	if err != nil {
		b.Fatal(err)
	}
	acked := make(chan struct{}, 1)
	srv := xds.NewServer(xds.ServerOptions{TLS: serverTLS, Logger: logr.Discard(), OnChange: func(string) {
		select {
		case acked <- struct{}{}:
		default:
		}
	}})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go srv.Serve(ctx, lis) //nolint:errcheck // ends with ctx

	px, err := proxy.New(proxy.Options{Address: "127.0.0.1", PortMap: func(uint32) uint32 { return 0 }, Registry: prometheus.NewRegistry()})
	if err != nil {
		b.Fatal(err)
	}
	defer px.Shutdown(context.Background()) //nolint:errcheck // bench
	clientKP, err := ca.IssueClient([]string{gateway}, time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	clientTLS, err := xds.ClientTLSConfig(clientKP, ca.CertPEM(), "127.0.0.1")
	if err != nil {
		b.Fatal(err)
	}
	client, err := xds.NewClient(xds.ClientOptions{Address: lis.Addr().String(), TLS: clientTLS, Gateway: gateway,
		Node: "bench-0", Apply: px.Update, Logger: logr.Discard()})
	if err != nil {
		b.Fatal(err)
	}
	go client.Run(ctx) //nolint:errcheck // ends with ctx

	cfg := fleetConfig(n)
	wait := func(v uint64) {
		deadline := time.After(time.Minute)
		for {
			if ok, _ := srv.Programmed(gateway, v); ok {
				return
			}
			select {
			case <-acked:
			case <-deadline:
				_, reason := srv.Programmed(gateway, v)
				b.Fatalf("version %d not programmed: %s", v, reason)
			}
		}
	}
	wait(srv.SetConfig(gateway, cfg))
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		// A new config each time, as translation makes one, sharing the unchanged hosts.
		next := *cfg
		next.Listeners = []ir.Listener{cfg.Listeners[0]}
		next.Listeners[0].VirtualHosts = append([]ir.VirtualHost(nil), cfg.Listeners[0].VirtualHosts...)
		next.Listeners[0].VirtualHosts[i%n] = fleetHost(i%n, fmt.Sprintf("/v%d", i))
		b.StartTimer()
		wait(srv.SetConfig(gateway, &next))
		b.StopTimer()
		cfg = &next
	}
}
