package aws

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// Condition fields, as ELBv2 spells them.
const (
	fieldHostHeader  = "host-header"
	fieldPathPattern = "path-pattern"
	fieldMethod      = "http-request-method"
	fieldHeader      = "http-header"
	fieldQuery       = "query-string"
	// albWildcards are the characters ALB conditions read as wildcards: a value holding one
	// cannot be matched exactly.
	albWildcards     = "*?"
	anyHost          = "*"
	grpcRoutePrefix  = "GRPCRoute/"
	fixedContentType = "text/plain"
)

// applicationRules appends the rules of one HTTP(S) listener: one per (virtual host, route), in
// ALB precedence order (exact hostnames, then wildcards by longest suffix, then any host; within
// a host the translation's route order, which is Gateway API precedence).
func (b *builder) applicationRules(s *Stack, l *ir.Listener, listenerID string) error {
	hosts := slices.Clone(l.VirtualHosts)
	slices.SortStableFunc(hosts, func(x, y ir.VirtualHost) int {
		return cmp.Or(cmp.Compare(hostRank(x.Hostname), hostRank(y.Hostname)), cmp.Compare(len(y.Hostname), len(x.Hostname)), cmp.Compare(x.Hostname, y.Hostname))
	})
	for _, vh := range hosts {
		if vh.SingleLabelWildcard && strings.HasPrefix(vh.Hostname, "*.") {
			b.note("host %s: ALB wildcards match one or more labels, Ingress asks for exactly one", vh.Hostname)
		}
		for i := range vh.Routes {
			r := &vh.Routes[i]
			rule, err := b.rule(l, listenerID, vh.Hostname, r)
			if err != nil {
				return fmt.Errorf("listener %d: route %s: %w", l.Port, r.Name, err)
			}
			s.Rules = append(s.Rules, rule)
		}
	}
	return nil
}

// hostRank orders exact hostnames before wildcards before "*".
func hostRank(h string) int {
	switch {
	case h == anyHost:
		return 2
	case strings.HasPrefix(h, "*"):
		return 1
	}
	return 0
}

func (b *builder) rule(l *ir.Listener, listenerID, host string, r *ir.Route) (Rule, error) {
	conds, err := conditions(host, r.Match)
	if err != nil {
		return Rule{}, err
	}
	if err := checkExpressible(r); err != nil {
		return Rule{}, err
	}
	if caseMatters(r.Match) {
		b.note("route %s: ALB compares header and query parameter values ignoring case", r.Name)
	}
	a, err := b.routeAction(r)
	if err != nil {
		return Rule{}, err
	}
	return Rule{
		ID:         ruleID(l.Port, host, r.Name),
		Listener:   listenerID,
		Origin:     r.Name,
		Conditions: conds,
		Action:     a,
	}, nil
}

// ruleID hashes what identifies a rule in its gateway, so that other routes do not change it.
func ruleID(port uint32, host, route string) string {
	return "rule/" + shortHash(12, strconv.Itoa(int(port)), host, route)
}

// conditions are the ALB conditions of a route on host. A rule needs one condition at least, so
// a route matching everything gets path-pattern "/*".
func conditions(host string, m ir.Match) ([]Condition, error) {
	var out []Condition
	if host != anyHost {
		out = append(out, Condition{Field: fieldHostHeader, Values: []string{host}})
	}
	if p := m.Path; p != nil {
		values, err := pathValues(p)
		if err != nil {
			return nil, err
		}
		if values != nil {
			out = append(out, Condition{Field: fieldPathPattern, Values: values})
		}
	}
	if m.Method != "" {
		out = append(out, Condition{Field: fieldMethod, Values: []string{m.Method}})
	}
	for _, h := range m.Headers {
		if err := exactValue("header "+h.Name, h.Type, h.Value); err != nil {
			return nil, err
		}
		out = append(out, Condition{Field: fieldHeader, HeaderName: h.Name, Values: []string{h.Value}})
	}
	// One condition per query parameter: values within one condition are alternatives (OR),
	// conditions are all required (AND), as the route's matches are.
	for _, q := range m.QueryParams {
		if err := exactValue("query parameter "+q.Name, q.Type, q.Value); err != nil {
			return nil, err
		}
		if strings.ContainsAny(q.Name, albWildcards) {
			return nil, fmt.Errorf("query parameter name %q holds an ALB wildcard (* or ?): %w", q.Name, errUnsupported)
		}
		out = append(out, Condition{Field: fieldQuery, Query: []KeyValue{{Key: q.Name, Value: q.Value}}})
	}
	if len(out) == 0 {
		out = append(out, Condition{Field: fieldPathPattern, Values: []string{"/*"}})
	}
	return out, nil
}

// caseMatters tells whether a header or query value has letters, whose case ALB ignores
// (HttpHeaderConditionConfig, QueryStringConditionConfig: "The comparison strings are case
// insensitive") while Gateway API compares them exactly.
func caseMatters(m ir.Match) bool {
	for _, kms := range [][]ir.KeyMatch{m.Headers, m.QueryParams} {
		for _, km := range kms {
			if strings.ToLower(km.Value) != strings.ToUpper(km.Value) {
				return true
			}
		}
	}
	return false
}

