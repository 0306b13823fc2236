package proxy

import (
	"bufio"
	"crypto/tls"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// tcpEcho answers every line with "<name>:<line>". If cert is set it speaks TLS.
func tcpEcho(t *testing.T, name string, cert *tls.Certificate) net.Addr {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if cert != nil {
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{*cert}})
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				sc := bufio.NewScanner(c)
				for sc.Scan() {
					if _, err := io.WriteString(c, name+":"+sc.Text()+"\n"); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr()
}

func udpEcho(t *testing.T, name string) net.Addr {
	t.Helper()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	go func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := c.ReadFrom(buf)
			if err != nil {
				return
			}
			_, _ = c.WriteTo(append([]byte(name+":"), buf[:n]...), from)
		}
	}()
	return c.LocalAddr()
}

func lineRoundTrip(t *testing.T, c net.Conn, msg string) string {
	t.Helper()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, msg+"\n"); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatalf("reading answer to %q: %v", msg, err)
	}
	return strings.TrimSuffix(line, "\n")
}

func TestTCPAndUDP(t *testing.T) {
	tcpA, tcpB := tcpEcho(t, "a", nil), tcpEcho(t, "b", nil)
	udpA := udpEcho(t, "u")
	tcpPortN, udpPortN := freePort(t, false), freePort(t, true)
	cfg := &ir.Config{Version: 1, Listeners: []ir.Listener{
		{Name: "tcp", Port: tcpPortN, Protocol: ir.ProtocolTCP, L4: &ir.L4Route{Name: "tcproute/ns/t", Backends: []ir.Backend{
			irBackend("a", 1, tcpA), irBackend("b", 1, tcpB)}}},
		{Name: "udp", Port: udpPortN, Protocol: ir.ProtocolUDP, L4: &ir.L4Route{Name: "udproute/ns/u", Backends: []ir.Backend{irBackend("u", 1, udpA)}}},
	}}
	newProxy(t, cfg)

	seen := map[string]int{}
	for i := range 40 {
		c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(int(tcpPortN)))
		if err != nil {
			t.Fatal(err)
		}
		got := lineRoundTrip(t, c, "ping"+strconv.Itoa(i))
		seen[strings.SplitN(got, ":", 2)[0]]++
		if !strings.HasSuffix(got, ":ping"+strconv.Itoa(i)) {
			t.Errorf("tcp answer %q", got)
		}
		c.Close()
	}
	if seen["a"] == 0 || seen["b"] == 0 {
		t.Errorf("tcp weights 1:1 gave %v", seen)
	}

	uc, err := net.Dial("udp", "127.0.0.1:"+strconv.Itoa(int(udpPortN)))
	if err != nil {
		t.Fatal(err)
	}
	defer uc.Close()
	var got []string
	buf := make([]byte, 2048)
	for _, msg := range []string{"one", "two", "three"} {
		if _, err := uc.Write([]byte(msg)); err != nil {
			t.Fatal(err)
		}
		_ = uc.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, err := uc.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(buf[:n]))
	}
	if diff := cmp.Diff([]string{"u:one", "u:two", "u:three"}, got); diff != "" {
		t.Errorf("udp (-want +got):\n%s", diff)
	}
}

func TestTLSPassthroughAndTerminate(t *testing.T) {
	// Passthrough backends hold their own certificates; the proxy never sees the plaintext.
	irA, _ := selfSigned(t, "backend-a", "a.example.com")
	irB, _ := selfSigned(t, "backend-b", "b.example.com")
	certA, _ := tls.X509KeyPair(irA.CertPEM, irA.KeyPEM)
	certB, _ := tls.X509KeyPair(irB.CertPEM, irB.KeyPEM)
	tlsA, tlsB := tcpEcho(t, "a", &certA), tcpEcho(t, "b", &certB)
	plain := tcpEcho(t, "plain", nil)
	listenerCert, _ := selfSigned(t, "gateway", "*.term.example.com")
	port := freePort(t, false)
	cfg := &ir.Config{Version: 1, Listeners: []ir.Listener{{
		Name: "tls", Port: port, Protocol: ir.ProtocolTLS, Certificates: []ir.Certificate{listenerCert},
		SNIRoutes: []ir.SNIRoute{
			{Name: "a", Hostnames: []string{"a.example.com"}, Backends: []ir.Backend{irBackend("a", 1, tlsA)}},
			{Name: "b", Hostnames: []string{"*.example.com"}, Backends: []ir.Backend{irBackend("b", 1, tlsB)}},
			{Name: "term", Hostnames: []string{"*.term.example.com"}, Terminate: true, Backends: []ir.Backend{irBackend("plain", 1, plain)}},
		},
	}}}
	newProxy(t, cfg)
	addr := "127.0.0.1:" + strconv.Itoa(int(port))
	tests := []struct{ sni, wantCN, wantAnswer string }{
		{"a.example.com", "backend-a", "a:hi"},
		{"b.example.com", "backend-b", "b:hi"},
		{"x.y.example.com", "backend-b", "b:hi"},
		{"app.term.example.com", "gateway", "plain:hi"},
	}
	var got, want []string
	for _, tt := range tests {
		c, err := tls.Dial("tcp", addr, &tls.Config{ServerName: tt.sni, InsecureSkipVerify: true}) //nolint:gosec // test
		if err != nil {
			t.Fatalf("sni %s: %v", tt.sni, err)
		}
		cn := c.ConnectionState().PeerCertificates[0].Subject.CommonName
		got = append(got, tt.sni+" → "+cn+" "+lineRoundTrip(t, c, "hi"))
		want = append(want, tt.sni+" → "+tt.wantCN+" "+tt.wantAnswer)
		c.Close()
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("SNI routing (-want +got):\n%s", diff)
	}
	// No route for the SNI: the connection is closed without a handshake.
	if c, err := tls.Dial("tcp", addr, &tls.Config{ServerName: "nope.org", InsecureSkipVerify: true}); err == nil { //nolint:gosec // test
		c.Close()
		t.Error("unrouted SNI got a handshake")
	}
}

