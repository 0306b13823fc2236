package translate

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/fleetgate/fleetgate/providers"
)

// testCatalog is the capability set of the caps-* goldens: "aws" is a limited L7 load balancer,
// or, with the endpoint nlbProxiedEndpoint, an NLB whose HTTP(S) is proxied (testNLBProxied; not
// with loadBalancerType network alone, which caps-lbservice's aws-nlb Services have); "gcp"
// expresses everything but refuses parameters without a project, and "incluster" is not
// registered (everything, as without a catalog).
type testCatalog struct{}

func (testCatalog) Capabilities(provider string, params json.RawMessage) (providers.Capabilities, bool, error) {
	switch provider {
	case "aws":
		var p struct {
			Endpoint string `json:"endpoint"`
		}
		if len(params) > 0 {
			if err := json.Unmarshal(params, &p); err != nil {
				return providers.Capabilities{}, true, fmt.Errorf("decoding: %w", err)
			}
		}
		if p.Endpoint == nlbProxiedEndpoint {
			return testNLBProxied, true, nil
		}
		return testAWS, true, nil
	case "gcp":
		var p struct {
			Project string `json:"project"`
		}
		if len(params) > 0 {
			if err := json.Unmarshal(params, &p); err != nil {
				return providers.Capabilities{}, true, fmt.Errorf("decoding: %w", err)
			}
		}
		if p.Project == "" {
			return providers.Capabilities{}, true, errors.New("spec.gcp.project is required")
		}
		return providers.FullCapabilities(), true, nil
	}
	return providers.Capabilities{}, false, nil
}

var testAWS = providers.Capabilities{
	Protocols:               []string{"HTTP", "HTTPS"},
	RouteKinds:              []string{"HTTPRoute"},
	PathMatches:             []string{"PathPrefix"},
	HeaderMatches:           []string{"Exact"},
	QueryMatches:            []string{"Exact"},
	Filters:                 []string{"RequestHeaderModifier", "RequestRedirect"},
	MaxBackendsPerRule:      2,
	MaxMatchesPerRule:       2,
	MaxRulesPerListener:     3,
	MaxHostnamesPerListener: 2,
	// As ALB's; few certificates, so that a golden can go over.
	MaxConditionsPerMatch:      5,
	MaxCertificatesPerListener: 2,
}

// nlbProxiedEndpoint marks the aws parameters of the golden catalog's testNLBProxied class.
const nlbProxiedEndpoint = "https://nlb-proxied.test"

// testNLBProxied is an NLB serving TCP, UDP and TLS itself, one backend per listener, and HTTP
// and HTTPS through the fleetgate proxies behind it.
var testNLBProxied = providers.Capabilities{
	Protocols:           []string{"TCP", "UDP", "TLS"},
	RouteKinds:          []string{"TCPRoute", "UDPRoute", "TLSRoute"},
	MaxBackendsPerRule:  1,
	MaxRulesPerListener: 1,
	Proxied:             new(providers.FullCapabilities()),
}

