package gcp

import (
	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/providers"
)

// Limits of Cloud Load Balancing that the Stack must fit (compute v1 reference and the load
// balancing quotas page).
const (
	// maxRouteRules: route rules per path matcher.
	maxRouteRules = 200
	// maxCertificates: SSL certificates per target HTTPS proxy.
	maxCertificates = 15
	// maxWeight: weightedBackendServices[].weight is 0-1000.
	maxWeight = 1000
	// maxEndpointsPerCall: network endpoints per attach or detach call.
	maxEndpointsPerCall = 500
	// maxHealthCheckPathLen: HTTPHealthCheck.requestPath is at most 1024 characters.
	maxHealthCheckPathLen = 1024
)

// capabilitiesOf is what a class's load balancer type expresses; translation refuses the rest
// with a condition before any call.
func capabilitiesOf(o v1alpha1.GCPOptions) providers.Capabilities {
	if o.LoadBalancerType == v1alpha1.GCPNetwork {
		return networkCapabilities()
	}
	return applicationCapabilities()
}

// applicationCapabilities: a URL map route rule matches a full path, a prefix or an RE2
// regular expression, headers (the method as the ":method" pseudo-header) and query parameters
// exactly or by RE2; its route action splits traffic by weight across backend services, rewrites
// host and path prefix, adds and removes request and response headers, mirrors to one backend
// service, answers CORS, and has a timeout and a retry policy; a URL redirect is an action of its
// own. A rule's match becomes one or two route rules (a PathPrefix is a full path and a prefix
// ending in "/"), so MaxRulesPerListener is half the route rules a path matcher takes.
func applicationCapabilities() providers.Capabilities {
	return providers.Capabilities{
		Protocols:                  []string{"HTTP", "HTTPS"},
		RouteKinds:                 []string{"HTTPRoute", "GRPCRoute"},
		PathMatches:                []string{"Exact", "PathPrefix", "RegularExpression"},
		HeaderMatches:              []string{"Exact", "RegularExpression"},
		QueryMatches:               []string{"Exact", "RegularExpression"},
		MethodMatch:                true,
		Filters:                    []string{"RequestHeaderModifier", "ResponseHeaderModifier", "RequestRedirect", "URLRewrite", "RequestMirror", "CORS"},
		Weights:                    true,
		Timeouts:                   true,
		Retries:                    true,
		MaxRulesPerListener:        maxRouteRules / 2,
		MaxCertificatesPerListener: maxCertificates,
	}
}

// networkCapabilities: a passthrough forwarding rule sends every packet of its port to one
// backend service, so one route per listener with one backend.
func networkCapabilities() providers.Capabilities {
	return providers.Capabilities{
		Protocols:           []string{"TCP", "UDP"},
		RouteKinds:          []string{"TCPRoute", "UDPRoute"},
		MaxBackendsPerRule:  1,
		MaxRulesPerListener: 1,
	}
}
