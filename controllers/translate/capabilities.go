package translate

import (
	"encoding/json"
	"fmt"
	"slices"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/fleetgate/fleetgate/dataplane/ir"
	"github.com/fleetgate/fleetgate/providers"
)

// Catalog tells translation what the provider of a class can express. ok is false for a provider
// that is not registered: translation then assumes everything, and apply reports the provider as
// not enabled. providers.Registry implements it.
type Catalog interface {
	Capabilities(provider string, params json.RawMessage) (c providers.Capabilities, ok bool, err error)
}

// Option configures a translation.
type Option func(*options)

type options struct {
	catalog Catalog
}

// WithCatalog makes translation consult the capabilities of each class's provider. Without it,
// every provider expresses everything the fleetgate proxy does.
func WithCatalog(c Catalog) Option { return func(o *options) { o.catalog = c } }

func newOptions(opts []Option) options {
	var o options
	for _, f := range opts {
		f(&o)
	}
	return o
}

// capabilities resolves what a class's provider can express; an error is the class's
// InvalidParameters message.
func (t *translator) capabilities(provider string, params json.RawMessage) (providers.Capabilities, error) {
	if t.catalog == nil {
		return providers.FullCapabilities(), nil
	}
	c, ok, err := t.catalog.Capabilities(provider, params)
	if err != nil {
		return providers.Capabilities{}, fmt.Errorf("provider %s parameters: %w", provider, err)
	}
	if !ok {
		return providers.FullCapabilities(), nil
	}
	return c, nil
}

// unsupported words a refusal the same way everywhere: the field, then what is refused.
func unsupported(field, what, provider string) string {
	return fmt.Sprintf("%s: %s is not supported by provider %s", field, what, provider)
}

func overLimit(field string, n int, what string, limit int, provider string) string {
	return fmt.Sprintf("%s: %d %s, provider %s allows at most %d", field, n, what, provider, limit)
}

// ruleSpecs are the rules of an HTTPRoute or GRPCRoute spec.
type ruleSpecs interface {
	// problem says why rule i cannot be expressed with c, or "". host is the condition value the
	// host of its cloud rules costs (hostValue).
	problem(c providers.Capabilities, provider string, i, host int) string
}

type (
	httpRules []gwv1.HTTPRouteRule
	grpcRules []gwv1.GRPCRouteRule
	// l4Rules are the backendRefs of each rule of a TLSRoute, TCPRoute or UDPRoute.
	l4Rules [][]gwv1.BackendRef
)

func (rs httpRules) problem(c providers.Capabilities, provider string, i, host int) string {
	return httpRuleProblem(c, provider, i, host, rs[i])
}

func (rs grpcRules) problem(c providers.Capabilities, provider string, i, host int) string {
	return grpcRuleProblem(c, provider, i, host, rs[i])
}

// problem: an L4 rule has no matches nor filters, only backends (an NLB listener forwards to one).
func (rs l4Rules) problem(c providers.Capabilities, provider string, i, _ int) string {
	return backendsProblem(c, provider, fmt.Sprintf("spec.rules[%d]", i), rs[i])
}

// inexpressible returns why provider (with capabilities c) cannot express rule i of r, or "".
// HTTPRoute and GRPCRoute rules carry features a provider may lack; TLSRoute, TCPRoute and
// UDPRoute rules only their backends. host is the condition value of the host (hostValue).
func (r *route) inexpressible(c providers.Capabilities, provider string, i, host int) string {
	if c.All || r.specRules == nil {
		return ""
	}
	return r.specRules.problem(c, provider, i, host)
}

// hostValue is the condition value the host costs in each match of r on class c's gateways
// (providers.Capabilities.MaxConditionsPerMatch): 0 when r is served only under the catch-all
// "*", that is when neither it nor any listener of its parents of class c has a hostname.
func (t *translator) hostValue(r *route, c *classInfo) int {
	if len(r.hostnames) > 0 {
		return 1
	}
	for _, ref := range r.parentRefs {
		grp, _ := t.findParent(r, ref)
		if grp == nil || grp.class != c {
			continue
		}
		for _, l := range grp.listeners {
			if l.hostname != "" {
				return 1
			}
		}
	}
	return 0
}

