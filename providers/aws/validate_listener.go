package aws

import (
	"regexp"
	"strconv"
	"strings"
)

// listener checks CreateListener: port, protocol for the load balancer type, certificates and
// SSL policy for the protocol, and its default action.
func (v *validator) listener(l *Listener) {
	// CreateListener: DuplicateListener, one listener per port.
	if v.listeners[l.ID] != nil || v.ports[l.Port] {
		v.fail("listener %s: duplicate ID or port %d", l.ID, l.Port)
	}
	v.listeners[l.ID], v.ports[l.Port] = l, true
	lbType := v.s.LoadBalancer.Type
	if len(v.listeners) == maxListenersPerLoadBalancer+1 {
		v.fail("more than %d listeners", maxListenersPerLoadBalancer)
	}
	if l.Port < 1 || l.Port > 65535 {
		v.fail("listener %s: port %d out of 1-65535", l.ID, l.Port)
	}
	if !in(l.Protocol, listenerProtocols(lbType)...) {
		v.fail("listener %s: protocol %s on a %s load balancer: %s", l.ID, l.Protocol, lbType, strings.Join(listenerProtocols(lbType), ", "))
	}
	// CreateListener.Certificates: "[HTTPS and TLS listeners] The default certificate for the
	// listener. You must provide exactly one certificate" — and none for other protocols.
	secure := l.Protocol == protocolHTTPS || l.Protocol == protocolTLS
	switch {
	case secure && len(l.Certificates) == 0:
		v.fail("listener %s: %s needs a certificate", l.ID, l.Protocol)
	case secure && len(l.Certificates) > maxCertificatesPerListener+1:
		v.fail("listener %s: %d certificates, at most %d besides the default", l.ID, len(l.Certificates), maxCertificatesPerListener)
	case !secure && (len(l.Certificates) > 0 || l.SSLPolicy != ""):
		v.fail("listener %s: %s takes no certificate or SSL policy", l.ID, l.Protocol)
	}
	for _, c := range l.Certificates {
		if !strings.HasPrefix(c, "arn:") && !v.certs[c] {
			v.fail("listener %s: certificate %q is neither an ARN nor a certificate of the stack", l.ID, c)
		}
	}
	// A network load balancer's listener can only forward.
	if lbType == TypeNetwork && l.DefaultAction.Forward == nil {
		v.fail("listener %s: a network load balancer listener must forward", l.ID)
	}
	v.action("listener "+l.ID, l, l.DefaultAction)
}

// action checks an action: exactly one kind; forward to 1-5 target groups of the stack with
// weights 0-999 and a protocol the listener can forward to (ForwardActionConfig: "up to 5 target
// groups", TargetGroupTuple.Weight "0-999"); fixed-response codes 2XX/4XX/5XX; redirect codes
// HTTP_301/HTTP_302 (RedirectActionConfig.StatusCode).
func (v *validator) action(where string, l *Listener, a Action) {
	kinds := 0
	for _, set := range []bool{a.Forward != nil, a.Redirect != nil, a.Fixed != nil} {
		if set {
			kinds++
		}
	}
	if kinds != 1 {
		v.fail("%s: an action is exactly one of forward, redirect or fixed-response", where)
		return
	}
	switch {
	case a.Forward != nil:
		v.forward(where, l, a.Forward)
	case a.Fixed != nil:
		if !fixedCodeRE.MatchString(a.Fixed.StatusCode) {
			v.fail("%s: fixed-response code %q: 2XX, 4XX or 5XX", where, a.Fixed.StatusCode)
		}
		if len(a.Fixed.Body) > maxFixedBodyLen {
			v.fail("%s: fixed-response body of %d bytes, at most %d", where, len(a.Fixed.Body), maxFixedBodyLen)
		}
	default:
		v.redirect(where, a.Redirect)
	}
}

func (v *validator) forward(where string, l *Listener, fwd []WeightedTargetGroup) {
	if len(fwd) == 0 || len(fwd) > maxTargetGroupsPerForward {
		v.fail("%s: forward to %d target groups: 1-%d", where, len(fwd), maxTargetGroupsPerForward)
	}
	seen := map[string]bool{}
	for _, w := range fwd {
		if w.Weight < 0 || w.Weight > maxWeight {
			v.fail("%s: weight %d of %s out of 0-%d", where, w.Weight, w.TargetGroup, maxWeight)
		}
		if seen[w.TargetGroup] {
			v.fail("%s: target group %s twice in one forward", where, w.TargetGroup)
		}
		seen[w.TargetGroup] = true
		tg, ok := v.tgs[w.TargetGroup]
		if !ok {
			v.fail("%s: target group %s is not in the stack", where, w.TargetGroup)
			continue
		}
		if !in(tg.Protocol, forwardProtocols(l.Protocol)...) {
			v.fail("%s: a %s listener cannot forward to %s target group %s (IncompatibleProtocols)", where, l.Protocol, tg.Protocol, tg.ID)
		}
		// Target groups: "HTTP2 and gRPC ... supported only with HTTPS listeners".
		if tg.ProtocolVersion == versionGRPC || tg.ProtocolVersion == versionHTTP2 {
			if l.Protocol != protocolHTTPS {
				v.fail("%s: %s target group %s needs an HTTPS listener", where, tg.ProtocolVersion, tg.ID)
			}
		}
	}
}

