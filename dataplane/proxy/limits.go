package proxy

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// limits are the bounds in force for one table: the config's ir.Limits where set, else the
// server's Options. They travel with the table so that a config change applies them atomically.
type limits struct {
	backendResponseTimeout   time.Duration
	requestBodyIdleTimeout   time.Duration
	responseWriteIdleTimeout time.Duration
	maxConnsPerListener      int
	maxRetryAttempts         int
	retryBudgetPercent       int
	retryBudgetMinConcurrent int
	maxRegexInstructions     int
	deniedEndpoints          []netip.Prefix
	allowUnderscores         bool
	allowCBC                 bool
	server                   serverHeader
}

// serverHeader is the Server header policy (ir.ServerHeaderMode) in the forms the two HTTP paths
// write, computed once per config so that the fast path only copies bytes.
type serverHeader struct {
	// line is written on each response of the fast path ("Server: fleetgate\r\n"); empty writes none.
	line string
	// value is the header's value for the net/http path (shared: only ever replaced, never
	// appended to in place); nil writes none.
	value []string
	// drop keeps the backend's Server header from the client.
	drop bool
}

func newServerHeader(mode ir.ServerHeaderMode, value string) serverHeader {
	switch mode {
	case ir.ServerHeaderPassThrough:
		return serverHeader{}
	case ir.ServerHeaderStrip:
		return serverHeader{drop: true}
	}
	if value == "" {
		value = ir.DefaultServerHeader
	}
	return serverHeader{line: "Server: " + value + "\r\n", value: []string{value}, drop: true}
}

// resolveLimits merges a config's limits over the server's defaults.
func (o *Options) resolveLimits(l *ir.Limits) (*limits, error) {
	if l == nil {
		l = &ir.Limits{}
	}
	pick := func(v, def int) int {
		if v != 0 {
			return v
		}
		return def
	}
	pickD := func(v, def time.Duration) time.Duration {
		if v != 0 {
			return v
		}
		return def
	}
	out := &limits{
		backendResponseTimeout:   pickD(l.BackendResponseTimeout, o.BackendResponseTimeout),
		requestBodyIdleTimeout:   pickD(l.RequestBodyIdleTimeout, o.RequestBodyIdleTimeout),
		responseWriteIdleTimeout: pickD(l.ResponseWriteIdleTimeout, o.ResponseWriteIdleTimeout),
		maxConnsPerListener:      pick(l.MaxConnectionsPerListener, o.MaxConnectionsPerListener),
		maxRetryAttempts:         pick(l.MaxRetryAttempts, ir.DefaultMaxRetryAttempts),
		retryBudgetPercent:       pick(l.RetryBudgetPercent, o.RetryBudgetPercent),
		retryBudgetMinConcurrent: pick(l.RetryBudgetMinConcurrent, o.RetryBudgetMinConcurrent),
		maxRegexInstructions:     pick(l.MaxRegexInstructions, ir.DefaultMaxRegexInstructions),
		allowUnderscores:         l.AllowUnderscoresInHeaders || o.AllowUnderscoresInHeaders,
		allowCBC:                 l.AllowCBCCipherSuites || o.AllowCBCCipherSuites,
		server:                   newServerHeader(l.ServerHeader, l.ServerHeaderValue),
	}
	cidrs := o.DeniedEndpointCIDRs
	if l.DeniedEndpointCIDRs != nil {
		cidrs = l.DeniedEndpointCIDRs
	}
	nets, err := ir.ParseNetworks(cidrs)
	if err != nil {
		return nil, fmt.Errorf("denied endpoint CIDRs: %w", err)
	}
	out.deniedEndpoints = nets
	return out, nil
}
