package gcp

import (
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"

	"github.com/fleetgate/fleetgate/dataplane/ir"
	"github.com/fleetgate/fleetgate/providers"
)

// priorities of route rules: GCE takes 0-2147483647, unique within a path matcher, lower first;
// a billion leaves every gap room and keeps the arithmetic within int32.
var priorities = providers.PriorityRange{Min: 1, Max: 1_000_000_000, Step: 100}

// urlMap builds the URL map of one listener: a host rule and path matcher per virtual host, a
// route rule (two for a path prefix) per route in precedence order, and 404 for anything no
// rule matches, as the fleetgate proxy answers.
func (b *builder) urlMap(l *ir.Listener) string {
	notFound := b.errorService()
	m := &computepb.UrlMap{DefaultService: &notFound, DefaultRouteAction: abort(404, 100)}
	for _, vh := range l.VirtualHosts {
		pm := "h-" + shortHash(idHashLen, vh.Hostname)
		if vh.SingleLabelWildcard {
			b.note("host %s: a URL map wildcard covers any number of labels, not one as Ingress asks", vh.Hostname)
		}
		m.HostRules = append(m.HostRules, &computepb.HostRule{Hosts: []string{vh.Hostname}, PathMatcher: proto.String(pm)})
		var ids []string
		var rules []*computepb.HttpRouteRule
		for _, r := range vh.Routes {
			for i, rule := range b.routeRules(&r) {
				ids = append(ids, r.Name+"#"+strconv.Itoa(i))
				rules = append(rules, rule)
			}
		}
		if len(rules) > maxRouteRules {
			b.note("host %s: %d route rules, a path matcher takes %d; the least specific are left out", vh.Hostname, len(rules), maxRouteRules)
			rules, ids = rules[:maxRouteRules], ids[:maxRouteRules]
		}
		// Each rule says which route (and path variant) it is, so that the deployer can keep the
		// priorities the live URL map gives the rules that stay (stablePriorities).
		prio := priorities.Assign(ids, nil)
		for i, rule := range rules {
			rule.Priority = proto.Int32(prio[ids[i]])
			rule.Description = proto.String(ids[i])
		}
		m.PathMatchers = append(m.PathMatchers, &computepb.PathMatcher{Name: proto.String(pm),
			DefaultService: &notFound, DefaultRouteAction: abort(404, 100), RouteRules: rules})
	}
	return b.add(KindURLMap, b.scope(), "urlmap/"+strconv.FormatUint(uint64(l.Port), 10), nil, m)
}

// abort answers status for percent of the requests, before any backend is asked.
func abort(status uint32, percent float64) *computepb.HttpRouteAction {
	return &computepb.HttpRouteAction{FaultInjectionPolicy: &computepb.HttpFaultInjection{
		Abort: &computepb.HttpFaultAbort{HttpStatus: proto.Uint32(status), Percentage: proto.Float64(percent)}}}
}

// pathVariant is one match rule of a route's path: a Gateway API path prefix "/p" matches "/p"
// and "/p/…" but not "/px", which is a URL map full path match plus a prefix match on "/p/".
type pathVariant struct {
	match *computepb.HttpRouteRuleMatch
	// exact: the variant matches a full path (a rewrite of the prefix is the whole path).
	exact bool
	// prefix is what ReplacePrefixMatch replaces; "" for regular expressions.
	prefix string
}

func pathVariants(p *ir.StringMatch) []pathVariant {
	switch {
	case p == nil:
		return []pathVariant{{match: &computepb.HttpRouteRuleMatch{PrefixMatch: proto.String("/")}, prefix: "/"}}
	case p.Type == ir.MatchExact:
		return []pathVariant{{match: &computepb.HttpRouteRuleMatch{FullPathMatch: proto.String(p.Value)}, exact: true, prefix: p.Value}}
	case p.Type == ir.MatchRegex:
		return []pathVariant{{match: &computepb.HttpRouteRuleMatch{RegexMatch: proto.String(p.Value)}}}
	}
	t := strings.TrimRight(p.Value, "/")
	if t == "" {
		return []pathVariant{{match: &computepb.HttpRouteRuleMatch{PrefixMatch: proto.String("/")}, prefix: "/"}}
	}
	return []pathVariant{
		{match: &computepb.HttpRouteRuleMatch{FullPathMatch: proto.String(t)}, exact: true, prefix: t},
		{match: &computepb.HttpRouteRuleMatch{PrefixMatch: proto.String(t + "/")}, prefix: t + "/"},
	}
}

