package gcpfake_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"

	"github.com/fleetgate/fleetgate/providers/gcp/gcpfake"
)

// state is every key the fake holds, with each resource's proto-JSON, to prove "nothing changed".
func state(t *testing.T, srv *gcpfake.Server) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, c := range colls {
		for _, k := range srv.Keys(c) {
			m, _ := gcpfake.Get[proto.Message](srv, k)
			b, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			out[k] = string(b)
		}
	}
	return out
}

func opErr(_ *compute.Operation, err error) error { return err }

// TestErrors pins the synchronous refusals: each is a *googleapi.Error with the code and reason GCE
// uses, and none changes anything.
func TestErrors(t *testing.T) {
	e := newEnv(t)
	e.stack("")
	e.do(e.rbs.Insert(e.ctx, &computepb.InsertRegionBackendServiceRequest{Project: project, Region: region,
		BackendServiceResource: &computepb.BackendService{Name: proto.String("rbs")}}))
	before := state(t, e.srv)
	ctx, p := e.ctx, project
	missing := proto.String("global/backendServices/missing")
	urlMap := func(um *computepb.UrlMap) error {
		um.Name = proto.String("um2")
		return opErr(e.um.Insert(ctx, &computepb.InsertUrlMapRequest{Project: p, UrlMapResource: um}))
	}
	pm := func(pm *computepb.PathMatcher) *computepb.UrlMap {
		pm.Name = proto.String("pm")
		if pm.DefaultService == nil {
			pm.DefaultService = proto.String("global/backendServices/bs")
		}
		return &computepb.UrlMap{DefaultService: proto.String("global/backendServices/bs"), PathMatchers: []*computepb.PathMatcher{pm}}
	}
	weighted := &computepb.HttpRouteAction{WeightedBackendServices: []*computepb.WeightedBackendService{{BackendService: missing, Weight: proto.Uint32(1)}}}

	for _, tc := range []struct {
		name   string
		call   func() error
		code   int
		reason string
	}{
		{"insert existing", func() error {
			return opErr(e.um.Insert(ctx, &computepb.InsertUrlMapRequest{Project: p, UrlMapResource: &computepb.UrlMap{Name: proto.String("um"), DefaultService: proto.String("global/backendServices/bs")}}))
		}, http.StatusConflict, "alreadyExists"},
		{"get missing", func() error {
			_, err := e.um.Get(ctx, &computepb.GetUrlMapRequest{Project: p, UrlMap: "nope"})
			return err
		}, http.StatusNotFound, "notFound"},
		{"delete missing", func() error {
			return opErr(e.um.Delete(ctx, &computepb.DeleteUrlMapRequest{Project: p, UrlMap: "nope"}))
		}, http.StatusNotFound, "notFound"},
		{"update missing", func() error {
			return opErr(e.um.Update(ctx, &computepb.UpdateUrlMapRequest{Project: p, UrlMap: "nope", UrlMapResource: &computepb.UrlMap{Name: proto.String("nope")}}))
		}, http.StatusNotFound, "notFound"},
		{"invalid name", func() error {
			return opErr(e.hc.Insert(ctx, &computepb.InsertHealthCheckRequest{Project: p, HealthCheckResource: &computepb.HealthCheck{Name: proto.String("Bad_Name")}}))
		}, http.StatusBadRequest, "invalid"},
		// Missing references: per the compute v1 reference every such field names an existing
		// resource; GCE answers 404 notFound naming the missing one.
		{"forwarding rule to missing proxy", func() error {
			return opErr(e.gfr.Insert(ctx, &computepb.InsertGlobalForwardingRuleRequest{Project: p, ForwardingRuleResource: &computepb.ForwardingRule{Name: proto.String("fr2"), Target: proto.String("global/targetHttpProxies/nope")}}))
		}, http.StatusNotFound, "notFound"},
		{"forwarding rule to missing address", func() error {
			return opErr(e.gfr.Insert(ctx, &computepb.InsertGlobalForwardingRuleRequest{Project: p, ForwardingRuleResource: &computepb.ForwardingRule{Name: proto.String("fr2"), Target: proto.String("global/targetHttpProxies/hp"), IPAddress: proto.String("global/addresses/nope")}}))
		}, http.StatusNotFound, "notFound"},
		{"proxy to missing url map", func() error {
			return opErr(e.hp.Insert(ctx, &computepb.InsertTargetHttpProxyRequest{Project: p, TargetHttpProxyResource: &computepb.TargetHttpProxy{Name: proto.String("hp2"), UrlMap: proto.String("global/urlMaps/nope")}}))
		}, http.StatusNotFound, "notFound"},
		{"setUrlMap to missing url map", func() error {
			return opErr(e.hp.SetUrlMap(ctx, &computepb.SetUrlMapTargetHttpProxyRequest{Project: p, TargetHttpProxy: "hp", UrlMapReferenceResource: &computepb.UrlMapReference{UrlMap: proto.String("global/urlMaps/nope")}}))
		}, http.StatusNotFound, "notFound"},
		{"proxy to missing certificate", func() error {
			return opErr(e.sp.SetSslCertificates(ctx, &computepb.SetSslCertificatesTargetHttpsProxyRequest{Project: p, TargetHttpsProxy: "sp",
				TargetHttpsProxiesSetSslCertificatesRequestResource: &computepb.TargetHttpsProxiesSetSslCertificatesRequest{SslCertificates: []string{"global/sslCertificates/nope"}}}))
		}, http.StatusNotFound, "notFound"},
		{"url map default service missing", func() error { return urlMap(&computepb.UrlMap{DefaultService: missing}) }, http.StatusNotFound, "notFound"},
		{"path matcher default service missing", func() error { return urlMap(pm(&computepb.PathMatcher{DefaultService: missing})) }, http.StatusNotFound, "notFound"},
		{"path rule service missing", func() error {
			return urlMap(pm(&computepb.PathMatcher{PathRules: []*computepb.PathRule{{Paths: []string{"/a"}, Service: missing}}}))
		}, http.StatusNotFound, "notFound"},
		{"route rule service missing", func() error {
			return urlMap(pm(&computepb.PathMatcher{RouteRules: []*computepb.HttpRouteRule{{Priority: proto.Int32(1), Service: missing}}}))
		}, http.StatusNotFound, "notFound"},
		{"route rule weighted backend missing", func() error {
			return urlMap(pm(&computepb.PathMatcher{RouteRules: []*computepb.HttpRouteRule{{Priority: proto.Int32(1), RouteAction: weighted}}}))
		}, http.StatusNotFound, "notFound"},
		{"backend service to missing health check", func() error {
			return opErr(e.bs.Insert(ctx, &computepb.InsertBackendServiceRequest{Project: p, BackendServiceResource: &computepb.BackendService{Name: proto.String("bs2"), HealthChecks: []string{"global/healthChecks/nope"}}}))
		}, http.StatusNotFound, "notFound"},
		{"backend service to missing NEG", func() error {
			return opErr(e.bs.Insert(ctx, &computepb.InsertBackendServiceRequest{Project: p, BackendServiceResource: &computepb.BackendService{Name: proto.String("bs2"),
				Backends: []*computepb.Backend{{Group: proto.String("zones/" + zone + "/networkEndpointGroups/nope")}}}}))
		}, http.StatusNotFound, "notFound"},
		// A global URL map can only send traffic to global backend services (400 invalid in GCE).
		{"global url map to regional backend service", func() error {
			return urlMap(&computepb.UrlMap{DefaultService: proto.String("regions/" + region + "/backendServices/rbs")})
		}, http.StatusBadRequest, "invalid"},
		{"url map to a health check", func() error {
			return urlMap(&computepb.UrlMap{DefaultService: proto.String("global/healthChecks/hc")})
		}, http.StatusBadRequest, "invalid"},
		// Deleting a resource another one still references: 400 resourceInUseByAnotherResource.
		{"delete backend service used by url map", func() error {
			return opErr(e.bs.Delete(ctx, &computepb.DeleteBackendServiceRequest{Project: p, BackendService: "bs"}))
		}, http.StatusBadRequest, "resourceInUseByAnotherResource"},
		{"delete health check used by backend service", func() error {
			return opErr(e.hc.Delete(ctx, &computepb.DeleteHealthCheckRequest{Project: p, HealthCheck: "hc"}))
		}, http.StatusBadRequest, "resourceInUseByAnotherResource"},
		{"delete NEG used by backend service", func() error {
			return opErr(e.neg.Delete(ctx, &computepb.DeleteNetworkEndpointGroupRequest{Project: p, Zone: zone, NetworkEndpointGroup: "neg"}))
		}, http.StatusBadRequest, "resourceInUseByAnotherResource"},
		{"delete url map used by proxy", func() error {
			return opErr(e.um.Delete(ctx, &computepb.DeleteUrlMapRequest{Project: p, UrlMap: "um"}))
		}, http.StatusBadRequest, "resourceInUseByAnotherResource"},
		{"delete certificate used by proxy", func() error {
			return opErr(e.cert.Delete(ctx, &computepb.DeleteSslCertificateRequest{Project: p, SslCertificate: "cert"}))
		}, http.StatusBadRequest, "resourceInUseByAnotherResource"},
		{"delete proxy used by forwarding rule", func() error {
			return opErr(e.hp.Delete(ctx, &computepb.DeleteTargetHttpProxyRequest{Project: p, TargetHttpProxy: "hp"}))
		}, http.StatusBadRequest, "resourceInUseByAnotherResource"},
		{"delete address used by forwarding rule", func() error {
			return opErr(e.gaddr.Delete(ctx, &computepb.DeleteGlobalAddressRequest{Project: p, Address: "ip"}))
		}, http.StatusBadRequest, "resourceInUseByAnotherResource"},
		{"certificate with a mismatched key", func() error {
			crt, _ := selfSigned(t, "a.example")
			_, key := selfSigned(t, "b.example")
			return opErr(e.cert.Insert(ctx, &computepb.InsertSslCertificateRequest{Project: p, SslCertificateResource: &computepb.SslCertificate{Name: proto.String("c2"), Certificate: &crt, PrivateKey: &key}}))
		}, http.StatusBadRequest, "invalid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, reason := apiErr(t, tc.call())
			if code != tc.code || reason != tc.reason {
				t.Errorf("got %d %q, want %d %q", code, reason, tc.code, tc.reason)
			}
		})
	}
	if diff := cmp.Diff(before, state(t, e.srv)); diff != "" {
		t.Errorf("refused calls changed state (-before +after):\n%s", diff)
	}
}

