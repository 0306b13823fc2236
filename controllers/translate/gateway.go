package translate

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/controllers/snapshot"
	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// gatewayGroup is one dataplane gateway: a single Gateway (Cluster scope) or every Gateway with the same
// namespace/name across members (Fleet scope).
type gatewayGroup struct {
	key       string
	namespace string
	name      string
	class     *classInfo
	gateways  []*gatewayObject
	listeners []*listener // merged by name, in the oldest Gateway's order, then the sets' listeners
	sets      []*listenerSet
	idx       int // in translator.groups
}

// gatewayObject is one Gateway object of a gateway group.
type gatewayObject struct {
	obj snapshot.Object[gwv1.Gateway]
	// invalid explains a Gateway-level rejection (reason, message); such a Gateway contributes no
	// listeners.
	invalidReason, invalidMsg string
	// own maps each of its listener names to the merged listener, or to a private listener that
	// lost a fleet merge conflict.
	own map[string]*listener
	// clientCert is the resolved spec.tls.backend.clientCertificateRef, or why it is not.
	clientCert                      *ir.Certificate
	clientCertReason, clientCertMsg string
}

func (g *gatewayObject) object() *gwv1.Gateway { return g.obj.Obj }

// buildGroups groups our Gateways into gateway groups and merges their listeners.
func (t *translator) buildGroups() {
	byKey := map[string]*gatewayGroup{}
	for _, o := range t.snap.Gateways {
		gw := o.Obj
		ci := t.classes[string(gw.Spec.GatewayClassName)]
		if ci == nil {
			continue
		}
		key, ref := o.Cluster+"/"+gw.Namespace+"/"+gw.Name, groupRef{nsName{o.Cluster, gw.Namespace, gw.Name}, false}
		if ci.scope == string(v1alpha1.ScopeFleet) {
			key, ref = gw.Namespace+"/"+gw.Name, groupRef{nsName{"", gw.Namespace, gw.Name}, true}
		}
		grp := byKey[key]
		if grp == nil {
			grp = &gatewayGroup{key: key, namespace: gw.Namespace, name: gw.Name, class: ci}
			byKey[key] = grp
			t.groupByRef[ref] = grp
			t.groups = append(t.groups, grp)
		}
		grp.gateways = append(grp.gateways, &gatewayObject{obj: o, own: map[string]*listener{}})
	}
	slices.SortFunc(t.groups, func(a, b *gatewayGroup) int { return cmp.Compare(a.key, b.key) })
	for _, grp := range t.groups {
		// Oldest Gateway first: it wins fleet listener conflicts.
		slices.SortStableFunc(grp.gateways, func(a, b *gatewayObject) int {
			return cmp.Or(a.object().CreationTimestamp.Compare(b.object().CreationTimestamp.Time), cmp.Compare(a.obj.Cluster, b.obj.Cluster))
		})
		for _, g := range grp.gateways {
			t.validateGateway(grp, g)
			t.resolveClientCert(g)
			t.mergeListeners(grp, g)
		}
		t.validateListeners(grp)
	}
}

// validateGateway checks the Gateway-level fields fleetgate must reject.
func (t *translator) validateGateway(grp *gatewayGroup, g *gatewayObject) {
	gw := g.object()
	if !grp.class.accepted {
		g.invalidReason, g.invalidMsg = string(gwv1.GatewayReasonPending), fmt.Sprintf("GatewayClass %q is not accepted", grp.class.name)
		return
	}
	if inf := gw.Spec.Infrastructure; inf != nil && inf.ParametersRef != nil {
		g.invalidReason = string(gwv1.GatewayReasonInvalidParameters)
		g.invalidMsg = fmt.Sprintf("infrastructure.parametersRef %s/%s is not supported", inf.ParametersRef.Group, inf.ParametersRef.Kind)
		return
	}
	for _, a := range gw.Spec.Addresses {
		if msg := checkAddress(a); msg != "" {
			g.invalidReason, g.invalidMsg = string(gwv1.GatewayReasonUnsupportedAddress), msg
			return
		}
	}
}

func addressType(a gwv1.GatewaySpecAddress) gwv1.AddressType {
	if a.Type == nil || *a.Type == "" {
		return gwv1.IPAddressType
	}
	return *a.Type
}

func checkAddress(a gwv1.GatewaySpecAddress) string {
	switch addressType(a) {
	case gwv1.IPAddressType:
		if a.Value == "" {
			return ""
		}
		if _, err := netip.ParseAddr(a.Value); err != nil {
			return fmt.Sprintf("address %q is not an IP address", a.Value)
		}
	case gwv1.HostnameAddressType:
		if a.Value != "" && !validHostname(a.Value) {
			return fmt.Sprintf("address %q is not a hostname", a.Value)
		}
	default:
		return fmt.Sprintf("address type %q is not supported", addressType(a))
	}
	return ""
}

