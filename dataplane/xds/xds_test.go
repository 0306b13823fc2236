package xds

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/go-logr/logr/testr"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

const (
	gwA = "c1/default/gw-a"
	gwB = "c1/default/gw-b"
)

// pki is a CA with the server's TLS configuration, as the operator would hold them.
type pki struct {
	ca        *CA
	serverTLS *tls.Config
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	ca, err := NewCA("fleetgate test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	kp, err := ca.IssueServer([]string{"xds.fleetgate.test", "127.0.0.1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	serverTLS, err := ServerTLSConfig(kp, ca.CertPEM())
	if err != nil {
		t.Fatal(err)
	}
	return &pki{ca: ca, serverTLS: serverTLS}
}

// clientTLS returns a proxy's TLS configuration allowing gateways.
func (p *pki) clientTLS(t *testing.T, gateways ...string) *tls.Config {
	t.Helper()
	kp, err := p.ca.IssueClient(gateways, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ClientTLSConfig(kp, p.ca.CertPEM(), "xds.fleetgate.test")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// serve runs srv on addr ("127.0.0.1:0" for any port) until the returned stop is called or the test
// ends, and returns the address it listens on.
func serve(t *testing.T, srv *Server, addr string) (string, func()) {
	t.Helper()
	var lis net.Listener
	var err error
	// The port of a server just stopped may take a moment to be free again.
	for range 50 {
		if lis, err = net.Listen("tcp", addr); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, lis) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Serve: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return lis.Addr().String(), stop
}

// proxy stands in for dataplane/proxy: it patches its config with each update, validates the
// result like Server.Update and remembers what it serves.
type proxy struct {
	mu      sync.Mutex
	current *ir.Config
	applies int
	updates []*ir.Update
	gate    chan struct{} // when set, Apply waits for it to be closed
}

func (p *proxy) Apply(u *ir.Update) error {
	p.mu.Lock()
	gate := p.gate
	cur := p.current
	p.mu.Unlock()
	if gate != nil {
		<-gate
	}
	if cur != nil && u.Version <= cur.Version {
		return fmt.Errorf("version %d after %d", u.Version, cur.Version)
	}
	cfg, err := cur.Patch(u)
	if err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("invalid config: %w", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.current = cfg
	p.applies++
	p.updates = append(p.updates, u)
	return nil
}

func (p *proxy) serving() (*ir.Config, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.current, p.applies
}

// run starts c until the returned stop is called or the test ends.
func run(t *testing.T, c *Client) func() {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func newClient(t *testing.T, addr string, tlsCfg *tls.Config, gateway, node string, p *proxy) *Client {
	t.Helper()
	c, err := NewClient(ClientOptions{
		Address:    addr,
		TLS:        tlsCfg,
		Gateway:    gateway,
		Node:       node,
		Apply:      p.Apply,
		Logger:     testr.NewWithOptions(t, testr.Options{Verbosity: 1}).WithName(node),
		MinBackoff: 20 * time.Millisecond,
		MaxBackoff: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newServer(t *testing.T, p *pki) *Server {
	return NewServer(ServerOptions{TLS: p.serverTLS, Logger: testr.NewWithOptions(t, testr.Options{Verbosity: 1}).WithName("server")})
}

// config is a valid config whose content is told apart by port.
func config(port uint32) *ir.Config {
	return &ir.Config{Listeners: []ir.Listener{{
		Name:         fmt.Sprintf("http-%d", port),
		Port:         port,
		Protocol:     ir.ProtocolHTTP,
		VirtualHosts: []ir.VirtualHost{{Hostname: "*"}},
	}}}
}

// badConfig fails ir.Config.Validate.
func badConfig() *ir.Config {
	return &ir.Config{Listeners: []ir.Listener{{Name: "bad", Port: 80, Protocol: "SCTP"}}}
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// servingPort waits until p serves the config with the given port at a version of at least minVersion.
func waitServing(t *testing.T, p *proxy, port uint32, minVersion uint64) *ir.Config {
	t.Helper()
	var cfg *ir.Config
	eventually(t, fmt.Sprintf("proxy to serve port %d at version >= %d", port, minVersion), func() bool {
		cfg, _ = p.serving()
		return cfg != nil && cfg.Version >= minVersion && len(cfg.Listeners) == 1 && cfg.Listeners[0].Port == port
	})
	return cfg
}

func waitProgrammed(t *testing.T, srv *Server, gateway string, v uint64) {
	t.Helper()
	eventually(t, fmt.Sprintf("%s programmed at %d", gateway, v), func() bool {
		ok, _ := srv.Programmed(gateway, v)
		return ok
	})
}

func TestPushAndAck(t *testing.T) {
	pk := newPKI(t)
	changes := make(chan string, 100)
	srv := NewServer(ServerOptions{
		TLS:      pk.serverTLS,
		Logger:   testr.New(t),
		OnChange: func(gw string) { changes <- gw },
	})
	addr, _ := serve(t, srv, "127.0.0.1:0")
	p := &proxy{}
	run(t, newClient(t, addr, pk.clientTLS(t, gwA), gwA, "pod-1", p))

	v1 := srv.SetConfig(gwA, config(8080))
	if v1 == 0 {
		t.Fatal("SetConfig returned version 0")
	}
	got := waitServing(t, p, 8080, v1)
	if got.Gateway != gwA || got.Version != v1 {
		t.Errorf("proxy serves gateway %q version %d, want %q version %d", got.Gateway, got.Version, gwA, v1)
	}
	waitProgrammed(t, srv, gwA, v1)
	want := GatewayStatus{Version: v1, Replicas: []ReplicaStatus{{Node: "pod-1", Wire: WireV2, Acked: v1}}}
	if diff := cmp.Diff(want, srv.Status(gwA)); diff != "" {
		t.Errorf("Status (-want +got):\n%s", diff)
	}

	// An unchanged config keeps its version and is not pushed again.
	if v := srv.SetConfig(gwA, config(8080)); v != v1 {
		t.Errorf("SetConfig of an unchanged config = %d, want %d", v, v1)
	}
	v2 := srv.SetConfig(gwA, config(9090))
	if v2 <= v1 {
		t.Errorf("SetConfig of a new config = %d, want > %d", v2, v1)
	}
	waitServing(t, p, 9090, v2)
	waitProgrammed(t, srv, gwA, v2)
	if _, applies := p.serving(); applies != 2 {
		t.Errorf("proxy applied %d configs, want 2", applies)
	}

	select {
	case gw := <-changes:
		if gw != gwA {
			t.Errorf("OnChange(%q), want %q", gw, gwA)
		}
	default:
		t.Error("OnChange was never called")
	}
}

func TestNack(t *testing.T) {
	pk := newPKI(t)
	srv := newServer(t, pk)
	addr, _ := serve(t, srv, "127.0.0.1:0")
	p := &proxy{}
	run(t, newClient(t, addr, pk.clientTLS(t, gwA), gwA, "pod-1", p))

	v1 := srv.SetConfig(gwA, config(8080))
	waitProgrammed(t, srv, gwA, v1)

	v2 := srv.SetConfig(gwA, badConfig())
	eventually(t, "NACK", func() bool {
		st := srv.Status(gwA)
		return len(st.Replicas) == 1 && st.Replicas[0].Nacked == v2
	})
	st := srv.Status(gwA)
	if r := st.Replicas[0]; r.Acked != v1 || !strings.Contains(r.NackReason, "invalid config") || !strings.Contains(r.NackReason, "SCTP") {
		t.Errorf("replica status = %+v, want Acked %d and a NACK reason naming the invalid protocol", r, v1)
	}
	ok, reason := st.Programmed(v2)
	if ok || !strings.Contains(reason, "rejected version") || !strings.Contains(reason, "SCTP") {
		t.Errorf("Programmed(%d) = %v, %q; want false with the proxy's reason", v2, ok, reason)
	}
	if ok, rejected, _ := srv.Acknowledged(gwA, v2); ok || !rejected {
		t.Errorf("Acknowledged(%d) = %v, rejected %v; want a rejection", v2, ok, rejected)
	}
	if cfg, _ := p.serving(); cfg.Version != v1 {
		t.Errorf("proxy serves version %d after a NACK, want %d", cfg.Version, v1)
	}

	// A good config afterwards is ACKed and clears the NACK.
	v3 := srv.SetConfig(gwA, config(9090))
	waitProgrammed(t, srv, gwA, v3)
	if ok, rejected, reason := srv.Acknowledged(gwA, v3); !ok || rejected {
		t.Errorf("Acknowledged(%d) = %v, rejected %v, %q; want acknowledged", v3, ok, rejected, reason)
	}
	want := GatewayStatus{Version: v3, Replicas: []ReplicaStatus{{Node: "pod-1", Wire: WireV2, Acked: v3}}}
	if diff := cmp.Diff(want, srv.Status(gwA)); diff != "" {
		t.Errorf("Status (-want +got):\n%s", diff)
	}
}

func TestProgrammedOnlyWhenEveryReplicaAcks(t *testing.T) {
	pk := newPKI(t)
	srv := newServer(t, pk)
	addr, _ := serve(t, srv, "127.0.0.1:0")
	fast, slow := &proxy{}, &proxy{gate: make(chan struct{})}
	tlsCfg := pk.clientTLS(t, gwA)
	run(t, newClient(t, addr, tlsCfg, gwA, "pod-1", fast))
	run(t, newClient(t, addr, tlsCfg, gwA, "pod-2", slow))
	eventually(t, "two replicas", func() bool { return len(srv.Status(gwA).Replicas) == 2 })

	v := srv.SetConfig(gwA, config(8080))
	waitServing(t, fast, 8080, v)
	eventually(t, "pod-1 ACK", func() bool { return srv.Status(gwA).Replicas[0].Acked == v })
	if ok, reason := srv.Programmed(gwA, v); ok || !strings.Contains(reason, "waiting for 1 of 2") {
		t.Errorf("Programmed with one of two ACKs = %v, %q; want false, waiting for 1 of 2", ok, reason)
	}
	close(slow.gate)
	waitProgrammed(t, srv, gwA, v)
}

func TestServerRestart(t *testing.T) {
	tests := []struct {
		name string
		// before and after are how many configs the old and the new operator instance set; the new
		// one sets them before the proxy reconnects unless late.
		before, after int
		late          bool
	}{
		{name: "same version number, new content", before: 1, after: 1},
		{name: "new instance behind the proxy", before: 3, after: 1},
		{name: "new instance ahead of the proxy", before: 1, after: 3},
		{name: "config set after the proxy reconnected", before: 2, after: 1, late: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pk := newPKI(t)
			srv1 := newServer(t, pk)
			addr, stop1 := serve(t, srv1, "127.0.0.1:0")
			p := &proxy{}
			run(t, newClient(t, addr, pk.clientTLS(t, gwA), gwA, "pod-1", p))
			var v1 uint64
			for i := range tt.before {
				v1 = srv1.SetConfig(gwA, config(uint32(8000+i)))
			}
			waitProgrammed(t, srv1, gwA, v1)
			stop1()

			srv2 := newServer(t, pk)
			setAfter := func() {
				for i := range tt.after {
					srv2.SetConfig(gwA, config(uint32(9000+i)))
				}
			}
			if !tt.late {
				setAfter()
			}
			serve(t, srv2, addr)
			if tt.late {
				eventually(t, "reconnect", func() bool { return len(srv2.Status(gwA).Replicas) == 1 })
				setAfter()
			}
			lastPort := uint32(9000 + tt.after - 1)
			// Versions never go backwards for the proxy, whatever the new instance counted.
			cfg := waitServing(t, p, lastPort, v1)
			v2 := srv2.Status(gwA).Version
			if cfg.Version != v2 {
				t.Errorf("proxy serves version %d, server's current version is %d", cfg.Version, v2)
			}
			waitProgrammed(t, srv2, gwA, v2)
		})
	}
}

func TestReconnect(t *testing.T) {
	tests := []struct {
		name string
		// update sets a new config while the proxy is away.
		update bool
		// restart replaces the Client, as a proxy process restart does; otherwise the same Client
		// runs again, as after a lost connection.
		restart     bool
		wantApplies int
	}{
		{name: "reconnect, nothing changed: no resend", wantApplies: 1},
		{name: "reconnect, config changed meanwhile", update: true, wantApplies: 2},
		{name: "proxy restart gets the current config", restart: true, wantApplies: 1},
		{name: "proxy restart after a change", update: true, restart: true, wantApplies: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pk := newPKI(t)
			srv := newServer(t, pk)
			addr, _ := serve(t, srv, "127.0.0.1:0")
			tlsCfg := pk.clientTLS(t, gwA)
			p := &proxy{}
			c := newClient(t, addr, tlsCfg, gwA, "pod-1", p)
			stop := run(t, c)
			v := srv.SetConfig(gwA, config(8080))
			waitProgrammed(t, srv, gwA, v)
			stop()
			eventually(t, "disconnect", func() bool { return len(srv.Status(gwA).Replicas) == 0 })
			if ok, reason := srv.Programmed(gwA, v); ok || reason != "no proxy replica is connected" {
				t.Errorf("Programmed without replicas = %v, %q", ok, reason)
			}

			port := uint32(8080)
			if tt.update {
				port = 9090
				v = srv.SetConfig(gwA, config(port))
			}
			if tt.restart {
				p = &proxy{}
				c = newClient(t, addr, tlsCfg, gwA, "pod-1", p)
			}
			run(t, c)
			waitProgrammed(t, srv, gwA, v)
			waitServing(t, p, port, v)
			if _, applies := p.serving(); applies != tt.wantApplies {
				t.Errorf("proxy applied %d configs, want %d", applies, tt.wantApplies)
			}
		})
	}
}

// TestAuthentication subscribes with raw ADS streams to see the server's exact answer.
func TestAuthentication(t *testing.T) {
	pk := newPKI(t)
	srv := newServer(t, pk)
	addr, _ := serve(t, srv, "127.0.0.1:0")
	srv.SetConfig(gwA, config(8080))
	srv.SetConfig(gwB, config(8080))

	otherCA := newPKI(t)
	tests := []struct {
		name string
		tls  *tls.Config
		want codes.Code
	}{
		{name: "certificate for the gateway", tls: pk.clientTLS(t, gwA), want: codes.OK},
		{name: "certificate for several gateways", tls: pk.clientTLS(t, gwB, gwA), want: codes.OK},
		{name: "certificate for another gateway", tls: pk.clientTLS(t, gwB), want: codes.PermissionDenied},
		{name: "certificate from another CA", tls: otherCA.clientTLS(t, gwA), want: codes.Unavailable},
		{name: "no client certificate", tls: &tls.Config{RootCAs: pk.serverTLS.ClientCAs, ServerName: "xds.fleetgate.test"}, want: codes.Unavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(tt.tls)))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			got := subscribeOnce(ctx, discoveryv3.NewAggregatedDiscoveryServiceClient(conn))
			if status.Code(got) != tt.want {
				t.Errorf("subscribe: %v, want code %v", got, tt.want)
			}
		})
	}
	// Refused subscriptions leave no replica behind.
	eventually(t, "streams to close", func() bool { return len(srv.Status(gwA).Replicas) == 0 })
	if st := srv.Status(gwB); len(st.Replicas) != 0 {
		t.Errorf("gateway %s has replicas %+v", gwB, st.Replicas)
	}
}

// subscribeOnce subscribes to gwA and waits for the first config; nil means it arrived.
func subscribeOnce(ctx context.Context, ads discoveryv3.AggregatedDiscoveryServiceClient) error {
	stream, err := ads.DeltaAggregatedResources(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = stream.CloseSend() }()
	if err := stream.Send(&discoveryv3.DeltaDiscoveryRequest{
		Node:                   &corev3.Node{Id: "raw"},
		TypeUrl:                TypeURL,
		ResourceNamesSubscribe: []string{gwA},
	}); err != nil {
		_, err = stream.Recv() // the real error is on the receiving side
		return err
	}
	resp, err := stream.Recv()
	if err != nil {
		return err
	}
	if _, _, err := decodeResponse(resp, gwA, WireVersions(), nil); err != nil {
		return fmt.Errorf("%w: %w", errors.New("bad response"), err)
	}
	return nil
}

func TestClientRejectsAServerFromAnotherCA(t *testing.T) {
	pk, other := newPKI(t), newPKI(t)
	srv := NewServer(ServerOptions{TLS: other.serverTLS, Logger: testr.New(t)})
	addr, _ := serve(t, srv, "127.0.0.1:0")
	srv.SetConfig(gwA, config(8080))
	p := &proxy{}
	run(t, newClient(t, addr, pk.clientTLS(t, gwA), gwA, "pod-1", p))
	time.Sleep(300 * time.Millisecond)
	if cfg, _ := p.serving(); cfg != nil {
		t.Errorf("proxy applied a config from an untrusted server: %+v", cfg)
	}
}

func TestReconnectedNodeReplacesItsOldStream(t *testing.T) {
	pk := newPKI(t)
	srv := newServer(t, pk)
	addr, _ := serve(t, srv, "127.0.0.1:0")
	v := srv.SetConfig(gwA, config(8080))
	tlsCfg := pk.clientTLS(t, gwA)

	// A stream that subscribed and never answered, like one whose proxy vanished.
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(tlsCfg)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	stale, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).DeltaAggregatedResources(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := stale.Send(&discoveryv3.DeltaDiscoveryRequest{Node: &corev3.Node{Id: "pod-1"}, TypeUrl: TypeURL, ResourceNamesSubscribe: []string{gwA}}); err != nil {
		t.Fatal(err)
	}
	if _, err := stale.Recv(); err != nil {
		t.Fatal(err)
	}
	if ok, _ := srv.Programmed(gwA, v); ok {
		t.Fatal("programmed although the only replica never ACKed")
	}

	run(t, newClient(t, addr, tlsCfg, gwA, "pod-1", &proxy{}))
	waitProgrammed(t, srv, gwA, v)
	if _, err := stale.Recv(); status.Code(err) != codes.Aborted {
		t.Errorf("old stream ended with %v, want code Aborted", err)
	}
	if n := len(srv.Status(gwA).Replicas); n != 1 {
		t.Errorf("%d replicas, want 1", n)
	}
}

func TestRemoveGateway(t *testing.T) {
	pk := newPKI(t)
	srv := newServer(t, pk)
	addr, _ := serve(t, srv, "127.0.0.1:0")
	p := &proxy{}
	run(t, newClient(t, addr, pk.clientTLS(t, gwA), gwA, "pod-1", p))
	v1 := srv.SetConfig(gwA, config(8080))
	waitProgrammed(t, srv, gwA, v1)

	srv.RemoveGateway(gwA)
	want := GatewayStatus{Replicas: []ReplicaStatus{{Node: "pod-1", Wire: WireV2, Acked: v1}}}
	if diff := cmp.Diff(want, srv.Status(gwA)); diff != "" {
		t.Errorf("Status after RemoveGateway (-want +got):\n%s", diff)
	}
	// A connected proxy never sees its version go backwards, even for a gateway created again.
	v2 := srv.SetConfig(gwA, config(8080))
	if v2 <= v1 {
		t.Errorf("version after RemoveGateway and SetConfig = %d, want > %d", v2, v1)
	}
	waitServing(t, p, 8080, v2)
	waitProgrammed(t, srv, gwA, v2)

	srv.RemoveGateway(gwB) // unknown: nothing happens
	if diff := cmp.Diff(GatewayStatus{}, srv.Status(gwB)); diff != "" {
		t.Errorf("Status of an unknown gateway (-want +got):\n%s", diff)
	}
}

// TestReconnectSendsTheDifference reconnects a proxy after one of its hosts changed: it receives
// that host only.
func TestReconnectSendsTheDifference(t *testing.T) {
	pk := newPKI(t)
	srv := newServer(t, pk)
	addr, _ := serve(t, srv, "127.0.0.1:0")
	tlsCfg := pk.clientTLS(t, gwA)
	p := &proxy{}
	c := newClient(t, addr, tlsCfg, gwA, "pod-1", p)
	stop := run(t, c)
	v1 := hosts("a.example.com", "b.example.com", "c.example.com")
	waitProgrammed(t, srv, gwA, srv.SetConfig(gwA, v1))
	stop()
	eventually(t, "disconnect", func() bool { return len(srv.Status(gwA).Replicas) == 0 })

	v2 := withBackend(v1, 1, "other")
	v := srv.SetConfig(gwA, v2)
	run(t, c)
	waitProgrammed(t, srv, gwA, v)
	p.mu.Lock()
	defer p.mu.Unlock()
	last := p.updates[len(p.updates)-1]
	if last.Base != nil || len(last.Removed) != 0 || len(last.Hosts) != 1 || last.Hosts[0].Host.Hostname != "b.example.com" {
		t.Errorf("update after reconnecting = %+v, want host b.example.com alone", last)
	}
	want := *v2
	want.Gateway, want.Version = gwA, v
	got := *p.current
	got.Listeners = slices.Clone(got.Listeners)
	got.Listeners[0].VirtualHosts = slices.SortedFunc(slices.Values(got.Listeners[0].VirtualHosts),
		func(a, b ir.VirtualHost) int { return strings.Compare(a.Hostname, b.Hostname) })
	if diff := cmp.Diff(&want, &got); diff != "" {
		t.Errorf("proxy serves (-want +got):\n%s", diff)
	}
}

// TestReconnectWithManyHosts reconnects a proxy holding more hosts than fit gRPC's default
// message size in its list of what it holds.
func TestReconnectWithManyHosts(t *testing.T) {
	if testing.Short() {
		t.Skip("80k hosts")
	}
	pk := newPKI(t)
	srv := newServer(t, pk)
	addr, _ := serve(t, srv, "127.0.0.1:0")
	tlsCfg := pk.clientTLS(t, gwA)
	p := &proxy{}
	c := newClient(t, addr, tlsCfg, gwA, "pod-1", p)
	stop := run(t, c)
	names := make([]string, 80000)
	for i := range names {
		names[i] = fmt.Sprintf("h%d.example.com", i)
	}
	cfg := hosts(names...)
	waitProgrammed(t, srv, gwA, srv.SetConfig(gwA, cfg))
	stop()
	eventually(t, "disconnect", func() bool { return len(srv.Status(gwA).Replicas) == 0 })
	v := srv.SetConfig(gwA, withBackend(cfg, 7, "other"))
	run(t, c)
	waitProgrammed(t, srv, gwA, v)
	p.mu.Lock()
	defer p.mu.Unlock()
	if last := p.updates[len(p.updates)-1]; len(last.Hosts) != 1 || last.Base != nil {
		t.Errorf("update after reconnecting has %d hosts and base %v, want 1 host", len(last.Hosts), last.Base != nil)
	}
}