// raw sends one request over plain HTTP and returns the status and the decoded JSON body.
func raw(t *testing.T, e *env, method, path, body string) (int, any) {
	t.Helper()
	req, err := http.NewRequestWithContext(e.ctx, method, e.srv.URL()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out
}

// TestErrorShape pins the JSON of an error as GCE writes it.
func TestErrorShape(t *testing.T) {
	e := newEnv(t)
	e.do(e.hc.Insert(e.ctx, &computepb.InsertHealthCheckRequest{Project: project, HealthCheckResource: &computepb.HealthCheck{Name: proto.String("hc")}}))
	code, got := raw(t, e, http.MethodPost, "/compute/v1/projects/proj/global/healthChecks", `{"name":"hc"}`)
	msg := "The resource 'projects/proj/global/healthChecks/hc' already exists"
	want := map[string]any{"error": map[string]any{"code": 409.0, "message": msg,
		"errors": []any{map[string]any{"domain": "global", "reason": "alreadyExists", "message": msg}}}}
	if diff := cmp.Diff(want, got); diff != "" || code != http.StatusConflict {
		t.Errorf("status %d, error body (-want +got):\n%s", code, diff)
	}
}

// TestRouting pins paths the clients never send: per the compute v1 reference the global setUrlMap
// is POST projects/P/targetHttpProxies/N/setUrlMap, so the global/ form is not served; maxResults
// is "0 to 500, inclusive".
func TestRouting(t *testing.T) {
	e := newEnv(t)
	e.stack("")
	for _, tc := range []struct {
		method, path, body string
		code               int
	}{
		{http.MethodPost, "/compute/v1/projects/proj/targetHttpProxies/hp/setUrlMap", `{"urlMap":"global/urlMaps/um"}`, http.StatusOK},
		{http.MethodPost, "/compute/v1/projects/proj/global/targetHttpProxies/hp/setUrlMap", `{"urlMap":"global/urlMaps/um"}`, http.StatusNotFound},
		{http.MethodPost, "/compute/v1/projects/proj/global/forwardingRules/fr-http/setTarget", `{"target":"global/targetHttpProxies/hp"}`, http.StatusOK},
		{http.MethodPost, "/compute/v1/projects/proj/forwardingRules/fr-http/setTarget", `{"target":"global/targetHttpProxies/hp"}`, http.StatusNotFound},
		{http.MethodPut, "/compute/v1/projects/proj/global/sslCertificates/cert", `{"name":"cert"}`, http.StatusNotFound},
		{http.MethodGet, "/compute/v1/projects/proj/zones/" + zone + "/urlMaps", "", http.StatusNotFound},
		{http.MethodGet, "/compute/v1/projects/proj/global/healthChecks?maxResults=501", "", http.StatusBadRequest},
	} {
		if code, body := raw(t, e, tc.method, tc.path, tc.body); code != tc.code {
			t.Errorf("%s %s: %d %v, want %d", tc.method, tc.path, code, body, tc.code)
		}
	}
}
