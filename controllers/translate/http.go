package translate

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/fleetgate/fleetgate/controllers/snapshot"
	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// compileHTTPRoute compiles every valid rule of an HTTPRoute. Invalid rules are dropped and
// reported (PartiallyInvalid, or Accepted=False when all are invalid).
func (t *translator) compileHTTPRoute(o snapshot.Object[gwv1.HTTPRoute]) *route {
	hr := o.Obj
	r := newRoute(kindHTTPRoute, o, hr.Spec.CommonRouteSpec, hr.Spec.Hostnames, true)
	r.specRules = httpRules(hr.Spec.Rules)
	for i, rule := range hr.Spec.Rules {
		r.rules++
		t.compileHTTPRule(r, i, rule)
	}
	return r
}

func (t *translator) compileHTTPRule(r *route, i int, rule gwv1.HTTPRouteRule) {
	matches := rule.Matches
	if len(matches) == 0 {
		matches = []gwv1.HTTPRouteMatch{{}}
	}
	var irMatches []ir.Match
	var precs []precedence
	var insts []regexSize
	allPrefix := true
	for j, m := range matches {
		im, p, n, err := httpMatch(m, fmt.Sprintf("spec.rules[%d].matches[%d]", i, j))
		if err != nil {
			r.ruleInvalid(i, gwv1.RouteReasonUnsupportedValue, err.Error())
			return
		}
		allPrefix = allPrefix && im.Path.Type == ir.MatchPrefix
		irMatches, precs, insts = append(irMatches, im), append(precs, p), append(insts, n)
	}
	filters, reason, err := t.httpFilters(r, rule.Filters, allPrefix, fmt.Sprintf("spec.rules[%d].filters", i))
	if err != nil {
		r.ruleInvalid(i, reason, err.Error())
		return
	}
	if filters.Redirect != nil && len(rule.BackendRefs) > 0 {
		r.ruleInvalid(i, gwv1.RouteReasonIncompatibleFilters, "RequestRedirect cannot be used with backendRefs")
		return
	}
	timeouts, err := httpTimeouts(rule.Timeouts)
	if err != nil {
		r.ruleInvalid(i, gwv1.RouteReasonUnsupportedValue, err.Error())
		return
	}
	retry, err := httpRetry(rule.Retry)
	if err != nil {
		r.ruleInvalid(i, gwv1.RouteReasonUnsupportedValue, err.Error())
		return
	}
	var backends []ir.Backend
	for k, br := range rule.BackendRefs {
		b := t.resolveBackend(r, br.BackendObjectReference, br.Weight, useHTTP)
		bf, reason, err := t.httpFilters(r, br.Filters, allPrefix, fmt.Sprintf("spec.rules[%d].backendRefs[%d].filters", i, k))
		if err != nil {
			r.ruleInvalid(i, reason, "backendRef filters: "+err.Error())
			return
		}
		if bf.Redirect != nil || bf.Rewrite != nil || len(bf.Mirrors) > 0 || bf.CORS != nil || bf.extension {
			r.ruleInvalid(i, gwv1.RouteReasonUnsupportedValue, "backendRef filters support only header modifiers")
			return
		}
		b.Filters = bf.Filters
		backends = append(backends, b)
	}
	backends = backendList(backends)
	if filters.extension {
		backends = nil // an unresolvable ExtensionRef filter must fail the request, not be skipped
	}
	for j, m := range irMatches {
		p := precs[j]
		p.created, p.name, p.cluster, p.rule, p.match = r.meta.GetCreationTimestamp(), r.name(), r.cluster, i, j
		r.matches = append(r.matches, compiledMatch{
			ir: ir.Route{
				Name:     fmt.Sprintf("%s/%s/%d/%d", r.kind, r.name(), i, j),
				Match:    m,
				Filters:  filters.Filters,
				Backends: backends,
				Timeouts: timeouts,
				Retry:    retry,
			},
			prec:       p,
			regexInsts: insts[j],
		})
	}
}

