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
