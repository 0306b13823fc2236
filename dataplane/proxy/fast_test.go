package proxy

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// rawConn sends raw request bytes and reads the answers with net/http's parser.
type rawConn struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
}

func dialRaw(t *testing.T, port uint32) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(int(port)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	return &rawConn{t: t, c: c, br: bufio.NewReader(c)}
}

func (r *rawConn) send(s string) {
	r.t.Helper()
	if _, err := io.WriteString(r.c, s); err != nil {
		r.t.Fatal(err)
	}
}

// read returns "<code> <body>" of the next answer, or "EOF".
func (r *rawConn) read(method string) string {
	r.t.Helper()
	res, err := http.ReadResponse(r.br, &http.Request{Method: method})
	if err != nil {
		return "EOF"
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		r.t.Fatalf("reading body: %v", err)
	}
	out := strconv.Itoa(res.StatusCode) + " " + strings.TrimSpace(string(b))
	if tr := res.Trailer.Get("X-Sum"); tr != "" {
		out += " trailer=" + tr
	}
	return out
}

// rawBackend answers by path with framings net/http would not produce on its own.
func rawBackend(t *testing.T) net.Addr {
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
					_, _ = io.Copy(io.Discard, req.Body)
					var resp string
					closeAfter := false
					switch req.URL.Path {
					case "/chunked":
						resp = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Sum\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\nX-Sum: 11\r\n\r\n"
					case "/both":
						// Both framings: chunked wins, and Content-Length must not reach the client.
						resp = "HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nboth\r\n0\r\n\r\n"
					case "/eof":
						resp = "HTTP/1.1 200 OK\r\n\r\nuntil-eof"
						closeAfter = true
					case "/http10":
						resp = "HTTP/1.0 200 OK\r\nContent-Length: 4\r\n\r\nold!"
						closeAfter = true
					case "/nocontent":
						resp = "HTTP/1.1 204 No Content\r\n\r\n"
					case "/head":
						resp = "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n"
					case "/early":
						resp = "HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
					case "/oneshot":
						// Claims keepalive but closes: the next request on the pooled conn must be retried.
						resp = "HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\noneshot"
						closeAfter = true
					default:
						body := req.Method + " " + req.URL.RequestURI() + " " + req.Header.Get("X-Forwarded-For")
						resp = "HTTP/1.1 200 OK\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
					}
					if _, err := io.WriteString(c, resp); err != nil || closeAfter {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr()
}

// TestFastPathFraming holds the fast path, plain and behind TLS, to HTTP/1.1 framing: pipelining,
// backend framings, hand-offs to net/http mid-connection, stale upstream connections, shutdown.
func TestFastPathFraming(t *testing.T) {
	for _, f := range fastFronts() {
		t.Run(f.name, func(t *testing.T) {
			be := irBackend("raw", 1, rawBackend(t))
			cfg, port := f.config(t, ir.VirtualHost{Hostname: "*", Routes: []ir.Route{
				{Name: "cors", Match: ir.Match{Path: prefix("/cors")}, Filters: ir.Filters{CORS: &ir.CORS{AllowOrigins: []string{"*"}}}, Backends: []ir.Backend{be}},
				{Name: "r", Backends: []ir.Backend{be}},
			}})
			s := newProxy(t, cfg)

			// Pipelined requests, several framings, a mid-connection hand-off to net/http (the CORS route)
			// and fast requests after it on the same connection.
			c := f.dial(t, port)
			c.send("GET /a?x=1 HTTP/1.1\r\nHost: h\r\n\r\nPOST /b HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nxyzGET /chunked HTTP/1.1\r\nHost: h\r\n\r\n")
			got := []string{c.read("GET"), c.read("POST"), c.read("GET")}
			c.send("GET /nocontent HTTP/1.1\r\nHost: h\r\n\r\nHEAD /head HTTP/1.1\r\nHost: h\r\n\r\nGET /early HTTP/1.1\r\nHost: h\r\n\r\n")
			// The 103 is relayed as it came, then the final answer.
			got = append(got, c.read("GET"), c.read("HEAD"), c.read("GET"), c.read("GET"))
			c.send("GET /cors HTTP/1.1\r\nHost: h\r\nOrigin: https://o\r\n\r\nGET /c HTTP/1.1\r\nHost: h\r\n\r\n")
			got = append(got, c.read("GET"), c.read("GET"))
			// A close-delimited answer ends the (fast path) client connection too.
			c5 := f.dial(t, port)
			c5.send("GET /http10 HTTP/1.1\r\nHost: h\r\n\r\nGET /eof HTTP/1.1\r\nHost: h\r\n\r\n")
			got = append(got, c5.read("GET"), c5.read("GET"), c5.read("GET"))
			want := []string{
				"200 GET /a?x=1 127.0.0.1", "200 POST /b 127.0.0.1", "200 hello world trailer=11",
				"204 ", "200 ", "103 ", "200 ok",
				"200 GET /cors 127.0.0.1", "200 GET /c 127.0.0.1",
				"200 old!", "200 until-eof", "EOF",
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("pipelined answers (-want +got):\n%s", diff)
			}

			c6 := f.dial(t, port)
			c6.send("GET /both HTTP/1.1\r\nHost: h\r\n\r\nGET /after HTTP/1.1\r\nHost: h\r\n\r\n")
			if diff := cmp.Diff([]string{"200 both", "200 GET /after 127.0.0.1"}, []string{c6.read("GET"), c6.read("GET")}); diff != "" {
				t.Errorf("conflicting backend framing (-want +got):\n%s", diff)
			}

			// A backend that drops a keepalive connection is retried transparently.
			c2 := f.dial(t, port)
			var got2 []string
			for range 3 {
				c2.send("GET /oneshot HTTP/1.1\r\nHost: h\r\n\r\n")
				got2 = append(got2, c2.read("GET"))
				time.Sleep(20 * time.Millisecond)
			}
			if diff := cmp.Diff([]string{"200 oneshot", "200 oneshot", "200 oneshot"}, got2); diff != "" {
				t.Errorf("stale upstream connections (-want +got):\n%s", diff)
			}

			// Malformed requests go to net/http, which answers 400.
			c3 := f.dial(t, port)
			c3.send("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n")
			if got := c3.read("GET"); !strings.HasPrefix(got, "400") {
				t.Errorf("duplicate Host: %q, want 400", got)
			}
			c4 := f.dial(t, port)
			c4.send("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
			if got := c4.read("POST"); !strings.HasPrefix(got, "400") && !strings.HasPrefix(got, "200") {
				t.Errorf("CL+TE: %q", got)
			}

			// An idle keepalive connection does not hold up shutdown.
			idle := f.dial(t, port)
			idle.send("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
			idle.read("GET")
			start := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := s.Shutdown(ctx); err != nil {
				t.Errorf("shutdown: %v", err)
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("shutdown with an idle keepalive connection took %v", d)
			}
			if got := idle.read("GET"); got != "EOF" {
				t.Errorf("idle connection after shutdown: %q", got)
			}
		})
	}
}

// FuzzParseHead checks the fast path's request parser against net/http's: whatever the fast path
// accepts, net/http must read the same way.
func FuzzParseHead(f *testing.F) {
	f.Add("GET /a?b=c HTTP/1.1\r\nHost: x\r\nX-A: 1\r\nX-A: 2\r\n\r\n")
	f.Add("POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\n")
	f.Add("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n")
	f.Add("GET /%2e%2e/x HTTP/1.1\r\nhost: x\r\nConnection: close\r\n\r\n")
	for _, s := range issue15Seeds {
		if h, _, ok := strings.Cut(s, "\r\n\r\n"); ok {
			f.Add(h + "\r\n\r\n")
		}
	}
	f.Fuzz(func(t *testing.T, head string) {
		if !strings.HasSuffix(head, "\r\n\r\n") || strings.Count(head, "\r\n\r\n") != 1 {
			return
		}
		got := new(fastConn).parseHead(head)
		if got == nil {
			return
		}
		want, err := http.ReadRequest(bufio.NewReader(strings.NewReader(head)))
		if err != nil {
			t.Fatalf("fast path accepted what net/http rejects (%v): %q", err, head)
		}
		wantPath := normalizePath(want.URL.Path)
		if got.Method != want.Method || got.Host != want.Host || got.URL.Path != wantPath ||
			got.URL.RawQuery != want.URL.RawQuery || got.ContentLength != want.ContentLength || got.Close != want.Close {
			t.Fatalf("disagreement on %q:\nfast: %s %q %q %q %d %v\nnet/http: %s %q %q %q %d %v", head,
				got.Method, got.Host, got.URL.Path, got.URL.RawQuery, got.ContentLength, got.Close,
				want.Method, want.Host, wantPath, want.URL.RawQuery, want.ContentLength, want.Close)
		}
		if !validHost(got.Host) {
			t.Fatalf("fast path accepted Host %q", got.Host)
		}
		for k, v := range want.Header {
			if strings.Contains(k, "_") {
				if got.Header[k] != nil {
					t.Fatalf("fast path kept header %s on %q", k, head)
				}
				continue // dropped, as nginx does
			}
			if diff := cmp.Diff(v, got.Header[k]); diff != "" && k != "Host" {
				t.Fatalf("header %s on %q (-net/http +fast):\n%s", k, head, diff)
			}
		}
	})
}

// FuzzParseTarget holds the allocation-free target parser to url.ParseRequestURI: whatever it
// accepts must come out field for field the same.
func FuzzParseTarget(f *testing.F) {
	for _, s := range []string{"/", "/a/b?c=d", "/a?", "/a??", "/a?b?c", "/%41", "/a b", "/ü", "/a#b", "/a{b}", "//x/y", "/*", "/a\x7f"} {
		f.Add(s)
	}
	for c := range 256 {
		f.Add("/a" + string(rune(c)) + "b?q" + string(rune(c)))
	}
	f.Fuzz(func(t *testing.T, target string) {
		var got url.URL
		if !parseTarget(target, &got) {
			return
		}
		want, err := url.ParseRequestURI(target)
		if err != nil {
			t.Fatalf("parseTarget accepted %q, which url.ParseRequestURI rejects: %v", target, err)
		}
		if diff := cmp.Diff(*want, got); diff != "" {
			t.Fatalf("parseTarget(%q) (-url.ParseRequestURI +parseTarget):\n%s", target, diff)
		}
	})
}

// TestParseTargetBytes checks every byte in a path and a query, both where parseTarget takes the
// target itself and where it must leave it to url.ParseRequestURI.
func TestParseTargetBytes(t *testing.T) {
	for c := range 256 {
		for _, target := range []string{"/a" + string([]byte{byte(c)}) + "b", "/a?b" + string([]byte{byte(c)})} {
			var got url.URL
			ok := parseTarget(target, &got)
			want, err := url.ParseRequestURI(target)
			if ok && (err != nil || *want != got) {
				t.Errorf("parseTarget(%q) = %+v, url.ParseRequestURI: %+v, %v", target, got, want, err)
			}
			// Plain ASCII letters, digits and the common path punctuation must take the fast road.
			if !ok && strings.ContainsRune("aZ09-_.~/:@=&+;,$", rune(c)) {
				t.Errorf("parseTarget(%q) declined a plain target", target)
			}
		}
	}
}

// TestFastConnReuse parses requests one after another on the same connection state: nothing of an
// earlier request may show in a later one.
func TestFastConnReuse(t *testing.T) {
	fc := &fastConn{}
	heads := []string{
		"POST /one?x=1 HTTP/1.1\r\nHost: a\r\nX-A: 1\r\nX-A: 2\r\nX-B: b\r\nContent-Length: 3\r\nConnection: close\r\n\r\n",
		"GET /two HTTP/1.1\r\nHost: b\r\nX-C: c\r\n\r\n",
		"GET /%74hree HTTP/1.1\r\nHost: c\r\nX-A: 3\r\n\r\n",
	}
	type summary struct {
		Method, Host, Path, RawPath, RawQuery string
		Header                                http.Header
		ContentLength                         int64
		Close                                 bool
	}
	want := []summary{
		{"POST", "a", "/one", "", "x=1", http.Header{"X-A": {"1", "2"}, "X-B": {"b"}, "Content-Length": {"3"}, "Connection": {"close"}}, 3, true},
		{"GET", "b", "/two", "", "", http.Header{"X-C": {"c"}}, 0, false},
		{"GET", "c", "/three", "/%74hree", "", http.Header{"X-A": {"3"}}, 0, false},
	}
	for i, head := range heads {
		r := fc.parseHead(head)
		if r == nil {
			t.Fatalf("request %d not parsed", i)
		}
		got := summary{r.Method, r.Host, r.URL.Path, r.URL.RawPath, r.URL.RawQuery, r.Header, r.ContentLength, r.Close}
		if diff := cmp.Diff(want[i], got); diff != "" {
			t.Errorf("request %d (-want +got):\n%s", i, diff)
		}
		// What a filter does to the request must not reach the next one through shared slices.
		r.Header["X-A"] = append(r.Header["X-A"], "added")
	}
}

func TestHasToken(t *testing.T) {
	for _, tc := range []struct {
		value, token string
		want         bool
	}{
		{"keep-alive, Upgrade", "upgrade", true},
		{" close ", "close", true},
		{"keep-alive, Upgrade", "keep-alive", true},
		{"keep-alive", "keep", false},
		{"gzip,chunked", "chunked", true},
		{"gzip,chunked", "gzip", true},
		{"", "", false},
		{"x-a,,x-b", "x-b", true},
	} {
		if got := hasToken(tc.value, tc.token); got != tc.want {
			t.Errorf("hasToken(%q, %q) = %v, want %v", tc.value, tc.token, got, tc.want)
		}
	}
}

// TestFastPathTimeouts holds the fast path to the server's limits: a head must arrive within
// ReadHeaderTimeout of its first byte, on a new connection and between keepalive requests; a
// keepalive connection may idle for IdleTimeout; a request body may take longer than either.
func TestFastPathTimeouts(t *testing.T) {
	for _, f := range fastFronts() {
		t.Run(f.name, func(t *testing.T) {
			const rht, idle = 300 * time.Millisecond, 1200 * time.Millisecond
			be := irBackend("raw", 1, rawBackend(t))
			cfg, port := f.config(t, ir.VirtualHost{Hostname: "*", Routes: []ir.Route{{Name: "r", Backends: []ir.Backend{be}}}})
			newProxyOpts(t, cfg, Options{ReadHeaderTimeout: rht, IdleTimeout: idle})
			// closedAfter waits for the proxy to close c and says how long that took.
			closedAfter := func(c *rawConn, start time.Time) time.Duration {
				t.Helper()
				_ = c.c.SetReadDeadline(time.Now().Add(5 * time.Second))
				if _, err := c.br.ReadByte(); err == nil {
					t.Fatal("proxy answered instead of closing")
				}
				return time.Since(start)
			}

			t.Run("slow first head", func(t *testing.T) {
				c := f.dial(t, port)
				start := time.Now()
				c.send("GET / HTTP/1.1\r\nHost: h\r\n")
				if d := closedAfter(c, start); d < rht*8/10 || d > idle {
					t.Errorf("incomplete head cut after %v, want about %v", d, rht)
				}
			})
			t.Run("slow head on a keepalive connection", func(t *testing.T) {
				c := f.dial(t, port)
				c.send("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
				if got := c.read("GET"); !strings.HasPrefix(got, "200") {
					t.Fatalf("first request: %q", got)
				}
				// Idle for longer than ReadHeaderTimeout is fine between requests ...
				time.Sleep(rht * 3 / 2)
				// ... but once a head starts, it has ReadHeaderTimeout.
				start := time.Now()
				c.send("GET / HTTP/1.1\r\n")
				if d := closedAfter(c, start); d < rht*8/10 || d > idle {
					t.Errorf("incomplete head cut after %v, want about %v", d, rht)
				}
			})
			t.Run("idle keepalive connection", func(t *testing.T) {
				c := f.dial(t, port)
				c.send("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
				if got := c.read("GET"); !strings.HasPrefix(got, "200") {
					t.Fatalf("first request: %q", got)
				}
				start := time.Now()
				if d := closedAfter(c, start); d < idle*9/10 || d > idle*2 {
					t.Errorf("idle connection closed after %v, want about %v", d, idle)
				}
			})
			t.Run("slow body", func(t *testing.T) {
				c := f.dial(t, port)
				c.send("POST /slow HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\n\r\nab")
				time.Sleep(rht * 2)
				c.send("cd")
				if got := c.read("POST"); got != "200 POST /slow 127.0.0.1" {
					t.Errorf("slow body: %q", got)
				}
			})
		})
	}
}

func TestHeadText(t *testing.T) {
	big := strings.Repeat("x", headReuseMax+1)
	for _, tc := range []struct {
		name  string
		in    string
		reuse bool
		inBuf bool // the string views the reused buffer
	}{
		{"small, reused", "GET / HTTP/1.1\r\n\r\n", true, true},
		{"small, copied for the access log", "GET / HTTP/1.1\r\n\r\n", false, false},
		{"large", big, true, false},
		{"empty", "", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			buf := make([]byte, 0, 64)
			src := []byte(tc.in)
			got := headText(&buf, src, tc.reuse)
			if diff := cmp.Diff(tc.in, got); diff != "" {
				t.Fatalf("headText (-want +got):\n%s", diff)
			}
			if len(src) > 0 {
				src[0] = '!' // the reader's buffer moves on: the text must not follow it
				if got != tc.in {
					t.Errorf("text changed with its source: %q", got)
				}
			}
			if viewed := len(got) > 0 && len(buf) > 0 && unsafe.StringData(got) == unsafe.SliceData(buf); viewed != (tc.inBuf && len(got) > 0) {
				t.Errorf("text in the reused buffer = %v, want %v", viewed, tc.inBuf)
			}
		})
	}
}

// TestFastHeadsAllocateNothing: with a connection's state warm, parsing a request head and a
// backend's answer allocates nothing, so steady fast-path traffic never starts a GC cycle.
func TestFastHeadsAllocateNothing(t *testing.T) {
	reqHead := []byte("GET /api/v1/users?id=42 HTTP/1.1\r\nHost: host7.example.com\r\nUser-Agent: wrk\r\nAccept: */*\r\n\r\n")
	respHead := "HTTP/1.1 200 OK\r\nServer: nginx\r\nDate: Tue, 24 Nov 2026 22:00:00 GMT\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\n"
	fc := &fastConn{}
	rd := strings.NewReader("")
	br := bufio.NewReaderSize(rd, 4096)
	var w strings.Builder
	bw := bufio.NewWriterSize(&w, 4096)
	run := func() {
		r := fc.parseHead(headText(&fc.head, reqHead, true))
		if r == nil || r.Host != "host7.example.com" {
			t.Fatalf("request not parsed: %+v", r)
		}
		rd.Reset(respHead)
		br.Reset(rd)
		a := &fc.answer
		if err := readAnswer(br, &fc.rhead, a); err != nil || a.code != 200 || a.length != 2 || !a.keep {
			t.Fatalf("answer not parsed: %+v %v", a, err)
		}
		writeStatus(bw, a.code, a.reason)
		a.writeLines(bw, true) // the default drops the backend's Server header
		bw.Reset(&w)
	}
	run() // warms the maps and buffers
	if n := testing.AllocsPerRun(100, run); n != 0 {
		t.Errorf("%v allocations per request and answer, want 0", n)
	}
}
