package proxy

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/net/websocket"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

func TestHTTPSWithSNIAndALPN(t *testing.T) {
	h1, h2c := newEcho(t, "h1", false), newEcho(t, "h2c", true)
	h2cBackend := h2c.backend(1)
	h2cBackend.AppProtocol = ir.AppH2C
	def, _ := selfSigned(t, "default", "default.test")
	exactA, _ := selfSigned(t, "a", "a.example.com")
	wild, _ := selfSigned(t, "wild", "*.example.com")
	wildSub, _ := selfSigned(t, "wild-sub", "*.sub.example.com")
	port := freePort(t, false)
	cfg := &ir.Config{Version: 1, Listeners: []ir.Listener{{
		Name: "https", Port: port, Protocol: ir.ProtocolHTTPS,
		Certificates: []ir.Certificate{def, wild, exactA, wildSub},
		VirtualHosts: []ir.VirtualHost{{Hostname: "*", Routes: []ir.Route{
			{Name: "h2c", Match: ir.Match{Path: prefix("/h2c")}, Backends: []ir.Backend{h2cBackend}},
			{Name: "h1", Backends: []ir.Backend{h1.backend(1)}},
		}}},
	}}}
	newProxy(t, cfg)
	addr := "127.0.0.1:" + strconv.Itoa(int(port))

	tests := []struct{ sni, wantCN string }{
		{"a.example.com", "a"},
		{"b.example.com", "wild"},
		{"x.sub.example.com", "wild-sub"},
		{"A.EXAMPLE.COM", "a"},
		{"other.org", "default"},
		{"", "default"},
	}
	var got, want []string
	for _, tt := range tests {
		cn, proto := peerCN(t, addr, tt.sni, "h2", "http/1.1")
		got = append(got, tt.sni+" → "+cn+" "+proto)
		want = append(want, tt.sni+" → "+tt.wantCN+" h2")
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("SNI certificates (-want +got):\n%s", diff)
	}

	for _, alpn := range []string{"h2", "http/1.1"} {
		tr := &http.Transport{
			TLSClientConfig:   &tls.Config{ServerName: "a.example.com", InsecureSkipVerify: true, NextProtos: []string{alpn}}, //nolint:gosec // test
			ForceAttemptHTTP2: alpn == "h2",
		}
		c := &http.Client{Transport: tr, Timeout: 5 * time.Second}
		for _, tt := range []struct{ path, clientProto, backend, backendProto string }{
			{"/", map[string]string{"h2": "HTTP/2.0", "http/1.1": "HTTP/1.1"}[alpn], "h1", "HTTP/1.1"},
			{"/h2c", map[string]string{"h2": "HTTP/2.0", "http/1.1": "HTTP/1.1"}[alpn], "h2c", "HTTP/2.0"},
		} {
			req, _ := http.NewRequest("GET", "https://"+addr+tt.path, nil)
			req.Host = "a.example.com"
			res, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			r := decode(t, res)
			if res.Proto != tt.clientProto || r.Backend != tt.backend || r.Proto != tt.backendProto || r.Headers.Get("X-Forwarded-Proto") != "https" {
				t.Errorf("%s %s: client %s, backend %s over %s, XFP %q", alpn, tt.path, res.Proto, r.Backend, r.Proto, r.Headers.Get("X-Forwarded-Proto"))
			}
		}
		tr.CloseIdleConnections()
	}
}

func TestH2CPriorKnowledge(t *testing.T) {
	b := newEcho(t, "b", false)
	cfg, port := httpConfig(t, ir.VirtualHost{Hostname: "*", Routes: []ir.Route{{Name: "r", Backends: []ir.Backend{b.backend(1)}}}})
	newProxy(t, cfg)
	p := new(http.Protocols)
	p.SetUnencryptedHTTP2(true)
	c := &http.Client{Transport: &http.Transport{Protocols: p}, Timeout: 5 * time.Second}
	res, err := c.Get(baseURL(port) + "/x")
	if err != nil {
		t.Fatal(err)
	}
	if r := decode(t, res); res.Proto != "HTTP/2.0" || r.Backend != "b" || r.Path != "/x" {
		t.Errorf("h2c: %s, backend %q path %q", res.Proto, r.Backend, r.Path)
	}
}

