package translate

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	mcsv1a1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// use says what a route expects of its backends, for protocol checks.
type use int

const (
	useHTTP use = iota
	useGRPC
	useTCP // TLS and TCP routes
	useUDP
)

// ClusterSetName prefixes ServiceImport backend names, whose endpoints span clusters.
const ClusterSetName = "clusterset"

func (x use) transport() corev1.Protocol {
	if x == useUDP {
		return corev1.ProtocolUDP
	}
	return corev1.ProtocolTCP
}

// appProtocol maps a Service port appProtocol (KEP-3726 names and common short names) to how the
// proxy talks to the backend. ok is false when the route kind cannot use it.
func (x use) appProtocol(p *string) (ir.AppProtocol, bool) {
	v := ""
	if p != nil {
		v = *p
	}
	switch x {
	case useHTTP:
		switch v {
		case "", "http", "HTTP":
			return ir.AppHTTP1, true
		case "kubernetes.io/h2c", "h2c", "grpc":
			return ir.AppH2C, true
		case "kubernetes.io/ws":
			return ir.AppWS, true
		}
		return "", false
	case useGRPC:
		switch v {
		case "", "grpc", "kubernetes.io/h2c", "h2c":
			return ir.AppH2C, true
		}
		return "", false
	}
	return ir.AppHTTP1, true // L4 routes forward bytes; appProtocol does not matter
}

// resolveBackend turns one backendRef into a weighted ir.Backend. A reference that cannot be
// resolved yields an Invalid backend (its share of traffic fails) and a ResolvedRefs reason on the
// route. Service resolves in the route's cluster; ServiceImport resolves to the endpoints of the
// same-named Service in every cluster that has a ServiceExport for it.
func (t *translator) resolveBackend(r *route, ref gwv1.BackendObjectReference, weight *int32, u use) ir.Backend {
	w := int32(1)
	if weight != nil {
		w = max(*weight, 0)
	}
	group, kind := ptrStr(ref.Group), cmp.Or(ptrStr(ref.Kind), "Service")
	ns := cmp.Or(ptrStr(ref.Namespace), r.meta.GetNamespace())
	port := int32(0)
	if ref.Port != nil {
		port = *ref.Port
	}
	b := ir.Backend{Name: r.cluster + "/" + ns + "/" + string(ref.Name) + ":" + strconv.Itoa(int(port)), Weight: uint32(w)}
	fail := func(reason gwv1.RouteConditionReason, format string, args ...any) ir.Backend {
		r.refFailed(reason, fmt.Sprintf(format, args...))
		b.Invalid, b.Endpoints = true, nil
		return b
	}
	isImport := group == mcsv1a1.GroupName && kind == "ServiceImport"
	if !isImport && (group != "" || kind != "Service") {
		return fail(gwv1.RouteReasonInvalidKind, "backend kind %s/%s is not supported", group, kind)
	}
	if !t.idx.permitted(r.cluster, groupKind{gwv1.GroupName, r.kind}, r.meta.GetNamespace(), groupKind{group, kind}, ns, string(ref.Name)) {
		return fail(gwv1.RouteReasonRefNotPermitted, "%s %s/%s is not permitted by any ReferenceGrant", kind, ns, ref.Name)
	}
	if ref.Port == nil {
		return fail(gwv1.RouteReasonBackendNotFound, "%s %s/%s: port is required", kind, ns, ref.Name)
	}
	if isImport {
		b.Name = ClusterSetName + "/" + ns + "/" + string(ref.Name) + ":" + strconv.Itoa(int(port))
		return t.resolveImport(r, b, ns, string(ref.Name), port, u, fail)
	}
	svc := t.idx.services[nsName{r.cluster, ns, string(ref.Name)}]
	if svc == nil {
		return fail(gwv1.RouteReasonBackendNotFound, "Service %s/%s not found", ns, ref.Name)
	}
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		return fail(gwv1.RouteReasonInvalidKind, "Service %s/%s is of type ExternalName, which is not supported", ns, ref.Name)
	}
	i := slices.IndexFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Port == port })
	if i < 0 {
		return fail(gwv1.RouteReasonBackendNotFound, "Service %s/%s has no port %d", ns, ref.Name, port)
	}
	sp := svc.Spec.Ports[i]
	if cmp.Or(sp.Protocol, corev1.ProtocolTCP) != u.transport() {
		return fail(gwv1.RouteReasonUnsupportedProtocol, "Service %s/%s port %d is %s, the route needs %s", ns, ref.Name, port, cmp.Or(sp.Protocol, corev1.ProtocolTCP), u.transport())
	}
	if u == useHTTP || u == useGRPC {
		if p, all := t.backendPolicy(r.cluster, ns, string(ref.Name), sp.Name); p != nil {
			for _, q := range all {
				if !slices.Contains(r.policies, q) {
					r.policies = append(r.policies, q)
				}
			}
			if !tlsAppProtocol(sp.AppProtocol) {
				return fail(gwv1.RouteReasonUnsupportedProtocol, "Service %s/%s port %d has appProtocol %q, which BackendTLSPolicy %s cannot secure", ns, ref.Name, port, *sp.AppProtocol, p.name())
			}
			b.AppProtocol = ir.AppTLS
			if p.tls == nil {
				// The policy that applies is not usable: the backend fails rather than go unverified.
				b.Invalid = true
				return b
			}
			b.TLS = p.tls
			b.Endpoints = t.routeEndpoints(r, r.cluster, ns, string(ref.Name), sp.Name, u.transport())
			return b
		}
	}
	app, ok := u.appProtocol(sp.AppProtocol)
	if !ok {
		return fail(gwv1.RouteReasonUnsupportedProtocol, "Service %s/%s port %d has appProtocol %q, which a %s cannot use", ns, ref.Name, port, *sp.AppProtocol, r.kind)
	}
	b.AppProtocol = app
	b.Endpoints = t.routeEndpoints(r, r.cluster, ns, string(ref.Name), sp.Name, u.transport())
	return b
}