func TestHTTPRuleProblem(t *testing.T) {
	regex := gwv1.PathMatchRegularExpression
	hdrRegex := gwv1.HeaderMatchRegularExpression
	get := gwv1.HTTPMethodGet
	backend := func(w int32) gwv1.HTTPBackendRef {
		return gwv1.HTTPBackendRef{BackendRef: gwv1.BackendRef{Weight: ptr.To(w)}}
	}
	prefix := func(v string) *gwv1.HTTPPathMatch {
		return &gwv1.HTTPPathMatch{Type: ptr.To(gwv1.PathMatchPathPrefix), Value: ptr.To(v)}
	}
	headers := func(n int) []gwv1.HTTPHeaderMatch {
		hs := make([]gwv1.HTTPHeaderMatch, n)
		for i := range hs {
			hs[i].Name = gwv1.HTTPHeaderName(fmt.Sprintf("h%d", i))
		}
		return hs
	}
	tests := []struct {
		name string
		caps providers.Capabilities
		host int
		rule gwv1.HTTPRouteRule
		want string
	}{
		{"all expresses anything", providers.FullCapabilities(), 0,
			gwv1.HTTPRouteRule{Matches: []gwv1.HTTPRouteMatch{{Path: &gwv1.HTTPPathMatch{Type: &regex}}}}, ""},
		{"default match is a prefix", testAWS, 0, gwv1.HTTPRouteRule{}, ""},
		{"implicit prefix refused", providers.Capabilities{}, 0, gwv1.HTTPRouteRule{},
			"spec.rules[1].matches: the implicit PathPrefix match is not supported by provider p"},
		{"regex path", testAWS, 0, gwv1.HTTPRouteRule{Matches: []gwv1.HTTPRouteMatch{{}, {Path: &gwv1.HTTPPathMatch{Type: &regex}}}},
			"spec.rules[1].matches[1].path.type: RegularExpression is not supported by provider p"},
		{"regex header", testAWS, 0, gwv1.HTTPRouteRule{Matches: []gwv1.HTTPRouteMatch{{Headers: []gwv1.HTTPHeaderMatch{{Name: "a"}, {Name: "b", Type: &hdrRegex}}}}},
			"spec.rules[1].matches[0].headers[1].type: RegularExpression is not supported by provider p"},
		{"method", testAWS, 0, gwv1.HTTPRouteRule{Matches: []gwv1.HTTPRouteMatch{{Method: &get}}},
			"spec.rules[1].matches[0].method: a method match is not supported by provider p"},
		{"too many matches", testAWS, 0, gwv1.HTTPRouteRule{Matches: make([]gwv1.HTTPRouteMatch, 3)},
			"spec.rules[1].matches: 3 matches, provider p allows at most 2"},
		{"filter", testAWS, 0, gwv1.HTTPRouteRule{Filters: []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterURLRewrite}}},
			"spec.rules[1].filters[0].type: URLRewrite is not supported by provider p"},
		{"backend filter", testAWS, 0, gwv1.HTTPRouteRule{BackendRefs: []gwv1.HTTPBackendRef{{Filters: []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterRequestMirror}}}}},
			"spec.rules[1].backendRefs[0].filters[0].type: RequestMirror is not supported by provider p"},
		{"equal weights", testAWS, 0, gwv1.HTTPRouteRule{BackendRefs: []gwv1.HTTPBackendRef{backend(1), {}}}, ""},
		{"weights", testAWS, 0, gwv1.HTTPRouteRule{BackendRefs: []gwv1.HTTPBackendRef{backend(1), backend(3)}},
			"spec.rules[1].backendRefs[1].weight: a traffic split by weight is not supported by provider p"},
		{"too many backends", testAWS, 0, gwv1.HTTPRouteRule{BackendRefs: []gwv1.HTTPBackendRef{{}, {}, {}}},
			"spec.rules[1].backendRefs: 3 backends, provider p allows at most 2"},
		{"timeouts", testAWS, 0, gwv1.HTTPRouteRule{Timeouts: &gwv1.HTTPRouteTimeouts{}},
			"spec.rules[1].timeouts: a timeout is not supported by provider p"},
		{"retry", testAWS, 0, gwv1.HTTPRouteRule{Retry: &gwv1.HTTPRouteRetry{}},
			"spec.rules[1].retry: a retry policy is not supported by provider p"},
		{"session persistence", testAWS, 0, gwv1.HTTPRouteRule{SessionPersistence: &gwv1.SessionPersistence{}},
			"spec.rules[1].sessionPersistence: session persistence is not supported by provider p"},
		{"prefix, 2 headers and a host are 5 values", testAWS, 1,
			gwv1.HTTPRouteRule{Matches: []gwv1.HTTPRouteMatch{{Path: prefix("/a"), Headers: headers(2)}}}, ""},
		{"a query more is 6", testAWS, 1,
			gwv1.HTTPRouteRule{Matches: []gwv1.HTTPRouteMatch{{}, {Path: prefix("/a"), Headers: headers(2), QueryParams: []gwv1.HTTPQueryParamMatch{{Name: "q"}}}}},
			"spec.rules[1].matches[1]: 6 condition values, provider p allows at most 5"},
		{"without a host it is 5", testAWS, 0,
			gwv1.HTTPRouteRule{Matches: []gwv1.HTTPRouteMatch{{Path: prefix("/a"), Headers: headers(2), QueryParams: []gwv1.HTTPQueryParamMatch{{Name: "q"}}}}}, ""},
		{"the prefix / costs nothing", testAWS, 1,
			gwv1.HTTPRouteRule{Matches: []gwv1.HTTPRouteMatch{{Path: prefix("/"), Headers: headers(4)}}}, ""},
		{"headers alone", testAWS, 1,
			gwv1.HTTPRouteRule{Matches: []gwv1.HTTPRouteMatch{{Headers: headers(5)}}},
			"spec.rules[1].matches[0]: 6 condition values, provider p allows at most 5"},
		{"exact path and method", providers.Capabilities{PathMatches: []string{"Exact"}, HeaderMatches: []string{"Exact"}, MethodMatch: true, MaxConditionsPerMatch: 4}, 1,
			gwv1.HTTPRouteRule{Matches: []gwv1.HTTPRouteMatch{{Path: &gwv1.HTTPPathMatch{Type: ptr.To(gwv1.PathMatchExact), Value: ptr.To("/a")}, Method: &get, Headers: headers(2)}}},
			"spec.rules[1].matches[0]: 5 condition values, provider p allows at most 4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &route{specRules: httpRules{{}, tt.rule}}
			if diff := cmp.Diff(tt.want, r.inexpressible(tt.caps, "p", 1, tt.host)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestGRPCRuleProblem(t *testing.T) {
	regex := gwv1.GRPCMethodMatchRegularExpression
	grpcCaps := providers.Capabilities{PathMatches: []string{"Exact", "PathPrefix"}, HeaderMatches: []string{"Exact"}, MaxConditionsPerMatch: 5}
	grpcHeaders := func(n int) []gwv1.GRPCHeaderMatch {
		hs := make([]gwv1.GRPCHeaderMatch, n)
		for i := range hs {
			hs[i].Name = gwv1.GRPCHeaderName(fmt.Sprintf("h%d", i))
		}
		return hs
	}
	tests := []struct {
		name string
		caps providers.Capabilities
		host int
		rule gwv1.GRPCRouteRule
		want string
	}{
		{"service and method are an exact path", providers.Capabilities{PathMatches: []string{"Exact"}}, 0,
			gwv1.GRPCRouteRule{Matches: []gwv1.GRPCRouteMatch{{Method: &gwv1.GRPCMethodMatch{Service: ptr.To("s"), Method: ptr.To("m")}}}}, ""},
		{"service alone is a prefix", providers.Capabilities{PathMatches: []string{"Exact"}}, 0,
			gwv1.GRPCRouteRule{Matches: []gwv1.GRPCRouteMatch{{Method: &gwv1.GRPCMethodMatch{Service: ptr.To("s")}}}},
			"spec.rules[0].matches[0].method: a method match (as a PathPrefix path match) is not supported by provider p"},
		{"method alone is a regex", testAWS, 0,
			gwv1.GRPCRouteRule{Matches: []gwv1.GRPCRouteMatch{{Method: &gwv1.GRPCMethodMatch{Method: ptr.To("m")}}}},
			"spec.rules[0].matches[0].method: a method match (as a RegularExpression path match) is not supported by provider p"},
		{"regex type", testAWS, 0,
			gwv1.GRPCRouteRule{Matches: []gwv1.GRPCRouteMatch{{Method: &gwv1.GRPCMethodMatch{Type: &regex, Service: ptr.To("s")}}}},
			"spec.rules[0].matches[0].method: a method match (as a RegularExpression path match) is not supported by provider p"},
		{"filter", testAWS, 0, gwv1.GRPCRouteRule{Filters: []gwv1.GRPCRouteFilter{{Type: gwv1.GRPCRouteFilterResponseHeaderModifier}}},
			"spec.rules[0].filters[0].type: ResponseHeaderModifier is not supported by provider p"},
		{"too many backends", testAWS, 0, gwv1.GRPCRouteRule{BackendRefs: []gwv1.GRPCBackendRef{{}, {}, {}}},
			"spec.rules[0].backendRefs: 3 backends, provider p allows at most 2"},
		{"service prefix, 2 headers and a host are 5 values", grpcCaps, 1,
			gwv1.GRPCRouteRule{Matches: []gwv1.GRPCRouteMatch{{Method: &gwv1.GRPCMethodMatch{Service: ptr.To("s")}, Headers: grpcHeaders(2)}}}, ""},
		{"a header more is 6", grpcCaps, 1,
			gwv1.GRPCRouteRule{Matches: []gwv1.GRPCRouteMatch{{Method: &gwv1.GRPCMethodMatch{Service: ptr.To("s")}, Headers: grpcHeaders(3)}}},
			"spec.rules[0].matches[0]: 6 condition values, provider p allows at most 5"},
		{"an exact method is 1", grpcCaps, 1,
			gwv1.GRPCRouteRule{Matches: []gwv1.GRPCRouteMatch{{Method: &gwv1.GRPCMethodMatch{Service: ptr.To("s"), Method: ptr.To("m")}, Headers: grpcHeaders(3)}}}, ""},
		{"headers alone", grpcCaps, 0,
			gwv1.GRPCRouteRule{Matches: []gwv1.GRPCRouteMatch{{}, {Headers: grpcHeaders(6)}}},
			"spec.rules[0].matches[1]: 6 condition values, provider p allows at most 5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &route{specRules: grpcRules{tt.rule}}
			if diff := cmp.Diff(tt.want, r.inexpressible(tt.caps, "p", 0, tt.host)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestLoadBalancerRouting checks that every load-balancer model carries its own gateway's config,
// for Gateways, Ingress classes and LoadBalancer Services alike.
func TestLoadBalancerRouting(t *testing.T) {
	fx := readFixtures(t)
	for _, in := range []string{"kitchen-sink", "caps-multi-parent", "ingress-class-params", "lbservice-basic"} {
		t.Run(in, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", in+".in.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			s, err := loadSnapshot(data, fx)
			if err != nil {
				t.Fatal(err)
			}
			res := Translate(s, WithCatalog(testCatalog{}))
			if len(res.LoadBalancers) == 0 || len(res.LoadBalancers) != len(res.Configs) {
				t.Fatalf("%d load balancers for %d configs", len(res.LoadBalancers), len(res.Configs))
			}
			for i, lb := range res.LoadBalancers {
				if lb.Routing != &res.Configs[i] {
					t.Errorf("load balancer %s: Routing does not point at its config", lb.Gateway)
					continue
				}
				if diff := cmp.Diff(lb.Gateway, lb.Routing.Gateway); diff != "" {
					t.Errorf("load balancer %s routes another gateway (-lb +routing):\n%s", lb.Gateway, diff)
				}
			}
		})
	}
}
