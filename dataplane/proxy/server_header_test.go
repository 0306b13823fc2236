package proxy

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// TestServerHeader sends real requests through the proxy in every Server header mode, on the fast
// path (a plain route, one with a response filter, the proxy's own 404) and on the net/http path
// (a route with a timeout), against a backend that sends its own Server header.
func TestServerHeader(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Server", "backend/1.0")
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(upstream.Close)
	be := irBackend("up", 1, upstream.Listener.Addr())
	paths := []string{"/fast", "/fast-filter", "/nethttp", "/no-route"}
	for _, tc := range []struct {
		name   string
		limits *ir.Limits
		want   map[string][]string // by path; nil: no Server header
	}{
		{name: "default", want: map[string][]string{
			"/fast": {"fleetgate"}, "/fast-filter": {"fleetgate"}, "/nethttp": {"fleetgate"}, "/no-route": {"fleetgate"}}},
		{name: "set", limits: &ir.Limits{ServerHeader: ir.ServerHeaderSet, ServerHeaderValue: "edge/2"}, want: map[string][]string{
			"/fast": {"edge/2"}, "/fast-filter": {"edge/2"}, "/nethttp": {"edge/2"}, "/no-route": {"edge/2"}}},
		{name: "pass through", limits: &ir.Limits{ServerHeader: ir.ServerHeaderPassThrough}, want: map[string][]string{
			"/fast": {"backend/1.0"}, "/fast-filter": {"backend/1.0"}, "/nethttp": {"backend/1.0"}}},
		{name: "strip", limits: &ir.Limits{ServerHeader: ir.ServerHeaderStrip}, want: map[string][]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, port := httpConfig(t, ir.VirtualHost{Hostname: "h", Routes: []ir.Route{
				{Name: "fast", Match: ir.Match{Path: exact("/fast")}, Backends: []ir.Backend{be}},
				{Name: "fast-filter", Match: ir.Match{Path: exact("/fast-filter")}, Backends: []ir.Backend{be},
					Filters: ir.Filters{ResponseHeaders: &ir.HeaderModifier{Set: []ir.Header{{Name: "X-Filtered", Value: "1"}}}}},
				// A timeout takes the route off the fast path.
				{Name: "nethttp", Match: ir.Match{Path: exact("/nethttp")}, Backends: []ir.Backend{be},
					Timeouts: ir.Timeouts{Request: time.Minute}},
			}})
			cfg.Limits = tc.limits
			newProxy(t, cfg)
			c := testClient()
			got := map[string][]string{}
			for _, p := range paths {
				res := get(t, c, baseURL(port)+p, "h")
				if v := res.hdr.Values("Server"); v != nil {
					got[p] = v
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Server headers by path (-want +got):\n%s", diff)
			}
		})
	}
}

// TestServerHeaderRouteFilter lets a route's own response filter set the Server header, on both
// paths: the class's value is the default, not a cap.
func TestServerHeaderRouteFilter(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Server", "backend/1.0")
	}))
	t.Cleanup(upstream.Close)
	be := irBackend("up", 1, upstream.Listener.Addr())
	set := ir.Filters{ResponseHeaders: &ir.HeaderModifier{Set: []ir.Header{{Name: "Server", Value: "route"}}}}
	cfg, port := httpConfig(t, ir.VirtualHost{Hostname: "h", Routes: []ir.Route{
		{Name: "fast", Match: ir.Match{Path: exact("/fast")}, Backends: []ir.Backend{be}, Filters: set},
		{Name: "nethttp", Match: ir.Match{Path: exact("/nethttp")}, Backends: []ir.Backend{be}, Filters: set,
			Timeouts: ir.Timeouts{Request: time.Minute}},
	}})
	newProxy(t, cfg)
	c := testClient()
	for _, p := range []string{"/fast", "/nethttp"} {
		if got := get(t, c, baseURL(port)+p, "h").hdr.Values("Server"); !cmp.Equal(got, []string{"route"}) {
			t.Errorf("%s: Server %q, want [route]", p, got)
		}
	}
}
