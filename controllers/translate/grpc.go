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
	r.specRules = grpcRules(gr.Spec.Rules)
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
	var insts []regexSize
	for j, m := range matches {
		im, p, n, err := grpcMatch(m, fmt.Sprintf("spec.rules[%d].matches[%d]", i, j))
		if err != nil {
			r.ruleInvalid(i, gwv1.RouteReasonUnsupportedValue, err.Error())
			return
		}
		irMatches, precs, insts = append(irMatches, im), append(precs, p), append(insts, n)
	}
	f, reason, err := t.grpcFilters(r, rule.Filters, fmt.Sprintf("spec.rules[%d].filters", i))
	if err != nil {
		r.ruleInvalid(i, reason, err.Error())
		return
	}
	var backends []ir.Backend
	for k, br := range rule.BackendRefs {
		b := t.resolveBackend(r, br.BackendObjectReference, br.Weight, useGRPC)
		bf, reason, err := t.grpcFilters(r, br.Filters, fmt.Sprintf("spec.rules[%d].backendRefs[%d].filters", i, k))
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
			ir:         ir.Route{Name: fmt.Sprintf("%s/%s/%d/%d", r.kind, r.name(), i, j), Match: m, Filters: f.Filters, Backends: backends},
			prec:       p,
			regexInsts: insts[j],
		})
	}
}

// grpcMatch compiles one match at field path at; insts is the size of its largest regex program.
func grpcMatch(m gwv1.GRPCRouteMatch, at string) (im ir.Match, p precedence, insts regexSize, err error) {
	im = ir.Match{Path: &ir.StringMatch{Type: ir.MatchPrefix, Value: "/"}}
	p = precedence{grpc: true}
	if mm := m.Method; mm != nil {
		typ := gwv1.GRPCMethodMatchExact
		if mm.Type != nil && *mm.Type != "" {
			typ = *mm.Type
		}
		svc, method := ptrStr(mm.Service), ptrStr(mm.Method)
		if svc == "" && method == "" {
			return im, p, regexSize{}, fmt.Errorf("method match needs a service or a method")
		}
		p.serviceLen, p.methodLen = len(svc), len(method)
		switch typ {
		case gwv1.GRPCMethodMatchExact:
			if strings.Contains(svc, "/") || strings.Contains(method, "/") {
				return im, p, regexSize{}, fmt.Errorf("exact service and method must not contain /")
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
				if _, err := measureRegex(re); err != nil {
					return im, p, regexSize{}, fmt.Errorf("%s.method: %w", at, err)
				}
			}
			expr := "/(" + svcRE + ")/(" + methodRE + ")"
			if insts, err = measureRegex(expr); err != nil {
				return im, p, regexSize{}, fmt.Errorf("%s.method: %w", at, err)
			}
			im.Path = &ir.StringMatch{Type: ir.MatchRegex, Value: expr}
		default:
			return im, p, regexSize{}, fmt.Errorf("method match type %q is not supported", typ)
		}
	}
	hs := make([]gwv1.HTTPHeaderMatch, len(m.Headers))
	for k, h := range m.Headers {
		hs[k] = gwv1.HTTPHeaderMatch{Type: (*gwv1.HeaderMatchType)(h.Type), Name: gwv1.HTTPHeaderName(h.Name), Value: h.Value}
	}
	if im.Headers, insts, err = headerMatches(hs, at, insts); err != nil {
		return im, p, regexSize{}, err
	}
	p.headers = len(im.Headers)
	return im, p, insts, nil
}

func (t *translator) grpcFilters(r *route, fs []gwv1.GRPCRouteFilter, at string) (filters, gwv1.RouteConditionReason, error) {
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
	return t.httpFilters(r, hfs, false, at)
}