func (t *translator) resolveImport(r *route, b ir.Backend, ns, name string, port int32, u use, fail func(gwv1.RouteConditionReason, string, ...any) ir.Backend) ir.Backend {
	si := t.idx.imports[nsName{r.cluster, ns, name}]
	if si == nil {
		return fail(gwv1.RouteReasonBackendNotFound, "ServiceImport %s/%s not found", ns, name)
	}
	i := slices.IndexFunc(si.Spec.Ports, func(p mcsv1a1.ServicePort) bool { return p.Port == port })
	if i < 0 {
		return fail(gwv1.RouteReasonBackendNotFound, "ServiceImport %s/%s has no port %d", ns, name, port)
	}
	sp := si.Spec.Ports[i]
	if cmp.Or(sp.Protocol, corev1.ProtocolTCP) != u.transport() {
		return fail(gwv1.RouteReasonUnsupportedProtocol, "ServiceImport %s/%s port %d is %s, the route needs %s", ns, name, port, cmp.Or(sp.Protocol, corev1.ProtocolTCP), u.transport())
	}
	app, ok := u.appProtocol(sp.AppProtocol)
	if !ok {
		return fail(gwv1.RouteReasonUnsupportedProtocol, "ServiceImport %s/%s port %d has appProtocol %q, which a %s cannot use", ns, name, port, *sp.AppProtocol, r.kind)
	}
	b.AppProtocol = app
	var perCluster [][]ir.Endpoint
	for _, c := range t.idx.clusters {
		if !t.idx.exports[nsName{c, ns, name}] {
			continue
		}
		svc := t.idx.services[nsName{c, ns, name}]
		if svc == nil {
			continue
		}
		// ServiceImport ports mirror the exported Service ports: match by name, else by number.
		j := slices.IndexFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == sp.Name })
		if j < 0 {
			j = slices.IndexFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Port == port })
		}
		if j < 0 {
			continue
		}
		if eps := t.routeEndpoints(r, c, ns, name, svc.Spec.Ports[j].Name, u.transport()); len(eps) > 0 {
			perCluster = append(perCluster, eps)
		}
	}
	b.Endpoints = t.weighClusters(perCluster, r.clusterWeights)
	return b
}

// maxEndpointWeight bounds endpoint weights so that the proxy's cumulative sums stay small.
const maxEndpointWeight = 1 << 20

