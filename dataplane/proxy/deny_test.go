package proxy

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

func TestDeniedAddr(t *testing.T) {
	var denied []netip.Prefix
	for _, c := range ir.DefaultDeniedEndpointCIDRs() {
		denied = append(denied, netip.MustParsePrefix(c))
	}
	for _, tc := range []struct {
		ep   string
		want bool
	}{
		{"198.18.0.1:80", false},
		{"10.0.0.1:8080", false},
		{"[2001:db8::1]:443", false},
		{"127.0.0.1:80", true},
		{"127.1.2.3:80", true},
		{"169.254.169.254:80", true},
		{"[::ffff:169.254.169.254]:80", true}, // v4-mapped
		{"[fe80::1%lo]:80", true},             // a zone must not hide the prefix
		{"[fd00:ec2::254]:80", true},
		{"100.100.100.200:80", true},
		{"100.100.100.201:80", false},
		{"[::1]:80", true},
		{"metadata.google.internal:80", true}, // names would be resolved by the proxy: refused
	} {
		if got := deniedAddr(denied, tc.ep); got != tc.want {
			t.Errorf("deniedAddr(%q) = %v, want %v", tc.ep, got, tc.want)
		}
	}
}

// countingListener counts the connections a backend accepts: a denied one must see none.
type countingListener struct {
	net.Listener
	accepted atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}
	return c, err
}

// deniedHTTP starts an HTTP backend on addr (TLS when tls is set) that counts connections.
func deniedHTTP(t *testing.T, addr string, tls bool) (*countingListener, ir.Endpoint) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{Listener: ln}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "secret") }))
	srv.Listener = cl
	if tls {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	a := ln.Addr().(*net.TCPAddr)
	return cl, ir.Endpoint{Address: a.IP.String(), Port: uint32(a.Port)}
}