// pathValues are the path-pattern values of a path match: Exact is the path; Prefix "/p" is "/p"
// and "/p/*" (by segment, as Gateway API asks, never "/pq"); Prefix "/" matches everything and
// needs no condition.
func pathValues(p *ir.StringMatch) ([]string, error) {
	if p.Type != ir.MatchExact && p.Type != ir.MatchPrefix {
		return nil, fmt.Errorf("path match type %s: %w", p.Type, errUnsupported)
	}
	if strings.ContainsAny(p.Value, albWildcards) {
		return nil, fmt.Errorf("path %q holds an ALB wildcard (* or ?) and cannot be matched exactly: %w", p.Value, errUnsupported)
	}
	if p.Type == ir.MatchExact {
		return []string{p.Value}, nil
	}
	prefix := strings.TrimRight(p.Value, "/")
	if prefix == "" {
		return nil, nil
	}
	return []string{prefix, prefix + "/*"}, nil
}

func exactValue(what string, t ir.MatchType, v string) error {
	if t != ir.MatchExact {
		return fmt.Errorf("%s: match type %s: %w", what, t, errUnsupported)
	}
	if strings.ContainsAny(v, albWildcards) {
		return fmt.Errorf("%s: value %q holds an ALB wildcard (* or ?) and cannot be matched exactly: %w", what, v, errUnsupported)
	}
	return nil
}

// checkExpressible refuses what an ALB rule cannot do: everything but a redirect among the filters,
// timeouts and retries.
func checkExpressible(r *ir.Route) error {
	f := r.Filters
	var unsupported []string
	if f.RequestHeaders != nil {
		unsupported = append(unsupported, "request header modifier")
	}
	if f.ResponseHeaders != nil {
		unsupported = append(unsupported, "response header modifier")
	}
	if f.Rewrite != nil {
		unsupported = append(unsupported, "URL rewrite")
	}
	if len(f.Mirrors) > 0 {
		unsupported = append(unsupported, "request mirror")
	}
	if f.CORS != nil {
		unsupported = append(unsupported, "CORS")
	}
	if r.Timeouts != (ir.Timeouts{}) {
		unsupported = append(unsupported, "timeouts")
	}
	if r.Retry != nil {
		unsupported = append(unsupported, "retry")
	}
	for _, be := range r.Backends {
		if be.Filters.RequestHeaders != nil || be.Filters.ResponseHeaders != nil {
			unsupported = append(unsupported, "backend "+be.Name+" header modifier")
		}
	}
	if len(unsupported) > 0 {
		return fmt.Errorf("%s: %w", strings.Join(unsupported, ", "), errUnsupported)
	}
	return nil
}

// routeAction is the redirect, else a forward to the valid backends, else a 500 as the Gateway
// API asks of a route without a usable backend.
func (b *builder) routeAction(r *ir.Route) (Action, error) {
	if rd := r.Filters.Redirect; rd != nil {
		return redirectAction(rd, r.Match.Path)
	}
	var valid []ir.Backend
	var invalid uint32
	for _, be := range r.Backends {
		switch {
		case be.Invalid:
			invalid += be.Weight
		case be.Weight > 0:
			valid = append(valid, be)
		}
	}
	if len(valid) == 0 {
		return fixed("500"), nil
	}
	if invalid > 0 {
		b.note("route %s: ALB cannot answer 500 for a share of requests, so the share of its invalid backends goes to the valid ones", r.Name)
	}
	grpc := strings.HasPrefix(r.Name, grpcRoutePrefix)
	version := func(be *ir.Backend) string {
		switch {
		case grpc:
			return versionGRPC
		case be.AppProtocol == ir.AppH2C:
			return versionHTTP2
		}
		return versionHTTP1
	}
	// One target group protocol per rule: a forward's target groups must share it.
	protocol := protocolHTTP
	for _, be := range valid {
		if be.AppProtocol == ir.AppTLS {
			protocol = protocolHTTPS
		}
	}
	if protocol == protocolHTTPS {
		for _, be := range valid {
			if be.AppProtocol != ir.AppTLS {
				return Action{}, fmt.Errorf("backends mix TLS and plain text, one ALB forward takes one target group protocol: %w", errUnsupported)
			}
		}
	}
	return b.forward(r.Name, valid, protocol, version)
}

func fixed(code string) Action {
	return Action{Fixed: &FixedResponse{StatusCode: code, ContentType: fixedContentType}}
}

// redirectAction maps a Gateway API redirect to ELBv2's, whose unset parts are "#{…}" keywords
// keeping the request's. A prefix replacement is expressible only for the prefix "/".
func redirectAction(rd *ir.Redirect, path *ir.StringMatch) (Action, error) {
	r := &Redirect{Protocol: "#{protocol}", Host: "#{host}", Port: "#{port}", Path: "/#{path}", Query: "#{query}"}
	switch rd.StatusCode {
	case 301, 302:
		r.StatusCode = "HTTP_" + strconv.Itoa(rd.StatusCode)
	default:
		return Action{}, fmt.Errorf("redirect status %d: ALB redirects with 301 or 302 only: %w", rd.StatusCode, errUnsupported)
	}
	if rd.Scheme != "" {
		r.Protocol = strings.ToUpper(rd.Scheme)
	}
	if rd.Hostname != "" {
		r.Host = rd.Hostname
	}
	if rd.Port != 0 {
		r.Port = strconv.Itoa(int(rd.Port))
	}
	if pm := rd.Path; pm != nil {
		switch {
		case pm.Type == ir.ReplaceFullPath:
			r.Path = pm.Value
		case path == nil || path.Type == ir.MatchPrefix && strings.TrimRight(path.Value, "/") == "":
			r.Path = strings.TrimRight(pm.Value, "/") + "/#{path}"
		default:
			return Action{}, fmt.Errorf("redirect replacing the prefix %q: ALB can only redirect to the whole path: %w", path.Value, errUnsupported)
		}
	}
	return Action{Redirect: r}, nil
}
