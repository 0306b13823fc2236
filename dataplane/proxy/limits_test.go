package proxy

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// limitBackend is a TCP backend that records the exact bytes of each connection and when the
// proxy closed it, and answers per mode.
type limitBackend struct {
	ln   net.Listener
	mode string // "silent": reads, never answers; "flood": answers a body of size flood
	size int
	mu   sync.Mutex
	got  []*recConn
}

type recConn struct {
	bytes.Buffer
	closed chan struct{}
}

func newLimitBackend(t *testing.T, mode string, size int) *limitBackend {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	b := &limitBackend{ln: ln, mode: mode, size: size}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			rc := &recConn{closed: make(chan struct{})}
			b.mu.Lock()
			b.got = append(b.got, rc)
			b.mu.Unlock()
			go b.serve(c, rc)
		}
	}()
	return b
}

func (b *limitBackend) serve(c net.Conn, rc *recConn) {
	defer close(rc.closed)
	defer c.Close()
	if b.mode == "flood" {
		br := bufio.NewReader(c)
		if _, err := http.ReadRequest(br); err != nil {
			return
		}
		if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: "+strconv.Itoa(b.size)+"\r\n\r\n"); err != nil {
			return
		}
		chunk := make([]byte, 64<<10)
		for n := 0; n < b.size; n += len(chunk) {
			if _, err := c.Write(chunk); err != nil {
				return // the proxy let go of the upstream connection
			}
		}
		return
	}
	buf := make([]byte, 4096)
	for {
		n, err := c.Read(buf)
		b.mu.Lock()
		rc.Write(buf[:n])
		b.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// conn returns the i-th connection the backend accepted, waiting for it.
func (b *limitBackend) conn(t *testing.T, i int) *recConn {
	t.Helper()
	var rc *recConn
	waitFor(t, func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		if len(b.got) > i {
			rc = b.got[i]
		}
		return rc != nil
	})
	return rc
}

func (b *limitBackend) conns() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.got)
}

// closedWithin fails unless the proxy closed the upstream connection within d.
func (rc *recConn) closedWithin(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case <-rc.closed:
	case <-time.After(d):
		t.Error("the proxy kept the upstream connection open")
	}
}