// TestDeniedEndpointsNeverDialled gives the proxy a config whose endpoints lie in a denied
// network (127.0.0.2/32 here, as 169.254.169.254 cannot be bound in a test) at every kind of dial:
// the fast path, net/http (a route with a timeout), h2c, TLS, a mirror, TCP and UDP. Each answers
// as for an unreachable endpoint, the backends see no connection at all, the refusals are counted,
// and an allowed backend next to them keeps serving.
func TestDeniedEndpointsNeverDialled(t *testing.T) {
	const deniedIP = "127.0.0.2"
	plain, plainEP := deniedHTTP(t, deniedIP+":0", false)
	tlsLn, tlsEP := deniedHTTP(t, deniedIP+":0", true)
	mirrorLn, mirrorEP := deniedHTTP(t, deniedIP+":0", false)
	ok := newEcho(t, "ok", false)

	tcpLn, err := net.Listen("tcp", deniedIP+":0")
	if err != nil {
		t.Fatal(err)
	}
	tcpCount := &countingListener{Listener: tcpLn}
	t.Cleanup(func() { tcpLn.Close() })
	go func() {
		for {
			c, err := tcpCount.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	udpConn, err := net.ListenPacket("udp", deniedIP+":0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { udpConn.Close() })
	var udpSeen atomic.Int64
	go func() {
		buf := make([]byte, 512)
		for {
			if _, _, err := udpConn.ReadFrom(buf); err != nil {
				return
			}
			udpSeen.Add(1)
		}
	}()
	tcpEP := ir.Endpoint{Address: deniedIP, Port: uint32(tcpLn.Addr().(*net.TCPAddr).Port)}
	udpEP := ir.Endpoint{Address: deniedIP, Port: uint32(udpConn.LocalAddr().(*net.UDPAddr).Port)}

	be := func(name string, app ir.AppProtocol, ep ir.Endpoint) []ir.Backend {
		return []ir.Backend{{Name: name, Weight: 1, AppProtocol: app, Endpoints: []ir.Endpoint{ep}}}
	}
	cfg, port := httpConfig(t, ir.VirtualHost{Hostname: "*", Routes: []ir.Route{
		{Name: "fast", Match: ir.Match{Path: exact("/fast")}, Backends: be("plain", ir.AppHTTP1, plainEP)},
		{Name: "slow", Match: ir.Match{Path: exact("/slow")}, Backends: be("plain", ir.AppHTTP1, plainEP),
			Timeouts: ir.Timeouts{Request: 5 * time.Second}},
		{Name: "h2c", Match: ir.Match{Path: exact("/h2c")}, Backends: be("plain-h2c", ir.AppH2C, plainEP)},
		{Name: "tls", Match: ir.Match{Path: exact("/tls")}, Backends: be("tls", ir.AppTLS, tlsEP)},
		{Name: "mirror", Match: ir.Match{Path: exact("/mirror")}, Backends: []ir.Backend{ok.backend(1)},
			Filters: ir.Filters{Mirrors: []ir.Mirror{{Backend: be("mirror", ir.AppHTTP1, mirrorEP)[0]}}}},
		{Name: "ok", Match: ir.Match{Path: prefix("/")}, Backends: []ir.Backend{ok.backend(1)}},
	}})
	tcpPort, udpPort := freePort(t, false), freePort(t, true)
	cfg.Listeners = append(cfg.Listeners,
		ir.Listener{Name: "tcp", Port: tcpPort, Protocol: ir.ProtocolTCP, L4: &ir.L4Route{Name: "tcproute/ns/t", Backends: be("tcp", "", tcpEP)}},
		ir.Listener{Name: "udp", Port: udpPort, Protocol: ir.ProtocolUDP, L4: &ir.L4Route{Name: "udproute/ns/u", Backends: be("udp", "", udpEP)}},
	)
	// The config's list replaces the server's (which denies nothing here).
	cfg.Limits = &ir.Limits{DeniedEndpointCIDRs: []string{deniedIP + "/32", "169.254.0.0/16"}}
	s := newProxy(t, cfg)

	c := testClient()
	got := map[string]int{}
	for _, p := range []string{"/fast", "/slow", "/h2c", "/tls", "/mirror", "/after"} {
		got[p] = get(t, c, baseURL(port)+p, "app.example.com").code
	}
	want := map[string]int{"/fast": 502, "/slow": 502, "/h2c": 502, "/tls": 502, "/mirror": 200, "/after": 200}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("status codes (-want +got):\n%s", diff)
	}

	tc, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(int(tcpPort)))
	if err != nil {
		t.Fatal(err)
	}
	_ = tc.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := tc.Read(make([]byte, 1)); err == nil {
		t.Error("the TCP route to a denied endpoint answered instead of closing")
	}
	tc.Close()
	uc, err := net.Dial("udp", "127.0.0.1:"+strconv.Itoa(int(udpPort)))
	if err != nil {
		t.Fatal(err)
	}
	defer uc.Close()
	for range 3 {
		if _, err := uc.Write([]byte("ping")); err != nil {
			t.Fatal(err)
		}
	}

	// The mirror runs in the background; give it, and the UDP datagrams, time to arrive if they
	// were (wrongly) sent.
	deadline := time.Now().Add(5 * time.Second)
	for counterOf(t, s.metrics.deniedDials) < 8 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	accepted := map[string]int64{"plain": plain.accepted.Load(), "tls": tlsLn.accepted.Load(), "mirror": mirrorLn.accepted.Load(),
		"tcp": tcpCount.accepted.Load(), "udp": udpSeen.Load()}
	if diff := cmp.Diff(map[string]int64{"plain": 0, "tls": 0, "mirror": 0, "tcp": 0, "udp": 0}, accepted); diff != "" {
		t.Errorf("connections that reached denied backends (-want +got):\n%s", diff)
	}
	// fast, slow, h2c, tls, mirror, tcp and one per UDP datagram (no session is made).
	if n := counterOf(t, s.metrics.deniedDials); n != 9 {
		t.Errorf("denied_endpoint_dials_total = %v, want 9", n)
	}
	if ok.hits.Load() != 2 {
		t.Errorf("allowed backend served %d requests, want 2 (/mirror and /after)", ok.hits.Load())
	}
}

func counterOf(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil || len(mfs) != 1 {
		t.Fatalf("gathering a counter: %v (%d families)", err, len(mfs))
	}
	return mfs[0].GetMetric()[0].GetCounter().GetValue()
}