// conditionsProblem checks the condition values of match j of rule at (counted as
// providers.Capabilities.MaxConditionsPerMatch says) against c's limit.
func conditionsProblem(c providers.Capabilities, provider, at string, j, n int) string {
	if c.Within(n, c.MaxConditionsPerMatch) {
		return ""
	}
	return overLimit(fmt.Sprintf("%s.matches[%d]", at, j), n, "condition values", c.MaxConditionsPerMatch, provider)
}

// pathValues is the condition values of a path match of type typ and value v: "/p" and "/p/*"
// for a prefix, none for the prefix "/" (every path).
func pathValues(typ, v string) int {
	switch {
	case typ != string(gwv1.PathMatchPathPrefix):
		return 1
	case v == "/" || v == "":
		return 0
	}
	return 2
}

// httpMatchValues is the condition values of one HTTPRoute match besides its host.
func httpMatchValues(m gwv1.HTTPRouteMatch) int {
	n := len(m.Headers) + len(m.QueryParams)
	if m.Method != nil {
		n++
	}
	typ, v := string(gwv1.PathMatchPathPrefix), "/"
	if m.Path != nil {
		if m.Path.Type != nil {
			typ = string(*m.Path.Type)
		}
		if m.Path.Value != nil {
			v = *m.Path.Value
		}
	}
	return n + pathValues(typ, v)
}

// grpcMatchValues is the condition values of one GRPCRoute match besides its host.
func grpcMatchValues(m gwv1.GRPCRouteMatch) int {
	n := len(m.Headers)
	if m.Method != nil {
		n += pathValues(grpcPathMatch(m.Method), "/"+ptrStr(m.Method.Service))
	}
	return n
}

func httpRuleProblem(c providers.Capabilities, provider string, i, host int, rule gwv1.HTTPRouteRule) string {
	at := fmt.Sprintf("spec.rules[%d]", i)
	if !c.Within(len(rule.Matches), c.MaxMatchesPerRule) {
		return overLimit(at+".matches", len(rule.Matches), "matches", c.MaxMatchesPerRule, provider)
	}
	if len(rule.Matches) == 0 && !c.PathMatch(string(gwv1.PathMatchPathPrefix)) {
		return unsupported(at+".matches", "the implicit PathPrefix match", provider)
	}
	for j, m := range rule.Matches {
		mat := fmt.Sprintf("%s.matches[%d]", at, j)
		typ := gwv1.PathMatchPathPrefix
		if m.Path != nil && m.Path.Type != nil {
			typ = *m.Path.Type
		}
		if !c.PathMatch(string(typ)) {
			return unsupported(mat+".path.type", string(typ), provider)
		}
		for k, h := range m.Headers {
			if typ := matchType((*string)(h.Type)); !c.HeaderMatch(typ) {
				return unsupported(fmt.Sprintf("%s.headers[%d].type", mat, k), typ, provider)
			}
		}
		for k, q := range m.QueryParams {
			if typ := matchType((*string)(q.Type)); !c.QueryMatch(typ) {
				return unsupported(fmt.Sprintf("%s.queryParams[%d].type", mat, k), typ, provider)
			}
		}
		if m.Method != nil && !c.MethodMatch {
			return unsupported(mat+".method", "a method match", provider)
		}
		if msg := conditionsProblem(c, provider, at, j, host+httpMatchValues(m)); msg != "" {
			return msg
		}
	}
	httpRef := func(r gwv1.HTTPBackendRef) (gwv1.BackendRef, []gwv1.HTTPRouteFilter) { return r.BackendRef, r.Filters }
	httpFilter := func(f gwv1.HTTPRouteFilter) string { return string(f.Type) }
	if msg := filtersAndBackendsProblem(c, provider, at, rule.Filters, rule.BackendRefs, httpRef, httpFilter); msg != "" {
		return msg
	}
	switch {
	case rule.Timeouts != nil && !c.Timeouts:
		return unsupported(at+".timeouts", "a timeout", provider)
	case rule.Retry != nil && !c.Retries:
		return unsupported(at+".retry", "a retry policy", provider)
	case rule.SessionPersistence != nil && !c.SessionPersistence:
		return unsupported(at+".sessionPersistence", "session persistence", provider)
	}
	return ""
}

