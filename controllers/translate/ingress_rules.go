package translate

import (
	"cmp"
	"crypto/tls"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/fleetgate/fleetgate/controllers/snapshot"
	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// pathKey identifies what a path rule claims: a host ("" for any), a match type and a path.
type pathKey struct {
	host string
	typ  ir.MatchType
	path string
}

// ingressPath is one served path rule of a compiled Ingress group.
type ingressPath struct {
	key   pathKey
	route ir.Route
	// toHTTPS redirects its plain-HTTP requests to HTTPS (sslRedirect).
	toHTTPS bool
}

// compiledIngress is what one Ingress group serves.
type compiledIngress struct {
	paths []ingressPath // oldest Ingress first, in rule order
	// named are the hosts some rule names; each gets its own virtual host, so that a request for
	// it never reaches another tenant's host-less rules or defaultBackend.
	named map[string]bool
	// hostFallback is, per named host, the defaultBackend of the oldest Ingress naming it.
	hostFallback map[string]*ir.Route
	// fallback serves, after the host-less rules, the hosts no rule names: the defaultBackend of
	// the oldest Ingress that names no host, else that of the oldest Ingress with one.
	fallback *ir.Route
	// toHTTPS are the fallbacks (by their route) whose plain-HTTP requests go to HTTPS.
	toHTTPS map[*ir.Route]map[string]bool
	certs   []ir.Certificate
}

// pathOwner is whoever serves a pathKey, for conflicts.
type pathOwner struct {
	ref     ObjectRef
	created metav1.Time
	// route and match locate an HTTPRoute's compiled match, so that a newer HTTPRoute can lose it.
	route *route
	match int
}

func (a pathOwner) older(b pathOwner) bool {
	return cmp.Or(a.created.Compare(b.created.Time),
		cmp.Compare(a.ref.Namespace+"/"+a.ref.Name, b.ref.Namespace+"/"+b.ref.Name),
		cmp.Compare(a.ref.Kind, b.ref.Kind), cmp.Compare(a.ref.Cluster, b.ref.Cluster)) < 0
}

func (o pathOwner) String() string {
	return fmt.Sprintf("%s %s/%s in cluster %s", o.ref.Kind, o.ref.Namespace, o.ref.Name, o.ref.Cluster)
}

func (k pathKey) String() string {
	h := k.host
	if h == "" {
		h = "*"
	}
	return fmt.Sprintf("host %s path %s (%s)", h, k.path, k.typ)
}

// httpRouteClaims lists the path-only matches of HTTPRoutes attached to our Gateways, by what
// they claim, oldest route first.
func (t *translator) httpRouteClaims(routes []*route) map[pathKey][]pathOwner {
	out := map[pathKey][]pathOwner{}
	for _, r := range routes {
		if r.kind != kindHTTPRoute || !slices.ContainsFunc(r.parentRefs, func(p gwv1.ParentReference) bool { grp, _ := t.findParent(r, p); return grp != nil }) {
			continue
		}
		hosts := r.hostnames
		if len(hosts) == 0 {
			hosts = []string{""}
		}
		for i, m := range r.matches {
			mm := m.ir.Match
			if mm.Path == nil || mm.Path.Type == ir.MatchRegex || mm.Method != "" || len(mm.Headers) > 0 || len(mm.QueryParams) > 0 {
				continue
			}
			for _, h := range hosts {
				k := pathKey{host: h, typ: mm.Path.Type, path: mm.Path.Value}
				out[k] = append(out[k], pathOwner{
					ref:     ObjectRef{Cluster: r.cluster, Kind: kindHTTPRoute, Namespace: r.meta.GetNamespace(), Name: r.meta.GetName()},
					created: r.meta.GetCreationTimestamp(), route: r, match: i,
				})
			}
		}
	}
	return out
}

// compileIngresses compiles every Ingress group and settles path conflicts between Ingresses and
// with HTTPRoutes; HTTPRoute matches that lose to an older Ingress are left out of the Gateways'
// configs (t.lostMatches), not removed from their route, which a Memo shares between passes.
func (t *translator) compileIngresses(routes []*route) ([]*ingressGroup, []*compiledIngress) {
	groups := t.ingressGroups()
	if len(groups) == 0 {
		return nil, nil // nothing for HTTPRoutes to conflict with
	}
	claims := t.httpRouteClaims(routes)
	lost := map[*route][]int{}
	out := make([]*compiledIngress, 0, len(groups))
	for _, grp := range groups {
		c := &compiledIngress{named: map[string]bool{}, hostFallback: map[string]*ir.Route{}, toHTTPS: map[*ir.Route]map[string]bool{}}
		owners := map[pathKey]pathOwner{}
		var fallbackOwner, anyFallbackOwner pathOwner
		var anyFallback *ir.Route
		hostFallbackOwner := map[string]pathOwner{}
		for _, o := range grp.ingresses {
			ing, ref := o.Obj, ingressRef(o)
			self := pathOwner{ref: ref, created: ing.CreationTimestamp}
			certs := t.ingressCerts(o)
			for _, p := range t.ingressPaths(o, grp.class, len(certs) > 0) {
				if prev, ok := owners[p.key]; ok {
					if prev.ref != ref {
						t.notice(ref, corev1.EventTypeWarning, "IngressConflict", "%s is already served by the older %s; it is not served from this Ingress", p.key, prev)
					}
					continue
				}
				if winner := t.olderRoute(claims[p.key], self); winner != nil {
					t.notice(ref, corev1.EventTypeWarning, "IngressConflict", "%s is already served by the older %s; it is not served from this Ingress", p.key, winner)
					continue
				}
				for _, hr := range claims[p.key] {
					lost[hr.route] = append(lost[hr.route], hr.match)
					t.notice(hr.ref, corev1.EventTypeWarning, "IngressConflict", "%s is already served by the older %s; this match is not served", p.key, self)
				}
				owners[p.key] = self
				c.paths = append(c.paths, p)
			}
			hosts := ingressHosts(ing)
			for _, h := range hosts {
				c.named[h] = true
			}
			if db := ing.Spec.DefaultBackend; db != nil {
				fb := &ir.Route{
					Name:     fmt.Sprintf("%s/%s/%s/default", kindIngress, ing.Namespace, ing.Name),
					Match:    ir.Match{Path: &ir.StringMatch{Type: ir.MatchPrefix, Value: "/"}},
					Backends: []ir.Backend{t.ingressBackend(o, *db, "defaultBackend", grp.class.proxy)},
				}
				c.toHTTPS[fb] = map[string]bool{}
				for _, h := range append(slices.Clip(hosts), "") {
					if sslRedirect(ing, h, len(certs) > 0) {
						c.toHTTPS[fb][h] = true
					}
				}
				// KEP-1453: the defaultBackend of an Ingress with host rules is the default of those
				// hosts, never of a host only another Ingress names.
				for _, h := range hosts {
					if prev, ok := hostFallbackOwner[h]; ok {
						t.notice(ref, corev1.EventTypeWarning, "IngressConflict", "defaultBackend is not used for host %s: the older %s names it too and has one", h, prev)
						continue
					}
					hostFallbackOwner[h] = self
					c.hostFallback[h] = fb
				}
				switch {
				case len(hosts) > 0:
					// Serves hosts no rule names only while no Ingress without host rules has a
					// defaultBackend: the API's "requests that match no rule" for a lone Ingress.
					if anyFallback == nil {
						anyFallback, anyFallbackOwner = fb, self
					}
				case c.fallback != nil:
					t.notice(ref, corev1.EventTypeWarning, "IngressConflict", "defaultBackend is ignored: the older %s has one", fallbackOwner)
				default:
					fallbackOwner = self
					c.fallback = fb
				}
			}
			c.certs = append(c.certs, certs...)
		}
		if c.fallback == nil && anyFallback != nil {
			c.fallback = anyFallback
		} else if anyFallback != nil {
			t.notice(anyFallbackOwner.ref, corev1.EventTypeNormal, "DefaultBackendForNamedHosts",
				"defaultBackend serves only the hosts this Ingress names: %s, which names no host, has the default for other hosts", fallbackOwner)
		}
		slices.SortStableFunc(c.certs, func(a, b ir.Certificate) int {
			return compareSpecificity(firstOr(a.Hostnames), firstOr(b.Hostnames))
		})
		out = append(out, c)
	}
	t.lostMatches = lost
	return groups, out
}

// ingressHosts lists the valid hosts an Ingress's rules name, with or without paths (a rule with a
// host and no paths sends that host to the Ingress's defaultBackend).
func ingressHosts(ing *networkingv1.Ingress) []string {
	var out []string
	for _, rule := range ing.Spec.Rules {
		if h := strings.ToLower(rule.Host); h != "" && validHostname(h) && !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	return out
}

// olderRoute returns the oldest HTTPRoute claim older than the Ingress, or nil.
func (t *translator) olderRoute(claims []pathOwner, self pathOwner) *pathOwner {
	var best *pathOwner
	for i := range claims {
		if claims[i].older(self) && (best == nil || claims[i].older(*best)) {
			best = &claims[i]
		}
	}
	return best
}

// ingressPaths compiles the path rules of one Ingress, in rule order; servesTLS says whether
// the Ingress has a usable certificate.
func (t *translator) ingressPaths(o snapshot.Object[networkingv1.Ingress], c *ingressClass, servesTLS bool) []ingressPath {
	pol := c.proxy
	// Ingress rules are served on HTTP and HTTPS listeners, so by the proxies of a proxied class.
	caps := c.caps.ForProtocol(string(gwv1.HTTPProtocolType))
	ing, ref := o.Obj, ingressRef(o)
	var out []ingressPath
	for i, rule := range ing.Spec.Rules {
		host := strings.ToLower(rule.Host)
		if host != "" && !validHostname(host) {
			t.notice(ref, corev1.EventTypeWarning, "InvalidHost", "rule %d: host %q is not a valid hostname; the rule is not served", i, rule.Host)
			continue
		}
		if rule.HTTP == nil {
			continue
		}
		for j, p := range rule.HTTP.Paths {
			typ, path, err := ingressPathMatch(p)
			if err != nil {
				t.notice(ref, corev1.EventTypeWarning, "InvalidPath", "rule %d path %d: %v; the path is not served", i, j, err)
				continue
			}
			if pt := ingressPathType(typ); !caps.PathMatch(pt) {
				t.notice(ref, corev1.EventTypeWarning, string(gwv1.RouteReasonUnsupportedValue), "%s; the path is not served",
					unsupported(fmt.Sprintf("spec.rules[%d].http.paths[%d].pathType", i, j), pt, c.provider))
				continue
			}
			out = append(out, ingressPath{
				key:     pathKey{host: host, typ: typ, path: path},
				toHTTPS: sslRedirect(ing, host, servesTLS),
				route: ir.Route{
					Name:     fmt.Sprintf("%s/%s/%s/%d/%d", kindIngress, ing.Namespace, ing.Name, i, j),
					Match:    ir.Match{Path: &ir.StringMatch{Type: typ, Value: path}},
					Backends: []ir.Backend{t.ingressBackend(o, p.Backend, fmt.Sprintf("rule %d path %s", i, path), pol)},
				},
			})
		}
	}
	return out
}

// ingressPathMatch maps a path rule to the IR: Exact stays exact; Prefix and
// ImplementationSpecific (fleetgate's choice) become an element-wise prefix with the trailing
// slash dropped, so "/foo/" matches "/foo", "/foo/" and "/foo/bar" but not "/foobar".
func ingressPathMatch(p networkingv1.HTTPIngressPath) (ir.MatchType, string, error) {
	typ := networkingv1.PathTypeImplementationSpecific
	if p.PathType != nil {
		typ = *p.PathType
	}
	path := p.Path
	if path == "" && typ == networkingv1.PathTypeImplementationSpecific {
		path = "/"
	}
	if !strings.HasPrefix(path, "/") || strings.Contains(path, "//") {
		return "", "", fmt.Errorf("path %q must be absolute and not contain //", p.Path)
	}
	switch typ {
	case networkingv1.PathTypeExact:
		return ir.MatchExact, path, nil
	case networkingv1.PathTypePrefix, networkingv1.PathTypeImplementationSpecific:
		if trimmed := strings.TrimRight(path, "/"); trimmed != "" {
			path = trimmed
		} else {
			path = "/"
		}
		return ir.MatchPrefix, path, nil
	}
	return "", "", fmt.Errorf("pathType %q is not supported", typ)
}

// ingressBackend resolves a Service backend in the Ingress's cluster and namespace. What cannot
// be served (a resource backend, a missing Service or port) becomes a backend without endpoints,
// which the proxy answers with 503, and a Warning notice: the rest of the Ingress keeps working.
func (t *translator) ingressBackend(o snapshot.Object[networkingv1.Ingress], b networkingv1.IngressBackend, where string, pol *proxyPolicy) ir.Backend {
	ing, ref := o.Obj, ingressRef(o)
	if r := b.Resource; r != nil {
		t.notice(ref, corev1.EventTypeWarning, "UnsupportedBackend", "%s: resource backend %s/%s %s is not supported; requests get 503", where, ptrStr(r.APIGroup), r.Kind, r.Name)
		return ir.Backend{Name: fmt.Sprintf("%s/%s/%s.%s:%s", o.Cluster, ing.Namespace, r.Kind, ptrStr(r.APIGroup), r.Name), Weight: 1}
	}
	s := b.Service
	if s == nil {
		t.notice(ref, corev1.EventTypeWarning, "BackendNotFound", "%s: backend names neither a service nor a resource; requests get 503", where)
		return ir.Backend{Name: fmt.Sprintf("%s/%s/<none>", o.Cluster, ing.Namespace), Weight: 1}
	}
	port := s.Port.Name
	if port == "" {
		port = strconv.Itoa(int(s.Port.Number))
	}
	be := ir.Backend{Name: o.Cluster + "/" + ing.Namespace + "/" + s.Name + ":" + port, Weight: 1}
	fail := func(format string, args ...any) ir.Backend {
		t.notice(ref, corev1.EventTypeWarning, "BackendNotFound", "%s: %s; requests get 503", where, fmt.Sprintf(format, args...))
		return be
	}
	svc := t.idx.services[nsName{o.Cluster, ing.Namespace, s.Name}]
	if svc == nil {
		return fail("Service %s/%s not found", ing.Namespace, s.Name)
	}
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		return fail("Service %s/%s is of type ExternalName, which is not supported", ing.Namespace, s.Name)
	}
	i := slices.IndexFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool {
		return cmp.Or(p.Protocol, corev1.ProtocolTCP) == corev1.ProtocolTCP &&
			(s.Port.Name != "" && p.Name == s.Port.Name || s.Port.Name == "" && p.Port == s.Port.Number)
	})
	if i < 0 {
		return fail("Service %s/%s has no TCP port %s", ing.Namespace, s.Name, port)
	}
	sp := svc.Spec.Ports[i]
	be.Name = o.Cluster + "/" + ing.Namespace + "/" + s.Name + ":" + strconv.Itoa(int(sp.Port))
	if app, ok := useHTTP.appProtocol(sp.AppProtocol); ok {
		be.AppProtocol = app
	}
	var notes endpointNotes
	be.Endpoints, notes = t.endpoints(pol, o.Cluster, ing.Namespace, s.Name, sp.Name, corev1.ProtocolTCP)
	for _, n := range notes.notes(where + ": Service " + ing.Namespace + "/" + s.Name) {
		t.notice(ref, corev1.EventTypeWarning, n.reason, "%s", n.msg)
	}
	return be
}

