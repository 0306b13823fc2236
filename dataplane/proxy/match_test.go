package proxy

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// matchOnly compiles routes for matching alone, without a Server.
func matchOnly(t testing.TB, routes []ir.Route) *vhost {
	compiled := make([]*route, 0, len(routes))
	for i := range routes {
		r, err := compileMatch(&routes[i])
		if err != nil {
			t.Fatal(err)
		}
		compiled = append(compiled, r)
	}
	vh := newVHost("", compiled)
	if vh.index == nil {
		// Tests and fuzzers always exercise the index, whatever the host's size.
		ix := newPathIndex()
		for i, r := range compiled {
			ix.add(int32(i), r)
		}
		vh.index = &ix
	}
	return vh
}

func TestMatchPrecedence(t *testing.T) {
	// In IR order, as translate sorts them: exact before prefix, longer prefix first, then regex,
	// then method, header and query conditions, then the catch-all.
	routes := []ir.Route{
		{Name: "exact-foo", Match: ir.Match{Path: exact("/foo")}},
		{Name: "prefix-foo-bar-hdr", Match: ir.Match{Path: prefix("/foo/bar"), Headers: []ir.KeyMatch{{Name: "x-env", Type: ir.MatchExact, Value: "canary"}}}},
		{Name: "prefix-foo-bar", Match: ir.Match{Path: prefix("/foo/bar/")}},
		{Name: "prefix-foo-post", Match: ir.Match{Path: prefix("/foo"), Method: "POST"}},
		{Name: "prefix-foo-query", Match: ir.Match{Path: prefix("/foo"), QueryParams: []ir.KeyMatch{{Name: "v", Type: ir.MatchRegex, Value: "[0-9]+"}}}},
		{Name: "prefix-foo", Match: ir.Match{Path: prefix("/foo")}},
		{Name: "regex-img", Match: ir.Match{Path: regex(`/img/[a-z]+\.png`)}},
		{Name: "hdr-regex", Match: ir.Match{Path: prefix("/"), Headers: []ir.KeyMatch{{Name: "X-Tenant", Type: ir.MatchRegex, Value: "t-[0-9]"}}}},
		{Name: "root", Match: ir.Match{Path: prefix("/")}},
	}
	vh := matchOnly(t, routes)
	tests := []struct {
		method, target string
		hdr            http.Header
		want           string
	}{
		{"GET", "/foo", nil, "exact-foo"},
		{"POST", "/foo", nil, "exact-foo"},
		{"GET", "/foo/", nil, "prefix-foo"},
		{"GET", "/foobar", nil, "root"},
		{"GET", "/foo/bar", nil, "prefix-foo-bar"},
		{"GET", "/foo/bar", http.Header{"X-Env": {"canary"}}, "prefix-foo-bar-hdr"},
		{"GET", "/foo/bar/baz", http.Header{"X-Env": {"stable"}}, "prefix-foo-bar"},
		{"GET", "/foo/barn", nil, "prefix-foo"},
		{"POST", "/foo/x", nil, "prefix-foo-post"},
		{"GET", "/foo/x?v=12", nil, "prefix-foo-query"},
		{"GET", "/foo/x?v=1a", nil, "prefix-foo"},
		{"GET", "/img/cat.png", nil, "regex-img"},
		{"GET", "/img/cat.png.bak", nil, "root"},
		{"GET", "/other", http.Header{"X-Tenant": {"t-7"}}, "hdr-regex"},
		{"GET", "/other", http.Header{"X-Tenant": {"t-77"}}, "root"},
		{"GET", "/", nil, "root"},
	}
	var got, want []string
	for _, tt := range tests {
		req := httptest.NewRequest(tt.method, tt.target, nil)
		for k, v := range tt.hdr {
			req.Header[k] = v
		}
		name := "<none>"
		if r := vh.match(req); r != nil {
			name = r.name
		}
		got = append(got, tt.method+" "+tt.target+" → "+name)
		want = append(want, tt.method+" "+tt.target+" → "+tt.want)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("match (-want +got):\n%s", diff)
	}
}

func TestMatchNoRoute(t *testing.T) {
	vh := matchOnly(t, []ir.Route{{Name: "a", Match: ir.Match{Path: prefix("/a")}}, {Name: "get", Match: ir.Match{Method: "GET"}}})
	if r := vh.match(httptest.NewRequest("POST", "/b", nil)); r != nil {
		t.Errorf("POST /b matched %q, want none", r.name)
	}
	if r := vh.match(httptest.NewRequest("GET", "/b", nil)); r == nil || r.name != "get" {
		t.Errorf("GET /b matched %v, want get", r)
	}
}

