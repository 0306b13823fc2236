package translate

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/controllers/snapshot"
	"github.com/fleetgate/fleetgate/dataplane/ir"
	"github.com/fleetgate/fleetgate/providers"
)

// Ingress (networking.k8s.io/v1) rides the same pipeline as Gateways.
//
// # Classes
//
// An IngressClass is ours when spec.controller is v1alpha1.IngressControllerName. Its optional
// spec.parameters may name a cluster-scoped fleetgate.dev/GatewayClassConfig (provider, scope,
// in-cluster options); without parameters the class uses the in-cluster provider, Cluster scope.
// Bad parameters leave the class's Ingresses unserved and are reported on the class.
// An Ingress belongs to one of our classes when spec.ingressClassName names it; with no
// ingressClassName, when the deprecated kubernetes.io/ingress.class annotation names it; with
// neither, when it is the only IngressClass of its cluster (ours or not) annotated
// ingressclass.kubernetes.io/is-default-class: "true". With several default classes no Ingress
// without a class is taken, and each of our default classes is told.
//
// # Gateway keys
//
// All Ingresses of one class form one gateway (one ir.Config, one load balancer): keyed
// "<cluster>/ingress:<class>" for Cluster scope and "ingress:<class>" for Fleet scope, where the
// Ingresses of same-named Fleet classes of every member are merged. ':' cannot occur in a
// namespace, so the keys never collide with a Gateway's "<cluster>/<namespace>/<name>". A
// LoadBalancer Service is keyed "<cluster>/service:<namespace>/<name>" (see lbservice.go).
//
// # Rules
//
// As KEP-1453 and the API define them: Exact; Prefix element-wise with the trailing slash ignored;
// ImplementationSpecific is fleetgate's Prefix. Within a host Exact beats Prefix and the longer
// prefix wins. Hosts are exact or "*.suffix", which covers exactly one label. A request is tried
// against the rules of its exact host, then of the wildcard covering it, then of the rules without
// host, then the defaultBackend of the oldest Ingress that has one, else 404. Every rule is served
// on port 80, and on 443 too when some spec.tls entry has a usable Secret (chosen by SNI; an
// entry without hosts is the default certificate). A backend whose Service or port is missing,
// and every `resource` backend, answers 503 and is reported through an Event.
//
// # Conflicts
//
// The same host, path type and path in two Ingresses of one gateway, or in an Ingress and an
// HTTPRoute of one of our Gateways (a path-only match for the same hostname), is served by the
// oldest object (creation time, then namespace/name); the loser's path is dropped and it gets a
// Warning Event through Result.Notices.

// Annotations and labels of the Ingress API.
const (
	annotationIngressClass = "kubernetes.io/ingress.class"
	annotationDefaultClass = networkingv1.AnnotationIsDefaultIngressClass
	kindIngress            = "Ingress"
	kindIngressClass       = "IngressClass"
	kindService            = "Service"
	// defaultIngressNamespace is where a provider that creates Kubernetes objects puts an Ingress
	// class's proxy unless its GatewayClassConfig says (spec.ingressNamespace): a class has no
	// namespace of its own.
	defaultIngressNamespace = "default"
)

// Notice is something an object's owner should hear about that has no status field to live in,
// e.g. an Ingress that lost a path conflict. The controller turns each new notice into an Event.
type Notice struct {
	Ref     ObjectRef `json:"ref"`
	Type    string    `json:"type"` // Normal or Warning
	Reason  string    `json:"reason"`
	Message string    `json:"message"`
}

// IngressStatus is the status fleetgate owns on one Ingress: status.loadBalancer, filled by
// SetLoadBalancerStatus once its gateway is programmed.
type IngressStatus struct {
	Ref ObjectRef `json:"ref"`
	// Gateway is the key of the ir.Config and providers.LoadBalancer serving the Ingress.
	Gateway      string                                 `json:"gateway"`
	Ports        []networkingv1.IngressPortStatus       `json:"ports,omitempty"`
	LoadBalancer networkingv1.IngressLoadBalancerStatus `json:"loadBalancer"`
}