func grpcRuleProblem(c providers.Capabilities, provider string, i, host int, rule gwv1.GRPCRouteRule) string {
	at := fmt.Sprintf("spec.rules[%d]", i)
	if !c.Within(len(rule.Matches), c.MaxMatchesPerRule) {
		return overLimit(at+".matches", len(rule.Matches), "matches", c.MaxMatchesPerRule, provider)
	}
	for j, m := range rule.Matches {
		mat := fmt.Sprintf("%s.matches[%d]", at, j)
		// A method match is a path match on "/service/method" (grpcMatch): say which one it needs.
		if mm := m.Method; mm != nil {
			if typ := grpcPathMatch(mm); !c.PathMatch(typ) {
				return unsupported(mat+".method", "a method match (as a "+typ+" path match)", provider)
			}
		}
		for k, h := range m.Headers {
			if typ := matchType((*string)(h.Type)); !c.HeaderMatch(typ) {
				return unsupported(fmt.Sprintf("%s.headers[%d].type", mat, k), typ, provider)
			}
		}
		if msg := conditionsProblem(c, provider, at, j, host+grpcMatchValues(m)); msg != "" {
			return msg
		}
	}
	grpcRef := func(r gwv1.GRPCBackendRef) (gwv1.BackendRef, []gwv1.GRPCRouteFilter) { return r.BackendRef, r.Filters }
	grpcFilter := func(f gwv1.GRPCRouteFilter) string { return string(f.Type) }
	if msg := filtersAndBackendsProblem(c, provider, at, rule.Filters, rule.BackendRefs, grpcRef, grpcFilter); msg != "" {
		return msg
	}
	if rule.SessionPersistence != nil && !c.SessionPersistence {
		return unsupported(at+".sessionPersistence", "session persistence", provider)
	}
	return ""
}

// backendsProblem checks the number of a rule's backends and, without Weights, that they share
// one weight.
func backendsProblem(c providers.Capabilities, provider, at string, refs []gwv1.BackendRef) string {
	if !c.Within(len(refs), c.MaxBackendsPerRule) {
		return overLimit(at+".backendRefs", len(refs), "backends", c.MaxBackendsPerRule, provider)
	}
	if c.Weights {
		return ""
	}
	for k, br := range refs {
		if k > 0 && weightOf(br) != weightOf(refs[0]) {
			return unsupported(fmt.Sprintf("%s.backendRefs[%d].weight", at, k), "a traffic split by weight", provider)
		}
	}
	return ""
}

func weightOf(br gwv1.BackendRef) int32 {
	if br.Weight == nil {
		return 1
	}
	return *br.Weight
}

// matchType is a header or query match type, Exact when unset.
func matchType(t *string) string {
	if t == nil || *t == "" {
		return string(gwv1.HeaderMatchExact)
	}
	return *t
}

// grpcPathMatch is the path match type a GRPCRoute method match compiles to (grpcMatch).
func grpcPathMatch(mm *gwv1.GRPCMethodMatch) string {
	svc, method := ptrStr(mm.Service), ptrStr(mm.Method)
	switch {
	case mm.Type != nil && *mm.Type == gwv1.GRPCMethodMatchRegularExpression, svc == "":
		return string(gwv1.PathMatchRegularExpression)
	case method == "":
		return string(gwv1.PathMatchPathPrefix)
	}
	return string(gwv1.PathMatchExact)
}

// ingressPathType is the Gateway API name of the path match an Ingress path compiles to.
func ingressPathType(t ir.MatchType) string {
	if t == ir.MatchExact {
		return string(gwv1.PathMatchExact)
	}
	return string(gwv1.PathMatchPathPrefix)
}

