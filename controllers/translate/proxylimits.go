package translate

import (
	"fmt"
	"net/netip"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// proxyPolicy is a class's GatewayClassConfig spec.proxy, resolved: the limits shipped to its
// proxies and the bounds translation itself enforces on routes and endpoints.
type proxyPolicy struct {
	// limits go into every ir.Config of the class; nil when the class sets none.
	limits *ir.Limits
	// maxRetryAttempts caps a route's retry attempts.
	maxRetryAttempts int
	// maxRegexInstructions bounds each compiled regex of a route match.
	maxRegexInstructions int
	// deniedEndpoints are never handed to a proxy.
	deniedEndpoints []netip.Prefix
	// trustAllSlices uses EndpointSlices of any manager.
	trustAllSlices bool
}

// defaultProxyPolicy is the policy of a class without spec.proxy (and of LoadBalancer Services).
func defaultProxyPolicy() *proxyPolicy {
	p, _ := newProxyPolicy(nil)
	return p
}

// newProxyPolicy resolves spec.proxy; an unparsable CIDR is an error of the class.
func newProxyPolicy(o *v1alpha1.ProxyOptions) (*proxyPolicy, error) {
	p := &proxyPolicy{maxRetryAttempts: ir.DefaultMaxRetryAttempts, maxRegexInstructions: ir.DefaultMaxRegexInstructions}
	cidrs := ir.DefaultDeniedEndpointCIDRs()
	if o != nil {
		l := &ir.Limits{
			MaxConnectionsPerListener: int(deref(o.MaxConnectionsPerListener)),
			MaxRetryAttempts:          int(deref(o.MaxRetryAttempts)),
			RetryBudgetPercent:        int(deref(o.RetryBudgetPercent)),
			RetryBudgetMinConcurrent:  int(deref(o.RetryBudgetMinConcurrent)),
			MaxRegexInstructions:      int(deref(o.MaxRegexInstructions)),
			DeniedEndpointCIDRs:       o.DeniedEndpointCIDRs,
			AllowUnderscoresInHeaders: o.AllowUnderscoresInHeaders,
			AllowCBCCipherSuites:      o.AllowCBCCipherSuites,
			ServerHeader:              ir.ServerHeaderMode(o.ServerHeader),
			ServerHeaderValue:         o.ServerHeaderValue,
		}
		if !ir.ValidHeaderValue(o.ServerHeaderValue) {
			// The CRD's pattern refuses it too; a proxy would NACK the whole config.
			return p, fmt.Errorf("spec.proxy.serverHeaderValue %q is not a valid header value", o.ServerHeaderValue)
		}
		if o.BackendResponseTimeout != nil {
			l.BackendResponseTimeout = o.BackendResponseTimeout.Duration
		}
		if o.RequestBodyIdleTimeout != nil {
			l.RequestBodyIdleTimeout = o.RequestBodyIdleTimeout.Duration
		}
		if o.ResponseWriteIdleTimeout != nil {
			l.ResponseWriteIdleTimeout = o.ResponseWriteIdleTimeout.Duration
		}
		if o.MaxRetryAttempts != nil {
			p.maxRetryAttempts = int(*o.MaxRetryAttempts)
		}
		if o.MaxRegexInstructions != nil {
			p.maxRegexInstructions = int(*o.MaxRegexInstructions)
		}
		if o.DeniedEndpointCIDRs != nil {
			cidrs = o.DeniedEndpointCIDRs
		}
		p.trustAllSlices = o.TrustAllEndpointSlices
		p.limits = l
	}
	nets, err := ir.ParseNetworks(cidrs)
	if err != nil {
		return p, fmt.Errorf("spec.proxy.deniedEndpointCIDRs: %w", err)
	}
	p.deniedEndpoints = nets
	return p, nil
}

// denies reports whether an endpoint address is in a denied network (ir.InNetworks).
func (p *proxyPolicy) denies(addr string) bool {
	return ir.InNetworks(p.deniedEndpoints, addr)
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