// routeRules are the route rules of one route, one per path variant. A route the URL map
// cannot express answers 500 (and says why in the status) rather than letting its requests
// fall through to another route, which could belong to someone else.
func (b *builder) routeRules(r *ir.Route) []*computepb.HttpRouteRule {
	var out []*computepb.HttpRouteRule
	for _, v := range pathVariants(r.Match.Path) {
		m := v.match
		if r.Match.Method != "" {
			m.HeaderMatches = append(m.HeaderMatches, &computepb.HttpHeaderMatch{HeaderName: proto.String(":method"), ExactMatch: proto.String(r.Match.Method)})
		}
		for _, h := range r.Match.Headers {
			hm := &computepb.HttpHeaderMatch{HeaderName: proto.String(h.Name)}
			if h.Type == ir.MatchRegex {
				hm.RegexMatch = proto.String(h.Value)
			} else {
				hm.ExactMatch = proto.String(h.Value)
			}
			m.HeaderMatches = append(m.HeaderMatches, hm)
		}
		for _, q := range r.Match.QueryParams {
			qm := &computepb.HttpQueryParameterMatch{Name: proto.String(q.Name)}
			if q.Type == ir.MatchRegex {
				qm.RegexMatch = proto.String(q.Value)
			} else {
				qm.ExactMatch = proto.String(q.Value)
			}
			m.QueryParameterMatches = append(m.QueryParameterMatches, qm)
		}
		rule := &computepb.HttpRouteRule{MatchRules: []*computepb.HttpRouteRuleMatch{m}}
		if why := b.action(rule, r, v); why != "" {
			b.note("route %s: %s; it answers 500", r.Name, why)
			rule.UrlRedirect, rule.HeaderAction = nil, nil
			rule.Service, rule.RouteAction = proto.String(b.errorService()), abort(500, 100)
		}
		out = append(out, rule)
	}
	return out
}

// action fills rule's redirect or route action and header action from r; it returns why not
// when the URL map cannot express r.
func (b *builder) action(rule *computepb.HttpRouteRule, r *ir.Route, v pathVariant) string {
	f := &r.Filters
	if f.Redirect != nil {
		return b.redirect(rule, f.Redirect, v)
	}
	rule.HeaderAction = headerAction(f.RequestHeaders, f.ResponseHeaders)
	a := &computepb.HttpRouteAction{}
	if rw := f.Rewrite; rw != nil {
		a.UrlRewrite = &computepb.UrlRewrite{}
		if rw.Hostname != "" {
			a.UrlRewrite.HostRewrite = proto.String(rw.Hostname)
		}
		if why := rewritePath(a.UrlRewrite, rw.Path, v); why != "" {
			return why
		}
	}
	if len(f.Mirrors) > 0 {
		mi := f.Mirrors[0]
		if len(f.Mirrors) > 1 {
			b.note("route %s: a URL map mirrors to one backend service; only %s is mirrored to", r.Name, mi.Backend.Name)
		}
		if mi.Denominator > 0 && mi.Numerator < mi.Denominator {
			b.note("route %s: a URL map mirrors every request, not %d/%d", r.Name, mi.Numerator, mi.Denominator)
		}
		if shares := providers.ClusterShares([]ir.Backend{mi.Backend}); !mi.Backend.Invalid && len(shares) > 0 {
			if len(shares) > 1 {
				b.note("route %s: mirrored to the endpoints of %s in cluster %s only", r.Name, mi.Backend.Name, shares[0].Cluster)
			}
			a.RequestMirrorPolicy = &computepb.RequestMirrorPolicy{BackendService: proto.String(b.backendService(&shares[0]))}
		}
	}
	if c := f.CORS; c != nil {
		a.CorsPolicy = corsPolicy(c)
	}
	timeouts(a, r)
	if why := b.retry(a, r); why != "" {
		return why
	}
	b.forward(rule, a, r)
	return ""
}