// ingressCerts loads the Secrets of an Ingress's spec.tls. An entry without hosts serves any SNI.
func (t *translator) ingressCerts(o snapshot.Object[networkingv1.Ingress]) []ir.Certificate {
	ing, ref := o.Obj, ingressRef(o)
	var out []ir.Certificate
	for i, e := range ing.Spec.TLS {
		if e.SecretName == "" {
			t.notice(ref, corev1.EventTypeWarning, "InvalidCertificate", "tls %d: no secretName; TLS for %v is not served", i, e.Hosts)
			continue
		}
		sec := t.idx.secrets[nsName{o.Cluster, ing.Namespace, e.SecretName}]
		if sec == nil {
			t.notice(ref, corev1.EventTypeWarning, "InvalidCertificate", "tls %d: Secret %s/%s not found", i, ing.Namespace, e.SecretName)
			continue
		}
		crt, key := sec.Data[corev1.TLSCertKey], sec.Data[corev1.TLSPrivateKeyKey]
		if _, err := tls.X509KeyPair(crt, key); err != nil {
			t.notice(ref, corev1.EventTypeWarning, "InvalidCertificate", "tls %d: Secret %s/%s: %v", i, ing.Namespace, e.SecretName, err)
			continue
		}
		c := ir.Certificate{Name: ing.Namespace + "/" + e.SecretName, CertPEM: crt, KeyPEM: key}
		for _, h := range e.Hosts {
			c.Hostnames = append(c.Hostnames, strings.ToLower(h))
		}
		out = append(out, c)
	}
	return out
}

