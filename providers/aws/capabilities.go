package aws

import (
	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/providers"
)

// capabilitiesOf is what a class's load balancer type can express, from the ELBv2 API reference
// and quotas; translation refuses the rest with a condition before any AWS call.
func capabilitiesOf(o v1alpha1.AWSOptions) providers.Capabilities {
	if o.LoadBalancerType == v1alpha1.AWSNetwork {
		return networkCapabilities()
	}
	return applicationCapabilities()
}

// applicationCapabilities: an ALB listener rule has host-header, path-pattern (wildcards only,
// so Exact and PathPrefix; no regular expressions), http-header and query-string (exact values,
// wildcards aside) and http-request-method conditions, and a forward (weighted, at most 5 target
// groups), redirect or fixed-response action. Header modifiers, URL rewrites and mirrors are not
// rule actions; timeouts, retries and session persistence per route are not either (stickiness is
// per target group, not per Gateway API rule).
//
// MaxRulesPerListener is 100, AWS's quota of rules per ALB not counting the default rules (which
// is where fleetgate's catch-all goes), so not 99. The quota is per load balancer and counts
// cloud rules (one per match and hostname), while translation counts Gateway API rules per
// listener: this catches a route that can never fit; validateStack checks the exact count.
//
// MaxHostnamesPerListener is unset: a hostname is a host-header condition, bounded by the rules.
// Only certificates are limited: 25 per ALB listener besides the default one
// (MaxCertificatesPerListener). A rule takes at most 5 condition values (MaxConditionsPerMatch,
// which counts them as ALB does: a hostname 1, an Exact path 1, a PathPrefix 2 ("/p" and "/p/*";
// "/" none), a method 1 and each header and query parameter 1).
func applicationCapabilities() providers.Capabilities {
	return providers.Capabilities{
		Protocols:                  []string{"HTTP", "HTTPS"},
		RouteKinds:                 []string{"HTTPRoute", "GRPCRoute"},
		PathMatches:                []string{"Exact", "PathPrefix"},
		HeaderMatches:              []string{"Exact"},
		QueryMatches:               []string{"Exact"},
		MethodMatch:                true,
		Filters:                    []string{"RequestRedirect"},
		Weights:                    true,
		MaxBackendsPerRule:         5,
		MaxRulesPerListener:        100,
		MaxConditionsPerMatch:      5,
		MaxCertificatesPerListener: 25,
	}
}

// networkCapabilities: an NLB listener has no rules, only a default action forwarding to one
// target group, so one route per listener with one backend (its endpoints in every cluster go
// into that target group), and no weights.
func networkCapabilities() providers.Capabilities {
	return providers.Capabilities{
		Protocols:           []string{"TCP", "UDP", "TLS"},
		RouteKinds:          []string{"TCPRoute", "UDPRoute", "TLSRoute"},
		MaxBackendsPerRule:  1,
		MaxRulesPerListener: 1,
	}
}