func TestHostLookup(t *testing.T) {
	m := newHostMap[string]()
	for _, h := range []string{"foo.example.com", "*.example.com", "*.bar.example.com", "*", "Upper.Example.org"} {
		m.add(h, h)
	}
	tests := []struct{ host, want string }{
		{"foo.example.com", "foo.example.com"},
		{"FOO.Example.COM:8080", "foo.example.com"},
		{"baz.example.com", "*.example.com"},
		{"a.b.example.com", "*.example.com"},
		{"x.bar.example.com", "*.bar.example.com"},
		{"a.x.bar.example.com", "*.bar.example.com"},
		{"bar.example.com", "*.example.com"},
		{"example.com", "*"},
		{"upper.example.org", "Upper.Example.org"},
		{"foo.example.com.", "foo.example.com"},
		{"[::1]:80", "*"},
		{"10.0.0.1:443", "*"},
	}
	var got, want []string
	for _, tt := range tests {
		v, _ := m.lookup(normalizeHost(tt.host))
		got = append(got, tt.host+" → "+v)
		want = append(want, tt.host+" → "+tt.want)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("lookup (-want +got):\n%s", diff)
	}
	noAny := newHostMap[int]()
	noAny.add("*.example.com", 1)
	if _, ok := noAny.lookup("example.com"); ok {
		t.Error("*.example.com matched example.com")
	}
}

func TestReplacePrefix(t *testing.T) {
	tests := []struct{ prefix, repl, path, want string }{
		{"/foo", "/bar", "/foo", "/bar"},
		{"/foo", "/bar", "/foo/", "/bar/"},
		{"/foo", "/bar", "/foo/x/y", "/bar/x/y"},
		{"/foo/", "/bar", "/foo/x", "/bar/x"},
		{"/foo", "/bar/", "/foo/x", "/bar/x"},
		{"/foo", "/", "/foo/x", "/x"},
		{"/foo", "/", "/foo", "/"},
		{"/foo", "", "/foo/x", "/x"},
		{"/", "/bar", "/x", "/bar/x"},
		{"/", "/bar/", "/x", "/bar/x"},
		{"/", "/bar", "/", "/bar/"},
	}
	var got, want []string
	for _, tt := range tests {
		r, err := compileMatch(&ir.Route{Match: ir.Match{Path: prefix(tt.prefix)}})
		if err != nil {
			t.Fatal(err)
		}
		p, _ := (&pathMod{prefix: true, value: tt.repl}).newPath(r, tt.path)
		got = append(got, tt.prefix+" "+tt.repl+" "+tt.path+" → "+p)
		want = append(want, tt.prefix+" "+tt.repl+" "+tt.path+" → "+tt.want)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("replacePrefix (-want +got):\n%s", diff)
	}
}

func TestNormalizePath(t *testing.T) {
	tests := []struct{ in, want string }{
		{"/", "/"},
		{"/a/b", "/a/b"},
		{"/a/b/", "/a/b/"},
		{"/a//b", "/a/b"},
		{"/a/./b/", "/a/b/"},
		{"/public/../admin", "/admin"},
		{"/..", "/"},
		{"/a/..", "/"},
		{"/a/.b/..c", "/a/.b/..c"},
		{"*", "*"},
	}
	var got, want []string
	for _, tt := range tests {
		got = append(got, tt.in+" → "+normalizePath(tt.in))
		want = append(want, tt.in+" → "+tt.want)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("normalizePath (-want +got):\n%s", diff)
	}
}

