package proxy

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/binary"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// front is one way a client's HTTP/1.1 request reaches the proxy: the fast path on a plain
// listener, net/http (DisableFastPath), or the fast path behind TLS. The hardening tests run
// their cases over each.
type front struct {
	name string
	opts Options
	tls  bool
}

func fronts() []front {
	return []front{{name: "fast"}, {name: "nethttp", opts: Options{DisableFastPath: true}}, {name: "tls", tls: true}}
}

// fastFronts are the fronts served by the fast path.
func fastFronts() []front { return []front{{name: "fast"}, {name: "tls", tls: true}} }

// config is a one-listener config on a free port: HTTP, or HTTPS with one certificate for every
// name.
func (f front) config(t *testing.T, vhosts ...ir.VirtualHost) (*ir.Config, uint32) {
	t.Helper()
	cfg, port := httpConfig(t, vhosts...)
	if f.tls {
		cert, _ := selfSigned(t, "front")
		l := &cfg.Listeners[0]
		l.Name, l.Protocol, l.Certificates = "https", ir.ProtocolHTTPS, []ir.Certificate{cert}
	}
	return cfg, port
}

// dial connects to the front's listener on port, over TLS with ALPN http/1.1 for a TLS front.
func (f front) dial(t *testing.T, port uint32) *rawConn {
	t.Helper()
	if !f.tls {
		return dialRaw(t, port)
	}
	return dialTLS(t, port, "a.example.com", "http/1.1")
}

// tryDial is dial for a connection that may be refused.
func (f front) tryDial(t *testing.T, port uint32) (*rawConn, error) {
	t.Helper()
	if !f.tls {
		return dialRaw(t, port), nil
	}
	return tryDialTLS(t, port, "a.example.com", "http/1.1")
}