// Annotations that redirect an Ingress's plain-HTTP requests to HTTPS with a 308, as
// ingress-nginx does: ssl-redirect for the hosts its spec.tls covers (ingress-nginx's own
// annotations are honoured for migration; fleetgate's wins when both are set), force-ssl-redirect
// for every host, TLS terminated in front of the proxy or not.
const (
	annotationSSLRedirect           = "fleetgate.dev/ssl-redirect"
	annotationNginxSSLRedirect      = "nginx.ingress.kubernetes.io/ssl-redirect"
	annotationNginxForceSSLRedirect = "nginx.ingress.kubernetes.io/force-ssl-redirect"
)

// sslRedirect reports whether plain-HTTP requests for host ("" for rules without one) of the
// Ingress are redirected to HTTPS. Without force, only a host its spec.tls names (or an entry
// without hosts covers) is, and only while the Ingress has a usable certificate (servesTLS):
// otherwise the redirect would lead to a port that does not answer.
func sslRedirect(ing *networkingv1.Ingress, host string, servesTLS bool) bool {
	a := ing.Annotations
	if a[annotationNginxForceSSLRedirect] == "true" {
		return true
	}
	on, ok := a[annotationSSLRedirect]
	if !ok {
		on = a[annotationNginxSSLRedirect]
	}
	if on != "true" || !servesTLS {
		return false
	}
	for _, e := range ing.Spec.TLS {
		if len(e.Hosts) == 0 {
			return true
		}
		for _, h := range e.Hosts {
			if h = strings.ToLower(h); h == host || (host != "" && ingressHostMatches(h, host)) {
				return true
			}
		}
	}
	return false
}