// TestBackendSharing: routes naming the same backend share its compiled form; a different endpoint
// list, protocol or backend filters make a separate one.
func TestBackendSharing(t *testing.T) {
	ep := func(port uint32) []ir.Endpoint { return []ir.Endpoint{{Address: "10.0.0.1", Port: port}} }
	backends := []ir.Backend{
		{Name: "a", Weight: 1, Endpoints: ep(80)},
		{Name: "a", Weight: 5, Endpoints: ep(80)}, // weight is the route's business: shared
		{Name: "a", Weight: 1, Endpoints: ep(81)},
		{Name: "a", Weight: 1, Endpoints: ep(80), AppProtocol: ir.AppH2C},
		{Name: "a", Weight: 1, Endpoints: ep(80), Filters: ir.Filters{RequestHeaders: &ir.HeaderModifier{Set: []ir.Header{{Name: "x", Value: "1"}}}}},
		{Name: "b", Weight: 1, Endpoints: ep(80)},
	}
	build := func() []ir.Route {
		var routes []ir.Route
		for i, b := range backends {
			routes = append(routes, ir.Route{Name: strconv.Itoa(i), Match: ir.Match{Path: exact("/" + strconv.Itoa(i))}, Backends: []ir.Backend{b}})
		}
		return routes
	}
	// y's routes differ from x's by one more route, so that the hosts do not share one route set
	// (TestRouteSetSharing), and are built apart, so that they do not share routes
	// (TestCompileSharedRoutes): they share backends only.
	routes := build()
	yRoutes := append(build(), ir.Route{Name: "more", Backends: []ir.Backend{backends[0]}})
	cfg := &ir.Config{Listeners: []ir.Listener{{Name: "h", Port: 80, Protocol: ir.ProtocolHTTP,
		VirtualHosts: []ir.VirtualHost{{Hostname: "x", Routes: routes}, {Hostname: "y", Routes: yRoutes}}}}}
	s, err := New(Options{Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := s.compile(cfg, certCache{}, tlsTransports{})
	if err != nil {
		t.Fatal(err)
	}
	lt := tbl.listeners[portKey{80, false}]
	x, _ := lt.hosts.lookup("x")
	y, _ := lt.hosts.lookup("y")
	be := func(vh *vhost, i int) *backend { return vh.routes[i].backends.list[0] }
	var got []bool
	for i := range backends {
		got = append(got, be(x, i) == be(x, 0), be(x, i) == be(y, i))
	}
	// Per backend: shared with backend 0? shared between the two hosts?
	want := []bool{true, true, true, true, false, true, false, true, false, false, false, true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sharing (-want +got):\n%s", diff)
	}
}

// TestRouteSetSharing: hosts of one compile whose routes are equal, even when built apart, share
// one compiled route set; any difference in the routes, the listener or TLS backends (compiled
// again on their own when the client certificate changes) gives a host its own.
func TestRouteSetSharing(t *testing.T) {
	routes := func(path, ep string) []ir.Route {
		return []ir.Route{
			{Name: "r", Match: ir.Match{Path: prefix(path)}, Backends: []ir.Backend{{Name: "b", Weight: 1, Endpoints: []ir.Endpoint{{Address: ep, Port: 80}}}}},
			{Name: "h", Match: ir.Match{Headers: []ir.KeyMatch{{Name: "x", Type: ir.MatchExact, Value: "1"}}}, Backends: []ir.Backend{{Name: "b", Weight: 1}}},
		}
	}
	tlsRoutes := func() []ir.Route {
		rs := routes("/", "10.0.0.1")
		rs[0].Backends[0].AppProtocol = ir.AppTLS
		return rs
	}
	tests := []struct {
		name    string
		a, b    []ir.Route
		otherLn bool // b is on a second listener
		want    bool
	}{
		{name: "equal, built apart", a: routes("/", "10.0.0.1"), b: routes("/", "10.0.0.1"), want: true},
		{name: "another path", a: routes("/", "10.0.0.1"), b: routes("/a", "10.0.0.1")},
		{name: "another endpoint", a: routes("/", "10.0.0.1"), b: routes("/", "10.0.0.2")},
		{name: "another header value", a: routes("/", "10.0.0.1"), b: func() []ir.Route {
			rs := routes("/", "10.0.0.1")
			rs[1].Match.Headers[0].Value = "2"
			return rs
		}()},
		{name: "another listener", a: routes("/", "10.0.0.1"), b: routes("/", "10.0.0.1"), otherLn: true},
		{name: "TLS backends", a: tlsRoutes(), b: tlsRoutes()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ls := []ir.Listener{{Name: "h", Port: 80, Protocol: ir.ProtocolHTTP, VirtualHosts: []ir.VirtualHost{{Hostname: "a", Routes: tt.a}}}}
			bl := 0
			if tt.otherLn {
				ls = append(ls, ir.Listener{Name: "h2", Port: 81, Protocol: ir.ProtocolHTTP})
				bl = 1
			}
			ls[bl].VirtualHosts = append(ls[bl].VirtualHosts, ir.VirtualHost{Hostname: "b", Routes: tt.b})
			s, err := New(Options{Registry: prometheus.NewRegistry()})
			if err != nil {
				t.Fatal(err)
			}
			tbl, err := s.compile(&ir.Config{Listeners: ls}, certCache{}, tlsTransports{})
			if err != nil {
				t.Fatal(err)
			}
			a, _ := tbl.listeners[portKey{80, false}].hosts.lookup("a")
			b, _ := tbl.listeners[portKey{ls[bl].Port, false}].hosts.lookup("b")
			if got := a.routeSet == b.routeSet; got != tt.want {
				t.Errorf("hosts share a route set: %v, want %v", got, tt.want)
			}
			if a.name != "a" || b.name != "b" {
				t.Errorf("hosts are named %q and %q", a.name, b.name)
			}
		})
	}
}