// httpMatch compiles one match; insts is the size of its largest regex program, which the class's
// limit bounds (hostRoutes). at is the match's field path, for messages.
func httpMatch(m gwv1.HTTPRouteMatch, at string) (im ir.Match, p precedence, insts regexSize, err error) {
	typ, value := gwv1.PathMatchPathPrefix, "/"
	if m.Path != nil {
		if m.Path.Type != nil {
			typ = *m.Path.Type
		}
		if m.Path.Value != nil {
			value = *m.Path.Value
		}
	}
	switch typ {
	case gwv1.PathMatchExact, gwv1.PathMatchPathPrefix:
		if !strings.HasPrefix(value, "/") || strings.Contains(value, "//") {
			return im, p, regexSize{}, fmt.Errorf("path %q must start with / and not contain //", value)
		}
		if typ == gwv1.PathMatchExact {
			im.Path, p.path = &ir.StringMatch{Type: ir.MatchExact, Value: value}, rankExact
		} else {
			if len(value) > 1 {
				value = strings.TrimSuffix(value, "/") // a trailing / is ignored
			}
			im.Path, p.path = &ir.StringMatch{Type: ir.MatchPrefix, Value: value}, rankPrefix
		}
	case gwv1.PathMatchRegularExpression:
		n, err := measureRegex(value)
		if err != nil {
			return im, p, regexSize{}, fmt.Errorf("%s.path.value: %w", at, err)
		}
		insts = n
		im.Path, p.path = &ir.StringMatch{Type: ir.MatchRegex, Value: value}, rankRegex
	default:
		return im, p, regexSize{}, fmt.Errorf("path match type %q is not supported", typ)
	}
	p.pathLen = len(value)
	if im.Headers, insts, err = headerMatches(m.Headers, at, insts); err != nil {
		return im, p, regexSize{}, err
	}
	seen := map[string]bool{}
	for k, q := range m.QueryParams {
		if seen[string(q.Name)] {
			continue
		}
		seen[string(q.Name)] = true
		km, n, err := keyMatch(fmt.Sprintf("%s.queryParams[%d]", at, k), string(q.Name), (*string)(q.Type), q.Value)
		if err != nil {
			return im, p, regexSize{}, err
		}
		insts = insts.max(n)
		im.QueryParams = append(im.QueryParams, km)
	}
	if m.Method != nil {
		switch *m.Method {
		case gwv1.HTTPMethodGet, gwv1.HTTPMethodHead, gwv1.HTTPMethodPost, gwv1.HTTPMethodPut, gwv1.HTTPMethodDelete,
			gwv1.HTTPMethodConnect, gwv1.HTTPMethodOptions, gwv1.HTTPMethodTrace, gwv1.HTTPMethodPatch:
			im.Method, p.method = string(*m.Method), true
		default:
			return im, p, regexSize{}, fmt.Errorf("method %q is not supported", *m.Method)
		}
	}
	p.headers, p.queries = len(im.Headers), len(im.QueryParams)
	return im, p, insts, nil
}

// headerMatches compiles the header matches of a match at field path at; insts is the largest
// regex program so far, returned updated.
func headerMatches(hs []gwv1.HTTPHeaderMatch, at string, insts regexSize) ([]ir.KeyMatch, regexSize, error) {
	var out []ir.KeyMatch
	seen := map[string]bool{}
	for k, h := range hs {
		// Only the first of equivalent (case-insensitive) header names counts.
		if seen[strings.ToLower(string(h.Name))] {
			continue
		}
		seen[strings.ToLower(string(h.Name))] = true
		f := fmt.Sprintf("%s.headers[%d]", at, k)
		if !ir.ValidHeaderName(string(h.Name)) {
			return nil, regexSize{}, fmt.Errorf("%s.name: header name %q is not an RFC 9110 token", f, h.Name)
		}
		km, n, err := keyMatch(f, string(h.Name), (*string)(h.Type), h.Value)
		if err != nil {
			return nil, regexSize{}, err
		}
		insts = insts.max(n)
		out = append(out, km)
	}
	return out, insts, nil
}

