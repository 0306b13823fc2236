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