// weighClusters gives every endpoint a weight such that each cluster's share of the backend's
// traffic is its weight over the sum of the weights, however many endpoints it has: the route's
// override when it has one (clusters it does not name weigh 0), else the MemberCluster weight.
// Clusters of weight 0 get no traffic unless every cluster weighs 0 (then they share equally).
// Each group holds the endpoints of one cluster.
func (t *translator) weighClusters(groups [][]ir.Endpoint, override map[string]int32) []ir.Endpoint {
	weights := make([]uint64, len(groups))
	var total uint64
	for i, g := range groups {
		w := t.snap.ClusterWeight(g[0].Cluster)
		if override != nil {
			w = override[g[0].Cluster]
		}
		weights[i] = uint64(max(w, 0))
		total += weights[i]
	}
	if total == 0 {
		for i := range weights {
			weights[i] = 1
		}
	}
	// Exact shares: cluster weight × (lcm of the endpoint counts / this cluster's count) per
	// endpoint, divided by their gcd. When that grows too large, shares are rounded instead.
	l := uint64(1)
	for i, g := range groups {
		if weights[i] > 0 {
			l = lcm(l, uint64(len(g)))
		}
		if l > maxEndpointWeight {
			break
		}
	}
	per := make([]uint64, len(groups))
	var g, top uint64
	for i, grp := range groups {
		per[i] = weights[i] * (l / uint64(len(grp)))
		g = gcd(g, per[i])
		top = max(top, per[i])
	}
	if g > 1 {
		for i := range per {
			per[i] /= g
		}
		top /= g
	}
	if l > maxEndpointWeight || top > maxEndpointWeight {
		var hi float64
		for i, grp := range groups {
			hi = max(hi, float64(weights[i])/float64(len(grp)))
		}
		for i, grp := range groups {
			per[i] = 0
			if weights[i] > 0 {
				per[i] = max(1, uint64(float64(weights[i])/float64(len(grp))/hi*maxEndpointWeight))
			}
		}
	}
	var out []ir.Endpoint
	for i, grp := range groups {
		if per[i] == 0 {
			continue // weight 0: withdrawn from this backend
		}
		for _, e := range grp {
			e.Weight = uint32(per[i])
			out = append(out, e)
		}
	}
	return out
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func lcm(a, b uint64) uint64 { return a / gcd(a, b) * b }

// endpointSliceController is the managed-by value of Kubernetes' EndpointSlice controller. For a
// Service with a selector only its slices are used unless the class trusts every slice: anyone
// allowed to write an EndpointSlice in a namespace could otherwise point a route at any address.
// A Service without a selector has no controller-managed slices: its endpoints are the slices
// written for it by hand (or by another controller), as kube-proxy and the Gateway API
// conformance suite (HTTPRouteServiceTypes) expect. ServiceImports resolve to the slices of the
// exported Services in each member (fleetgate's MCS controller writes ServiceImports, not
// slices), so the same rule covers them. The deny list applies to every slice.
const endpointSliceController = "endpointslice-controller.k8s.io"

// endpointNotes are what endpoints left out, for the route's ResolvedRefs message or a notice.
type endpointNotes struct {
	untrusted []string // slice names
	denied    []string // addresses
}

// endpointNote is one thing endpoints left out, with the reason of its notice.
type endpointNote struct{ reason, msg string }

// notes says what was left out of the endpoints of what ("Service ns/name").
func (n endpointNotes) notes(what string) []endpointNote {
	var out []endpointNote
	if len(n.untrusted) > 0 {
		out = append(out, endpointNote{"EndpointSliceIgnored", fmt.Sprintf("%s: ignoring %s not managed by %s (GatewayClassConfig spec.proxy.trustAllEndpointSlices)",
			what, listSome("EndpointSlice", n.untrusted), endpointSliceController)})
	}
	if len(n.denied) > 0 {
		out = append(out, endpointNote{"EndpointDenied", fmt.Sprintf("%s: not using %s in the denied networks (GatewayClassConfig spec.proxy.deniedEndpointCIDRs)",
			what, listSome("endpoint", n.denied))})
	}
	return out
}

// listSome names sorted, distinct values after their noun, at most five of them.
func listSome(noun string, vs []string) string {
	slices.Sort(vs)
	vs = slices.Compact(vs)
	if len(vs) > 1 {
		noun += "s"
	}
	const most = 5
	if len(vs) > most {
		return noun + " " + strings.Join(vs[:most], ", ") + fmt.Sprintf(" and %d more", len(vs)-most)
	}
	return noun + " " + strings.Join(vs, ", ")
}

// endpoints lists the ready endpoints of a Service in one cluster, with the target port taken from
// the EndpointSlice port of the same name as the Service port. An endpoint whose ready condition
// is unset counts as ready, as the EndpointSlice API says. Slices the policy does not trust and
// addresses it denies are left out and reported in notes: a Service whose every endpoint is denied
// is served like one without endpoints.
func (t *translator) endpoints(pol *proxyPolicy, cluster, ns, svc, portName string, proto corev1.Protocol) ([]ir.Endpoint, endpointNotes) {
	var out []ir.Endpoint
	var notes endpointNotes
	trustAll := pol.trustAllSlices
	if sv := t.idx.services[nsName{cluster, ns, svc}]; sv != nil && len(sv.Spec.Selector) == 0 {
		trustAll = true
	}
	for _, s := range t.idx.slices[nsName{cluster, ns, svc}] {
		if s.AddressType != discoveryv1.AddressTypeIPv4 && s.AddressType != discoveryv1.AddressTypeIPv6 {
			continue
		}
		if !trustAll && s.Labels[discoveryv1.LabelManagedBy] != endpointSliceController {
			notes.untrusted = append(notes.untrusted, s.Name)
			continue
		}
		var port int32
		for _, p := range s.Ports {
			if ptrStr(p.Name) == portName && p.Port != nil && cmp.Or(corev1.Protocol(ptrStr(p.Protocol)), corev1.ProtocolTCP) == proto {
				port = *p.Port
				break
			}
		}
		if port < 1 || port > 65535 {
			continue
		}
		for _, e := range s.Endpoints {
			if e.Conditions.Ready != nil && !*e.Conditions.Ready {
				continue
			}
			for _, a := range e.Addresses {
				if a == "" {
					continue
				}
				if pol.denies(a) {
					notes.denied = append(notes.denied, a)
					continue
				}
				ep := ir.Endpoint{Address: a, Port: uint32(port), Cluster: cluster}
				// Where it runs, for clouds that target endpoints per zone and VM; a value no
				// cloud API would take is left out rather than handed on.
				if zone, node := ptrStr(e.Zone), ptrStr(e.NodeName); ir.ValidPlacement(zone, node) {
					ep.Zone, ep.Node = zone, node
				}
				out = append(out, ep)
			}
		}
	}
	slices.SortFunc(out, func(a, b ir.Endpoint) int {
		return cmp.Or(cmp.Compare(a.Cluster, b.Cluster), cmp.Compare(a.Address, b.Address), cmp.Compare(a.Port, b.Port))
	})
	return slices.Compact(out), notes
}

// routePolicy is the proxy policy a route's endpoints are chosen by: its parents' classes'. A
// route attached to Gateways of several classes gets the strictest of them (slices trusted only
// when every class trusts all, the union of the denied networks), as its compiled backends are
// shared by all its Gateways.
func (t *translator) routePolicy(r *route) *proxyPolicy {
	var pol *proxyPolicy
	for _, ref := range r.parentRefs {
		grp, _ := t.findParent(r, ref)
		if grp == nil || grp.class == nil || grp.class.proxy == nil {
			continue
		}
		switch p := grp.class.proxy; {
		case pol == nil:
			pol = p
		case !samePolicy(pol, p):
			pol = &proxyPolicy{
				trustAllSlices:  pol.trustAllSlices && p.trustAllSlices,
				deniedEndpoints: unionPrefixes(pol.deniedEndpoints, p.deniedEndpoints),
			}
		}
	}
	if pol == nil {
		if t.defaultPolicy == nil {
			t.defaultPolicy = defaultProxyPolicy()
		}
		pol = t.defaultPolicy
	}
	return pol
}

// samePolicy compares what decides a route's endpoints.
func samePolicy(a, b *proxyPolicy) bool {
	return a.trustAllSlices == b.trustAllSlices && slices.Equal(a.deniedEndpoints, b.deniedEndpoints)
}

func unionPrefixes(a, b []netip.Prefix) []netip.Prefix {
	out := slices.Clone(a)
	for _, p := range b {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// routeEndpoints resolves endpoints for a route's backend, reporting what the policy left out on
// the route's ResolvedRefs condition.
func (t *translator) routeEndpoints(r *route, cluster, ns, svc, portName string, proto corev1.Protocol) []ir.Endpoint {
	if r.endpointPolicy == nil {
		r.endpointPolicy = t.routePolicy(r)
	}
	eps, notes := t.endpoints(r.endpointPolicy, cluster, ns, svc, portName, proto)
	what := "Service " + ns + "/" + svc
	if cluster != r.cluster {
		what += " in cluster " + cluster
	}
	for _, n := range notes.notes(what) {
		if !slices.Contains(r.refNotes, n.msg) {
			r.refNotes = append(r.refNotes, n.msg)
		}
	}
	return eps
}

// backendList resolves a rule's weighted backendRefs, dropping zero-weight entries: they get no
// traffic, and a rule left with no backend answers 500 as the spec asks.
func backendList(bs []ir.Backend) []ir.Backend {
	return slices.DeleteFunc(bs, func(b ir.Backend) bool { return b.Weight == 0 })
}
