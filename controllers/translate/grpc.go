package translate

import (
	"fmt"
	"regexp"
	"strings"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/fleetgate/fleetgate/controllers/snapshot"
	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// compileGRPCRoute compiles a GRPCRoute: a method match becomes a path match on
// "/<service>/<method>", the way gRPC maps calls onto HTTP/2.
func (t *translator) compileGRPCRoute(o snapshot.Object[gwv1.GRPCRoute]) *route {
	gr := o.Obj
	r := newRoute(kindGRPCRoute, o, gr.Spec.CommonRouteSpec, gr.Spec.Hostnames, true)
	for i, rule := range gr.Spec.Rules {
		r.rules++
		t.compileGRPCRule(r, i, rule)
	}
	return r
}

func (t *translator) compileGRPCRule(r *route, i int, rule gwv1.GRPCRouteRule) {
	matches := rule.Matches
	if len(matches) == 0 {
		matches = []gwv1.GRPCRouteMatch{{}}
	}
	var irMatches []ir.Match
	var precs []precedence
	for _, m := range matches {
		im, p, err := grpcMatch(m)
		if err != nil {
			r.ruleInvalid(i, gwv1.RouteReasonUnsupportedValue, err.Error())
			return
		}
		irMatches, precs = append(irMatches, im), append(precs, p)
	}
	f, reason, err := t.grpcFilters(r, rule.Filters)
	if err != nil {
		r.ruleInvalid(i, reason, err.Error())
		return
	}
	var backends []ir.Backend
	for _, br := range rule.BackendRefs {
		b := t.resolveBackend(r, br.BackendObjectReference, br.Weight, useGRPC)
		bf, reason, err := t.grpcFilters(r, br.Filters)
		if err != nil {
			r.ruleInvalid(i, reason, "backendRef filters: "+err.Error())
			return
		}
		if len(bf.Mirrors) > 0 || bf.extension {
			r.ruleInvalid(i, gwv1.RouteReasonUnsupportedValue, "backendRef filters support only header modifiers")
			return
		}
		b.Filters = bf.Filters
		backends = append(backends, b)
	}
	backends = backendList(backends)
	if f.extension {
		backends = nil
	}
	for j, m := range irMatches {
		p := precs[j]
		p.created, p.name, p.cluster, p.rule, p.match = r.meta.GetCreationTimestamp(), r.name(), r.cluster, i, j
		r.matches = append(r.matches, compiledMatch{
			ir:   ir.Route{Name: fmt.Sprintf("%s/%s/%d/%d", r.kind, r.name(), i, j), Match: m, Filters: f.Filters, Backends: backends},
			prec: p,
		})
	}
}

func grpcMatch(m gwv1.GRPCRouteMatch) (ir.Match, precedence, error) {
	im := ir.Match{Path: &ir.StringMatch{Type: ir.MatchPrefix, Value: "/"}}
	p := precedence{grpc: true}
	if mm := m.Method; mm != nil {
		typ := gwv1.GRPCMethodMatchExact
		if mm.Type != nil && *mm.Type != "" {
			typ = *mm.Type
		}
		svc, method := ptrStr(mm.Service), ptrStr(mm.Method)
		if svc == "" && method == "" {
			return im, p, fmt.Errorf("method match needs a service or a method")
		}
		p.serviceLen, p.methodLen = len(svc), len(method)
		switch typ {
		case gwv1.GRPCMethodMatchExact:
			if strings.Contains(svc, "/") || strings.Contains(method, "/") {
				return im, p, fmt.Errorf("exact service and method must not contain /")
			}
			switch {
			case svc != "" && method != "":
				im.Path = &ir.StringMatch{Type: ir.MatchExact, Value: "/" + svc + "/" + method}
			case svc != "":
				im.Path = &ir.StringMatch{Type: ir.MatchPrefix, Value: "/" + svc}
			default:
				im.Path = &ir.StringMatch{Type: ir.MatchRegex, Value: "/[^/]+/" + regexp.QuoteMeta(method)}
			}
		case gwv1.GRPCMethodMatchRegularExpression:
			svcRE, methodRE := "[^/]+", "[^/]+"
			if svc != "" {
				svcRE = svc
			}
			if method != "" {
				methodRE = method
			}
			for _, re := range []string{svcRE, methodRE} {
				if _, err := regexp.Compile(re); err != nil {
					return im, p, fmt.Errorf("method match regex: %w", err)
				}
			}
			im.Path = &ir.StringMatch{Type: ir.MatchRegex, Value: "/(" + svcRE + ")/(" + methodRE + ")"}
		default:
			return im, p, fmt.Errorf("method match type %q is not supported", typ)
		}
	}
	seen := map[string]bool{}
	for _, h := range m.Headers {
		if seen[strings.ToLower(string(h.Name))] {
			continue
		}
		seen[strings.ToLower(string(h.Name))] = true
		k, err := keyMatch("header", string(h.Name), (*string)(h.Type), h.Value)
		if err != nil {
			return im, p, err
		}
		im.Headers = append(im.Headers, k)
	}
	p.headers = len(im.Headers)
	return im, p, nil
}

func (t *translator) grpcFilters(r *route, fs []gwv1.GRPCRouteFilter) (filters, gwv1.RouteConditionReason, error) {
	// GRPCRoute filters are a subset of HTTPRoute filters with the same payloads.
	hfs := make([]gwv1.HTTPRouteFilter, 0, len(fs))
	for _, f := range fs {
		switch f.Type {
		case gwv1.GRPCRouteFilterRequestHeaderModifier, gwv1.GRPCRouteFilterResponseHeaderModifier,
			gwv1.GRPCRouteFilterRequestMirror, gwv1.GRPCRouteFilterExtensionRef:
		default:
			return filters{}, gwv1.RouteReasonUnsupportedValue, fmt.Errorf("filter type %q is not supported", f.Type)
		}
		hfs = append(hfs, gwv1.HTTPRouteFilter{
			Type:                   gwv1.HTTPRouteFilterType(f.Type),
			RequestHeaderModifier:  f.RequestHeaderModifier,
			ResponseHeaderModifier: f.ResponseHeaderModifier,
			RequestMirror:          f.RequestMirror,
			ExtensionRef:           f.ExtensionRef,
		})
	}
	return t.httpFilters(r, hfs, false)
}
