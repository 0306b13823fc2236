package proxy

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

func TestHTTPRoutingAndFilters(t *testing.T) {
	for _, fast := range []bool{true, false} {
		t.Run(map[bool]string{true: "fast path", false: "net/http"}[fast], func(t *testing.T) {
			testHTTPRoutingAndFilters(t, Options{DisableFastPath: !fast})
		})
	}
}

func testHTTPRoutingAndFilters(t *testing.T, opts Options) {
	a, b, mirror := newEcho(t, "a", false), newEcho(t, "b", false), newEcho(t, "mirror", false)
	slow := newEcho(t, "slow", false)
	slow.delay = 2 * time.Second
	flaky := newEcho(t, "flaky", false)
	flaky.status = http.StatusServiceUnavailable
	deadPort := freePort(t, false)
	dead := irBackend("dead", 1)
	dead.Endpoints = []ir.Endpoint{{Address: "127.0.0.1", Port: deadPort}}

	cfg, port := httpConfig(t,
		ir.VirtualHost{Hostname: "app.example.com", Routes: []ir.Route{
			{Name: "hdr", Match: ir.Match{Path: prefix("/hdr")},
				Filters: ir.Filters{
					RequestHeaders:  &ir.HeaderModifier{Set: []ir.Header{{Name: "x-set", Value: "s"}}, Add: []ir.Header{{Name: "x-add", Value: "a2"}}, Remove: []string{"x-remove"}},
					ResponseHeaders: &ir.HeaderModifier{Set: []ir.Header{{Name: "x-resp", Value: "r"}}, Remove: []string{"x-backend"}},
				},
				Backends: []ir.Backend{func() ir.Backend {
					be := a.backend(1)
					be.Filters.RequestHeaders = &ir.HeaderModifier{Add: []ir.Header{{Name: "x-be", Value: "1"}}}
					be.Filters.ResponseHeaders = &ir.HeaderModifier{Add: []ir.Header{{Name: "x-be-resp", Value: "1"}}}
					return be
				}()}},
			{Name: "redirect", Match: ir.Match{Path: prefix("/old")}, Filters: ir.Filters{Redirect: &ir.Redirect{
				Scheme: "https", Hostname: "new.example.com", Path: &ir.PathModifier{Type: ir.ReplacePrefixMatch, Value: "/new"}, StatusCode: 301}}},
			{Name: "redirect-port", Match: ir.Match{Path: exact("/port")}, Filters: ir.Filters{Redirect: &ir.Redirect{
				Port: 8443, Path: &ir.PathModifier{Type: ir.ReplaceFullPath, Value: "/p"}, StatusCode: 302}}},
			{Name: "rewrite", Match: ir.Match{Path: prefix("/api/v1")}, Filters: ir.Filters{Rewrite: &ir.Rewrite{
				Hostname: "internal", Path: &ir.PathModifier{Type: ir.ReplacePrefixMatch, Value: "/"}}},
				Backends: []ir.Backend{a.backend(1)}},
			{Name: "rewrite-full", Match: ir.Match{Path: prefix("/full")}, Filters: ir.Filters{Rewrite: &ir.Rewrite{
				Path: &ir.PathModifier{Type: ir.ReplaceFullPath, Value: "/replaced"}}},
				Backends: []ir.Backend{a.backend(1)}},
			{Name: "mirror", Match: ir.Match{Path: prefix("/mirror")}, Filters: ir.Filters{Mirrors: []ir.Mirror{{Backend: mirror.backend(1)}}},
				Backends: []ir.Backend{a.backend(1)}},
			{Name: "cors", Match: ir.Match{Path: prefix("/cors")}, Filters: ir.Filters{CORS: &ir.CORS{
				AllowOrigins: []string{"https://app.example.com", "https://*.trusted.io"}, AllowCredentials: true,
				AllowMethods: []string{"GET", "PUT"}, AllowHeaders: []string{"x-token"}, ExposeHeaders: []string{"x-backend"}, MaxAge: 600}},
				Backends: []ir.Backend{a.backend(1)}},
			{Name: "timeout", Match: ir.Match{Path: prefix("/slow")}, Timeouts: ir.Timeouts{Request: 200 * time.Millisecond}, Backends: []ir.Backend{slow.backend(1)}},
			{Name: "be-timeout", Match: ir.Match{Path: prefix("/beslow")}, Timeouts: ir.Timeouts{BackendRequest: 200 * time.Millisecond}, Backends: []ir.Backend{slow.backend(1)}},
			{Name: "retry", Match: ir.Match{Path: prefix("/retry")}, Retry: &ir.Retry{Attempts: 3, Codes: []int{503}, Backoff: time.Millisecond},
				Backends: []ir.Backend{flaky.backend(1)}},
			{Name: "retry-dead", Match: ir.Match{Path: prefix("/dead")}, Retry: &ir.Retry{Attempts: 2, Backoff: time.Millisecond},
				Backends: []ir.Backend{dead}},
			{Name: "invalid", Match: ir.Match{Path: prefix("/invalid")}, Backends: []ir.Backend{{Name: "gone", Weight: 1, Invalid: true}}},
			{Name: "nobackends", Match: ir.Match{Path: prefix("/none")}},
			{Name: "noendpoints", Match: ir.Match{Path: prefix("/noeps")}, Backends: []ir.Backend{{Name: "empty", Weight: 1}}},
			{Name: "weighted", Match: ir.Match{Path: prefix("/weighted")}, Backends: []ir.Backend{a.backend(3), b.backend(1)}},
			{Name: "half-invalid", Match: ir.Match{Path: prefix("/half")}, Backends: []ir.Backend{a.backend(1), {Name: "gone", Weight: 1, Invalid: true}}},
			{Name: "post", Match: ir.Match{Path: exact("/echo"), Method: "POST"}, Backends: []ir.Backend{b.backend(1)}},
			{Name: "root", Match: ir.Match{Path: prefix("/")}, Backends: []ir.Backend{a.backend(1)}},
		}},
		ir.VirtualHost{Hostname: "*.example.com", Routes: []ir.Route{{Name: "wild", Backends: []ir.Backend{b.backend(1)}}}},
	)
	newProxyOpts(t, cfg, opts)
	c := testClient()
	u := baseURL(port)

	t.Run("host routing and 404", func(t *testing.T) {
		if r := get(t, c, u+"/", "APP.example.com:80"); r.echo.Backend != "a" {
			t.Errorf("exact host went to %q", r.echo.Backend)
		}
		if r := get(t, c, u+"/", "other.example.com"); r.echo.Backend != "b" {
			t.Errorf("wildcard host went to %q", r.echo.Backend)
		}
		if r := get(t, c, u+"/", "nothing.org"); r.code != 404 {
			t.Errorf("unknown host: %d, want 404", r.code)
		}
	})
	t.Run("x-forwarded", func(t *testing.T) {
		r := get(t, c, u+"/", "app.example.com", "X-Forwarded-For", "203.0.113.9")
		want := http.Header{"X-Forwarded-For": {"203.0.113.9, 127.0.0.1"}, "X-Forwarded-Proto": {"http"}, "X-Forwarded-Host": {"app.example.com"}}
		got := http.Header{}
		for k := range want {
			got[k] = r.echo.Headers[k]
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("forwarded headers (-want +got):\n%s", diff)
		}
		if r.echo.Host != "app.example.com" {
			t.Errorf("backend saw Host %q", r.echo.Host)
		}
	})
	t.Run("hop-by-hop request headers", func(t *testing.T) {
		// Connection names further hop-by-hop headers as a comma-separated list (RFC 9110 §7.6.1).
		r := get(t, c, u+"/", "app.example.com", "Connection", "keep-alive, X-Hop", "Connection", "x-hop2",
			"X-Hop", "1", "X-Hop2", "2", "Keep-Alive", "timeout=5", "Proxy-Authorization", "secret", "X-Kept", "3")
		got := map[string][]string{}
		for _, k := range []string{"Connection", "X-Hop", "X-Hop2", "Keep-Alive", "Proxy-Authorization", "X-Kept"} {
			got[k] = r.echo.Headers[k]
		}
		want := map[string][]string{"Connection": nil, "X-Hop": nil, "X-Hop2": nil, "Keep-Alive": nil, "Proxy-Authorization": nil, "X-Kept": {"3"}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("headers at the backend (-want +got):\n%s", diff)
		}
	})
	t.Run("header modifiers", func(t *testing.T) {
		r := get(t, c, u+"/hdr", "app.example.com", "x-set", "old", "x-add", "a1", "x-remove", "gone")
		got := map[string][]string{
			"X-Set": r.echo.Headers["X-Set"], "X-Add": r.echo.Headers["X-Add"], "X-Remove": r.echo.Headers["X-Remove"],
			"X-Be": r.echo.Headers["X-Be"], "resp X-Resp": r.hdr["X-Resp"], "resp X-Backend": r.hdr["X-Backend"],
			"resp X-Be-Resp": r.hdr["X-Be-Resp"],
		}
		want := map[string][]string{
			"X-Set": {"s"}, "X-Add": {"a1", "a2"}, "X-Remove": nil, "X-Be": {"1"}, "resp X-Resp": {"r"},
			"resp X-Backend": nil, "resp X-Be-Resp": {"1"},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("headers (-want +got):\n%s", diff)
		}
	})
	t.Run("redirects", func(t *testing.T) {
		tests := []struct{ path, wantLoc string }{
			{"/old/page?q=1", "https://new.example.com/new/page?q=1"},
			{"/old", "https://new.example.com/new"},
			{"/port?x", "http://app.example.com:8443/p?x"},
		}
		var got, want []string
		for _, tt := range tests {
			r := get(t, c, u+tt.path, "app.example.com")
			got = append(got, tt.path+" → "+r.hdr.Get("Location"))
			want = append(want, tt.path+" → "+tt.wantLoc)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("redirects (-want +got):\n%s", diff)
		}
		if r := get(t, c, u+"/old", "app.example.com"); r.code != 301 {
			t.Errorf("status %d, want 301", r.code)
		}
	})
	t.Run("rewrite", func(t *testing.T) {
		r := get(t, c, u+"/api/v1/users?id=7", "app.example.com")
		if diff := cmp.Diff(echo{Path: "/users", Query: "id=7", Host: "internal"}, echo{Path: r.echo.Path, Query: r.echo.Query, Host: r.echo.Host}); diff != "" {
			t.Errorf("rewrite (-want +got):\n%s", diff)
		}
		if got := r.echo.Headers.Get("X-Forwarded-Host"); got != "app.example.com" {
			t.Errorf("X-Forwarded-Host %q, want the client's host", got)
		}
		if r := get(t, c, u+"/api/v1", "app.example.com"); r.echo.Path != "/" {
			t.Errorf("rewrite of the bare prefix: %q, want /", r.echo.Path)
		}
		if r := get(t, c, u+"/full/x", "app.example.com"); r.echo.Path != "/replaced" {
			t.Errorf("full rewrite: %q", r.echo.Path)
		}
	})
	t.Run("mirror", func(t *testing.T) {
		before := mirror.hits.Load()
		req, _ := http.NewRequest("POST", u+"/mirror", strings.NewReader("payload"))
		req.Host = "app.example.com"
		if r := do(t, c, req); r.echo.Backend != "a" || r.echo.Body != "payload" {
			t.Errorf("mirrored request answered by %q with body %q", r.echo.Backend, r.echo.Body)
		}
		waitFor(t, func() bool { return mirror.hits.Load() == before+1 })
	})
	t.Run("cors", func(t *testing.T) {
		req, _ := http.NewRequest("OPTIONS", u+"/cors", nil)
		req.Host = "app.example.com"
		req.Header.Set("Origin", "https://x.trusted.io")
		req.Header.Set("Access-Control-Request-Method", "PUT")
		r := do(t, c, req)
		got := http.Header{}
		for _, k := range []string{"Access-Control-Allow-Origin", "Access-Control-Allow-Credentials", "Access-Control-Allow-Methods", "Access-Control-Allow-Headers", "Access-Control-Max-Age", "Access-Control-Expose-Headers"} {
			got[k] = r.hdr[k]
		}
		want := http.Header{"Access-Control-Allow-Origin": {"https://x.trusted.io"}, "Access-Control-Allow-Credentials": {"true"},
			"Access-Control-Allow-Methods": {"GET, PUT"}, "Access-Control-Allow-Headers": {"x-token"}, "Access-Control-Max-Age": {"600"},
			"Access-Control-Expose-Headers": {"x-backend"}}
		if diff := cmp.Diff(want, got); diff != "" || r.code != 200 {
			t.Errorf("preflight %d (-want +got):\n%s", r.code, diff)
		}
		r = get(t, c, u+"/cors", "app.example.com", "Origin", "https://app.example.com")
		if r.hdr.Get("Access-Control-Allow-Origin") != "https://app.example.com" || r.hdr.Get("Access-Control-Expose-Headers") != "x-backend" {
			t.Errorf("simple request CORS headers: %v", r.hdr)
		}
		r = get(t, c, u+"/cors", "app.example.com", "Origin", "https://evil.org")
		if v := r.hdr.Get("Access-Control-Allow-Origin"); v != "" {
			t.Errorf("disallowed origin got Allow-Origin %q", v)
		}
		req, _ = http.NewRequest("OPTIONS", u+"/cors", nil)
		req.Host = "app.example.com"
		req.Header.Set("Origin", "https://evil.org")
		req.Header.Set("Access-Control-Request-Method", "PUT")
		if r = do(t, c, req); r.code != http.StatusForbidden || r.hdr.Get("Access-Control-Allow-Origin") != "" || r.echo.Backend != "" {
			t.Errorf("preflight from a disallowed origin: %d %v, answered by %q", r.code, r.hdr, r.echo.Backend)
		}
	})
	t.Run("status answers", func(t *testing.T) {
		tests := []struct{ path string }{{"/slow"}, {"/beslow"}, {"/invalid"}, {"/none"}, {"/noeps"}, {"/dead"}, {"/retry"}}
		var got []string
		for _, tt := range tests {
			r := get(t, c, u+tt.path, "app.example.com")
			got = append(got, tt.path+" "+http.StatusText(r.code))
		}
		want := []string{"/slow Gateway Timeout", "/beslow Gateway Timeout", "/invalid Internal Server Error", "/none Internal Server Error",
			"/noeps Service Unavailable", "/dead Bad Gateway", "/retry OK"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("status (-want +got):\n%s", diff)
		}
	})
	t.Run("retry", func(t *testing.T) {
		flaky.hits.Store(0)
		flaky.failN.Store(2)
		if r := get(t, c, u+"/retry", "app.example.com"); r.code != 200 || flaky.hits.Load() != 3 {
			t.Errorf("retry: %d after %d attempts, want 200 after 3", r.code, flaky.hits.Load())
		}
		flaky.hits.Store(0)
		flaky.failN.Store(10)
		if r := get(t, c, u+"/retry", "app.example.com"); r.code != 503 || flaky.hits.Load() != 4 {
			t.Errorf("retry exhausted: %d after %d attempts, want 503 after 4", r.code, flaky.hits.Load())
		}
		flaky.failN.Store(0)
	})
	t.Run("weights", func(t *testing.T) {
		counts := map[string]int{}
		for range 400 {
			counts[get(t, c, u+"/weighted", "app.example.com").echo.Backend]++
		}
		if counts["a"] < 240 || counts["a"] > 360 || counts["a"]+counts["b"] != 400 {
			t.Errorf("3:1 weights gave %v", counts)
		}
		codes := map[int]int{}
		for range 200 {
			codes[get(t, c, u+"/half", "app.example.com").code]++
		}
		if codes[500] < 60 || codes[200] < 60 || codes[500]+codes[200] != 200 {
			t.Errorf("half invalid gave %v", codes)
		}
	})
	t.Run("method and body", func(t *testing.T) {
		req, _ := http.NewRequest("POST", u+"/echo", bytes.NewReader(bytes.Repeat([]byte("x"), 1<<20)))
		req.Host = "app.example.com"
		r := do(t, c, req)
		if r.echo.Backend != "b" || len(r.echo.Body) != 1<<20 {
			t.Errorf("POST /echo went to %q with %d bytes", r.echo.Backend, len(r.echo.Body))
		}
		if r := get(t, c, u+"/echo", "app.example.com"); r.echo.Backend != "a" {
			t.Errorf("GET /echo went to %q, want the root route", r.echo.Backend)
		}
	})
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 5s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
