package proxy

import (
	"net"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

func TestSourceRangesAllows(t *testing.T) {
	sr, err := compileSourceRanges([]string{"10.0.0.0/8", "192.0.2.7/32", "2001:db8::/32"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		addr string
		want bool
	}{
		{"10.1.2.3", true},
		{"11.0.0.1", false},
		{"192.0.2.7", true},
		{"192.0.2.8", false},
		{"::ffff:10.0.0.1", true},
		{"2001:db8::1", true},
		{"2001:db9::1", false},
	}
	for _, tt := range tests {
		if got := sr.allows(netip.MustParseAddr(tt.addr)); got != tt.want {
			t.Errorf("allows(%s) = %v, want %v", tt.addr, got, tt.want)
		}
	}
	if !sourceRanges(nil).allows(netip.MustParseAddr("203.0.113.1")) {
		t.Error("no ranges must allow everyone")
	}
	if _, err := compileSourceRanges([]string{"10.0.0.1"}); err == nil {
		t.Error("a range without prefix length compiled")
	}
}

// TestSourceRangesEnforced drives real sockets: clients on 127.0.0.1 are refused while the ranges
// leave loopback out, and served once a config lets them in.
func TestSourceRangesEnforced(t *testing.T) {
	tcpA, udpA := tcpEcho(t, "a", nil), udpEcho(t, "u")
	tcpPort, udpPort := freePort(t, false), freePort(t, true)
	cfg := func(v uint64, ranges ...string) *ir.Config {
		return &ir.Config{Version: v, Listeners: []ir.Listener{
			{Name: "tcp", Port: tcpPort, Protocol: ir.ProtocolTCP, SourceRanges: ranges,
				L4: &ir.L4Route{Name: "svc/t", Backends: []ir.Backend{irBackend("a", 1, tcpA)}}},
			{Name: "udp", Port: udpPort, Protocol: ir.ProtocolUDP, SourceRanges: ranges,
				L4: &ir.L4Route{Name: "svc/u", Backends: []ir.Backend{irBackend("u", 1, udpA)}}},
		}}
	}
	s := newProxy(t, cfg(1, "10.0.0.0/8"))
	tcpOK := func() bool {
		c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(int(tcpPort)))
		if err != nil {
			return false
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		if _, err := c.Write([]byte("ping\n")); err != nil {
			return false
		}
		buf := make([]byte, 64)
		n, _ := c.Read(buf)
		return n > 0
	}
	udpOK := func() bool {
		c, err := net.Dial("udp", "127.0.0.1:"+strconv.Itoa(int(udpPort)))
		if err != nil {
			return false
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(500 * time.Millisecond))
		if _, err := c.Write([]byte("ping")); err != nil {
			return false
		}
		buf := make([]byte, 64)
		n, _ := c.Read(buf)
		return n > 0
	}
	if tcpOK() {
		t.Error("TCP client outside the source ranges was served")
	}
	if udpOK() {
		t.Error("UDP client outside the source ranges was served")
	}
	if err := s.Apply(cfg(2, "127.0.0.0/8", "10.0.0.0/8")); err != nil {
		t.Fatal(err)
	}
	if !tcpOK() {
		t.Error("TCP client inside the source ranges was refused")
	}
	if !udpOK() {
		t.Error("UDP client inside the source ranges was refused")
	}
}

// TestSingleLabelWildcard checks Ingress wildcards: "*.foo.com" serves bar.foo.com but not
// a.b.foo.com, which falls to the next less specific host, while a Gateway API wildcard covers both.
func TestSingleLabelWildcard(t *testing.T) {
	single, multi, anyHost := newEcho(t, "single", false), newEcho(t, "multi", false), newEcho(t, "any", false)
	route := func(b *echoBackend) []ir.Route {
		return []ir.Route{{Name: b.name, Match: ir.Match{Path: prefix("/")}, Backends: []ir.Backend{b.backend(1)}}}
	}
	cfg, port := httpConfig(t,
		ir.VirtualHost{Hostname: "*.foo.com", SingleLabelWildcard: true, Routes: route(single)},
		ir.VirtualHost{Hostname: "*.example.com", Routes: route(multi)},
		ir.VirtualHost{Hostname: "*", Routes: route(anyHost)},
	)
	newProxy(t, cfg)
	c := testClient()
	for host, want := range map[string]string{
		"bar.foo.com":     "single",
		"BAR.foo.com:80":  "single",
		"a.b.foo.com":     "any",
		"foo.com":         "any",
		"a.example.com":   "multi",
		"a.b.example.com": "multi",
	} {
		if got := get(t, c, baseURL(port)+"/", host); got.echo.Backend != want {
			t.Errorf("Host %s served by %q (%d), want %q", host, got.echo.Backend, got.code, want)
		}
	}
}
