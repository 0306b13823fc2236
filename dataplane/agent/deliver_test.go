package agent

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/fleetgate/fleetgate/dataplane/ir"
	"github.com/fleetgate/fleetgate/dataplane/ir/irtest"
	"github.com/fleetgate/fleetgate/dataplane/proxy"
	"github.com/fleetgate/fleetgate/dataplane/xds"
)

// BenchmarkOneHostChange times one virtual host changing in a gateway of n, end to end: the
// operator publishes (SetConfig), the proxy receives, decodes and applies it over a real mTLS
// stream, and its ACK reaches the operator.
func BenchmarkOneHostChange(b *testing.B) {
	for _, n := range []int{3000, 100000} {
		b.Run("hosts="+strconv.Itoa(n), func(b *testing.B) { benchOneHostChange(b, n) })
	}
}

// rig is an operator's config server and one proxy fed by it over mTLS, in process.
type rig struct {
	srv *xds.Server
	px  *proxy.Server
	// wait returns once every replica ACKed version v.
	wait func(tb testing.TB, v uint64)
}

const rigGateway = "bench/fleet"

func newRig(tb testing.TB) *rig {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	ca, err := xds.NewCA("bench", time.Hour)
	if err != nil {
		tb.Fatal(err)
	}
	serverKP, err := ca.IssueServer([]string{"127.0.0.1"}, time.Hour)
	if err != nil {
		tb.Fatal(err)
	}
	serverTLS, err := xds.ServerTLSConfig(serverKP, ca.CertPEM())
	if err != nil {
		tb.Fatal(err)
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
		tb.Fatal(err)
	}
	go srv.Serve(ctx, lis) //nolint:errcheck // ends with ctx

	px, err := proxy.New(proxy.Options{Address: "127.0.0.1", PortMap: func(uint32) uint32 { return 0 }, Registry: prometheus.NewRegistry()})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { px.Shutdown(context.Background()) }) //nolint:errcheck // test
	clientKP, err := ca.IssueClient([]string{rigGateway}, time.Hour)
	if err != nil {
		tb.Fatal(err)
	}
	clientTLS, err := xds.ClientTLSConfig(clientKP, ca.CertPEM(), "127.0.0.1")
	if err != nil {
		tb.Fatal(err)
	}
	client, err := xds.NewClient(xds.ClientOptions{Address: lis.Addr().String(), TLS: clientTLS, Gateway: rigGateway,
		Node: "bench-0", Apply: px.Update, Logger: logr.Discard()})
	if err != nil {
		tb.Fatal(err)
	}
	go client.Run(ctx) //nolint:errcheck // ends with ctx
	wait := func(tb testing.TB, v uint64) {
		deadline := time.After(time.Minute)
		for {
			if ok, _ := srv.Programmed(rigGateway, v); ok {
				return
			}
			select {
			case <-acked:
			case <-deadline:
				_, reason := srv.Programmed(rigGateway, v)
				tb.Fatalf("version %d not programmed: %s", v, reason)
			}
		}
	}
	return &rig{srv: srv, px: px, wait: wait}
}

// TestOneHostChange delivers a change of one host of many through the config server and a real
// proxy, and sends a request to it.
func TestOneHostChange(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %s", r.Host, r.URL.Path)
	}))
	defer backend.Close()
	addr := backend.Listener.Addr().(*net.TCPAddr)
	r := newRig(t)
	cfg := irtest.FleetConfig(1000)
	r.wait(t, r.srv.SetConfig(rigGateway, cfg))
	vh := irtest.FleetHost(7, "/v2")
	vh.Routes[0].Backends[0].Endpoints = []ir.Endpoint{{Address: addr.IP.String(), Port: uint32(addr.Port)}}
	r.wait(t, r.srv.SetConfig(rigGateway, irtest.WithHost(cfg, 7, vh)))

	url := "http://" + r.px.Addr(80, false).String()
	for _, tt := range []struct {
		host, path string
		want       int
	}{
		{"r7.example.com", "/v2/x", http.StatusOK},
		{"r7.example.com", "/", http.StatusNotFound},
	} {
		req, _ := http.NewRequest("GET", url+tt.path, nil)
		req.Host = tt.host
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != tt.want {
			t.Errorf("GET %s%s = %d %q, want %d", tt.host, tt.path, res.StatusCode, body, tt.want)
		}
	}
}

func benchOneHostChange(b *testing.B, n int) {
	r := newRig(b)
	cfg := irtest.FleetConfig(n)
	r.wait(b, r.srv.SetConfig(rigGateway, cfg))
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		cfg = irtest.WithHost(cfg, i%n, irtest.FleetHost(i%n, fmt.Sprintf("/v%d", i)))
		b.StartTimer()
		r.wait(b, r.srv.SetConfig(rigGateway, cfg))
	}
}