// ServiceStatus is the status fleetgate owns on one LoadBalancer Service of our classes.
type ServiceStatus struct {
	Ref          ObjectRef                  `json:"ref"`
	Gateway      string                     `json:"gateway"`
	Ports        []corev1.PortStatus        `json:"ports,omitempty"`
	IPMode       *corev1.LoadBalancerIPMode `json:"ipMode,omitempty"`
	LoadBalancer corev1.LoadBalancerStatus  `json:"loadBalancer"`
}

// SetLoadBalancerStatus writes the addresses of a programmed gateway into the status.loadBalancer
// of the Ingresses and Services it serves. Until the gateway is ready (provider up and proxies
// ACKed) the entries stay empty, so an address is only published once it serves. Pure.
func (r *Result) SetLoadBalancerStatus(gateway string, p Programmed) {
	if !p.Ready {
		return
	}
	for i := range r.Ingresses {
		st := &r.Ingresses[i]
		if st.Gateway != gateway {
			continue
		}
		st.LoadBalancer.Ingress = nil
		for _, a := range p.Addresses {
			e := networkingv1.IngressLoadBalancerIngress{Ports: slices.Clone(st.Ports)}
			setIPOrHostname(a, &e.IP, &e.Hostname)
			st.LoadBalancer.Ingress = append(st.LoadBalancer.Ingress, e)
		}
	}
	for i := range r.Services {
		st := &r.Services[i]
		if st.Gateway != gateway {
			continue
		}
		st.LoadBalancer.Ingress = nil
		for _, a := range p.Addresses {
			e := corev1.LoadBalancerIngress{Ports: slices.Clone(st.Ports)}
			setIPOrHostname(a, &e.IP, &e.Hostname)
			if e.IP != "" {
				e.IPMode = st.IPMode
			}
			st.LoadBalancer.Ingress = append(st.LoadBalancer.Ingress, e)
		}
	}
}

func setIPOrHostname(a gwv1.GatewayStatusAddress, ip, hostname *string) {
	if a.Type != nil && *a.Type == gwv1.HostnameAddressType {
		*hostname = a.Value
		return
	}
	*ip = a.Value
}

// ingressClass is one of our IngressClasses with its resolved parameters.
type ingressClass struct {
	cluster, name string
	ok            bool
	isDefault     bool
	provider      string
	scope         string
	parameters    json.RawMessage
	proxy         *proxyPolicy
	caps          providers.Capabilities
	// namespace is where its gateway's load balancer and proxies go.
	namespace string
	// params is what its GatewayClassConfig said (the embedded DNS publisher's config, addDNS).
	params *classInfo
}

// ingressGroup is the gateway of one Ingress class: every Ingress of it, oldest first.
type ingressGroup struct {
	key       string
	class     *ingressClass
	ingresses []snapshot.Object[networkingv1.Ingress]
}

func (t *translator) notice(ref ObjectRef, typ, reason, format string, args ...any) {
	t.res.Notices = append(t.res.Notices, Notice{Ref: ref, Type: typ, Reason: reason, Message: fmt.Sprintf(format, args...)})
}

// ingressClasses resolves our IngressClasses, keyed by cluster then name, and reports bad
// parameters and ambiguous defaults.
func (t *translator) ingressClasses() map[string]map[string]*ingressClass {
	out := map[string]map[string]*ingressClass{}
	defaults := map[string]int{} // default classes per cluster, any controller
	for _, o := range t.snap.IngressClasses {
		ic := o.Obj
		isDefault := ic.Annotations[annotationDefaultClass] == "true"
		if isDefault {
			defaults[o.Cluster]++
		}
		if ic.Spec.Controller != v1alpha1.IngressControllerName {
			continue
		}
		c := &ingressClass{cluster: o.Cluster, name: ic.Name, isDefault: isDefault}
		if err := t.ingressClassParams(o.Cluster, ic.Spec.Parameters, c); err != nil {
			t.notice(ObjectRef{Cluster: o.Cluster, Kind: kindIngressClass, Name: ic.Name}, corev1.EventTypeWarning,
				"InvalidParameters", "IngressClass %s is not served: %v", ic.Name, err)
		} else {
			c.ok = true
		}
		if out[o.Cluster] == nil {
			out[o.Cluster] = map[string]*ingressClass{}
		}
		out[o.Cluster][ic.Name] = c
	}
	for cluster, classes := range out {
		for _, c := range classes {
			if c.isDefault && defaults[cluster] > 1 {
				c.isDefault = false
				t.notice(ObjectRef{Cluster: cluster, Kind: kindIngressClass, Name: c.name}, corev1.EventTypeWarning, "MultipleDefaultClasses",
					"%d IngressClasses are marked default in cluster %s: Ingresses without a class are not served by fleetgate", defaults[cluster], cluster)
			}
		}
	}
	return out
}