// keyMatch compiles a header or query parameter match at field path at; Exact is the default
// type. insts is the regex's program size.
func keyMatch(at, name string, typ *string, value string) (km ir.KeyMatch, insts regexSize, err error) {
	t := "Exact"
	if typ != nil && *typ != "" {
		t = *typ
	}
	if name == "" {
		return ir.KeyMatch{}, regexSize{}, fmt.Errorf("%s.name: match without a name", at)
	}
	switch t {
	case "Exact":
		return ir.KeyMatch{Name: name, Type: ir.MatchExact, Value: value}, regexSize{}, nil
	case "RegularExpression":
		n, err := measureRegex(value)
		if err != nil {
			return ir.KeyMatch{}, regexSize{}, fmt.Errorf("%s.value: %w", at, err)
		}
		return ir.KeyMatch{Name: name, Type: ir.MatchRegex, Value: value}, n, nil
	}
	return ir.KeyMatch{}, regexSize{}, fmt.Errorf("%s.type: match type %q is not supported", at, t)
}

// regexSize is the size of the largest regex program of a match, measured once (measureRegex)
// and judged against the limit of each class the route's gateways belong to (tooLarge).
type regexSize struct{ insts, est int }

// maxClassRegexInstructions is the largest GatewayClassConfig spec.proxy.maxRegexInstructions (the
// CRD's maximum): the size is estimated far enough to judge a regex for any class, and counted
// exactly only when near the default limit, which keeps a hostile regex cheap to refuse.
const maxClassRegexInstructions = 100_000

func measureRegex(expr string) (regexSize, error) {
	n, est, err := ir.RegexInstructions(expr, ir.DefaultMaxRegexInstructions, maxClassRegexInstructions)
	return regexSize{n, est}, err
}

func (a regexSize) max(b regexSize) regexSize {
	return regexSize{max(a.insts, b.insts), max(a.est, b.est)}
}

func (a regexSize) tooLarge(limit int) bool { return ir.RegexTooLarge(a.insts, a.est, limit) }

// durationRE is the Gateway API duration format (GEP-2257).
var durationRE = regexp.MustCompile(`^([0-9]{1,5}(h|m|s|ms)){1,4}$`)

func parseDuration(d *gwv1.Duration) (time.Duration, error) {
	if d == nil {
		return 0, nil
	}
	if !durationRE.MatchString(string(*d)) {
		return 0, fmt.Errorf("duration %q is not a Gateway API duration", *d)
	}
	v, err := time.ParseDuration(string(*d))
	if err != nil {
		return 0, fmt.Errorf("duration %q: %w", *d, err)
	}
	return v, nil
}

func httpTimeouts(t *gwv1.HTTPRouteTimeouts) (ir.Timeouts, error) {
	if t == nil {
		return ir.Timeouts{}, nil
	}
	req, err := parseDuration(t.Request)
	if err != nil {
		return ir.Timeouts{}, fmt.Errorf("timeouts.request: %w", err)
	}
	be, err := parseDuration(t.BackendRequest)
	if err != nil {
		return ir.Timeouts{}, fmt.Errorf("timeouts.backendRequest: %w", err)
	}
	if req != 0 && be > req {
		return ir.Timeouts{}, fmt.Errorf("timeouts.backendRequest %s is longer than timeouts.request %s", be, req)
	}
	return ir.Timeouts{Request: req, BackendRequest: be}, nil
}

func httpRetry(r *gwv1.HTTPRouteRetry) (*ir.Retry, error) {
	if r == nil {
		return nil, nil
	}
	// Attempts is implementation-specific when unset: one retry.
	out := &ir.Retry{Attempts: 1}
	if r.Attempts != nil {
		if *r.Attempts < 0 {
			return nil, fmt.Errorf("retry.attempts %d is negative", *r.Attempts)
		}
		out.Attempts = *r.Attempts
	}
	for _, c := range r.Codes {
		if c < 400 || c > 599 {
			return nil, fmt.Errorf("retry code %d is outside 400-599", c)
		}
		out.Codes = append(out.Codes, int(c))
	}
	b, err := parseDuration(r.Backoff)
	if err != nil {
		return nil, fmt.Errorf("retry.backoff: %w", err)
	}
	out.Backoff = b
	return out, nil
}
