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

	"github.com/google/go-cmp/cmp"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// recBackend records the exact bytes it receives and the requests it read completely from them,
// and answers some paths with the framing of a broken or hostile backend.
type recBackend struct {
	addr net.Addr
	// idleClose closes a keepalive connection idle this long (0: never), as Node.js does after 5s.
	idleClose time.Duration

	mu   sync.Mutex
	raw  bytes.Buffer
	reqs []string
}

func newRecBackend(t *testing.T, idleClose time.Duration) *recBackend {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	b := &recBackend{addr: ln.Addr(), idleClose: idleClose}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go b.serve(c)
		}
	}()
	return b
}

// tee records what the backend reads.
type tee struct {
	b *recBackend
	c net.Conn
}

func (t tee) Read(p []byte) (int, error) {
	n, err := t.c.Read(p)
	t.b.mu.Lock()
	t.b.raw.Write(p[:n])
	t.b.mu.Unlock()
	return n, err
}

func (b *recBackend) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(tee{b, c})
	for {
		if b.idleClose > 0 {
			_ = c.SetReadDeadline(time.Now().Add(b.idleClose))
		}
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		_ = c.SetReadDeadline(time.Time{})
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return // an incomplete request is not recorded: the backend never acts on it
		}
		// One line per request: what a backend acts on, including the framing it was given.
		var names []string
		for k := range req.Header {
			names = append(names, k)
		}
		line := req.Method + " " + req.RequestURI + " host=" + req.Host + " body=" + strconv.Quote(string(body)) +
			" te=" + strings.Join(req.TransferEncoding, ",") + " hdr=" + strings.Join(sortedCopy(names), ",")
		b.mu.Lock()
		b.reqs = append(b.reqs, line)
		b.mu.Unlock()
		var resp string
		switch req.URL.Path {
		case "/reason-cr":
			resp = "HTTP/1.1 200 O\rK\r\nContent-Length: 2\r\n\r\nok"
		case "/cl-plus":
			resp = "HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\nhello"
		case "/chunk-plus":
			resp = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n+5\r\nhello\r\n0\r\n\r\n"
		case "/chunk-ext":
			resp = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=\"y\"\r\nhello\r\n0\r\n\r\n"
		case "/conn-cl":
			resp = "HTTP/1.1 200 OK\r\nConnection: Content-Length\r\nContent-Length: 5\r\n\r\nhello"
		case "/poison":
			// Longer than its Content-Length: a second answer waits behind the first.
			resp = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nPOISONED"
		case "/late":
			// More than the answer, but later: it lies unread in the socket while the connection idles.
			if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"); err != nil {
				return
			}
			time.Sleep(20 * time.Millisecond)
			resp = "HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nPOISONED"
		case "/head-body":
			// A body on HEAD, which reads as an answer of its own.
			const next = "HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nPOISONED"
			resp = "HTTP/1.1 200 OK\r\nContent-Length: " + strconv.Itoa(len(next)) + "\r\n\r\n" + next
		default:
			if req.Header.Get("Upgrade") != "" {
				// Takes any upgrade: were h2c forwarded, the client would get a tunnel.
				resp = "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: " + req.Header.Get("Upgrade") + "\r\n\r\n"
				_, _ = io.WriteString(c, resp)
				return
			}
			out := req.Method + " " + req.URL.Path
			resp = "HTTP/1.1 200 OK\r\nContent-Length: " + strconv.Itoa(len(out)) + "\r\n\r\n" + out
		}
		if _, err := io.WriteString(c, resp); err != nil {
			return
		}
	}
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// requests returns the requests the backend read completely since the last call.
func (b *recBackend) requests() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.reqs
	b.reqs = nil
	return r
}

func (b *recBackend) rawBytes() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.raw.String()
}

// readAll reads the answers on c until it closes or stays silent: each as "<code> <body>", a body
// cut short as "<code> !<error>", then "EOF" if the proxy closed the connection.
func readAll(t *testing.T, c net.Conn, method string) []string {
	t.Helper()
	var out []string
	br := bufio.NewReader(c)
	for {
		_ = c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		res, err := http.ReadResponse(br, &http.Request{Method: method})
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				return out
			}
			return append(out, "EOF")
		}
		b, err := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode >= 400 {
			out = append(out, strconv.Itoa(res.StatusCode)) // the body is the server's own
			continue
		}
		if err != nil {
			out = append(out, strconv.Itoa(res.StatusCode)+" !"+err.Error())
			continue
		}
		out = append(out, strconv.Itoa(res.StatusCode)+" "+string(b))
	}
}

