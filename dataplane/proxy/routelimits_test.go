package proxy

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// modRecorder answers every request with a fixed 200 and records the exact bytes it received.
type modRecorder struct {
	ln  net.Listener
	mu  sync.Mutex
	got bytes.Buffer
}

func newModRecorder(t *testing.T) *modRecorder {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &modRecorder{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go b.serve(c)
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return b
}

func (b *modRecorder) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(io.TeeReader(c, modWriterFunc(func(p []byte) (int, error) {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.got.Write(p)
	})))
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, req.Body)
		if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok"); err != nil {
			return
		}
	}
}

func (b *modRecorder) bytes() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.got.String()
}

type modWriterFunc func([]byte) (int, error)

func (f modWriterFunc) Write(p []byte) (int, error) { return f(p) }

// TestHeaderModifierInjectionRefused proves that a config whose header modifiers would inject
// headers (CR/LF in a value), split a response or reframe a request is refused whole (NACK), both
// as a full config and as an incremental update, and that the proxy goes on serving the config it
// had: the backend's bytes hold none of the injected text, and the next client gets its answer.
func TestHeaderModifierInjectionRefused(t *testing.T) {
	be := newModRecorder(t)
	backend := irBackend("raw", 1, be.ln.Addr())
	cfg, port := httpConfig(t, ir.VirtualHost{Hostname: "*", Routes: []ir.Route{
		{Name: "ok", Match: ir.Match{Path: prefix("/")}, Backends: []ir.Backend{backend},
			Filters: ir.Filters{RequestHeaders: &ir.HeaderModifier{Set: []ir.Header{{Name: "X-Tenant", Value: "a\tb"}}}}},
	}})
	s := newProxy(t, cfg)

	bad := map[string]ir.Filters{
		"request CRLF":       {RequestHeaders: &ir.HeaderModifier{Set: []ir.Header{{Name: "X-Tenant", Value: "v\r\nX-Injected: 1"}}}},
		"response splitting": {ResponseHeaders: &ir.HeaderModifier{Add: []ir.Header{{Name: "X-A", Value: "a\nSet-Cookie: session=attacker"}}}},
		"content-length":     {RequestHeaders: &ir.HeaderModifier{Set: []ir.Header{{Name: "Content-Length", Value: "0"}}}},
		"transfer-encoding":  {RequestHeaders: &ir.HeaderModifier{Add: []ir.Header{{Name: "Transfer-Encoding", Value: "chunked"}}}},
		"host":               {RequestHeaders: &ir.HeaderModifier{Set: []ir.Header{{Name: "Host", Value: "admin.internal"}}}},
		"name with a space":  {RequestHeaders: &ir.HeaderModifier{Set: []ir.Header{{Name: "X Injected", Value: "1"}}}},
	}
	version := uint64(1)
	for name, f := range bad {
		version++
		vh := ir.VirtualHost{Hostname: "*", Routes: []ir.Route{{Name: "bad", Match: ir.Match{Path: prefix("/")}, Backends: []ir.Backend{backend}, Filters: f}}}
		next := *cfg
		next.Version = version
		next.Listeners = []ir.Listener{cfg.Listeners[0]}
		next.Listeners[0].VirtualHosts = []ir.VirtualHost{vh}
		if err := s.Apply(&next); err == nil {
			t.Errorf("%s: Apply accepted the config", name)
		}
		version++
		if err := s.Update(&ir.Update{Gateway: cfg.Gateway, Version: version, Hosts: []ir.ListenerHost{{Listener: "http", Host: vh}}}); err == nil {
			t.Errorf("%s: Update accepted the host", name)
		}
	}

	c := testClient()
	req, _ := http.NewRequest(http.MethodGet, baseURL(port)+"/next", nil)
	req.Host = "innocent.example"
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || string(body) != "ok" || res.Header.Get("Set-Cookie") != "" {
		t.Errorf("next client: %d %q Set-Cookie %q, want the backend's 200 ok", res.StatusCode, body, res.Header.Get("Set-Cookie"))
	}
	got := be.bytes()
	if !strings.Contains(got, "GET /next HTTP/1.1\r\n") || !strings.Contains(got, "X-Tenant: a\tb\r\n") {
		t.Errorf("backend received %q, want the request of the config in service", got)
	}
	for _, bad := range []string{"X-Injected", "admin.internal", "Content-Length", "Transfer-Encoding"} {
		if strings.Contains(got, bad) {
			t.Errorf("backend received %q, which holds %q", got, bad)
		}
	}
}

// TestRegexInputBounded proves that a regex condition is not run on a path or header value
// longer than maxRegexInput: such a request does not match the regex route (it falls to the next
// route), a value within the bound still does, and a 60 KiB path costs little.
func TestRegexInputBounded(t *testing.T) {
	re := newEcho(t, "regex", false)
	other := newEcho(t, "other", false)
	cfg, port := httpConfig(t, ir.VirtualHost{Hostname: "*", Routes: []ir.Route{
		{Name: "path-regex", Match: ir.Match{Path: regex("/p/[a-z]*")}, Backends: []ir.Backend{re.backend(1)}},
		{Name: "header-regex", Match: ir.Match{Path: prefix("/h"), Headers: []ir.KeyMatch{{Name: "X-Big", Type: ir.MatchRegex, Value: "[a-z]*"}}},
			Backends: []ir.Backend{re.backend(1)}},
		{Name: "fallback", Match: ir.Match{Path: prefix("/")}, Backends: []ir.Backend{other.backend(1)}},
	}})
	newProxy(t, cfg)
	c := testClient()
	u := baseURL(port)
	within := strings.Repeat("a", maxRegexInput-len("/p/"))
	beyond := within + "a"
	for _, tc := range []struct {
		name, path, hdr, want string
	}{
		{"path within the bound", "/p/" + within, "", "regex"},
		{"path beyond the bound", "/p/" + beyond, "", "other"},
		{"header within the bound", "/h", strings.Repeat("a", maxRegexInput), "regex"},
		{"header beyond the bound", "/h", strings.Repeat("a", maxRegexInput+1), "other"},
	} {
		var hdr []string
		if tc.hdr != "" {
			hdr = []string{"X-Big", tc.hdr}
		}
		if r := get(t, c, u+tc.path, "a.example", hdr...); r.code != http.StatusOK || r.echo.Backend != tc.want {
			t.Errorf("%s: %d from %q, want 200 from %q", tc.name, r.code, r.echo.Backend, tc.want)
		}
	}
	// The matcher itself, on a 60 KiB path: refused by length, not scanned.
	rt, err := compileMatch(&ir.Route{Name: "r", Match: ir.Match{Path: regex("/(" + strings.Repeat("[a-z]", 100) + ")*")}})
	if err != nil {
		t.Fatal(err)
	}
	long := "/" + strings.Repeat("a", 60<<10)
	start := time.Now()
	for range 100 {
		if rt.matchPath(long) {
			t.Fatal("a 60 KiB path matched")
		}
	}
	if d := time.Since(start) / 100; d > time.Millisecond {
		t.Errorf("a 60 KiB path took %s per match", d)
	}
}
