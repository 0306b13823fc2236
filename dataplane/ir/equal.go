package ir

import "slices"

// Equal reports whether vh and o are the same virtual host. The config server calls it for every
// host of every config to find the few that changed, so it compares field by field without
// reflection, and takes routes that share their backing array as equal: a config is not modified
// once handed over, so translation that reuses an unchanged host's routes makes the check O(1).
// TestEqualCoversEveryField keeps it complete.
func (vh *VirtualHost) Equal(o *VirtualHost) bool {
	return vh.Hostname == o.Hostname && vh.SingleLabelWildcard == o.SingleLabelWildcard && RoutesEqual(vh.Routes, o.Routes)
}

// RoutesEqual reports whether two route lists are the same, taking lists that share their
// backing array as equal (see VirtualHost.Equal). The proxy calls it to share one compiled route
// list between the hosts whose routes are equal.
func RoutesEqual(a, b []Route) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) == 0 || &a[0] == &b[0] {
		return true
	}
	return slices.EqualFunc(a, b, func(a, b Route) bool { return a.equal(&b) })
}

func (r *Route) equal(o *Route) bool {
	return r.Name == o.Name && r.Match.equal(&o.Match) && r.Filters.equal(&o.Filters) &&
		backendsEqual(r.Backends, o.Backends) && r.Timeouts == o.Timeouts &&
		ptrEqual(r.Retry, o.Retry, func(a, b *Retry) bool {
			return a.Attempts == b.Attempts && a.Backoff == b.Backoff && slices.Equal(a.Codes, b.Codes)
		})
}

func (m *Match) equal(o *Match) bool {
	return ptrEqual(m.Path, o.Path, func(a, b *StringMatch) bool { return *a == *b }) && m.Method == o.Method &&
		slices.Equal(m.Headers, o.Headers) && slices.Equal(m.QueryParams, o.QueryParams)
}

func (f *Filters) equal(o *Filters) bool {
	return ptrEqual(f.RequestHeaders, o.RequestHeaders, (*HeaderModifier).equal) &&
		ptrEqual(f.ResponseHeaders, o.ResponseHeaders, (*HeaderModifier).equal) &&
		ptrEqual(f.Redirect, o.Redirect, func(a, b *Redirect) bool {
			return a.Scheme == b.Scheme && a.Hostname == b.Hostname && a.Port == b.Port && a.StatusCode == b.StatusCode &&
				ptrEqual(a.Path, b.Path, func(a, b *PathModifier) bool { return *a == *b })
		}) &&
		ptrEqual(f.Rewrite, o.Rewrite, func(a, b *Rewrite) bool {
			return a.Hostname == b.Hostname && ptrEqual(a.Path, b.Path, func(a, b *PathModifier) bool { return *a == *b })
		}) &&
		slices.EqualFunc(f.Mirrors, o.Mirrors, func(a, b Mirror) bool {
			return a.Numerator == b.Numerator && a.Denominator == b.Denominator && a.Backend.equal(&b.Backend)
		}) &&
		ptrEqual(f.CORS, o.CORS, func(a, b *CORS) bool {
			return a.AllowCredentials == b.AllowCredentials && a.MaxAge == b.MaxAge && slices.Equal(a.AllowOrigins, b.AllowOrigins) &&
				slices.Equal(a.AllowMethods, b.AllowMethods) && slices.Equal(a.AllowHeaders, b.AllowHeaders) &&
				slices.Equal(a.ExposeHeaders, b.ExposeHeaders)
		})
}

func (h *HeaderModifier) equal(o *HeaderModifier) bool {
	return slices.Equal(h.Set, o.Set) && slices.Equal(h.Add, o.Add) && slices.Equal(h.Remove, o.Remove)
}

func backendsEqual(a, b []Backend) bool {
	return slices.EqualFunc(a, b, func(a, b Backend) bool { return a.equal(&b) })
}

func (b *Backend) equal(o *Backend) bool {
	return b.Name == o.Name && b.Weight == o.Weight && b.Invalid == o.Invalid && b.AppProtocol == o.AppProtocol &&
		slices.Equal(b.Endpoints, o.Endpoints) && b.Filters.equal(&o.Filters) &&
		ptrEqual(b.TLS, o.TLS, func(a, b *BackendTLS) bool {
			return a.Hostname == b.Hostname && a.SystemRoots == b.SystemRoots && string(a.CACertPEM) == string(b.CACertPEM) &&
				slices.Equal(a.SubjectAltNames, b.SubjectAltNames)
		})
}

// ptrEqual compares two optional values: both nil, or both set and eq.
func ptrEqual[T any](a, b *T, eq func(a, b *T) bool) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a == b || eq(a, b)
}