// smuggleProxy serves be behind front f; dial opens a client connection to it.
func smuggleProxy(t *testing.T, be *recBackend, f front) (dial func() *rawConn, s *Server) {
	t.Helper()
	cfg, port := f.config(t, ir.VirtualHost{Hostname: "*.example.com", Routes: []ir.Route{
		{Name: "r", Backends: []ir.Backend{irBackend("rec", 1, be.addr)}},
	}})
	s = newProxyOpts(t, cfg, f.opts)
	return func() *rawConn { return f.dial(t, port) }, s
}

// innocent checks that a client on a fresh connection after an attack gets its own answer, and
// that the backend saw its request and nothing else.
func innocent(t *testing.T, dial func() *rawConn, be *recBackend) {
	t.Helper()
	c := dial()
	c.send("GET /innocent HTTP/1.1\r\nHost: a.example.com\r\nCookie: secret\r\n\r\n")
	if got := c.read("GET"); got != "200 GET /innocent" {
		t.Errorf("innocent client got %q", got)
	}
	reqs := be.requests()
	if len(reqs) != 1 || !strings.HasPrefix(reqs[0], "GET /innocent ") {
		t.Errorf("backend saw for the innocent client: %q", reqs)
	}
}

const smuggled = "GET /smuggled HTTP/1.1\r\nHost: a.example.com\r\n\r\n"

const hdrs = "hdr=X-Forwarded-For,X-Forwarded-Host,X-Forwarded-Proto"

