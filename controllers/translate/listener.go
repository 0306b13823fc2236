package translate

import (
	"cmp"
	"crypto/tls"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// listener is one merged Gateway listener with its verdicts.
type listener struct {
	group    *gatewayGroup
	gateway  *gatewayObject // the Gateway whose definition is used (secrets, namespace); nil for a set's listener
	set      *listenerSet   // the ListenerSet that defines the listener; nil for the Gateway's own
	spec     gwv1.Listener
	hostname string
	tlsMode  gwv1.TLSModeType

	acceptedOK     bool
	acceptedReason string
	acceptedMsg    string
	conflictReason string // empty: no conflict
	conflictMsg    string
	resolvedReason string // empty: resolved
	resolvedMsg    string
	overlapping    bool
	kinds          []gwv1.RouteGroupKind
	nsSelector     labels.Selector
	certs          []ir.Certificate
	// clientValidation is the frontend client certificate validation of an HTTPS listener.
	clientValidation *ir.ClientValidation

	// attached counts the routes attached; last is the latest of them. Routes attach one at a
	// time, all their parentRefs in a row, so "r is attached here" is last == r: no set needed.
	attached int
	last     *route
	// l4 is the single TCPRoute or UDPRoute a TCP or UDP listener forwards to.
	l4 *route
	// hosts are the attachments of HTTP, GRPC and TLS routes, with their hostnames; web counts
	// the HTTPRoutes and GRPCRoutes among them, so that their conflict check is skipped (it
	// compares every pair) on listeners that carry only one of the two. Counters, not a map by
	// kind: a map write per route was 5% of a pass at 20,000 routes.
	hosts []attachment
	web   webKinds
	// rules and hostnames count the route rules and hostnames attached, when the provider limits
	// them (withinListenerLimits).
	rules     int
	hostnames map[string]bool
	idx       int // in its group's listeners
}

// attachment is one route on one listener, serving the given hostnames ("" = any).
type attachment struct {
	route     *route
	hostnames []string
}

// key names the listener across passes.
func (l *listener) key() listenerKey {
	k := listenerKey{group: l.group.key, name: l.spec.Name}
	if l.set != nil {
		k.set = l.set.obj.Cluster + "/" + l.set.ls().Namespace + "/" + l.set.ls().Name
	}
	return k
}

func newListener(grp *gatewayGroup, g *gatewayObject, spec gwv1.Listener) *listener {
	l := &listener{group: grp, gateway: g, spec: spec, hostname: ptrStr(spec.Hostname), acceptedOK: true}
	if spec.TLS != nil {
		l.tlsMode = gwv1.TLSModeTerminate
		if spec.TLS.Mode != nil && *spec.TLS.Mode != "" {
			l.tlsMode = *spec.TLS.Mode
		}
	}
	return l
}

// owner is the kind, cluster and namespace of the object that defines the listener: its
// allowedRoutes "Same", its certificateRefs and their ReferenceGrants are relative to it.
func (l *listener) owner() (kind, cluster, namespace string) {
	if l.set != nil {
		return kindListenerSet, l.set.obj.Cluster, l.set.ls().Namespace
	}
	return "Gateway", l.gateway.obj.Cluster, l.gateway.object().Namespace
}

func (l *listener) accept(ok bool, reason, msg string) {
	if !l.acceptedOK {
		return // keep the first rejection
	}
	l.acceptedOK, l.acceptedReason, l.acceptedMsg = ok, reason, msg
}

func (l *listener) conflict(reason gwv1.ListenerConditionReason, msg string) {
	if l.conflictReason == "" {
		l.conflictReason, l.conflictMsg = string(reason), msg
	}
	// Indistinct listeners must not be accepted for processing.
	l.accept(false, string(reason), msg)
}

func (l *listener) unresolved(reason gwv1.ListenerConditionReason, msg string) {
	if l.resolvedReason == "" {
		l.resolvedReason, l.resolvedMsg = string(reason), msg
	} else {
		l.resolvedMsg += "; " + msg
	}
}

// programmable says whether the listener goes into the dataplane config. A listener with some
// unsupported route kinds still serves the supported ones.
func (l *listener) programmable() bool {
	if !l.acceptedOK || l.conflictReason != "" || len(l.kinds) == 0 {
		return false
	}
	return l.resolvedReason == "" || l.resolvedReason == string(gwv1.ListenerReasonInvalidRouteKinds)
}

var routeGroup = gwv1.Group(gwv1.GroupName)

// defaultKinds are the route kinds each protocol supports.
func defaultKinds(p gwv1.ProtocolType) []string {
	switch p {
	case gwv1.HTTPProtocolType, gwv1.HTTPSProtocolType:
		return []string{kindHTTPRoute, kindGRPCRoute}
	case gwv1.TLSProtocolType:
		return []string{kindTLSRoute}
	case gwv1.TCPProtocolType:
		return []string{kindTCPRoute}
	case gwv1.UDPProtocolType:
		return []string{kindUDPRoute}
	}
	return nil
}

// validateListeners checks every merged listener, then the distinctness rules across them.
func (t *translator) validateListeners(grp *gatewayGroup) {
	for _, l := range grp.listeners {
		t.validateListener(l)
	}
	t.detectConflicts(grp.listeners)
	certificateLimits(grp)
}

func (t *translator) validateListener(l *listener) {
	spec := l.spec
	supported := defaultKinds(spec.Protocol)
	c := l.group.class
	if supported == nil {
		l.accept(false, string(gwv1.ListenerReasonUnsupportedProtocol), fmt.Sprintf("protocol %q is not supported", spec.Protocol))
	} else if !c.caps.Protocol(string(spec.Protocol)) {
		l.accept(false, string(gwv1.ListenerReasonUnsupportedProtocol), unsupported("protocol", string(spec.Protocol), c.provider))
	}
	if spec.Port < 1 || spec.Port > 65535 {
		l.accept(false, string(gwv1.ListenerReasonPortUnavailable), fmt.Sprintf("port %d is not usable", spec.Port))
	}
	if spec.Protocol == gwv1.TCPProtocolType || spec.Protocol == gwv1.UDPProtocolType {
		l.hostname = "" // ignored for protocols without hostname matching
	} else if l.hostname != "" && !validHostname(l.hostname) {
		l.accept(false, string(gwv1.ListenerReasonUnsupportedValue), fmt.Sprintf("hostname %q is invalid", l.hostname))
	}
	t.listenerKinds(l, supported)
	t.listenerNamespaces(l)
	t.listenerTLS(l)
}

func (t *translator) listenerKinds(l *listener, supported []string) {
	ar := l.spec.AllowedRoutes
	caps := l.group.class.caps.ForProtocol(string(l.spec.Protocol))
	cluster := l.cluster()
	unserved := t.snap.UnservedKinds[cluster]
	var absent []string
	if ar == nil || len(ar.Kinds) == 0 {
		for _, k := range supported {
			if slices.Contains(unserved, k) {
				absent = append(absent, k)
			} else if caps.RouteKind(k) {
				l.kinds = append(l.kinds, gwv1.RouteGroupKind{Group: &routeGroup, Kind: gwv1.Kind(k)})
			}
		}
		if len(l.kinds) == 0 && len(absent) > 0 {
			l.unresolved(gwv1.ListenerReasonInvalidRouteKinds, notInstalled(absent, cluster))
		}
		return
	}
	var bad, refused []string
	for _, k := range ar.Kinds {
		group := gwv1.GroupName
		if k.Group != nil {
			group = string(*k.Group)
		}
		if group == gwv1.GroupName && slices.Contains(unserved, string(k.Kind)) {
			absent = append(absent, string(k.Kind))
			continue
		}
		if group == gwv1.GroupName && slices.Contains(supported, string(k.Kind)) && !caps.RouteKind(string(k.Kind)) {
			refused = append(refused, string(k.Kind))
			continue
		}
		if group == gwv1.GroupName && slices.Contains(supported, string(k.Kind)) {
			if !slices.ContainsFunc(l.kinds, func(x gwv1.RouteGroupKind) bool { return x.Kind == k.Kind }) {
				l.kinds = append(l.kinds, gwv1.RouteGroupKind{Group: &routeGroup, Kind: k.Kind})
			}
			continue
		}
		bad = append(bad, group+"/"+string(k.Kind))
	}
	if len(bad) > 0 {
		l.unresolved(gwv1.ListenerReasonInvalidRouteKinds, fmt.Sprintf("route kinds not supported on a %s listener: %s", l.spec.Protocol, strings.Join(bad, ", ")))
	}
	if len(refused) > 0 {
		l.unresolved(gwv1.ListenerReasonInvalidRouteKinds, unsupported("allowedRoutes.kinds", strings.Join(refused, ", "), l.group.class.provider))
	}
	if len(absent) > 0 {
		l.unresolved(gwv1.ListenerReasonInvalidRouteKinds, notInstalled(absent, cluster))
	}
}

// cluster is the member cluster of the object that defines the listener.
func (l *listener) cluster() string {
	if l.set != nil {
		return l.set.obj.Cluster
	}
	return l.gateway.obj.Cluster
}

func notInstalled(kinds []string, cluster string) string {
	return fmt.Sprintf("route kinds whose CRD is not installed in cluster %s: %s", cluster, strings.Join(kinds, ", "))
}

func (t *translator) listenerNamespaces(l *listener) {
	ar := l.spec.AllowedRoutes
	if ar == nil || ar.Namespaces == nil || ar.Namespaces.From == nil {
		return
	}
	switch *ar.Namespaces.From {
	case gwv1.NamespacesFromSame, gwv1.NamespacesFromAll, gwv1.NamespacesFromNone:
	case gwv1.NamespacesFromSelector:
		if ar.Namespaces.Selector == nil {
			l.accept(false, string(gwv1.ListenerReasonUnsupportedValue), "allowedRoutes.namespaces.selector is required with from: Selector")
			return
		}
		sel, err := metav1.LabelSelectorAsSelector(ar.Namespaces.Selector)
		if err != nil {
			l.accept(false, string(gwv1.ListenerReasonUnsupportedValue), fmt.Sprintf("allowedRoutes.namespaces.selector: %v", err))
			return
		}
		l.nsSelector = sel
	default:
		l.accept(false, string(gwv1.ListenerReasonUnsupportedValue), fmt.Sprintf("allowedRoutes.namespaces.from %q is not supported", *ar.Namespaces.From))
	}
}

// allowsNamespace applies allowedRoutes.namespaces to a route namespace in a given cluster.
// Namespace sameness makes "Same" compare names only, whatever the cluster.
func (t *translator) allowsNamespace(l *listener, cluster, ns string) bool {
	from := gwv1.NamespacesFromSame
	if ar := l.spec.AllowedRoutes; ar != nil && ar.Namespaces != nil && ar.Namespaces.From != nil {
		from = *ar.Namespaces.From
	}
	switch from {
	case gwv1.NamespacesFromAll:
		return true
	case gwv1.NamespacesFromSame:
		_, _, own := l.owner()
		return ns == own
	case gwv1.NamespacesFromSelector:
		return l.nsSelector != nil && l.nsSelector.Matches(labels.Set(t.idx.namespaceLabels(cluster, ns)))
	}
	return false
}

func (t *translator) listenerTLS(l *listener) {
	p := l.spec.Protocol
	if p != gwv1.HTTPSProtocolType && p != gwv1.TLSProtocolType {
		return
	}
	if l.spec.TLS == nil {
		if p == gwv1.TLSProtocolType {
			l.accept(false, string(gwv1.ListenerReasonUnsupportedValue), "tls.mode is required for a TLS listener")
		} else {
			l.unresolved(gwv1.ListenerReasonInvalidCertificateRef, "an HTTPS listener needs tls.certificateRefs")
		}
		return
	}
	switch l.tlsMode {
	case gwv1.TLSModeTerminate:
	case gwv1.TLSModePassthrough:
		if p == gwv1.HTTPSProtocolType {
			l.accept(false, string(gwv1.ListenerReasonUnsupportedValue), "tls.mode Passthrough is not allowed on an HTTPS listener")
		}
		return // certificateRefs are ignored in Passthrough mode
	default:
		l.accept(false, string(gwv1.ListenerReasonUnsupportedValue), fmt.Sprintf("tls.mode %q is not supported", l.tlsMode))
		return
	}
	if len(l.spec.TLS.CertificateRefs) == 0 {
		l.unresolved(gwv1.ListenerReasonInvalidCertificateRef, "tls.certificateRefs is empty")
		return
	}
	for i, ref := range l.spec.TLS.CertificateRefs {
		cert, reason, msg := t.resolveCert(l, ref)
		if reason != "" {
			l.unresolved(reason, fmt.Sprintf("certificateRefs[%d]: %s", i, msg))
			continue
		}
		l.certs = append(l.certs, cert)
	}
	t.listenerClientValidation(l)
}

func (t *translator) resolveCert(l *listener, ref gwv1.SecretObjectReference) (ir.Certificate, gwv1.ListenerConditionReason, string) {
	ownerKind, cluster, ownerNS := l.owner()
	group, kind := ptrStr(ref.Group), cmp.Or(ptrStr(ref.Kind), "Secret")
	ns := cmp.Or(ptrStr(ref.Namespace), ownerNS)
	if group != "" || kind != "Secret" {
		return ir.Certificate{}, gwv1.ListenerReasonInvalidCertificateRef, fmt.Sprintf("%s/%s is not a supported kind", group, kind)
	}
	if !t.idx.permitted(cluster, groupKind{gwv1.GroupName, ownerKind}, ownerNS, groupKind{"", "Secret"}, ns, string(ref.Name)) {
		return ir.Certificate{}, gwv1.ListenerReasonRefNotPermitted, fmt.Sprintf("Secret %s/%s is not permitted by any ReferenceGrant", ns, ref.Name)
	}
	sec := t.idx.secrets[nsName{cluster, ns, string(ref.Name)}]
	if sec == nil {
		return ir.Certificate{}, gwv1.ListenerReasonInvalidCertificateRef, fmt.Sprintf("Secret %s/%s not found", ns, ref.Name)
	}
	if sec.Type != corev1.SecretTypeTLS {
		return ir.Certificate{}, gwv1.ListenerReasonInvalidCertificateRef, fmt.Sprintf("Secret %s/%s is of type %q, not %s", ns, ref.Name, sec.Type, corev1.SecretTypeTLS)
	}
	crt, key := sec.Data[corev1.TLSCertKey], sec.Data[corev1.TLSPrivateKeyKey]
	if _, err := tls.X509KeyPair(crt, key); err != nil {
		return ir.Certificate{}, gwv1.ListenerReasonInvalidCertificateRef, fmt.Sprintf("Secret %s/%s: %v", ns, ref.Name, err)
	}
	c := ir.Certificate{Name: ns + "/" + string(ref.Name), CertPEM: crt, KeyPEM: key}
	if l.hostname != "" {
		c.Hostnames = []string{l.hostname}
	}
	return c, "", ""
}

func transport(p gwv1.ProtocolType) string {
	if p == gwv1.UDPProtocolType {
		return "UDP"
	}
	return "TCP"
}

// detectConflicts applies the Gateway API distinctness rules to listeners that share a port and
// transport: different protocols conflict (ProtocolConflict), and listeners of one protocol must
// differ by hostname (HostnameConflict). It also flags overlapping TLS hostnames.
func (t *translator) detectConflicts(ls []*listener) {
	type portKey struct {
		port      int32
		transport string
	}
	groups := map[portKey][]*listener{}
	var keys []portKey
	for _, l := range ls {
		if defaultKinds(l.spec.Protocol) == nil {
			continue
		}
		k := portKey{l.spec.Port, transport(l.spec.Protocol)}
		if groups[k] == nil {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], l)
	}
	for _, k := range keys {
		g := groups[k]
		protocols := map[gwv1.ProtocolType]bool{}
		for _, l := range g {
			protocols[l.spec.Protocol] = true
		}
		if len(protocols) > 1 {
			for _, l := range g {
				l.conflict(gwv1.ListenerReasonProtocolConflict, fmt.Sprintf("port %d is used with several protocols", k.port))
			}
			continue
		}
		for i, a := range g {
			for j, b := range g {
				if i != j && a.hostname == b.hostname {
					a.conflict(gwv1.ListenerReasonHostnameConflict, fmt.Sprintf("listener %q uses the same port and hostname", b.spec.Name))
				}
			}
		}
		for i, a := range g {
			for j, b := range g {
				if i == j || a.tlsMode != gwv1.TLSModeTerminate || b.tlsMode != gwv1.TLSModeTerminate || a.hostname == "" || b.hostname == "" || a.hostname == b.hostname {
					continue
				}
				if hostMatches(a.hostname, b.hostname) || hostMatches(b.hostname, a.hostname) {
					a.overlapping = true
				}
			}
		}
	}
}