// mergeListeners adds m's listeners to the gateway group. The first (oldest) definition of a name wins;
// a later different definition of the same name stays private to its Gateway and is Conflicted.
func (t *translator) mergeListeners(grp *gatewayGroup, g *gatewayObject) {
	for _, spec := range g.object().Spec.Listeners {
		l := newListener(grp, g, spec)
		if g.invalidReason != "" {
			t.validateListener(l)
			l.accept(false, g.invalidReason, g.invalidMsg)
			l.acceptedReason, l.acceptedMsg = g.invalidReason, g.invalidMsg
			g.own[string(spec.Name)] = l
			continue
		}
		var winner *listener
		for _, w := range grp.listeners {
			if w.spec.Name == spec.Name {
				winner = w
				break
			}
		}
		switch {
		case winner == nil:
			grp.listeners = append(grp.listeners, l)
			g.own[string(spec.Name)] = l
		case sameDefinition(winner.spec, spec):
			g.own[string(spec.Name)] = winner
		default:
			reason := gwv1.ListenerReasonHostnameConflict
			if winner.spec.Port != spec.Port || winner.spec.Protocol != spec.Protocol {
				reason = gwv1.ListenerReasonProtocolConflict
			}
			msg := fmt.Sprintf("listener differs from the one of the older Gateway in cluster %q", winner.gateway.obj.Cluster)
			t.validateListener(l)
			l.conflictReason, l.conflictMsg = "", ""
			l.conflict(reason, msg)
			l.acceptedReason, l.acceptedMsg = string(reason), msg
			g.own[string(spec.Name)] = l
		}
	}
}

func sameDefinition(a, b gwv1.Listener) bool {
	mode := func(l gwv1.Listener) string {
		if l.TLS == nil || l.TLS.Mode == nil {
			return ""
		}
		return string(*l.TLS.Mode)
	}
	return a.Port == b.Port && a.Protocol == b.Protocol && ptrStr(a.Hostname) == ptrStr(b.Hostname) && mode(a) == mode(b)
}

func ptrStr[S ~string](p *S) string {
	if p == nil {
		return ""
	}
	return string(*p)
}

// gatewayStatuses emits the status of every Gateway of the group once routes are attached.
func (t *translator) gatewayStatuses(grp *gatewayGroup) {
	for _, g := range grp.gateways {
		gw := g.object()
		gen := gw.Generation
		st := GatewayStatus{
			Ref:        ObjectRef{Cluster: g.obj.Cluster, Kind: "Gateway", Namespace: gw.Namespace, Name: gw.Name},
			Generation: gen,
			Gateway:    grp.key,
		}
		var bad, unresolved []string
		good, programmable := 0, 0
		seen := map[gwv1.SectionName]bool{}
		for _, spec := range gw.Spec.Listeners {
			l := g.own[string(spec.Name)]
			if l == nil || seen[spec.Name] {
				continue // listener names are unique; a duplicate reports once
			}
			seen[spec.Name] = true
			st.Listeners = append(st.Listeners, l.status(gen))
			// Unresolved references do not reject a listener (it is Accepted but not programmed);
			// only unaccepted and conflicted listeners make the Gateway ListenersNotValid.
			if l.acceptedOK && l.conflictReason == "" {
				good++
			} else {
				bad = append(bad, string(spec.Name))
			}
			if l.programmable() {
				programmable++
			}
			if l.resolvedReason != "" {
				unresolved = append(unresolved, string(spec.Name))
			}
		}
		var accepted metav1.Condition
		switch {
		case g.invalidReason == string(gwv1.GatewayReasonPending):
			accepted = cond(string(gwv1.GatewayConditionAccepted), false, g.invalidReason, g.invalidMsg, gen)
			accepted.Status = metav1.ConditionUnknown
		case g.invalidReason != "":
			accepted = cond(string(gwv1.GatewayConditionAccepted), false, g.invalidReason, g.invalidMsg, gen)
		case len(bad) > 0:
			msg := fmt.Sprintf("invalid or conflicted listeners: %s", strings.Join(bad, ", "))
			accepted = cond(string(gwv1.GatewayConditionAccepted), good > 0, string(gwv1.GatewayReasonListenersNotValid), msg, gen)
		default:
			accepted = cond(string(gwv1.GatewayConditionAccepted), true, string(gwv1.GatewayReasonAccepted), "Gateway is accepted", gen)
		}
		programmed := cond(string(gwv1.GatewayConditionProgrammed), false, string(gwv1.GatewayReasonPending),
			"Waiting for the load balancer and the proxies", gen)
		if accepted.Status == metav1.ConditionTrue && programmable == 0 {
			programmed = cond(string(gwv1.GatewayConditionProgrammed), false, string(gwv1.GatewayReasonInvalid), "No listener can be programmed", gen)
		}
		if accepted.Status != metav1.ConditionTrue {
			programmed = cond(string(gwv1.GatewayConditionProgrammed), false, string(gwv1.GatewayReasonInvalid), "Gateway is not accepted", gen)
			if accepted.Status == metav1.ConditionUnknown {
				programmed.Reason = string(gwv1.GatewayReasonPending)
			}
		}
		st.Conditions = append([]metav1.Condition{accepted, programmed}, gatewayTLSConditions(g, unresolved, gen)...)
		if al := gw.Spec.AllowedListeners; al != nil && al.Namespaces != nil && al.Namespaces.From != nil && *al.Namespaces.From != gwv1.NamespacesFromNone {
			n := grp.attachedSets()
			st.AttachedListenerSets = &n
		}
		t.res.Gateways = append(t.res.Gateways, st)
	}
}
