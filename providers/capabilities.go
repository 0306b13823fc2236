package providers

import "slices"

// Capabilities is what one provider class can express, as data: translation consults it before any
// cloud call, and gives a route rule (or listener) that asks for more a condition naming the
// field (reason UnsupportedValue) instead of dropping it silently. The zero value expresses
// nothing; FullCapabilities expresses everything the fleetgate proxy does.
//
// Names are the Gateway API's own spellings: protocols as in gwv1.ProtocolType ("HTTP",
// "HTTPS", "TLS", "TCP", "UDP"), match types as in gwv1.PathMatchType / HeaderMatchType /
// QueryParamMatchType ("Exact", "PathPrefix", "RegularExpression"), filters as in
// gwv1.HTTPRouteFilterType ("RequestHeaderModifier", "URLRewrite", …), route kinds as Kinds
// ("HTTPRoute", "GRPCRoute", "TLSRoute", "TCPRoute", "UDPRoute").
type Capabilities struct {
	// All, when set, expresses everything: the other fields are ignored.
	All bool `json:"all,omitempty"`
	// Protocols are the listener protocols the load balancer can serve.
	Protocols []string `json:"protocols,omitempty"`
	// RouteKinds are the route kinds it can serve.
	RouteKinds []string `json:"routeKinds,omitempty"`
	// PathMatches, HeaderMatches and QueryMatches are the match types of HTTPRoute (and, for
	// headers, GRPCRoute) rules it can evaluate.
	PathMatches   []string `json:"pathMatches,omitempty"`
	HeaderMatches []string `json:"headerMatches,omitempty"`
	QueryMatches  []string `json:"queryMatches,omitempty"`
	// MethodMatch: it can match on the HTTP method.
	MethodMatch bool `json:"methodMatch,omitempty"`
	// Filters are the HTTPRoute/GRPCRoute filter types it can apply.
	Filters []string `json:"filters,omitempty"`
	// Weights: it can split a rule's traffic across backends by weight (otherwise a rule may
	// have one backend, or several of equal weight).
	Weights bool `json:"weights,omitempty"`
	// Timeouts and Retries: it honours HTTPRoute rule timeouts and retry policies.
	Timeouts bool `json:"timeouts,omitempty"`
	Retries  bool `json:"retries,omitempty"`
	// SessionPersistence: it honours a rule's sessionPersistence.
	SessionPersistence bool `json:"sessionPersistence,omitempty"`
	// Limits; 0 means no limit.
	MaxBackendsPerRule      int `json:"maxBackendsPerRule,omitempty"`
	MaxMatchesPerRule       int `json:"maxMatchesPerRule,omitempty"`
	MaxRulesPerListener     int `json:"maxRulesPerListener,omitempty"`
	MaxHostnamesPerListener int `json:"maxHostnamesPerListener,omitempty"`
	// MaxConditionsPerMatch bounds the condition values one match of an HTTPRoute or GRPCRoute
	// rule needs on the load balancer (ALB: 5 per rule). Each hostname becomes its own cloud rule,
	// so the host counts 1 when it is not the catch-all "*" (the route has hostnames, or takes a
	// listener's). Then: a path Exact 1; a PathPrefix 2 ("/p" and "/p/*"), except "/" 0; a
	// RegularExpression path 1; a method 1; each header 1; each query parameter 1. A GRPCRoute
	// method match is the path it compiles to (Exact 1, PathPrefix 2, RegularExpression 1).
	MaxConditionsPerMatch int `json:"maxConditionsPerMatch,omitempty"`
	// MaxCertificatesPerListener bounds the certificates of one listener, counting the distinct
	// certificates of every Gateway listener merged onto one port (ALB and NLB: 25).
	MaxCertificatesPerListener int `json:"maxCertificatesPerListener,omitempty"`
	// Proxied, when set, is what the fleetgate proxies behind the load balancer express: HTTP and
	// HTTPS listeners, the HTTPRoutes and GRPCRoutes attached to them and Ingress rules are served
	// by those proxies and checked against Proxied instead (ForProtocol, ForRouteKind). An NLB
	// class sets it to serve L7 through the proxies while its L4 listeners stay restricted.
	Proxied *Capabilities `json:"proxied,omitempty"`
}

// FullCapabilities is what the fleetgate proxy expresses: everything.
func FullCapabilities() Capabilities { return Capabilities{All: true} }

// ForProtocol is what listeners of protocol p are checked against: Proxied for HTTP and HTTPS
// when it is set, c otherwise.
func (c Capabilities) ForProtocol(p string) Capabilities {
	if c.Proxied != nil && (p == "HTTP" || p == "HTTPS") {
		return *c.Proxied
	}
	return c
}

// ForRouteKind is what routes of kind k are checked against: Proxied for HTTPRoute and GRPCRoute
// when it is set, c otherwise.
func (c Capabilities) ForRouteKind(k string) Capabilities {
	if c.Proxied != nil && (k == "HTTPRoute" || k == "GRPCRoute") {
		return *c.Proxied
	}
	return c
}

// Protocol tells whether listeners of protocol p can be served, by the load balancer or, for
// HTTP and HTTPS, by the proxies behind it (ForProtocol).
func (c Capabilities) Protocol(p string) bool {
	c = c.ForProtocol(p)
	return c.All || slices.Contains(c.Protocols, p)
}

// RouteKind tells whether routes of kind k can be served.
func (c Capabilities) RouteKind(k string) bool { return c.All || slices.Contains(c.RouteKinds, k) }

// PathMatch, HeaderMatch and QueryMatch tell whether a match type can be evaluated.
func (c Capabilities) PathMatch(t string) bool   { return c.All || slices.Contains(c.PathMatches, t) }
func (c Capabilities) HeaderMatch(t string) bool { return c.All || slices.Contains(c.HeaderMatches, t) }
func (c Capabilities) QueryMatch(t string) bool  { return c.All || slices.Contains(c.QueryMatches, t) }

// Filter tells whether a filter type can be applied.
func (c Capabilities) Filter(t string) bool { return c.All || slices.Contains(c.Filters, t) }

// Within tells whether n is within limit (0 = no limit).
func (c Capabilities) Within(n, limit int) bool { return c.All || limit == 0 || n <= limit }