// forward splits the route's traffic across backend services by weight, one per backend and
// member cluster (providers.ClusterShares); the share of invalid backends answers 500.
func (b *builder) forward(rule *computepb.HttpRouteRule, a *computepb.HttpRouteAction, r *ir.Route) {
	var valid []ir.Backend
	total, invalid := new(big.Rat), new(big.Rat)
	for _, be := range r.Backends {
		w := new(big.Rat).SetInt64(int64(be.Weight))
		total.Add(total, w)
		if be.Invalid {
			invalid.Add(invalid, w)
			continue
		}
		valid = append(valid, be)
	}
	if len(valid) == 0 || total.Sign() == 0 || invalid.Cmp(total) == 0 {
		// Nothing to send to: 500, as the proxy answers.
		a.FaultInjectionPolicy = abort(500, 100).FaultInjectionPolicy
		a.WeightedBackendServices = nil
		rule.Service = proto.String(b.errorService())
		rule.RouteAction = a
		return
	}
	if invalid.Sign() > 0 {
		pct, _ := new(big.Rat).Quo(new(big.Rat).Mul(invalid, big.NewRat(100, 1)), total).Float64()
		a.FaultInjectionPolicy = abort(500, pct).FaultInjectionPolicy
	}
	shares := providers.ClusterShares(valid)
	ws := make([]*big.Rat, len(shares))
	for i, s := range shares {
		ws[i] = s.Weight
	}
	weights := providers.IntegerWeights(ws, maxWeight)
	for i := range shares {
		s := &shares[i]
		a.WeightedBackendServices = append(a.WeightedBackendServices, &computepb.WeightedBackendService{
			BackendService: proto.String(b.backendService(s)),
			Weight:         proto.Uint32(uint32(weights[i])),
			HeaderAction:   headerAction(s.Backend.Filters.RequestHeaders, s.Backend.Filters.ResponseHeaders),
		})
	}
	rule.RouteAction = a
}

// redirect answers with a URL redirect. A URL map cannot redirect to another port, nor from
// HTTPS to HTTP (httpsRedirect false keeps the request's scheme).
func (b *builder) redirect(rule *computepb.HttpRouteRule, rd *ir.Redirect, v pathVariant) string {
	code, ok := redirectCodes[rd.StatusCode]
	if !ok {
		return "redirect status " + strconv.Itoa(rd.StatusCode) + " is not one a URL map sends"
	}
	u := &computepb.HttpRedirectAction{RedirectResponseCode: proto.String(code), StripQuery: proto.Bool(false)}
	switch rd.Scheme {
	case "https":
		u.HttpsRedirect = proto.Bool(true)
		if rd.Port != 0 && rd.Port != 443 {
			return "a URL map redirect cannot name a port"
		}
	case "http":
		return "a URL map redirect cannot change the scheme to http"
	default:
		if rd.Port != 0 {
			return "a URL map redirect cannot name a port"
		}
	}
	if rd.Hostname != "" {
		u.HostRedirect = proto.String(rd.Hostname)
	}
	if p := rd.Path; p != nil {
		switch {
		case p.Type == ir.ReplaceFullPath:
			u.PathRedirect = proto.String(p.Value)
		case v.prefix == "":
			return "a prefix redirect needs a prefix match"
		case v.exact:
			u.PrefixRedirect = proto.String(p.Value)
		default:
			u.PrefixRedirect = proto.String(withSlash(p.Value))
		}
	}
	rule.UrlRedirect = u
	return ""
}

// redirectCodes are the redirect statuses a URL map sends (HttpRedirectAction.redirectResponseCode).
var redirectCodes = map[int]string{301: "MOVED_PERMANENTLY_DEFAULT", 302: "FOUND", 303: "SEE_OTHER", 307: "TEMPORARY_REDIRECT", 308: "PERMANENT_REDIRECT"}

// rewritePath sets the path rewrite of variant v: a replaced prefix is pathPrefixRewrite, and
// so is a full path on a full path match; any other full path replacement is a regexRewrite of
// the whole path by the literal new path.
func rewritePath(u *computepb.UrlRewrite, p *ir.PathModifier, v pathVariant) string {
	switch {
	case p == nil:
	case v.exact:
		u.PathPrefixRewrite = proto.String(p.Value)
	case p.Type == ir.ReplacePrefixMatch && v.prefix != "":
		u.PathPrefixRewrite = proto.String(withSlash(p.Value))
	case p.Type == ir.ReplaceFullPath:
		u.RegexRewrite = &computepb.RegexRewrite{PathPattern: proto.String(".*"), PathSubstitution: proto.String(p.Value)}
	default:
		return "a prefix rewrite needs a prefix match"
	}
	return ""
}

// withSlash ends a replacement prefix in "/", as the prefix it replaces ("/p/") does.
func withSlash(s string) string {
	if strings.HasSuffix(s, "/") {
		return s
	}
	return s + "/"
}

func headerAction(req, resp *ir.HeaderModifier) *computepb.HttpHeaderAction {
	if req == nil && resp == nil {
		return nil
	}
	h := &computepb.HttpHeaderAction{}
	if req != nil {
		h.RequestHeadersToAdd, h.RequestHeadersToRemove = headerOptions(req), slices.Clone(req.Remove)
	}
	if resp != nil {
		h.ResponseHeadersToAdd, h.ResponseHeadersToRemove = headerOptions(resp), slices.Clone(resp.Remove)
	}
	return h
}