// TestSmuggling sends what issue 15 found through the proxy, on the fast path and on net/http: each
// attack is refused or neutralised, the backend gets nothing it should not, and the next client on
// a fresh connection gets its own answer.
func TestSmuggling(t *testing.T) {
	long := strings.Repeat("a", 20<<10)
	for _, tc := range []struct {
		name, send string
		// want are the attacker's answers; backend what the backend read completely.
		want, backend []string
		// fastOnly marks what only the fast path (plain or TLS) can answer so (net/http: 431
		// beyond 64 KiB).
		fastOnly bool
	}{{
		name: "Content-Length 0 then another",
		send: "POST /a HTTP/1.1\r\nHost: a.example.com\r\nContent-Length: 0\r\nContent-Length: " + strconv.Itoa(len(smuggled)) + "\r\n\r\n" + smuggled,
		want: []string{"400", "EOF"},
	}, {
		name: "differing Content-Length values on one line",
		send: "POST /a HTTP/1.1\r\nHost: a.example.com\r\nContent-Length: 0, 5\r\n\r\n" + smuggled,
		want: []string{"400", "EOF"},
	}, {
		name: "signed Content-Length",
		send: "POST /a HTTP/1.1\r\nHost: a.example.com\r\nContent-Length: +5\r\n\r\nhello" + smuggled,
		want: []string{"400", "EOF"},
	}, {
		name:    "Connection names Content-Length",
		send:    "POST /a HTTP/1.1\r\nHost: a.example.com\r\nConnection: Content-Length\r\nContent-Length: " + strconv.Itoa(len(smuggled)) + "\r\n\r\n" + smuggled,
		want:    []string{"200 POST /a"},
		backend: []string{"POST /a host=a.example.com body=" + strconv.Quote(smuggled) + " te= hdr=Content-Length,X-Forwarded-For,X-Forwarded-Host,X-Forwarded-Proto"},
	}, {
		name:    "Connection names Host and Transfer-Encoding",
		send:    "GET /a HTTP/1.1\r\nHost: a.example.com\r\nConnection: Host, Transfer-Encoding\r\n\r\n",
		want:    []string{"200 GET /a"},
		backend: []string{"GET /a host=a.example.com body=\"\" te= " + hdrs},
	}, {
		name: "Content-Length and Transfer-Encoding",
		send: "POST /a HTTP/1.1\r\nHost: a.example.com\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n" + smuggled,
		// Forwarded chunked without the length, and the connection closed after the answer.
		want:    []string{"200 POST /a", "EOF"},
		backend: []string{"POST /a host=a.example.com body=\"hello\" te=chunked " + hdrs},
	}, {
		name:    "underscore look-alikes of framing headers",
		send:    "POST /a HTTP/1.1\r\nHost: a.example.com\r\nTransfer_Encoding: chunked\r\nContent_Length: 50\r\nX_Custom: 1\r\nContent-Length: 2\r\n\r\nhi",
		want:    []string{"200 POST /a"},
		backend: []string{"POST /a host=a.example.com body=\"hi\" te= hdr=Content-Length,X-Forwarded-For,X-Forwarded-Host,X-Forwarded-Proto"},
	}, {
		name:    "h2c upgrade",
		send:    "GET /a HTTP/1.1\r\nHost: a.example.com\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n",
		want:    []string{"200 GET /a"},
		backend: []string{"GET /a host=a.example.com body=\"\" te= " + hdrs},
	}, {
		name:    "HTTP2-Settings alone",
		send:    "GET /a HTTP/1.1\r\nHost: a.example.com\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n",
		want:    []string{"200 GET /a"},
		backend: []string{"GET /a host=a.example.com body=\"\" te= " + hdrs},
	}, {
		name: "Host the wildcard would route",
		send: "GET /a HTTP/1.1\r\nHost: evil.test#.example.com\r\n\r\n",
		want: []string{"400", "EOF"},
	}, {
		name: "Host with a path",
		send: "GET /a HTTP/1.1\r\nHost: evil.test/.example.com\r\n\r\n",
		want: []string{"400", "EOF"},
	}, {
		name: "Host with a bad port",
		send: "GET /a HTTP/1.1\r\nHost: a.example.com:8x\r\n\r\n",
		want: []string{"400", "EOF"},
	}, {
		name: "absolute-form target with userinfo",
		send: "GET http://user:pw@a.example.com/a HTTP/1.1\r\nHost: a.example.com\r\n\r\n",
		want: []string{"400", "EOF"},
	}, {
		name: "target over 16 KiB",
		send: "GET /" + long + " HTTP/1.1\r\nHost: a.example.com\r\n\r\n",
		want: []string{"414", "EOF"},
	}, {
		name:     "target of 100 KB",
		send:     "GET /" + strings.Repeat("a", 100_000) + " HTTP/1.1\r\nHost: a.example.com\r\n\r\n",
		want:     []string{"414", "EOF"},
		fastOnly: true,
	}, {
		name: "malformed chunked body",
		send: "POST /a HTTP/1.1\r\nHost: a.example.com\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
		want: []string{"400", "EOF"},
	}, {
		name: "chunked body with a signed size",
		send: "POST /a HTTP/1.1\r\nHost: a.example.com\r\nTransfer-Encoding: chunked\r\n\r\n+5\r\nhello\r\n0\r\n\r\n",
		want: []string{"400", "EOF"},
	}} {
		for _, f := range fronts() {
			if tc.fastOnly && f.opts.DisableFastPath {
				continue
			}
			t.Run(tc.name+"/"+f.name, func(t *testing.T) {
				be := newRecBackend(t, 0)
				dial, _ := smuggleProxy(t, be, f)
				c := dial()
				// The proxy may answer and close before the whole attack is written (a 100 KB
				// target): the write then fails, and what the proxy answered is what counts.
				_, _ = io.WriteString(c.c, tc.send)
				got := readAll(t, c.c, "POST")
				for i := range got {
					got[i] = strings.TrimSpace(got[i])
				}
				want := make([]string, len(tc.want))
				for i, w := range tc.want {
					want[i] = strings.TrimSpace(w)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("attacker's answers (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(tc.backend, be.requests()); diff != "" {
					t.Errorf("requests the backend read (-want +got):\n%s", diff)
				}
				// The smuggled request may reach the backend as a body (which requests shows), never
				// an h2c upgrade in any form.
				if raw := strings.ToLower(be.rawBytes()); strings.Contains(raw, "h2c") || strings.Contains(raw, "http2-settings") {
					t.Errorf("backend received %q", raw)
				}
				innocent(t, dial, be)
			})
		}
	}
}

// TestBackendFraming holds the relay of backend answers to net/http's Transport: framing a client
// could read otherwise than the proxy is refused (502, or the connection cut once the head is
// out), framing the proxy can state itself is re-framed, and nothing a backend sends beyond its
// answer reaches another request.
func TestBackendFraming(t *testing.T) {
	for _, tc := range []struct {
		name, method, path string
		// want are the answers on one connection carrying the request and then GET /next (the
		// fast path closes after a 502).
		want, wantNetHTTP []string
	}{
		// net/http writes its own reason phrase, which is re-framing too.
		{"bare CR in the reason", "GET", "/reason-cr", []string{"502", "EOF"}, []string{"200 ok", "200 GET /next"}},
		{"signed Content-Length", "GET", "/cl-plus", []string{"502", "EOF"}, []string{"502", "200 GET /next"}},
		// The connection is cut: the client never gets a body it would read otherwise.
		{"signed chunk size", "GET", "/chunk-plus", []string{"EOF"}, nil},
		{"chunk extension", "GET", "/chunk-ext", []string{"200 hello", "200 GET /next"}, nil},
		{"Connection names Content-Length", "GET", "/conn-cl", []string{"200 hello", "200 GET /next"}, nil},
		{"answer longer than its length", "GET", "/poison", []string{"200 ok", "200 GET /next"}, nil},
		{"body on HEAD", "HEAD", "/head-body", []string{"200 ", "200 GET /next"}, nil},
		{"answer followed by more later", "GET", "/late", []string{"200 ok", "200 GET /next"}, nil},
	} {
		for _, f := range fronts() {
			t.Run(tc.name+"/"+f.name, func(t *testing.T) {
				be := newRecBackend(t, 0)
				dial, _ := smuggleProxy(t, be, f)
				fast := !f.opts.DisableFastPath
				want := tc.want
				if !fast && tc.wantNetHTTP != nil {
					want = tc.wantNetHTTP
				}
				c := dial()
				c.send(tc.method + " " + tc.path + " HTTP/1.1\r\nHost: a.example.com\r\n\r\n")
				got := readAll(t, c.c, tc.method)
				if len(got) > 0 && got[len(got)-1] != "EOF" {
					c.send("GET /next HTTP/1.1\r\nHost: a.example.com\r\n\r\n")
					got = append(got, readAll(t, c.c, "GET")...)
				}
				// An answer cut short is no answer to the client, whether or not its head got out
				// first (net/http flushes the head of a chunked answer at once, or not yet).
				kept := got[:0]
				for _, g := range got {
					if fast || !strings.Contains(g, " !") {
						kept = append(kept, g)
					}
				}
				if diff := cmp.Diff(want, kept); diff != "" {
					t.Errorf("answers (-want +got):\n%s", diff)
				}
				be.requests()
				innocent(t, dial, be)
			})
		}
	}
}

// TestStalePooledConnections: a backend that closes keepalive connections idle for 50ms (as
// Node.js does after 5s) never turns a request into a 502, POST included, and gets each once.
func TestStalePooledConnections(t *testing.T) {
	for _, f := range fronts() {
		t.Run(f.name, func(t *testing.T) {
			be := newRecBackend(t, 50*time.Millisecond)
			dial, _ := smuggleProxy(t, be, f)
			c := dial()
			var got, want []string
			for i := range 6 {
				body := "body" + strconv.Itoa(i)
				c.send("POST /p HTTP/1.1\r\nHost: a.example.com\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body)
				got = append(got, c.read("POST"))
				want = append(want, "200 POST /p")
				time.Sleep(120 * time.Millisecond)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("answers (-want +got):\n%s", diff)
			}
			if reqs := be.requests(); len(reqs) != 6 {
				t.Errorf("backend read %d requests, want 6: %q", len(reqs), reqs)
			}
		})
	}
}

// TestUpstreamRetryUnanswered: a request whose pooled connection fails before any answer byte,
// with its body still in the client buffer, is sent again on a fresh connection, POST included.
// The probe is bypassed (a backend that closes right after it looked) by a connection whose peer
// has gone without the proxy's probe knowing it.
func TestUpstreamRetryUnanswered(t *testing.T) {
	be := newRecBackend(t, 0)
	dial, s := smuggleProxy(t, be, front{name: "fast"})
	c := dial()
	c.send("GET /warm HTTP/1.1\r\nHost: a.example.com\r\n\r\n")
	if got := c.read("GET"); got != "200 GET /warm" {
		t.Fatalf("warm-up: %q", got)
	}
	be.requests()
	// Swap the pooled connection for one to a listener that reads the request and closes
	// without answering, and whose probe says it is fine.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		_, _ = conn.Read(make([]byte, 4096))
		conn.Close()
	}()
	dead, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	ep := be.addr.String()
	// The connection goes back to the pool just after the answer reaches the client.
	uc := s.fastPool.pop(ep)
	for deadline := time.Now().Add(2 * time.Second); uc == nil && time.Now().Before(deadline); uc = s.fastPool.pop(ep) {
		time.Sleep(time.Millisecond)
	}
	if uc == nil {
		t.Fatal("no pooled connection")
	}
	uc.c.Close()
	uc.c, uc.br, uc.bw = dead, bufio.NewReader(dead), bufio.NewWriter(dead)
	uc.probe = connProbe{}
	s.fastPool.put(ep, uc)

	c.send("POST /p HTTP/1.1\r\nHost: a.example.com\r\nContent-Length: 5\r\n\r\nhello")
	if got := c.read("POST"); got != "200 POST /p" {
		t.Errorf("POST on a connection that dies unanswered: %q", got)
	}
	if diff := cmp.Diff([]string{"POST /p host=a.example.com body=\"hello\" te= hdr=Content-Length,X-Forwarded-For,X-Forwarded-Host,X-Forwarded-Proto"}, be.requests()); diff != "" {
		t.Errorf("backend (-want +got):\n%s", diff)
	}
}

// TestUnderscoresAllowed: with AllowUnderscoresInHeaders (a proxy option, or the class's
// spec.proxy through ir.Limits) header names with underscores reach the backend on both paths.
func TestUnderscoresAllowed(t *testing.T) {
	for _, f := range fronts() {
		t.Run(f.name, func(t *testing.T) {
			be := newRecBackend(t, 0)
			cfg, port := f.config(t, ir.VirtualHost{Hostname: "*.example.com", Routes: []ir.Route{
				{Name: "r", Backends: []ir.Backend{irBackend("rec", 1, be.addr)}},
			}})
			cfg.Limits = &ir.Limits{AllowUnderscoresInHeaders: true}
			s := newProxyOpts(t, cfg, f.opts)
			if got := s.opts.UpstreamIdleTimeout; got != 4*time.Second {
				t.Errorf("default upstream idle timeout %v, want 4s", got)
			}
			c := f.dial(t, port)
			c.send("GET /a HTTP/1.1\r\nHost: a.example.com\r\nX_Custom: 1\r\n\r\n")
			if got := c.read("GET"); got != "200 GET /a" {
				t.Errorf("answer %q", got)
			}
			want := []string{"GET /a host=a.example.com body=\"\" te= hdr=X-Forwarded-For,X-Forwarded-Host,X-Forwarded-Proto,X_custom"}
			if diff := cmp.Diff(want, be.requests()); diff != "" {
				t.Errorf("backend (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLongTargetAnswerSurvives: a client still sending a 1 MB request target when the proxy has
// answered 414 finishes its write and reads that answer, on plain and TLS connections alike: the
// proxy half-closes and reads on (lingerClose) rather than closing with unread input, which resets
// the connection — the client's write then fails (many clients give up there without reading the
// answer) and whatever of the answer was not yet sent is lost.
func TestLongTargetAnswerSurvives(t *testing.T) {
	attack := "GET /" + strings.Repeat("a", 1<<20) + " HTTP/1.1\r\nHost: a.example.com\r\n\r\n"
	for _, f := range fastFronts() {
		t.Run(f.name, func(t *testing.T) {
			be := newRecBackend(t, 0)
			dial, _ := smuggleProxy(t, be, f)
			for i := range 10 {
				c := dial()
				// A small send buffer: the proxy's socket buffers cannot take the whole target
				// unread, as they cannot beyond loopback.
				tcp := c.c
				if tc, ok := tcp.(*tls.Conn); ok {
					tcp = tc.NetConn()
				}
				if err := tcp.(*net.TCPConn).SetWriteBuffer(16 << 10); err != nil {
					t.Fatal(err)
				}
				written := make(chan error, 1)
				go func() {
					_, err := io.WriteString(c.c, attack)
					written <- err
				}()
				_ = c.c.SetReadDeadline(time.Now().Add(5 * time.Second))
				res, err := http.ReadResponse(bufio.NewReader(c.c), &http.Request{Method: http.MethodGet})
				if err != nil {
					t.Fatalf("attempt %d: reading the answer to a 1 MB target: %v", i, err)
				}
				res.Body.Close()
				if res.StatusCode != http.StatusRequestURITooLong {
					t.Fatalf("attempt %d: %s, want 414", i, res.Status)
				}
				if err := <-written; err != nil {
					t.Fatalf("attempt %d: the client could not finish sending: %v", i, err)
				}
				c.c.Close()
			}
			if got := be.requests(); len(got) != 0 {
				t.Errorf("the backend read %v", got)
			}
		})
	}
}
