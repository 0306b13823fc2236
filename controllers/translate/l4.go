package translate

import (
	"fmt"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/fleetgate/fleetgate/controllers/snapshot"
	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// compileL4 compiles the single rule of a TLSRoute, TCPRoute or UDPRoute: weighted backends that
// are rejected (connections refused) in proportion to their invalid share.
func (t *translator) compileL4(r *route, rules [][]gwv1.BackendRef, u use) *route {
	r.specRules = l4Rules(rules)
	for i, refs := range rules {
		r.rules++
		if i > 0 {
			// The CRDs allow one rule; extra rules cannot be told apart without matches.
			r.ruleInvalid(i, gwv1.RouteReasonUnsupportedValue, fmt.Sprintf("only one rule is supported on a %s", r.kind))
			continue
		}
		var bs []ir.Backend
		for _, ref := range refs {
			bs = append(bs, t.resolveBackend(r, ref.BackendObjectReference, ref.Weight, u))
		}
		r.l4 = backendList(bs)
	}
	return r
}

func (t *translator) compileTLSRoute(o snapshot.Object[gwv1.TLSRoute]) *route {
	r := newRoute(kindTLSRoute, o, o.Obj.Spec.CommonRouteSpec, o.Obj.Spec.Hostnames, true)
	var rules [][]gwv1.BackendRef
	for _, rule := range o.Obj.Spec.Rules {
		rules = append(rules, rule.BackendRefs)
	}
	return t.compileL4(r, rules, useTCP)
}

func (t *translator) compileTCPRoute(o snapshot.Object[gwv1.TCPRoute]) *route {
	r := newRoute(kindTCPRoute, o, o.Obj.Spec.CommonRouteSpec, nil, false)
	var rules [][]gwv1.BackendRef
	for _, rule := range o.Obj.Spec.Rules {
		rules = append(rules, rule.BackendRefs)
	}
	return t.compileL4(r, rules, useTCP)
}

func (t *translator) compileUDPRoute(o snapshot.Object[gwv1.UDPRoute]) *route {
	r := newRoute(kindUDPRoute, o, o.Obj.Spec.CommonRouteSpec, nil, false)
	var rules [][]gwv1.BackendRef
	for _, rule := range o.Obj.Spec.Rules {
		rules = append(rules, rule.BackendRefs)
	}
	return t.compileL4(r, rules, useUDP)
}