// redirect checks RedirectActionConfig: Protocol "HTTP, HTTPS, or #{protocol}", Port "1 to 65535
// or #{port}", Path starting with '/' (up to 128 characters), Query not starting with '?'.
func (v *validator) redirect(where string, r *Redirect) {
	if r.StatusCode != "HTTP_301" && r.StatusCode != "HTTP_302" {
		v.fail("%s: redirect code %q: HTTP_301 or HTTP_302", where, r.StatusCode)
	}
	if !in(r.Protocol, protocolHTTP, protocolHTTPS, "#{protocol}") {
		v.fail("%s: redirect protocol %q: HTTP, HTTPS or #{protocol}", where, r.Protocol)
	}
	if r.Port != "#{port}" {
		if p, err := strconv.Atoi(r.Port); err != nil || p < 1 || p > 65535 {
			v.fail("%s: redirect port %q: 1-65535 or #{port}", where, r.Port)
		}
	}
	if !strings.HasPrefix(r.Path, "/") || len(r.Path) > maxConditionValueLen {
		v.fail("%s: redirect path %q: starting with '/', at most %d characters", where, r.Path, maxConditionValueLen)
	}
	if r.Host == "" || len(r.Host) > maxConditionValueLen {
		v.fail("%s: redirect host %q: 1-%d characters", where, r.Host, maxConditionValueLen)
	}
	if strings.HasPrefix(r.Query, "?") || len(r.Query) > maxConditionValueLen {
		v.fail("%s: redirect query %q: no leading '?', at most %d characters", where, r.Query, maxConditionValueLen)
	}
}

func (v *validator) rules() {
	if len(v.s.Rules) > maxRulesPerLoadBalancer {
		v.fail("%d rules, an application load balancer takes %d", len(v.s.Rules), maxRulesPerLoadBalancer)
	}
	seen := map[string]bool{}
	for i := range v.s.Rules {
		r := &v.s.Rules[i]
		where := "rule " + r.ID + " (" + r.Origin + ")"
		if seen[r.ID] {
			v.fail("%s: duplicate rule ID", where)
		}
		seen[r.ID] = true
		l, ok := v.listeners[r.Listener]
		switch {
		case !ok:
			v.fail("%s: listener %s is not in the stack", where, r.Listener)
			continue
		case v.s.LoadBalancer.Type != TypeApplication:
			v.fail("%s: only application load balancers have listener rules", where)
		}
		v.conditions(where, r.Conditions)
		v.action(where, l, r.Action)
	}
}

// conditions checks CreateRule.Conditions: at least one; "zero or one of each of: host-header,
// http-request-method, path-pattern"; at most 3 values per condition, 5 per rule and 5 wildcards
// per rule (a query-string pair counts as one value); each value at most 128 characters of the
// field's alphabet.
func (v *validator) conditions(where string, cs []Condition) {
	if len(cs) == 0 {
		v.fail("%s: a rule needs a condition", where)
	}
	once := map[string]bool{}
	values, wildcards := 0, 0
	for _, c := range cs {
		switch c.Field {
		case fieldHostHeader, fieldPathPattern, fieldMethod:
			if once[c.Field] {
				v.fail("%s: %s twice", where, c.Field)
			}
			once[c.Field] = true
		case fieldHeader:
			if len(c.HeaderName) > maxHeaderNameLen || !headerNameRE.MatchString(c.HeaderName) {
				v.fail("%s: header name %q: a token of at most %d characters", where, c.HeaderName, maxHeaderNameLen)
			}
		case fieldQuery:
		default:
			v.fail("%s: condition field %q", where, c.Field)
		}
		if n := len(c.Values) + len(c.Query); n > maxConditionValuesPerCond {
			v.fail("%s: %s condition with %d values, ALB allows %d per condition", where, c.Field, n, maxConditionValuesPerCond)
		}
		if c.Field == fieldQuery {
			values += len(c.Query)
			if len(c.Query) == 0 {
				v.fail("%s: query-string condition without pairs", where)
			}
			for _, q := range c.Query {
				wildcards += strings.Count(q.Key+q.Value, "*") + strings.Count(q.Key+q.Value, "?")
				if len(q.Key) > maxConditionValueLen || q.Value == "" || len(q.Value) > maxConditionValueLen {
					v.fail("%s: query-string %q=%q: key up to %d characters, value 1-%d", where, q.Key, q.Value, maxConditionValueLen, maxConditionValueLen)
				}
			}
			continue
		}
		values += len(c.Values)
		if len(c.Values) == 0 {
			v.fail("%s: %s condition without values", where, c.Field)
		}
		for _, val := range c.Values {
			wildcards += strings.Count(val, "*") + strings.Count(val, "?")
			v.conditionValue(where, c.Field, val)
		}
	}
	if values > maxConditionValues {
		v.fail("%s: %d condition values, ALB allows %d per rule", where, values, maxConditionValues)
	}
	if wildcards > maxConditionWildcards {
		v.fail("%s: %d condition wildcards, ALB allows %d per rule", where, wildcards, maxConditionWildcards)
	}
}

func (v *validator) conditionValue(where, field, val string) {
	if val == "" || len(val) > maxConditionValueLen {
		v.fail("%s: %s value %q: 1-%d characters", where, field, val, maxConditionValueLen)
		return
	}
	var re *regexp.Regexp
	switch field {
	case fieldHostHeader:
		re = hostValueRE
	case fieldPathPattern:
		re = pathValueRE
	case fieldMethod:
		if len(val) > maxMethodLen {
			v.fail("%s: method %q: at most %d characters", where, val, maxMethodLen)
		}
		re = methodRE
	default:
		return
	}
	if !re.MatchString(val) {
		v.fail("%s: %s value %q has characters ALB does not accept", where, field, val)
	}
}