// status renders the listener status for one Gateway generation.
func (l *listener) status(gen int64) gwv1.ListenerStatus {
	st := gwv1.ListenerStatus{Name: l.spec.Name, SupportedKinds: slices.Clone(l.kinds), AttachedRoutes: int32(l.attached)}
	if st.SupportedKinds == nil {
		st.SupportedKinds = []gwv1.RouteGroupKind{}
	}
	if l.acceptedOK {
		st.Conditions = append(st.Conditions, cond(string(gwv1.ListenerConditionAccepted), true, string(gwv1.ListenerReasonAccepted), "Listener is accepted", gen))
	} else {
		c := cond(string(gwv1.ListenerConditionAccepted), false, l.acceptedReason, l.acceptedMsg, gen)
		if l.acceptedReason == string(gwv1.ListenerReasonPending) {
			c.Status = metav1.ConditionUnknown // the GatewayClass is not accepted yet
		}
		st.Conditions = append(st.Conditions, c)
	}
	if l.conflictReason != "" {
		st.Conditions = append(st.Conditions, cond(string(gwv1.ListenerConditionConflicted), true, l.conflictReason, l.conflictMsg, gen))
	} else {
		st.Conditions = append(st.Conditions, cond(string(gwv1.ListenerConditionConflicted), false, string(gwv1.ListenerReasonNoConflicts), "No conflicts", gen))
	}
	if l.resolvedReason == "" {
		st.Conditions = append(st.Conditions, cond(string(gwv1.ListenerConditionResolvedRefs), true, string(gwv1.ListenerReasonResolvedRefs), "References are resolved", gen))
	} else {
		st.Conditions = append(st.Conditions, cond(string(gwv1.ListenerConditionResolvedRefs), false, l.resolvedReason, l.resolvedMsg, gen))
	}
	if l.programmable() {
		st.Conditions = append(st.Conditions, cond(string(gwv1.ListenerConditionProgrammed), false, string(gwv1.ListenerReasonPending), "Waiting for the load balancer and the proxies", gen))
	} else {
		st.Conditions = append(st.Conditions, cond(string(gwv1.ListenerConditionProgrammed), false, string(gwv1.ListenerReasonInvalid), "Listener is invalid", gen))
	}
	if l.overlapping {
		st.Conditions = append(st.Conditions, cond(string(gwv1.ListenerConditionOverlappingTLSConfig), true, string(gwv1.ListenerReasonOverlappingHostnames), "Hostname overlaps another TLS listener on the same port", gen))
	}
	return st
}