func dialTLS(t *testing.T, port uint32, sni string, alpn ...string) *rawConn {
	t.Helper()
	c, err := tryDialTLS(t, port, sni, alpn...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func tryDialTLS(t *testing.T, port uint32, sni string, alpn ...string) (*rawConn, error) {
	t.Helper()
	c, err := tls.Dial("tcp", "127.0.0.1:"+strconv.Itoa(int(port)), &tls.Config{ServerName: sni, InsecureSkipVerify: true, NextProtos: alpn}) //nolint:gosec // test
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	return &rawConn{t: t, c: c, br: bufio.NewReader(c)}, nil
}

// netConn is the TCP connection under c.
func netConn(c net.Conn) net.Conn {
	if tc, ok := c.(*tls.Conn); ok {
		return tc.NetConn()
	}
	return c
}

// TestHTTPSFastPath: an HTTPS listener serves HTTP/1.1 (by ALPN or without it) on the fast path,
// tells the backend the request came over https, gives h2 to net/http, hands a connection over
// mid-way with its TLS state (a redirect keeps the https scheme, a misdirected request gets 421)
// and answers a client that speaks plain HTTP to it as net/http does.
func TestHTTPSFastPath(t *testing.T) {
	be := newEcho(t, "b", false)
	certA, _ := selfSigned(t, "a", "a.example.com")
	certB, _ := selfSigned(t, "b", "b.example.com")
	port := freePort(t, false)
	cfg := &ir.Config{Gateway: "ns/gw", Version: 1, Listeners: []ir.Listener{{
		Name: "https", Port: port, Protocol: ir.ProtocolHTTPS, Certificates: []ir.Certificate{certA, certB},
		VirtualHosts: []ir.VirtualHost{{Hostname: "*.example.com", Routes: []ir.Route{
			{Name: "redirect", Match: ir.Match{Path: prefix("/old")}, Filters: ir.Filters{Redirect: &ir.Redirect{Path: &ir.PathModifier{Type: ir.ReplaceFullPath, Value: "/new"}, StatusCode: 301}}},
			{Name: "r", Backends: []ir.Backend{be.backend(1)}},
		}}},
	}}}
	newProxy(t, cfg)
	type answer struct {
		Code            int
		Proto, Location string
		// XFP is the X-Forwarded-Proto the backend saw.
		XFP string
	}
	read := func(c *rawConn, method string) answer {
		t.Helper()
		res, err := http.ReadResponse(c.br, &http.Request{Method: method})
		if err != nil {
			t.Fatalf("reading answer: %v", err)
		}
		defer res.Body.Close()
		var e echo
		if b, _ := io.ReadAll(res.Body); res.Header.Get("Content-Type") == "application/json" {
			if err := json.Unmarshal(b, &e); err != nil {
				t.Fatalf("decoding %q: %v", b, err)
			}
		}
		return answer{Code: res.StatusCode, Proto: res.Proto, Location: res.Header.Get("Location"), XFP: e.Headers.Get("X-Forwarded-Proto")}
	}
	for _, alpn := range []string{"http/1.1", ""} {
		t.Run("alpn="+alpn, func(t *testing.T) {
			var protos []string
			if alpn != "" {
				protos = []string{alpn}
			}
			c := dialTLS(t, port, "a.example.com", protos...)
			if got := c.c.(*tls.Conn).ConnectionState().NegotiatedProtocol; got != alpn {
				t.Fatalf("negotiated %q, want %q", got, alpn)
			}
			// Fast, then handed to net/http by the redirect route: its Location keeps https.
			c.send("GET /a HTTP/1.1\r\nHost: a.example.com\r\nX-Forwarded-Proto: gopher\r\n\r\n" +
				"GET /old HTTP/1.1\r\nHost: a.example.com\r\n\r\n" +
				"GET /b HTTP/1.1\r\nHost: a.example.com\r\n\r\n" +
				// The certificate of a.example.com does not cover b.example.com.
				"GET /c HTTP/1.1\r\nHost: b.example.com\r\n\r\n")
			got := []answer{read(c, "GET"), read(c, "GET"), read(c, "GET"), read(c, "GET")}
			want := []answer{
				{Code: 200, Proto: "HTTP/1.1", XFP: "https"},
				{Code: 301, Proto: "HTTP/1.1", Location: "https://a.example.com:" + strconv.Itoa(int(port)) + "/new"},
				{Code: 200, Proto: "HTTP/1.1", XFP: "https"},
				{Code: 421, Proto: "HTTP/1.1"},
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("answers (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("misdirected on the fast path", func(t *testing.T) {
		c := dialTLS(t, port, "a.example.com")
		c.send("GET /c HTTP/1.1\r\nHost: b.example.com\r\n\r\n")
		if got := read(c, "GET"); got.Code != http.StatusMisdirectedRequest {
			t.Errorf("Host of another certificate: %+v, want 421", got)
		}
	})
	t.Run("h2", func(t *testing.T) {
		tr := &http.Transport{TLSClientConfig: &tls.Config{ServerName: "a.example.com", InsecureSkipVerify: true}, ForceAttemptHTTP2: true} //nolint:gosec // test
		defer tr.CloseIdleConnections()
		res := get(t, &http.Client{Transport: tr, Timeout: 10 * time.Second}, "https://127.0.0.1:"+strconv.Itoa(int(port))+"/h2", "a.example.com")
		if res.code != 200 || res.echo.Headers.Get("X-Forwarded-Proto") != "https" || res.hdr.Get("X-Backend") != "b" {
			t.Errorf("h2 answer %d, X-Forwarded-Proto %q", res.code, res.echo.Headers.Get("X-Forwarded-Proto"))
		}
	})
	t.Run("h2 preface without h2 ALPN", func(t *testing.T) {
		// Not h2c: a TLS connection that chose HTTP/1.1 stays HTTP/1.1.
		c := dialTLS(t, port, "a.example.com", "http/1.1")
		c.send("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
		// net/http hands "PRI *" to the handler as an HTTP/1.1 exchange; no route takes it.
		if got := c.read("GET"); got != "404 no route matched" {
			t.Errorf("HTTP/2 preface on an HTTP/1.1 TLS connection: %q, want an HTTP/1.1 404", got)
		}
	})
	t.Run("plain HTTP to the TLS port", func(t *testing.T) {
		c := dialRaw(t, port)
		c.send("GET / HTTP/1.1\r\nHost: a.example.com\r\n\r\n")
		b, _ := io.ReadAll(c.br)
		if want := "HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n"; string(b) != want {
			t.Errorf("plain HTTP on the TLS port: %q, want %q", b, want)
		}
	})
	t.Run("handshake timeout", func(t *testing.T) {
		// A client that connects and says nothing is cut after ReadHeaderTimeout (10s by
		// default): checked with a shorter one on a proxy of its own.
		cfg2 := *cfg
		cfg2.Listeners = []ir.Listener{cfg.Listeners[0]}
		cfg2.Listeners[0].Port = freePort(t, false)
		newProxyOpts(t, &cfg2, Options{ReadHeaderTimeout: 300 * time.Millisecond})
		c := dialRaw(t, cfg2.Listeners[0].Port)
		start := time.Now()
		if _, err := c.br.ReadByte(); err == nil {
			t.Fatal("proxy wrote to a client that sent no hello")
		}
		if d := time.Since(start); d < 250*time.Millisecond {
			t.Errorf("silent client cut after %v, before the 300ms handshake timeout", d)
		}
	})
}

// TestHTTPSOneRecordPerAnswer: the fast path writes each answer that fits its buffer in one
// Write, which on TLS is one record, from the first answer of a connection on (crypto/tls would
// start a connection with small records).
func TestHTTPSOneRecordPerAnswer(t *testing.T) {
	body := strings.Repeat("x", 12<<10)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
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
				br := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					n, _ := strconv.Atoi(strings.TrimPrefix(req.URL.Path, "/"))
					if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: "+strconv.Itoa(n)+"\r\n\r\n"+body[:n]); err != nil {
						return
					}
				}
			}()
		}
	}()
	f := front{name: "tls", tls: true}
	cfg, port := f.config(t, ir.VirtualHost{Hostname: "*", Routes: []ir.Route{{Name: "r", Backends: []ir.Backend{irBackend("b", 1, ln.Addr())}}}})
	newProxy(t, cfg)
	raw, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(int(port)))
	if err != nil {
		t.Fatal(err)
	}
	rec := &recordingConn{Conn: raw}
	c := tls.Client(rec, &tls.Config{ServerName: "a.example.com", InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}}) //nolint:gosec // test
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	var got []int
	for _, n := range []int{2, 1 << 10, 12 << 10, 12 << 10} {
		if _, err := io.WriteString(c, "GET /"+strconv.Itoa(n)+" HTTP/1.1\r\nHost: a.example.com\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		start := rec.len()
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil || len(b) != n {
			t.Fatalf("answer of %d bytes: got %d, %v", n, len(b), err)
		}
		got = append(got, rec.records(t, start))
	}
	// The first read may also hold the session tickets sent after the handshake.
	if got[0] < 1 {
		t.Errorf("first answer in %d records", got[0])
	}
	if diff := cmp.Diff([]int{1, 1, 1}, got[1:]); diff != "" {
		t.Errorf("TLS records per answer (-want +got):\n%s", diff)
	}
}

// recordingConn keeps what the client reads, to count the server's TLS records.
type recordingConn struct {
	net.Conn
	mu  sync.Mutex
	buf bytes.Buffer
}

func (c *recordingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.mu.Lock()
	c.buf.Write(p[:n])
	c.mu.Unlock()
	return n, err
}

func (c *recordingConn) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.Len()
}

// records counts the complete TLS records read since offset from.
func (c *recordingConn) records(t *testing.T, from int) int {
	t.Helper()
	c.mu.Lock()
	b := c.buf.Bytes()[from:]
	c.mu.Unlock()
	n := 0
	for len(b) >= 5 {
		l := 5 + int(binary.BigEndian.Uint16(b[3:5]))
		if len(b) < l {
			break
		}
		b, n = b[l:], n+1
	}
	if len(b) != 0 {
		t.Errorf("%d bytes of a record left", len(b))
	}
	return n
}
