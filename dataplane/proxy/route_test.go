package proxy

import (
	"reflect"
	"strconv"
	"testing"
	"time"
	"unsafe"

	"github.com/fleetgate/fleetgate/dataplane/ir"
	"github.com/google/go-cmp/cmp"
)

// TestRouteRarePart compiles routes that set one rare field each, and plain ones: a route gets a
// rare part exactly when one of its fields is set, with that field alone set, so that the
// routes most configs hold stay 128 bytes (a reload at 100k hosts allocates ~100k of them).
func TestRouteRarePart(t *testing.T) {
	if n := unsafe.Sizeof(route{}); n > 128 {
		t.Errorf("route is %d bytes, want at most 128: move what most routes leave unset to routeRare", n)
	}
	be := []ir.Backend{{Name: "b", Weight: 1, Endpoints: []ir.Endpoint{{Address: "10.0.0.1", Port: 80}}}}
	mods := &ir.HeaderModifier{Set: []ir.Header{{Name: "x-a", Value: "1"}}}
	tests := []struct {
		name string
		in   ir.Route
		want []string // the rare fields set; none: no rare part
	}{
		{"exact", ir.Route{Match: ir.Match{Path: exact("/healthz")}}, nil},
		{"prefix", ir.Route{Match: ir.Match{Path: prefix("/api")}}, nil},
		{"no path", ir.Route{}, nil},
		{"empty filters", ir.Route{Filters: ir.Filters{RequestHeaders: &ir.HeaderModifier{}, ResponseHeaders: &ir.HeaderModifier{}},
			Retry: &ir.Retry{}}, nil},
		{"regex", ir.Route{Match: ir.Match{Path: regex("/x[0-9]+")}}, []string{"re"}},
		{"method", ir.Route{Match: ir.Match{Path: prefix("/"), Method: "GET"}}, []string{"method"}},
		{"header", ir.Route{Match: ir.Match{Headers: []ir.KeyMatch{{Type: ir.MatchExact, Name: "x-a", Value: "1"}}}}, []string{"headers"}},
		{"query", ir.Route{Match: ir.Match{QueryParams: []ir.KeyMatch{{Type: ir.MatchExact, Name: "a", Value: "1"}}}}, []string{"query"}},
		{"cors", ir.Route{Filters: ir.Filters{CORS: &ir.CORS{AllowOrigins: []string{"*"}}}}, []string{"cors"}},
		{"redirect", ir.Route{Filters: ir.Filters{Redirect: &ir.Redirect{StatusCode: 301, Hostname: "b.example.com"}}}, []string{"redirect"}},
		{"request headers", ir.Route{Filters: ir.Filters{RequestHeaders: mods}}, []string{"reqHdr"}},
		{"response headers", ir.Route{Filters: ir.Filters{ResponseHeaders: mods}}, []string{"respHdr"}},
		{"rewrite", ir.Route{Filters: ir.Filters{Rewrite: &ir.Rewrite{Hostname: "b.example.com"}}}, []string{"rewrite"}},
		{"mirror", ir.Route{Filters: ir.Filters{Mirrors: []ir.Mirror{{Backend: be[0]}}}}, []string{"mirrors"}},
		{"request timeout", ir.Route{Timeouts: ir.Timeouts{Request: time.Second}}, []string{"timeout"}},
		{"backend timeout", ir.Route{Timeouts: ir.Timeouts{Request: 2 * time.Second, BackendRequest: time.Second}}, []string{"timeout", "beTimeout"}},
		{"retry", ir.Route{Retry: &ir.Retry{Attempts: 2}}, []string{"retry"}},
	}
	var hosts []ir.VirtualHost
	for i, tt := range tests {
		in := tt.in
		in.Name, in.Backends = "r", be
		hosts = append(hosts, ir.VirtualHost{Hostname: "h" + strconv.Itoa(i) + ".example.com", Routes: []ir.Route{in}})
	}
	cfg, _ := httpConfig(t, hosts...)
	compiled := hostPtrs(newProxy(t, cfg), "http")
	for i, tt := range tests {
		v := compiled["h"+strconv.Itoa(i)+".example.com"]
		if v == nil || len(v.routes) != 1 {
			t.Fatalf("%s: host not compiled to one route: %v", tt.name, v)
		}
		if diff := cmp.Diff(tt.want, rareSet(v.routes[0].rare)); diff != "" {
			t.Errorf("%s: rare fields set (-want +got):\n%s", tt.name, diff)
		}
	}
}

// rareSet names the fields of x that are set; nil for a nil x, and for an x with none set.
func rareSet(x *routeRare) []string {
	if x == nil {
		return nil
	}
	var out []string
	v := reflect.ValueOf(x).Elem()
	for i := range v.NumField() {
		if !v.Field(i).IsZero() {
			out = append(out, v.Type().Field(i).Name)
		}
	}
	if out == nil {
		out = []string{}
	}
	return out
}