func TestGRPC(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	hs := health.NewServer()
	hs.SetServingStatus("fleetgate.Echo", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(gs, hs)
	go func() { _ = gs.Serve(ln) }()
	t.Cleanup(gs.Stop)

	be := irBackend("grpc", 1, ln.Addr())
	be.AppProtocol = ir.AppH2C
	cfg, port := httpConfig(t, ir.VirtualHost{Hostname: "*", Routes: []ir.Route{
		{Name: "grpcroute/ns/health/0/0", Match: ir.Match{Path: regex(`/grpc\.health\.v1\.Health/.*`)},
			Filters:  ir.Filters{ResponseHeaders: &ir.HeaderModifier{Set: []ir.Header{{Name: "x-via", Value: "fleetgate"}}}},
			Backends: []ir.Backend{be}},
	}})
	newProxy(t, cfg)
	cc, err := grpc.NewClient("127.0.0.1:"+strconv.Itoa(int(port)), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	client := healthpb.NewHealthClient(cc)
	var hdr metadata.MD
	res, err := client.Check(ctx, &healthpb.HealthCheckRequest{Service: "fleetgate.Echo"}, grpc.Header(&hdr))
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	if res.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("status %v", res.GetStatus())
	}
	if got := hdr.Get("x-via"); len(got) != 1 || got[0] != "fleetgate" {
		t.Errorf("response header x-via %v", got)
	}
	// An error is a trailers-only response: the status must survive the proxy.
	_, err = client.Check(ctx, &healthpb.HealthCheckRequest{Service: "unknown"})
	if status.Code(err) != codes.NotFound {
		t.Errorf("unknown service: %v, want NotFound", err)
	}
	// Server streaming: the first Watch message arrives while the stream stays open.
	stream, err := client.Watch(ctx, &healthpb.HealthCheckRequest{Service: "fleetgate.Echo"})
	if err != nil {
		t.Fatal(err)
	}
	msg, err := stream.Recv()
	if err != nil || msg.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("watch: %v %v", msg, err)
	}
	hs.SetServingStatus("fleetgate.Echo", healthpb.HealthCheckResponse_NOT_SERVING)
	msg, err = stream.Recv()
	if err != nil || msg.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("watch update: %v %v", msg, err)
	}
}

// TestWebSocket: an upgrade is handed from the fast path to net/http, on a plain listener and
// behind TLS (where the hijacked connection is the TLS one).
func TestWebSocket(t *testing.T) {
	ws := newEchoWS(t)
	for _, f := range fastFronts() {
		t.Run(f.name, func(t *testing.T) {
			cfg, port := f.config(t, ir.VirtualHost{Hostname: "*", Routes: []ir.Route{
				{Name: "ws", Match: ir.Match{Path: prefix("/ws")}, Backends: []ir.Backend{func() ir.Backend {
					b := irBackend("ws", 1, ws)
					b.AppProtocol = ir.AppWS
					return b
				}()}},
			}})
			newProxy(t, cfg)
			scheme := "ws"
			if f.tls {
				scheme = "wss"
			}
			wc, err := websocket.NewConfig(scheme+"://127.0.0.1:"+strconv.Itoa(int(port))+"/ws", "http://localhost/")
			if err != nil {
				t.Fatal(err)
			}
			wc.TlsConfig = &tls.Config{ServerName: "a.example.com", InsecureSkipVerify: true} //nolint:gosec // test
			conn, err := websocket.DialConfig(wc)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			for _, msg := range []string{"hello", "fleet"} {
				if err := websocket.Message.Send(conn, msg); err != nil {
					t.Fatal(err)
				}
				var got string
				if err := websocket.Message.Receive(conn, &got); err != nil {
					t.Fatal(err)
				}
				if got != "echo:"+msg {
					t.Errorf("got %q", got)
				}
			}
		})
	}
}

func newEchoWS(t *testing.T) net.Addr {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: websocket.Handler(func(c *websocket.Conn) {
		for {
			var m string
			if err := websocket.Message.Receive(c, &m); err != nil {
				return
			}
			if err := websocket.Message.Send(c, "echo:"+m); err != nil {
				return
			}
		}
	}), ReadHeaderTimeout: time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	return ln.Addr()
}

func decode(t *testing.T, res *http.Response) echo {
	t.Helper()
	defer res.Body.Close()
	var e echo
	if err := json.NewDecoder(res.Body).Decode(&e); err != nil {
		t.Fatalf("decoding %s response: %v", res.Status, err)
	}
	return e
}

// TestWebSocketDrain shuts the proxy down under an open WebSocket: the connection keeps working
// while the drain lasts, is closed when it times out, and Shutdown reports that it had to cut it.
func TestWebSocketDrain(t *testing.T) {
	ws := newEchoWS(t)
	cfg, port := httpConfig(t, ir.VirtualHost{Hostname: "*", Routes: []ir.Route{
		{Name: "ws", Match: ir.Match{Path: prefix("/ws")}, Backends: []ir.Backend{func() ir.Backend {
			b := irBackend("ws", 1, ws)
			b.AppProtocol = ir.AppWS
			return b
		}()}},
	}})
	s, err := New(Options{Address: "127.0.0.1", Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	conn, err := websocket.Dial("ws://127.0.0.1:"+strconv.Itoa(int(port))+"/ws", "", "http://localhost/")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	echo := func(msg string) error {
		if err := websocket.Message.Send(conn, msg); err != nil {
			return err
		}
		var got string
		if err := websocket.Message.Receive(conn, &got); err != nil {
			return err
		}
		if got != "echo:"+msg {
			return fmt.Errorf("got %q", got)
		}
		return nil
	}
	if err := echo("before"); err != nil {
		t.Fatal(err)
	}
	const drain = 500 * time.Millisecond
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), drain)
		defer cancel()
		done <- s.Shutdown(ctx)
	}()
	time.Sleep(drain / 5)
	if err := echo("during"); err != nil {
		t.Errorf("WebSocket broken while the drain lasts: %v", err)
	}
	select {
	case err := <-done:
		if elapsed := time.Since(start); elapsed < drain*9/10 {
			t.Errorf("Shutdown returned after %v with a WebSocket open, before its %v deadline", elapsed, drain)
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Shutdown = %v, want the deadline error for the cut WebSocket", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Shutdown never returned")
	}
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if err := echo("after"); err == nil {
		t.Error("WebSocket still open after the drain deadline")
	}
}