func limitHit(t *testing.T, reg *prometheus.Registry, limit string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "fleetgate_proxy_limit_hits_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "limit" && l.GetValue() == limit {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// limitProxy serves cfg with opts and returns the registry its metrics go to.
func limitProxy(t *testing.T, cfg *ir.Config, opts Options) *prometheus.Registry {
	t.Helper()
	s := newProxyOpts(t, cfg, opts)
	return s.opts.Registry.(*prometheus.Registry)
}

// eachFront runs f over every front: the fast path, the net/http path and the fast path behind TLS.
func eachFront(t *testing.T, f func(t *testing.T, fr front)) {
	for _, fr := range fronts() {
		t.Run(fr.name, func(t *testing.T) { f(t, fr) })
	}
}

// h2Proxy serves one route to be over HTTPS with opts and returns an HTTP/2 client for it and the
// base URL.
func h2Proxy(t *testing.T, be net.Addr, opts Options) (*http.Client, string, *prometheus.Registry) {
	t.Helper()
	cert, _ := selfSigned(t, "a", "a.example")
	port := freePort(t, false)
	cfg := &ir.Config{Gateway: "ns/gw", Version: 1, Listeners: []ir.Listener{{
		Name: "https", Port: port, Protocol: ir.ProtocolHTTPS, Certificates: []ir.Certificate{cert},
		VirtualHosts: []ir.VirtualHost{{Hostname: "*", Routes: []ir.Route{{Name: "r", Backends: []ir.Backend{irBackend("b", 1, be)}}}}},
	}}}
	reg := limitProxy(t, cfg, opts)
	tr := &http.Transport{
		TLSClientConfig:   &tls.Config{ServerName: "a.example", InsecureSkipVerify: true}, //nolint:gosec // test
		ForceAttemptHTTP2: true,
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}, "https://127.0.0.1:" + strconv.Itoa(int(port)), reg
}

// answerWithin reads one answer on c and fails unless it comes within [lo, hi] of start.
func answerWithin(t *testing.T, c *rawConn, start time.Time, lo, hi time.Duration) string {
	t.Helper()
	got := strings.TrimSpace(c.read("POST"))
	if d := time.Since(start); d < lo || d > hi {
		t.Errorf("answer %q after %v, want between %v and %v", got, d, lo, hi)
	}
	return got
}

// TestRequestBodyIdleTimeout: a client that announces a body and sends 3 bytes gets a 408 after
// the idle timeout, its connection is closed, and so is the upstream one.
func TestRequestBodyIdleTimeout(t *testing.T) {
	eachFront(t, func(t *testing.T, fr front) {
		const idle = 300 * time.Millisecond
		be := newLimitBackend(t, "silent", 0)
		cfg, port := fr.config(t, ir.VirtualHost{Hostname: "*", Routes: []ir.Route{{Name: "r", Backends: []ir.Backend{irBackend("b", 1, be.ln.Addr())}}}})
		fr.opts.RequestBodyIdleTimeout = idle
		reg := limitProxy(t, cfg, fr.opts)
		c := fr.dial(t, port)
		start := time.Now()
		c.send("POST /up HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\nabc")
		if got := answerWithin(t, c, start, idle*9/10, idle+2*time.Second); got != "408" {
			t.Errorf("stalled body: %q, want 408", got)
		}
		if got := c.read("POST"); got != "EOF" {
			t.Errorf("connection kept after a stalled body: %q", got)
		}
		be.conn(t, 0).closedWithin(t, 2*time.Second)
		if n := limitHit(t, reg, "request_body_idle_timeout"); n != 1 {
			t.Errorf("request_body_idle_timeout hits = %v, want 1", n)
		}
	})
}

func TestRequestBodyIdleTimeoutHTTP2(t *testing.T) {
	const idle = 300 * time.Millisecond
	be := newLimitBackend(t, "silent", 0)
	c, base, reg := h2Proxy(t, be.ln.Addr(), Options{RequestBodyIdleTimeout: idle})
	pr, pw := io.Pipe()
	defer pw.Close()
	go func() { _, _ = io.WriteString(pw, "abc") }()
	req, err := http.NewRequest(http.MethodPost, base+"/up", pr)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = 10
	start := time.Now()
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if d := time.Since(start); res.StatusCode != http.StatusRequestTimeout || res.ProtoMajor != 2 || d < idle*9/10 || d > idle+2*time.Second {
		t.Errorf("stalled HTTP/2 body: %d over HTTP/%d after %v, want 408 over HTTP/2 after %v", res.StatusCode, res.ProtoMajor, d, idle)
	}
	be.conn(t, 0).closedWithin(t, 2*time.Second)
	if n := limitHit(t, reg, "request_body_idle_timeout"); n != 1 {
		t.Errorf("request_body_idle_timeout hits = %v, want 1", n)
	}
}

// TestRequestTimeoutWhileBodyArrives: on a route with timeouts.request, a body that stalls does
// not hold the 504 back.
func TestRequestTimeoutWhileBodyArrives(t *testing.T) {
	eachFront(t, func(t *testing.T, fr front) {
		const timeout = 300 * time.Millisecond
		be := newLimitBackend(t, "silent", 0)
		cfg, port := fr.config(t, ir.VirtualHost{Hostname: "*", Routes: []ir.Route{{
			Name: "r", Backends: []ir.Backend{irBackend("b", 1, be.ln.Addr())}, Timeouts: ir.Timeouts{Request: timeout},
		}}})
		reg := limitProxy(t, cfg, fr.opts)
		c := fr.dial(t, port)
		start := time.Now()
		c.send("POST /up HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\nabc")
		if got := answerWithin(t, c, start, timeout*9/10, timeout+time.Second); got != "504" {
			t.Errorf("stalled body on a route with a request timeout: %q, want 504", got)
		}
		be.conn(t, 0).closedWithin(t, 2*time.Second)
		if n := limitHit(t, reg, "request_timeout"); n != 1 {
			t.Errorf("request_timeout hits = %v, want 1", n)
		}
	})
}

// TestBackendResponseTimeout: a backend that never answers gets the client a 504 after
// backendResponseTimeout on a route without timeouts; the client connection stays usable.
func TestBackendResponseTimeout(t *testing.T) {
	eachFront(t, func(t *testing.T, fr front) {
		const wait = 300 * time.Millisecond
		be := newLimitBackend(t, "silent", 0)
		cfg, port := fr.config(t, ir.VirtualHost{Hostname: "*", Routes: []ir.Route{{Name: "r", Backends: []ir.Backend{irBackend("b", 1, be.ln.Addr())}}}})
		fr.opts.BackendResponseTimeout = wait
		reg := limitProxy(t, cfg, fr.opts)
		c := fr.dial(t, port)
		start := time.Now()
		c.send("POST /q HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc")
		if got := answerWithin(t, c, start, wait*9/10, wait+time.Second); got != "504" {
			t.Errorf("silent backend: %q, want 504", got)
		}
		rc := be.conn(t, 0)
		rc.closedWithin(t, 2*time.Second)
		be.mu.Lock()
		sent := rc.String()
		be.mu.Unlock()
		if !strings.HasPrefix(sent, "POST /q HTTP/1.1\r\n") || !strings.HasSuffix(sent, "\r\n\r\nabc") {
			t.Errorf("backend got %q", sent)
		}
		if n := limitHit(t, reg, "backend_response_timeout"); n != 1 {
			t.Errorf("backend_response_timeout hits = %v, want 1", n)
		}
		// Not retried (the backend got one request), and the client may go on.
		if n := be.conns(); n != 1 {
			t.Errorf("backend saw %d connections, want 1", n)
		}
		c.send("GET /again HTTP/1.1\r\nHost: h\r\n\r\n")
		if got := strings.TrimSpace(c.read("GET")); got != "504" {
			t.Errorf("next request on the connection: %q, want 504", got)
		}
	})
}

// TestResponseWriteIdleTimeout: a client that never reads a large download is disconnected
// after the write idle timeout and the upstream connection is released.
func TestResponseWriteIdleTimeout(t *testing.T) {
	eachFront(t, func(t *testing.T, fr front) {
		const idle = 300 * time.Millisecond
		be := newLimitBackend(t, "flood", 256<<20)
		cfg, port := fr.config(t, ir.VirtualHost{Hostname: "*", Routes: []ir.Route{{Name: "r", Backends: []ir.Backend{irBackend("b", 1, be.ln.Addr())}}}})
		fr.opts.ResponseWriteIdleTimeout = idle
		reg := limitProxy(t, cfg, fr.opts)
		c := fr.dial(t, port)
		if tc, ok := netConn(c.c).(*net.TCPConn); ok {
			_ = tc.SetReadBuffer(64 << 10) // fill up soon
		}
		c.send("GET /big HTTP/1.1\r\nHost: h\r\n\r\n")
		// Never read; the backend's write fails once the proxy lets go of it.
		be.conn(t, 0).closedWithin(t, 5*time.Second)
		waitFor(t, func() bool { return limitHit(t, reg, "response_write_idle_timeout") >= 1 })
		_ = c.c.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, _ := io.Copy(io.Discard, c.c)
		if n >= 256<<20 {
			t.Errorf("client got the whole download (%d bytes) after it stalled", n)
		}
	})
}

func TestResponseWriteIdleTimeoutHTTP2(t *testing.T) {
	const idle = 300 * time.Millisecond
	be := newLimitBackend(t, "flood", 256<<20)
	c, base, reg := h2Proxy(t, be.ln.Addr(), Options{ResponseWriteIdleTimeout: idle})
	res, err := c.Get(base + "/big")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.ProtoMajor != 2 {
		t.Fatalf("served over HTTP/%d", res.ProtoMajor)
	}
	// Never read: once the stream's flow-control window is full, the proxy's writes wait.
	be.conn(t, 0).closedWithin(t, 5*time.Second)
	waitFor(t, func() bool { return limitHit(t, reg, "response_write_idle_timeout") >= 1 })
}

// TestMaxConnectionsPerListener: connections beyond the cap are closed at once; a freed slot
// serves again.
func TestMaxConnectionsPerListener(t *testing.T) {
	for _, fr := range fronts() {
		t.Run(fr.name, func(t *testing.T) { testMaxConns(t, fr, false) })
	}
	for _, fr := range fastFronts() {
		t.Run(fr.name+"/handed-off", func(t *testing.T) { testMaxConns(t, fr, true) })
	}
}

func testMaxConns(t *testing.T, fr front, handOff bool) {
	be := newEcho(t, "b", false)
	route := ir.Route{Name: "r", Backends: []ir.Backend{be.backend(1)}}
	if handOff {
		route.Timeouts.Request = 10 * time.Second // not a fast-path route
	}
	cfg, port := fr.config(t, ir.VirtualHost{Hostname: "*", Routes: []ir.Route{route}})
	fr.opts.MaxConnectionsPerListener = 2
	reg := limitProxy(t, cfg, fr.opts)
	var open []*rawConn
	for range 2 {
		c := fr.dial(t, port)
		c.send("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
		if got := c.read("GET"); !strings.HasPrefix(got, "200") {
			t.Fatalf("connection under the cap: %q", got)
		}
		open = append(open, c)
	}
	// Over the cap the connection is closed at once: a TLS client sees its handshake fail.
	if fr.tls {
		addr := "127.0.0.1:" + strconv.Itoa(int(port))
		if c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true}); err == nil { //nolint:gosec // test
			c.Close()
			t.Error("TLS handshake over the cap succeeded")
		}
	} else {
		over := fr.dial(t, port)
		over.send("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
		if got := over.read("GET"); got != "EOF" {
			t.Errorf("connection over the cap: %q, want it closed", got)
		}
	}
	if n := limitHit(t, reg, "max_connections_per_listener"); n != 1 {
		t.Errorf("max_connections_per_listener hits = %v, want 1", n)
	}
	open[0].c.Close()
	waitFor(t, func() bool {
		c, err := fr.tryDial(t, port)
		if err != nil {
			return false
		}
		defer c.c.Close()
		c.send("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
		return strings.HasPrefix(c.read("GET"), "200")
	})
}

// TestTLS12CBCRefused: TLS 1.2 clients offering only CBC suites are refused unless allowCBC.
func TestTLS12CBCRefused(t *testing.T) {
	cert, _ := selfSigned(t, "a", "a.example")
	be := newEcho(t, "b", false)
	port := freePort(t, false)
	cfg := &ir.Config{Gateway: "ns/gw", Version: 1, Listeners: []ir.Listener{{
		Name: "https", Port: port, Protocol: ir.ProtocolHTTPS, Certificates: []ir.Certificate{cert},
		VirtualHosts: []ir.VirtualHost{{Hostname: "*", Routes: []ir.Route{{Name: "r", Backends: []ir.Backend{be.backend(1)}}}}},
	}}}
	s := newProxy(t, cfg)
	addr := s.Addr(port, false).String()
	handshake := func(suites ...uint16) error {
		c, err := tls.Dial("tcp", addr, &tls.Config{ //nolint:gosec // the test offers weak suites on purpose
			ServerName: "a.example", InsecureSkipVerify: true, MaxVersion: tls.VersionTLS12, CipherSuites: suites,
		})
		if err == nil {
			c.Close()
		}
		return err
	}
	cbc := []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA, tls.TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA}
	if err := handshake(cbc...); err == nil {
		t.Error("TLS 1.2 handshake with only CBC suites succeeded")
	}
	if err := handshake(tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256); err != nil {
		t.Errorf("TLS 1.2 with an AEAD suite: %v", err)
	}
	cfg.Version = 2
	cfg.Limits = &ir.Limits{AllowCBCCipherSuites: true}
	if err := s.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	if err := handshake(cbc...); err != nil {
		t.Errorf("CBC suites with allowCBC: %v", err)
	}
}