// withinListenerLimits keeps the listeners of matched that can take r within the limits of c's
// provider (rules and hostnames per listener) and books r on them; refusal says why when none can.
// Routes come oldest first, so the older route keeps its place.
func (t *translator) withinListenerLimits(r *route, c *classInfo, matched []match) (fits []match, refusal string) {
	caps := c.caps.ForRouteKind(r.kind)
	rules := t.ruleCount(r, c)
	// An L4 listener forwards to its one rule: the limit is one of routes there.
	unit := "rules"
	if r.isL4() {
		unit = "routes"
	}
	for _, m := range matched {
		if m.l.last == r {
			fits = append(fits, m)
			continue
		}
		hosts := m.hosts
		if len(hosts) == 0 {
			hosts = []string{m.l.hostname}
		}
		added := 0
		for _, h := range hosts {
			if !m.l.hostnames[h] {
				added++
			}
		}
		switch {
		case !caps.Within(m.l.rules+rules, caps.MaxRulesPerListener):
			refusal = fmt.Sprintf("listener %q would hold %d %s, provider %s allows at most %d per listener",
				m.l.spec.Name, m.l.rules+rules, unit, c.provider, caps.MaxRulesPerListener)
			continue
		case !caps.Within(len(m.l.hostnames)+added, caps.MaxHostnamesPerListener):
			refusal = fmt.Sprintf("listener %q would serve %d hostnames, provider %s allows at most %d per listener",
				m.l.spec.Name, len(m.l.hostnames)+added, c.provider, caps.MaxHostnamesPerListener)
			continue
		}
		m.l.rules += rules
		if m.l.hostnames == nil {
			m.l.hostnames = map[string]bool{}
		}
		for _, h := range hosts {
			m.l.hostnames[h] = true
		}
		fits = append(fits, m)
	}
	return fits, refusal
}

// unservableKind says why a listener of l's protocol does not take routes of kind: its class's
// provider cannot serve them; "" when that is not the reason.
func unservableKind(l *listener, kind string) string {
	c := l.group.class
	if c.caps.ForProtocol(string(l.spec.Protocol)).RouteKind(kind) || !slices.Contains(defaultKinds(l.spec.Protocol), kind) {
		return ""
	}
	return fmt.Sprintf("%s is not supported by provider %s", kind, c.provider)
}

// filtersAndBackendsProblem checks a rule's filters, its backendRefs' filters and its backends, for
// HTTPRoute and GRPCRoute rules alike.
func filtersAndBackendsProblem[R, F any](c providers.Capabilities, provider, at string, filters []F, refs []R,
	ref func(R) (gwv1.BackendRef, []F), filterType func(F) string) string {
	for k, f := range filters {
		if typ := filterType(f); !c.Filter(typ) {
			return unsupported(fmt.Sprintf("%s.filters[%d].type", at, k), typ, provider)
		}
	}
	brs := make([]gwv1.BackendRef, len(refs))
	for k, r := range refs {
		br, fs := ref(r)
		brs[k] = br
		for l, f := range fs {
			if typ := filterType(f); !c.Filter(typ) {
				return unsupported(fmt.Sprintf("%s.backendRefs[%d].filters[%d].type", at, k, l), typ, provider)
			}
		}
	}
	return backendsProblem(c, provider, at, brs)
}

// certificateLimits refuses the listeners of grp whose certificates its provider cannot hold on
// one cloud listener: a listener with more certificateRefs than the limit, then, among the
// listeners merged onto one port (in order, so the first keep their place), each one that would
// take the port's distinct certificates over it. The limit is that of each listener's protocol
// (ForProtocol): the proxies of a proxied class hold the certificates of its HTTPS listeners, and
// listeners without a limit are not counted.
func certificateLimits(grp *gatewayGroup) {
	c := grp.class
	limitOf := func(l *listener) int {
		if caps := c.caps.ForProtocol(string(l.spec.Protocol)); !caps.All {
			return caps.MaxCertificatesPerListener
		}
		return 0
	}
	limited := false
	for _, l := range grp.listeners {
		limit := limitOf(l)
		limited = limited || limit > 0
		if limit > 0 && l.spec.TLS != nil && len(l.spec.TLS.CertificateRefs) > limit {
			l.accept(false, string(gwv1.ListenerReasonUnsupportedValue),
				overLimit("tls.certificateRefs", len(l.spec.TLS.CertificateRefs), "certificates", limit, c.provider))
		}
	}
	if !limited {
		return
	}
	for _, g := range groupByPort(grp.listeners) {
		held := map[string]bool{}
		for _, l := range g.ls {
			limit := limitOf(l)
			if limit == 0 {
				continue
			}
			added := 0
			for _, cert := range l.certs {
				if !held[cert.Name] {
					added++
				}
			}
			if len(held)+added > limit {
				l.accept(false, string(gwv1.ListenerReasonUnsupportedValue),
					fmt.Sprintf("port %d would hold %d certificates with the listeners merged onto it, provider %s allows at most %d per listener",
						g.port, len(held)+added, c.provider, limit))
				continue
			}
			for _, cert := range l.certs {
				held[cert.Name] = true
			}
		}
	}
}