func (t *translator) ingressClassParams(cluster string, p *networkingv1.IngressClassParametersReference, c *ingressClass) error {
	c.provider, c.scope, c.proxy, c.namespace = string(v1alpha1.ProviderInCluster), string(v1alpha1.ScopeCluster), defaultProxyPolicy(), defaultIngressNamespace
	if p == nil {
		var err error
		c.caps, err = t.capabilities(c.provider, nil)
		return err
	}
	if p.Scope != nil && *p.Scope != networkingv1.IngressClassParametersReferenceScopeCluster {
		return fmt.Errorf("parameters must be the cluster-scoped %s/GatewayClassConfig, not scope %s", v1alpha1.Group, *p.Scope)
	}
	ci := &classInfo{}
	ref := &gwv1.ParametersReference{Group: gwv1.Group(ptrStr(p.APIGroup)), Kind: gwv1.Kind(p.Kind), Name: p.Name}
	if err := t.resolveParams(cluster, ref, ci); err != nil {
		return err
	}
	c.provider, c.scope, c.parameters, c.proxy, c.caps, c.params = ci.provider, ci.scope, ci.parameters, ci.proxy, ci.caps, ci
	if ci.ingressNamespace != "" {
		c.namespace = ci.ingressNamespace
	}
	return nil
}

// ingressClassOf returns the class of ours that an Ingress belongs to, or nil.
func ingressClassOf(classes map[string]*ingressClass, ing *networkingv1.Ingress) *ingressClass {
	if n := ing.Spec.IngressClassName; n != nil {
		return classes[*n]
	}
	if n, ok := ing.Annotations[annotationIngressClass]; ok {
		return classes[n]
	}
	var def *ingressClass
	for _, c := range classes {
		if c.isDefault {
			def = c // isDefault survives only when it is the single default of the cluster
		}
	}
	return def
}

// IngressOfOurs tells whether ing belongs to an IngressClass of fleetgate's among classes (those
// of its cluster), by the rules above, whether or not the class's parameters are usable: its
// status may hold addresses fleetgate wrote.
func IngressOfOurs(classes []networkingv1.IngressClass, ing *networkingv1.Ingress) bool {
	ours := func(name string) bool {
		return slices.ContainsFunc(classes, func(c networkingv1.IngressClass) bool {
			return c.Name == name && c.Spec.Controller == v1alpha1.IngressControllerName
		})
	}
	if n := ing.Spec.IngressClassName; n != nil {
		return ours(*n)
	}
	if n, ok := ing.Annotations[annotationIngressClass]; ok {
		return ours(n)
	}
	var defaults []networkingv1.IngressClass
	for _, c := range classes {
		if c.Annotations[annotationDefaultClass] == "true" {
			defaults = append(defaults, c)
		}
	}
	return len(defaults) == 1 && defaults[0].Spec.Controller == v1alpha1.IngressControllerName
}

// ingressGroups groups the Ingresses of our usable classes by gateway key.
func (t *translator) ingressGroups() []*ingressGroup {
	classes := t.ingressClasses()
	byKey := map[string]*ingressGroup{}
	var groups []*ingressGroup
	for _, o := range t.snap.Ingresses {
		c := ingressClassOf(classes[o.Cluster], o.Obj)
		if c == nil || !c.ok {
			continue
		}
		key := o.Cluster + "/ingress:" + c.name
		if c.scope == string(v1alpha1.ScopeFleet) {
			key = "ingress:" + c.name
		}
		grp := byKey[key]
		if grp == nil {
			grp = &ingressGroup{key: key, class: c}
			byKey[key] = grp
			groups = append(groups, grp)
		}
		grp.ingresses = append(grp.ingresses, o)
	}
	slices.SortFunc(groups, func(a, b *ingressGroup) int { return cmp.Compare(a.key, b.key) })
	for _, grp := range groups {
		slices.SortStableFunc(grp.ingresses, olderIngress)
	}
	return groups
}