// httpsRedirect is r answering plain HTTP with a 308 to the same URL on HTTPS.
func httpsRedirect(r ir.Route) ir.Route {
	return ir.Route{Name: r.Name, Match: r.Match, Filters: ir.Filters{Redirect: &ir.Redirect{Scheme: "https", StatusCode: 308}}}
}

// ingressHostMatches reports whether an Ingress rule host (exact, "*.suffix" covering exactly one
// label, or "" for any) matches the host h.
func ingressHostMatches(pattern, h string) bool {
	if pattern == "" || pattern == h {
		return true
	}
	suffix, ok := strings.CutPrefix(pattern, "*.")
	if !ok {
		return false
	}
	label, rest, ok := strings.Cut(h, ".")
	return ok && label != "" && label != "*" && rest == suffix
}

// virtualHosts lays out the gateway group's rules. A host some rule names gets its own paths (Exact first,
// then longest prefix first, then oldest), then those of the wildcard covering it, then the
// defaultBackend of the oldest Ingress naming it, and nothing else (404): the rules without host
// and the gateway group's fallback serve only hosts no rule names, so that one tenant's fallbacks never
// answer for another's host.
//
// On the plain-HTTP listener (plain), the rules whose Ingress asks for it redirect to HTTPS.
func (c *compiledIngress) virtualHosts(plain bool) []ir.VirtualHost {
	path := func(p ingressPath) ir.Route {
		if plain && p.toHTTPS {
			return httpsRedirect(p.route)
		}
		return p.route
	}
	fallback := func(fb *ir.Route, host string) ir.Route {
		if plain && c.toHTTPS[fb][host] {
			return httpsRedirect(*fb)
		}
		return *fb
	}
	byHost := map[string][]ingressPath{}
	for _, p := range c.paths {
		byHost[p.key.host] = append(byHost[p.key.host], p)
	}
	hosts := slices.Collect(maps.Keys(c.named))
	for _, ps := range byHost {
		slices.SortStableFunc(ps, func(a, b ingressPath) int {
			return cmp.Or(compareBool(a.key.typ == ir.MatchPrefix, b.key.typ == ir.MatchPrefix), -cmp.Compare(len(a.key.path), len(b.key.path)))
		})
	}
	slices.SortFunc(hosts, func(a, b string) int { return cmp.Or(compareSpecificity(a, b), cmp.Compare(a, b)) })
	var out []ir.VirtualHost
	for _, h := range hosts {
		vh := ir.VirtualHost{Hostname: h, SingleLabelWildcard: strings.HasPrefix(h, "*.")}
		for _, p := range byHost[h] {
			vh.Routes = append(vh.Routes, path(p))
		}
		for _, w := range hosts {
			if w != h && strings.HasPrefix(w, "*.") && ingressHostMatches(w, h) {
				for _, p := range byHost[w] {
					vh.Routes = append(vh.Routes, path(p))
				}
			}
		}
		if fb := c.hostFallback[h]; fb != nil {
			vh.Routes = append(vh.Routes, fallback(fb, h))
		}
		out = append(out, vh)
	}
	var rest []ir.Route
	for _, p := range byHost[""] {
		rest = append(rest, path(p))
	}
	if c.fallback != nil {
		rest = append(rest, fallback(c.fallback, ""))
	}
	if len(rest) > 0 {
		out = append(out, ir.VirtualHost{Hostname: "*", Routes: rest})
	}
	return out
}