// TestClientIPAffinity: with ClientIPAffinity every connection (TCP) or session (UDP) of a client
// address reaches the same endpoint, whatever its source port; different clients spread over the
// endpoints; without it one client's connections spread too.
func TestClientIPAffinity(t *testing.T) {
	var tcpEps, udpEps []net.Addr
	for i := range 4 {
		tcpEps = append(tcpEps, tcpEcho(t, "e"+strconv.Itoa(i), nil))
		udpEps = append(udpEps, udpEcho(t, "u"+strconv.Itoa(i)))
	}
	sticky, spread, udpPortN := freePort(t, false), freePort(t, false), freePort(t, true)
	cfg := &ir.Config{Version: 1, Listeners: []ir.Listener{
		{Name: "sticky", Port: sticky, Protocol: ir.ProtocolTCP, L4: &ir.L4Route{Name: "Service/ns/s:1",
			Backends: []ir.Backend{irBackend("s", 1, tcpEps...)}, ClientIPAffinity: true}},
		{Name: "spread", Port: spread, Protocol: ir.ProtocolTCP, L4: &ir.L4Route{Name: "Service/ns/s:2",
			Backends: []ir.Backend{irBackend("s", 1, tcpEps...)}}},
		{Name: "udp", Port: udpPortN, Protocol: ir.ProtocolUDP, L4: &ir.L4Route{Name: "Service/ns/s:3",
			Backends: []ir.Backend{irBackend("u", 1, udpEps...)}, ClientIPAffinity: true}},
	}}
	newProxy(t, cfg)

	tcpFrom := func(client string, port uint32) string {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(client)}, Timeout: 5 * time.Second}
		c, err := d.Dial("tcp", "127.0.0.1:"+strconv.Itoa(int(port)))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return strings.SplitN(lineRoundTrip(t, c, "hi"), ":", 2)[0]
	}
	udpFrom := func(client string) string {
		c, err := net.DialUDP("udp", &net.UDPAddr{IP: net.ParseIP(client)}, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: int(udpPortN)})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Write([]byte("hi")); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 64)
		n, err := c.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		return strings.SplitN(string(buf[:n]), ":", 2)[0]
	}

	clients := map[string]bool{}
	for i := 2; i < 10; i++ {
		client := "127.0.0." + strconv.Itoa(i)
		tcp, udp := map[string]int{}, map[string]int{}
		for range 8 {
			tcp[tcpFrom(client, sticky)]++
			udp[udpFrom(client)]++ // a new socket, so a new source port and session each time
		}
		if len(tcp) != 1 || len(udp) != 1 {
			t.Errorf("client %s reached several endpoints: tcp %v, udp %v", client, tcp, udp)
		}
		for ep := range tcp {
			clients[ep] = true
		}
	}
	if len(clients) < 2 {
		t.Errorf("8 clients all reached %v: affinity does not spread clients", clients)
	}
	seen := map[string]int{}
	for range 24 {
		seen[tcpFrom("127.0.0.2", spread)]++
	}
	if len(seen) < 2 {
		t.Errorf("without affinity one client's 24 connections all reached %v", seen)
	}
}

// TestPickHashed: keys spread in proportion to the weights, and taking an entry away moves only the
// keys it had.
func TestPickHashed(t *testing.T) {
	names := []string{"a", "b", "c"}
	name := func(i int) string { return names[i] }
	cum := []uint64{1, 4, 8} // weights 1, 3, 4
	const keys = 20000
	counts := make([]int, 3)
	before := make([]int, keys)
	for k := range keys {
		before[k] = pickHashed("10.0."+strconv.Itoa(k/250)+"."+strconv.Itoa(k%250), cum, name)
		counts[before[k]]++
	}
	for i, w := range []float64{1, 3, 4} {
		if share := float64(counts[i]) / keys; share < w/8-0.02 || share > w/8+0.02 {
			t.Errorf("entry %s got %.3f of the keys, want %.3f±0.02", names[i], share, w/8)
		}
	}
	// Weight 0 for b: its keys move, nobody else's do.
	cum = []uint64{1, 1, 5}
	for k := range keys {
		after := pickHashed("10.0."+strconv.Itoa(k/250)+"."+strconv.Itoa(k%250), cum, name)
		if after == 1 || (before[k] != 1 && after != before[k]) {
			t.Fatalf("key %d moved from %s to %s", k, names[before[k]], names[after])
		}
	}
}