// olderIngress orders Ingresses by creation time, then namespace/name, then cluster.
func olderIngress(a, b snapshot.Object[networkingv1.Ingress]) int {
	return cmp.Or(
		a.Obj.CreationTimestamp.Compare(b.Obj.CreationTimestamp.Time),
		cmp.Compare(a.Obj.Namespace+"/"+a.Obj.Name, b.Obj.Namespace+"/"+b.Obj.Name),
		cmp.Compare(a.Cluster, b.Cluster),
	)
}

func ingressRef(o snapshot.Object[networkingv1.Ingress]) ObjectRef {
	return ObjectRef{Cluster: o.Cluster, Kind: kindIngress, Namespace: o.Obj.Namespace, Name: o.Obj.Name}
}

// emitIngress adds the config, load-balancer model and statuses of one compiled Ingress group.
func (t *translator) emitIngress(grp *ingressGroup, c *compiledIngress) {
	cfg := ir.Config{Gateway: grp.key, Limits: grp.class.proxy.limits}
	cfg.Listeners = append(cfg.Listeners, ir.Listener{Name: "http-80", Port: 80, Protocol: ir.ProtocolHTTP, VirtualHosts: c.virtualHosts(true)})
	ports := []networkingv1.IngressPortStatus{{Port: 80, Protocol: corev1.ProtocolTCP}}
	if len(c.certs) > 0 {
		cfg.Listeners = append(cfg.Listeners, ir.Listener{Name: "https-443", Port: 443, Protocol: ir.ProtocolHTTPS,
			Certificates: c.certs, VirtualHosts: c.virtualHosts(false)})
		ports = append(ports, networkingv1.IngressPortStatus{Port: 443, Protocol: corev1.ProtocolTCP})
	}
	lb := providers.LoadBalancer{
		Gateway: grp.key, Namespace: grp.class.namespace, Name: "ingress-" + grp.class.name,
		Class: grp.class.name, Provider: grp.class.provider, Scope: grp.class.scope, Parameters: grp.class.parameters,
	}
	if grp.class.params != nil {
		t.addDNS(grp.class.params, grp.key)
	}
	for _, o := range grp.ingresses {
		if !slices.Contains(lb.Clusters, o.Cluster) {
			lb.Clusters = append(lb.Clusters, o.Cluster)
		}
		t.res.Ingresses = append(t.res.Ingresses, IngressStatus{Ref: ingressRef(o), Gateway: grp.key, Ports: ports})
	}
	slices.Sort(lb.Clusters)
	for _, l := range cfg.Listeners {
		lb.Ports = append(lb.Ports, providers.Port{Port: int32(l.Port), Transport: providers.TransportTCP, Protocol: string(l.Protocol)})
	}
	t.res.Configs = append(t.res.Configs, cfg)
	t.res.LoadBalancers = append(t.res.LoadBalancers, lb)
}

// sortExtras orders the Ingress, Service and notice lists of the result.
func (t *translator) sortExtras() {
	r := t.res
	slices.SortStableFunc(r.Ingresses, func(a, b IngressStatus) int { return a.Ref.compare(b.Ref) })
	slices.SortStableFunc(r.Services, func(a, b ServiceStatus) int { return a.Ref.compare(b.Ref) })
	slices.SortStableFunc(r.Notices, func(a, b Notice) int {
		return cmp.Or(a.Ref.compare(b.Ref), cmp.Compare(a.Reason, b.Reason), cmp.Compare(a.Message, b.Message))
	})
	r.Notices = slices.Compact(r.Notices)
}

// lowerProto is "tcp" or "udp" for listener names.
func lowerProto(p corev1.Protocol) string { return strings.ToLower(string(p)) }
