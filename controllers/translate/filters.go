package translate

import (
	"fmt"
	"strings"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// filters is ir.Filters plus what the IR cannot express.
type filters struct {
	ir.Filters
	// extension is set when an ExtensionRef filter is present: fleetgate supports none, and the
	// spec forbids skipping it, so the rule answers 500.
	extension bool
}

// httpFilters compiles HTTPRoute filters. allPrefix says whether every match of the rule is a
// PathPrefix match, which ReplacePrefixMatch needs; at is the field path of fs, for messages.
func (t *translator) httpFilters(r *route, fs []gwv1.HTTPRouteFilter, allPrefix bool, at string) (filters, gwv1.RouteConditionReason, error) {
	var out filters
	unsupported := func(format string, args ...any) (filters, gwv1.RouteConditionReason, error) {
		return filters{}, gwv1.RouteReasonUnsupportedValue, fmt.Errorf(format, args...)
	}
	for i, f := range fs {
		switch f.Type {
		case gwv1.HTTPRouteFilterRequestHeaderModifier:
			if f.RequestHeaderModifier == nil || out.RequestHeaders != nil {
				return unsupported("RequestHeaderModifier filter is empty or repeated")
			}
			m, err := headerModifier(f.RequestHeaderModifier, fmt.Sprintf("%s[%d].requestHeaderModifier", at, i))
			if err != nil {
				return filters{}, gwv1.RouteReasonUnsupportedValue, err
			}
			out.RequestHeaders = m
		case gwv1.HTTPRouteFilterResponseHeaderModifier:
			if f.ResponseHeaderModifier == nil || out.ResponseHeaders != nil {
				return unsupported("ResponseHeaderModifier filter is empty or repeated")
			}
			m, err := headerModifier(f.ResponseHeaderModifier, fmt.Sprintf("%s[%d].responseHeaderModifier", at, i))
			if err != nil {
				return filters{}, gwv1.RouteReasonUnsupportedValue, err
			}
			out.ResponseHeaders = m
		case gwv1.HTTPRouteFilterRequestRedirect:
			if f.RequestRedirect == nil || out.Redirect != nil {
				return unsupported("RequestRedirect filter is empty or repeated")
			}
			rd, err := redirect(f.RequestRedirect, allPrefix)
			if err != nil {
				return filters{}, gwv1.RouteReasonUnsupportedValue, err
			}
			if strings.ContainsAny(rd.Hostname, " \t") || !ir.ValidHeaderValue(rd.Hostname) {
				return unsupported("%s[%d].requestRedirect.hostname: %q is not a hostname", at, i, rd.Hostname)
			}
			out.Redirect = rd
		case gwv1.HTTPRouteFilterURLRewrite:
			if f.URLRewrite == nil || out.Rewrite != nil {
				return unsupported("URLRewrite filter is empty or repeated")
			}
			rw := &ir.Rewrite{Hostname: ptrStr(f.URLRewrite.Hostname)}
			if strings.ContainsAny(rw.Hostname, " \t") || !ir.ValidHeaderValue(rw.Hostname) {
				return unsupported("%s[%d].urlRewrite.hostname: %q is not a hostname", at, i, rw.Hostname)
			}
			pm, err := pathModifier(f.URLRewrite.Path, allPrefix)
			if err != nil {
				return filters{}, gwv1.RouteReasonUnsupportedValue, fmt.Errorf("URLRewrite: %w", err)
			}
			rw.Path = pm
			out.Rewrite = rw
		case gwv1.HTTPRouteFilterRequestMirror:
			if f.RequestMirror == nil {
				return unsupported("RequestMirror filter is empty")
			}
			m, ok, err := t.mirror(r, f.RequestMirror)
			if err != nil {
				return filters{}, gwv1.RouteReasonUnsupportedValue, err
			}
			if ok {
				out.Mirrors = append(out.Mirrors, m)
			}
		case gwv1.HTTPRouteFilterCORS:
			if f.CORS == nil || out.CORS != nil {
				return unsupported("CORS filter is empty or repeated")
			}
			c := cors(f.CORS)
			if err := checkCORS(c, fmt.Sprintf("%s[%d].cors", at, i)); err != nil {
				return filters{}, gwv1.RouteReasonUnsupportedValue, err
			}
			out.CORS = c
		case gwv1.HTTPRouteFilterExtensionRef:
			out.extension = true
			ref := "<missing>"
			if f.ExtensionRef != nil {
				ref = fmt.Sprintf("%s/%s %s", f.ExtensionRef.Group, f.ExtensionRef.Kind, f.ExtensionRef.Name)
			}
			r.refFailed(gwv1.RouteReasonInvalidKind, fmt.Sprintf("ExtensionRef filter %s is not supported", ref))
		default:
			return unsupported("filter type %q is not supported", f.Type)
		}
	}
	if out.Redirect != nil && out.Rewrite != nil {
		return filters{}, gwv1.RouteReasonIncompatibleFilters, fmt.Errorf("RequestRedirect and URLRewrite cannot be combined")
	}
	return out, "", nil
}

// headerModifier compiles a header filter at field path at. The standard-channel CRD leaves values
// unchecked, and a value with CR or LF would add headers of its own upstream or split the response;
// framing and hop-by-hop headers belong to the proxy.
func headerModifier(h *gwv1.HTTPHeaderFilter, at string) (*ir.HeaderModifier, error) {
	m := &ir.HeaderModifier{}
	check := func(field string, name, value string) error {
		switch {
		case !ir.ValidHeaderName(name):
			return fmt.Errorf("%s.name: header name %q is not an RFC 9110 token", field, name)
		case strings.EqualFold(name, "Host"):
			return fmt.Errorf("%s.name: the Host header changes only through a URLRewrite hostname", field)
		case ir.ReservedHeader(name):
			return fmt.Errorf("%s.name: header %q is a framing or hop-by-hop header, managed by the proxy: it cannot be modified", field, name)
		case !ir.ValidHeaderValue(value):
			return fmt.Errorf("%s.value: value of header %q holds CR, LF, NUL or another control character", field, name)
		}
		return nil
	}
	for i, s := range h.Set {
		if err := check(fmt.Sprintf("%s.set[%d]", at, i), string(s.Name), s.Value); err != nil {
			return nil, err
		}
		m.Set = append(m.Set, ir.Header{Name: string(s.Name), Value: s.Value})
	}
	for i, a := range h.Add {
		if err := check(fmt.Sprintf("%s.add[%d]", at, i), string(a.Name), a.Value); err != nil {
			return nil, err
		}
		m.Add = append(m.Add, ir.Header{Name: string(a.Name), Value: a.Value})
	}
	for i, name := range h.Remove {
		field := fmt.Sprintf("%s.remove[%d]", at, i)
		if err := check(field, name, ""); err != nil {
			return nil, err
		}
		m.Remove = append(m.Remove, name)
	}
	return m, nil
}

func redirect(f *gwv1.HTTPRequestRedirectFilter, allPrefix bool) (*ir.Redirect, error) {
	rd := &ir.Redirect{Scheme: ptrStr(f.Scheme), Hostname: ptrStr(f.Hostname), StatusCode: 302}
	switch rd.Scheme {
	case "", "http", "https":
	default:
		return nil, fmt.Errorf("redirect scheme %q is not supported", rd.Scheme)
	}
	if f.StatusCode != nil {
		rd.StatusCode = *f.StatusCode
	}
	switch rd.StatusCode {
	case 301, 302, 303, 307, 308:
	default:
		return nil, fmt.Errorf("redirect status code %d is not supported", rd.StatusCode)
	}
	if f.Port != nil {
		if *f.Port < 1 || *f.Port > 65535 {
			return nil, fmt.Errorf("redirect port %d is out of range", *f.Port)
		}
		rd.Port = uint32(*f.Port)
	}
	pm, err := pathModifier(f.Path, allPrefix)
	if err != nil {
		return nil, fmt.Errorf("RequestRedirect: %w", err)
	}
	rd.Path = pm
	return rd, nil
}

// redirectPort fills the port the spec derives when the filter sets none: the well-known port of
// an explicit scheme, else the listener's port.
func redirectPort(rd *ir.Redirect, listenerPort int32) *ir.Redirect {
	if rd == nil || rd.Port != 0 {
		return rd
	}
	out := *rd
	switch rd.Scheme {
	case "http":
		out.Port = 80
	case "https":
		out.Port = 443
	default:
		out.Port = uint32(listenerPort)
	}
	return &out
}

func pathModifier(p *gwv1.HTTPPathModifier, allPrefix bool) (*ir.PathModifier, error) {
	if p == nil {
		return nil, nil
	}
	switch p.Type {
	case gwv1.FullPathHTTPPathModifier:
		if p.ReplaceFullPath == nil {
			return nil, fmt.Errorf("ReplaceFullPath without a value")
		}
		return &ir.PathModifier{Type: ir.ReplaceFullPath, Value: *p.ReplaceFullPath}, nil
	case gwv1.PrefixMatchHTTPPathModifier:
		if p.ReplacePrefixMatch == nil {
			return nil, fmt.Errorf("ReplacePrefixMatch without a value")
		}
		if !allPrefix {
			return nil, fmt.Errorf("ReplacePrefixMatch needs PathPrefix matches only")
		}
		return &ir.PathModifier{Type: ir.ReplacePrefixMatch, Value: *p.ReplacePrefixMatch}, nil
	}
	return nil, fmt.Errorf("path modifier type %q is not supported", p.Type)
}

// mirror resolves a RequestMirror filter. An unresolvable backend drops the mirror (ok false) and
// is reported through ResolvedRefs; a bad fraction invalidates the rule.
func (t *translator) mirror(r *route, f *gwv1.HTTPRequestMirrorFilter) (ir.Mirror, bool, error) {
	var m ir.Mirror
	switch {
	case f.Percent != nil && f.Fraction != nil:
		return m, false, fmt.Errorf("RequestMirror sets both percent and fraction")
	case f.Percent != nil:
		if *f.Percent < 0 || *f.Percent > 100 {
			return m, false, fmt.Errorf("RequestMirror percent %d is outside 0-100", *f.Percent)
		}
		m.Numerator, m.Denominator = *f.Percent, 100
	case f.Fraction != nil:
		d := int32(100)
		if f.Fraction.Denominator != nil {
			d = *f.Fraction.Denominator
		}
		if d < 1 || f.Fraction.Numerator < 0 || f.Fraction.Numerator > d {
			return m, false, fmt.Errorf("RequestMirror fraction %d/%d is invalid", f.Fraction.Numerator, d)
		}
		m.Numerator, m.Denominator = f.Fraction.Numerator, d
	}
	u := useHTTP
	if r.kind == kindGRPCRoute {
		u = useGRPC
	}
	m.Backend = t.resolveBackend(r, f.BackendRef, nil, u)
	if m.Backend.Invalid {
		return m, false, nil
	}
	return m, true, nil
}

// checkCORS refuses CORS values that could not go into response headers as they are (the CRD's
// patterns normally keep them out; an ir.Validate refusal would NACK the whole gateway).
func checkCORS(c *ir.CORS, at string) error {
	for _, f := range []struct {
		name string
		list []string
	}{{"allowMethods", c.AllowMethods}, {"allowHeaders", c.AllowHeaders}, {"exposeHeaders", c.ExposeHeaders}} {
		for i, h := range f.list {
			if h != "*" && !ir.ValidHeaderName(h) {
				return fmt.Errorf("%s.%s[%d]: %q is not an RFC 9110 token", at, f.name, i, h)
			}
		}
	}
	for i, o := range c.AllowOrigins {
		if strings.ContainsAny(o, " \t") || !ir.ValidHeaderValue(o) {
			return fmt.Errorf("%s.allowOrigins[%d]: %q holds spaces or control characters", at, i, o)
		}
	}
	return nil
}

func cors(f *gwv1.HTTPCORSFilter) *ir.CORS {
	c := &ir.CORS{MaxAge: f.MaxAge}
	if f.AllowCredentials != nil {
		c.AllowCredentials = *f.AllowCredentials
	}
	for _, o := range f.AllowOrigins {
		c.AllowOrigins = append(c.AllowOrigins, string(o))
	}
	for _, m := range f.AllowMethods {
		c.AllowMethods = append(c.AllowMethods, string(m))
	}
	for _, h := range f.AllowHeaders {
		c.AllowHeaders = append(c.AllowHeaders, string(h))
	}
	for _, h := range f.ExposeHeaders {
		c.ExposeHeaders = append(c.ExposeHeaders, string(h))
	}
	return c
}
