package proxy

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// routesFromSpec turns fuzz text into routes, one per line: a path type letter (e exact, p prefix,
// r regex, anything else none), a method letter (G, P or none), then the value, optionally followed by
// "#h=" (header x-h) and "#q=" (query q) exact matches.
func routesFromSpec(spec string) []ir.Route {
	var routes []ir.Route
	for i, line := range strings.Split(spec, "\n") {
		if i == 64 || len(line) < 2 {
			break
		}
		r := ir.Route{Name: line}
		val := line[2:]
		var extra []string
		if j := strings.IndexByte(val, '#'); j >= 0 {
			extra = strings.Split(val[j+1:], "#")
			val = val[:j]
		}
		switch line[0] {
		case 'e':
			r.Match.Path = exact(val)
		case 'p':
			r.Match.Path = prefix(val)
		case 'r':
			r.Match.Path = regex(val)
			if _, err := compileAnchored(val); err != nil {
				continue
			}
		}
		switch line[1] {
		case 'G':
			r.Match.Method = "GET"
		case 'P':
			r.Match.Method = "POST"
		}
		for _, e := range extra {
			switch {
			case strings.HasPrefix(e, "h="):
				r.Match.Headers = append(r.Match.Headers, ir.KeyMatch{Name: "x-h", Type: ir.MatchExact, Value: e[2:]})
			case strings.HasPrefix(e, "q="):
				r.Match.QueryParams = append(r.Match.QueryParams, ir.KeyMatch{Name: "q", Type: ir.MatchExact, Value: e[2:]})
			}
		}
		routes = append(routes, r)
	}
	return routes
}

// FuzzMatch checks that the indexed lookup always agrees with the linear reference scan.
func FuzzMatch(f *testing.F) {
	f.Add("e /foo\npG/foo\np /\n", "/foo", "GET", "", "")
	f.Add("p /a/b/\np /a\nr /a/[0-9]+\n", "/a/b", "POST", "v", "q=1")
	f.Add("pP/x#h=1\np /x#q=2\n  \n", "/x/y", "POST", "1", "q=2")
	f.Add("p \np //\ne \n", "", "GET", "", "")
	f.Add("p foo\nr .*\n", "foo/bar", "GET", "", "")
	f.Fuzz(func(t *testing.T, spec, path, method, hdr, query string) {
		vh := matchOnly(t, routesFromSpec(spec))
		req := &http.Request{Method: method, URL: &url.URL{Path: path, RawQuery: query}, Header: http.Header{}}
		if hdr != "" {
			req.Header["X-H"] = []string{hdr}
		}
		got, want := vh.match(req), vh.matchLinear(req)
		if got != want {
			name := func(r *route) string {
				if r == nil {
					return "<nil>"
				}
				return r.name
			}
			t.Errorf("path %q: index chose %q, linear scan %q", path, name(got), name(want))
		}
	})
}

// FuzzDecodeConfig feeds arbitrary JSON through decode, Validate and compile: nothing may panic, and
// whatever compiles must route a request without panicking.
func FuzzDecodeConfig(f *testing.F) {
	seed := ir.Config{Version: 1, Listeners: []ir.Listener{{Name: "h", Port: 80, Protocol: ir.ProtocolHTTP,
		VirtualHosts: []ir.VirtualHost{{Hostname: "*.example.com", Routes: []ir.Route{{Name: "r",
			Match:    ir.Match{Path: prefix("/a"), Headers: []ir.KeyMatch{{Name: "x", Type: ir.MatchRegex, Value: "a+"}}},
			Filters:  ir.Filters{Rewrite: &ir.Rewrite{Path: &ir.PathModifier{Type: ir.ReplacePrefixMatch, Value: "/b"}}, CORS: &ir.CORS{AllowOrigins: []string{"*"}}},
			Backends: []ir.Backend{{Name: "b", Weight: 1, Endpoints: []ir.Endpoint{{Address: "127.0.0.1", Port: 1}}}},
			Retry:    &ir.Retry{Attempts: 1, Codes: []int{503}},
		}}}}}, {Name: "t", Port: 81, Protocol: ir.ProtocolTCP, L4: &ir.L4Route{Name: "l4"}}}}
	b, _ := json.Marshal(seed)
	f.Add(b)
	f.Add([]byte(`{"listeners":[{"name":"x","port":443,"protocol":"TLS","sniRoutes":[{"name":"s","terminate":true}]}]}`))
	f.Add([]byte(`{"listeners":[{"name":"x","port":1,"protocol":"HTTPS","certificates":[{"name":"c","certPEM":"eA==","keyPEM":"eA=="}]}]}`))
	s, err := New(Options{Registry: prometheus.NewRegistry()})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var cfg ir.Config
		if json.Unmarshal(data, &cfg) != nil {
			return
		}
		tbl, err := s.compile(&cfg, certCache{}, tlsTransports{})
		if err != nil {
			return
		}
		req := &http.Request{Method: "GET", URL: &url.URL{Path: "/a/b", RawQuery: "x=1"}, Header: http.Header{"X": {"aa"}}}
		for _, lt := range tbl.listeners {
			if lt.hosts == nil {
				continue
			}
			for _, host := range []string{"a.example.com", "example.com", "x"} {
				if vh, ok := lt.hosts.lookup(host); ok {
					if r := vh.match(req); r != vh.matchLinear(req) {
						t.Errorf("index and linear scan disagree for %s", host)
					}
				}
			}
		}
	})
}