// BaseEqual reports whether c and o are the same but for their virtual hosts and Version, i.e.
// whether their Update.Base is. The config server calls it on every config, so like Equal it
// compares field by field and takes byte slices that share their backing array as equal: the
// certificates of a config rebuilt from the same Secrets cost a pointer comparison each, not a
// comparison, let alone an encoding, of their PEM. TestBaseEqualCoversEveryField keeps it complete.
func (c *Config) BaseEqual(o *Config) bool {
	return c.Gateway == o.Gateway &&
		slices.EqualFunc(c.Listeners, o.Listeners, func(a, b Listener) bool { return a.baseEqual(&b) }) &&
		ptrEqual(c.BackendClientCertificate, o.BackendClientCertificate, (*Certificate).equal) &&
		ptrEqual(c.Limits, o.Limits, (*Limits).equal)
}

func (l *Listener) baseEqual(o *Listener) bool {
	return l.Name == o.Name && l.Port == o.Port && l.Protocol == o.Protocol &&
		slices.EqualFunc(l.Certificates, o.Certificates, func(a, b Certificate) bool { return a.equal(&b) }) &&
		slices.EqualFunc(l.SNIRoutes, o.SNIRoutes, func(a, b SNIRoute) bool {
			return a.Name == b.Name && a.Terminate == b.Terminate && slices.Equal(a.Hostnames, b.Hostnames) &&
				backendsEqual(a.Backends, b.Backends)
		}) &&
		ptrEqual(l.L4, o.L4, func(a, b *L4Route) bool {
			return a.Name == b.Name && a.ClientIPAffinity == b.ClientIPAffinity && backendsEqual(a.Backends, b.Backends)
		}) &&
		slices.Equal(l.SourceRanges, o.SourceRanges) &&
		ptrEqual(l.ClientValidation, o.ClientValidation, func(a, b *ClientValidation) bool {
			return a.AllowInsecureFallback == b.AllowInsecureFallback && bytesEqual(a.CACertPEM, b.CACertPEM)
		})
}

func (c *Certificate) equal(o *Certificate) bool {
	return c.Name == o.Name && slices.Equal(c.Hostnames, o.Hostnames) && bytesEqual(c.CertPEM, o.CertPEM) &&
		bytesEqual(c.KeyPEM, o.KeyPEM)
}

func (l *Limits) equal(o *Limits) bool {
	return l.BackendResponseTimeout == o.BackendResponseTimeout && l.RequestBodyIdleTimeout == o.RequestBodyIdleTimeout &&
		l.ResponseWriteIdleTimeout == o.ResponseWriteIdleTimeout && l.MaxConnectionsPerListener == o.MaxConnectionsPerListener &&
		l.MaxRetryAttempts == o.MaxRetryAttempts && l.RetryBudgetPercent == o.RetryBudgetPercent &&
		l.RetryBudgetMinConcurrent == o.RetryBudgetMinConcurrent && l.MaxRegexInstructions == o.MaxRegexInstructions &&
		// nil (the proxy's own list) and empty (deny nothing) differ.
		(l.DeniedEndpointCIDRs == nil) == (o.DeniedEndpointCIDRs == nil) && slices.Equal(l.DeniedEndpointCIDRs, o.DeniedEndpointCIDRs) &&
		l.AllowUnderscoresInHeaders == o.AllowUnderscoresInHeaders && l.AllowCBCCipherSuites == o.AllowCBCCipherSuites &&
		l.ServerHeader == o.ServerHeader && l.ServerHeaderValue == o.ServerHeaderValue
}

// bytesEqual is bytes.Equal, without reading slices that share their backing array.
func bytesEqual(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0] || string(a) == string(b))
}

// SameRoute reports whether a and b are the same route in memory: every field equal and every
// pointer and slice the same. Decoders give a route that repeats the one at its place in the host
// before that route's value (hostPool.recent), and a config is not modified once handed over, so
// what is known of a (its checks, its compiled form) holds for b. TestSameRouteCoversEveryField
// keeps it complete.
func SameRoute(a, b *Route) bool {
	return a.Name == b.Name && a.Match.Path == b.Match.Path && a.Match.Method == b.Match.Method &&
		sameSlice(a.Match.Headers, b.Match.Headers) && sameSlice(a.Match.QueryParams, b.Match.QueryParams) &&
		a.Filters.RequestHeaders == b.Filters.RequestHeaders && a.Filters.ResponseHeaders == b.Filters.ResponseHeaders &&
		a.Filters.Redirect == b.Filters.Redirect && a.Filters.Rewrite == b.Filters.Rewrite &&
		sameSlice(a.Filters.Mirrors, b.Filters.Mirrors) && a.Filters.CORS == b.Filters.CORS &&
		sameSlice(a.Backends, b.Backends) && a.Timeouts == b.Timeouts && a.Retry == b.Retry
}

// sameSlice reports whether a and b are the same slice: the same elements in memory, or both nil,
// or both empty and not nil.
func sameSlice[T any](a, b []T) bool {
	if len(a) != len(b) || (a == nil) != (b == nil) {
		return false
	}
	return len(a) == 0 || &a[0] == &b[0]
}
