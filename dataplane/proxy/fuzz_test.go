package proxy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
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

// issue15Seeds are the client requests of issue 15 (smuggling, h2c, Host, framing look-alikes),
// seeds of FuzzParseHead and FuzzForward.
var issue15Seeds = []string{
	// (1) Content-Length 0, then another.
	"POST /a HTTP/1.1\r\nHost: a.example.com\r\nContent-Length: 0\r\nContent-Length: 47\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: a.example.com\r\n\r\n",
	"POST /a HTTP/1.1\r\nHost: a.example.com\r\nContent-Length: 47\r\nContent-Length: 0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: a.example.com\r\n\r\n",
	// (2) Connection naming the framing.
	"POST /a HTTP/1.1\r\nHost: a.example.com\r\nConnection: Content-Length\r\nContent-Length: 47\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: a.example.com\r\n\r\n",
	"GET /a HTTP/1.1\r\nHost: a.example.com\r\nConnection: Host, Transfer-Encoding, keep-alive\r\n\r\n",
	// CL + TE, and a chunked body that is not.
	"POST /a HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
	"POST /a HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
	// Odd lengths.
	"POST /a HTTP/1.1\r\nHost: a\r\nContent-Length: +5\r\n\r\nhello",
	"POST /a HTTP/1.1\r\nHost: a\r\nContent-Length: 0, 5\r\n\r\nhello",
	"POST /a HTTP/1.1\r\nHost: a\r\nContent-Length: 05\r\nContent-Length: 5\r\n\r\nhello",
	"POST /a HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabcGET / HTTP/1.1\r\nHost: a\r\n\r\n",
	// Underscore look-alikes.
	"POST /a HTTP/1.1\r\nHost: a\r\nTransfer_Encoding: chunked\r\nContent_Length: 50\r\nContent-Length: 2\r\n\r\nhi",
	// h2c upgrade, and its settings alone.
	"GET /a HTTP/1.1\r\nHost: a\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n",
	"GET /a HTTP/1.1\r\nHost: a\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n",
	// Hosts.
	"GET /a HTTP/1.1\r\nHost: evil.test#.example.com\r\n\r\n",
	"GET /a HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n",
	"GET /a HTTP/1.1\r\nHost: a.example.com:\r\n\r\n",
	// Targets.
	"GET http://user:pw@a.example.com/a HTTP/1.1\r\nHost: a.example.com\r\n\r\n",
	"GET /" + strings.Repeat("a", 300) + "?q HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET /a/../b//c?x=%20 HTTP/1.1\r\nHost: a\r\n\r\n",
	"HEAD / HTTP/1.1\r\nHost: a\r\nX-Forwarded-For: 1.2.3.4\r\nForwarded: for=x\r\n\r\n",
}

// FuzzForward checks what the fast path sends upstream, not only what it parses: client bytes go
// through its parse and its upstream serialisation, and net/http must read those upstream bytes as
// exactly one request with the method, target, Host and body that net/http reads from the client
// bytes — or the fast path must have refused them (handing them to net/http).
func FuzzForward(f *testing.F) {
	for _, s := range issue15Seeds {
		f.Add(s, false)
	}
	f.Add("POST /a HTTP/1.1\r\nHost: a\r\nX_A: 1\r\nContent-Length: 1\r\n\r\nx", true)
	f.Fuzz(func(t *testing.T, in string, underscores bool) {
		cr := bufio.NewReaderSize(strings.NewReader(in), fastHeadMax)
		head, err := peekHead(cr)
		if err != nil {
			return
		}
		fc := &fastConn{ip: "192.0.2.1", underscores: underscores}
		r := fc.parseHead(string(head))
		if r == nil {
			return
		}
		want, err := http.ReadRequest(bufio.NewReader(strings.NewReader(in)))
		if err != nil {
			t.Fatalf("fast path accepted what net/http refuses (%v): %q", err, in)
		}
		wantBody, wantErr := io.ReadAll(want.Body)
		_, _ = cr.Discard(len(head))
		var up bytes.Buffer
		w := bufio.NewWriter(&up)
		writeUpstreamHead(w, r, fc, r.Host)
		if r.ContentLength > 0 {
			if err := copyN(w, cr, r.ContentLength); err != nil {
				if wantErr == nil {
					t.Fatalf("fast path found the body short (%v), net/http read %d bytes: %q", err, len(wantBody), in)
				}
				return
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if wantErr != nil {
			t.Fatalf("net/http found the body bad (%v), the fast path forwarded it: %q", wantErr, in)
		}
		ur := bufio.NewReader(bytes.NewReader(up.Bytes()))
		got, err := http.ReadRequest(ur)
		if err != nil {
			t.Fatalf("upstream bytes unreadable (%v): %q from %q", err, up.String(), in)
		}
		gotBody, err := io.ReadAll(got.Body)
		if err != nil {
			t.Fatalf("upstream body unreadable (%v): %q from %q", err, up.String(), in)
		}
		if rest, _ := io.ReadAll(ur); len(rest) > 0 {
			t.Fatalf("upstream bytes hold more than one request, %q left: %q from %q", rest, up.String(), in)
		}
		u := *want.URL
		if p := normalizePath(u.Path); p != u.Path {
			u.Path, u.RawPath = p, ""
		}
		if got.Method != want.Method || got.RequestURI != u.RequestURI() || got.Host != want.Host || !bytes.Equal(gotBody, wantBody) {
			t.Fatalf("upstream %s %q Host %q body %q, net/http read %s %q Host %q body %q, from %q",
				got.Method, got.RequestURI, got.Host, gotBody, want.Method, u.RequestURI(), want.Host, wantBody, in)
		}
		if len(got.TransferEncoding) > 0 {
			t.Fatalf("upstream Transfer-Encoding %q from %q", got.TransferEncoding, in)
		}
		for k := range got.Header {
			if (!underscores && strings.Contains(k, "_")) || k == "Upgrade" || k == "Http2-Settings" {
				t.Fatalf("upstream header %q from %q", k, in)
			}
		}
	})
}