func headerOptions(m *ir.HeaderModifier) []*computepb.HttpHeaderOption {
	var out []*computepb.HttpHeaderOption
	for _, h := range m.Set {
		out = append(out, &computepb.HttpHeaderOption{HeaderName: proto.String(h.Name), HeaderValue: proto.String(h.Value), Replace: proto.Bool(true)})
	}
	for _, h := range m.Add {
		out = append(out, &computepb.HttpHeaderOption{HeaderName: proto.String(h.Name), HeaderValue: proto.String(h.Value), Replace: proto.Bool(false)})
	}
	return out
}

// corsPolicy: exact origins as they are, origins with a "*" wildcard as RE2 expressions.
func corsPolicy(c *ir.CORS) *computepb.CorsPolicy {
	p := &computepb.CorsPolicy{AllowCredentials: proto.Bool(c.AllowCredentials), AllowMethods: slices.Clone(c.AllowMethods),
		AllowHeaders: slices.Clone(c.AllowHeaders), ExposeHeaders: slices.Clone(c.ExposeHeaders)}
	if c.MaxAge > 0 {
		p.MaxAge = proto.Int32(c.MaxAge)
	}
	for _, o := range c.AllowOrigins {
		if o != "*" && strings.Contains(o, "*") {
			p.AllowOriginRegexes = append(p.AllowOriginRegexes, strings.ReplaceAll(regexp.QuoteMeta(o), `\*`, `[^/]*`))
			continue
		}
		p.AllowOrigins = append(p.AllowOrigins, o)
	}
	return p
}

func timeouts(a *computepb.HttpRouteAction, r *ir.Route) {
	t := r.Timeouts
	switch {
	case t.Request > 0:
		a.Timeout = duration(t.Request)
	case t.BackendRequest > 0 && r.Retry == nil:
		// One attempt: the whole request is that attempt.
		a.Timeout = duration(t.BackendRequest)
	}
}

func duration(d time.Duration) *computepb.Duration {
	return &computepb.Duration{Seconds: proto.Int64(int64(d / time.Second)), Nanos: proto.Int32(int32(d % time.Second))}
}

// retry maps the retry codes onto retry conditions: 502, 503 and 504 are "gateway-error",
// any other 5xx needs "5xx" (which retries them all), 409 is "retriable-4xx"; other codes have
// no condition.
func (b *builder) retry(a *computepb.HttpRouteAction, r *ir.Route) string {
	rt := r.Retry
	if rt == nil || rt.Attempts == 0 {
		return ""
	}
	p := &computepb.HttpRetryPolicy{NumRetries: proto.Uint32(uint32(rt.Attempts))}
	var gateway, all5xx, conflict bool
	for _, c := range rt.Codes {
		switch {
		case c == 502 || c == 503 || c == 504:
			gateway = true
		case c >= 500 && c <= 599:
			all5xx = true
		case c == 409:
			conflict = true
		default:
			return "retry on status " + strconv.Itoa(c) + " has no URL map retry condition"
		}
	}
	switch {
	case all5xx:
		p.RetryConditions = append(p.RetryConditions, "5xx")
		b.note("route %s: retries every 5xx status, a URL map cannot pick some", r.Name)
	case gateway:
		p.RetryConditions = append(p.RetryConditions, "gateway-error")
	}
	if conflict {
		p.RetryConditions = append(p.RetryConditions, "retriable-4xx")
	}
	p.RetryConditions = append(p.RetryConditions, "connect-failure")
	if rt.Backoff > 0 {
		b.note("route %s: a URL map retry policy has no backoff", r.Name)
	}
	if r.Timeouts.BackendRequest > 0 {
		p.PerTryTimeout = duration(r.Timeouts.BackendRequest)
	}
	a.RetryPolicy = p
	return ""
}

// stablePriorities renumbers the route rules of want's path matchers keeping, for every rule that
// is also in live (by description: its route and path variant), the priority it has there where
// the order allows (providers.PriorityRange.Assign): a route added or removed moves no other
// rule's priority, so the URL map's diff is the change itself.
func stablePriorities(want, live *computepb.UrlMap) {
	existing := map[string]map[string]int32{}
	for _, pm := range live.GetPathMatchers() {
		byID := map[string]int32{}
		for _, r := range pm.GetRouteRules() {
			byID[r.GetDescription()] = r.GetPriority()
		}
		existing[pm.GetName()] = byID
	}
	for _, pm := range want.GetPathMatchers() {
		ids := make([]string, len(pm.GetRouteRules()))
		for i, r := range pm.GetRouteRules() {
			ids[i] = r.GetDescription()
		}
		prio := priorities.Assign(ids, existing[pm.GetName()])
		for i, r := range pm.GetRouteRules() {
			r.Priority = proto.Int32(prio[ids[i]])
		}
	}
}
