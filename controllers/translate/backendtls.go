package translate

import (
	"cmp"
	"crypto/x509"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/controllers/snapshot"
	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// caCertKey is where a ConfigMap holds a CA bundle, for BackendTLSPolicy and frontend validation.
const caCertKey = "ca.crt"

// maxAncestors is the API's limit on status.ancestors.
const maxAncestors = 16

// PolicyStatus is the status fleetgate owns on one BackendTLSPolicy: one PolicyAncestorStatus per
// Gateway whose routes send traffic to a Service the policy targets. The writer keeps other
// controllers' entries.
type PolicyStatus struct {
	Ref        ObjectRef                   `json:"ref"`
	Generation int64                       `json:"generation"`
	Ancestors  []gwv1.PolicyAncestorStatus `json:"ancestors"`
}

// tlsPolicy is one BackendTLSPolicy, validated once per translation.
type tlsPolicy struct {
	obj snapshot.Object[gwv1.BackendTLSPolicy]
	// tls is how the proxy verifies the targeted backends; nil when the policy is not accepted,
	// and then the backends it wins fail rather than go unverified.
	tls            *ir.BackendTLS
	acceptedReason string // "" when accepted
	acceptedMsg    string
	resolvedReason string // "" when every reference resolved
	resolvedMsg    string
	conflictMsg    string // set when an older policy targets the same Service port
	ancestors      map[gatewayName]bool
}

// gatewayName is a Gateway namespace and name, the ancestors of a policy.
type gatewayName struct{ namespace, name string }

func (p *tlsPolicy) name() string { return p.obj.Obj.Namespace + "/" + p.obj.Obj.Name }

// policyTarget is one Service (port, by name; "" for all ports) a policy targets.
type policyTarget struct{ cluster, namespace, service, section string }

// compilePolicies validates every BackendTLSPolicy and resolves which one wins each target: the
// oldest, then the first by namespace/name, as GEP-713 orders conflicting policies.
func (t *translator) compilePolicies() {
	t.policyByTarget = map[policyTarget][]*tlsPolicy{}
	for _, o := range t.snap.BackendTLSPolicies {
		p := &tlsPolicy{obj: o, ancestors: map[gatewayName]bool{}}
		t.validatePolicy(p)
		t.policies = append(t.policies, p)
		for _, ref := range o.Obj.Spec.TargetRefs {
			if ref.Group != "" || ref.Kind != "Service" {
				continue // no other kind carries backend traffic here, so the policy has no effect on it
			}
			k := policyTarget{o.Cluster, o.Obj.Namespace, string(ref.Name), ptrStr(ref.SectionName)}
			if !slices.Contains(t.policyByTarget[k], p) {
				t.policyByTarget[k] = append(t.policyByTarget[k], p)
			}
		}
	}
	// Targets in a fixed order, so that a policy losing several conflicts always names the same winner.
	keys := slices.SortedFunc(maps.Keys(t.policyByTarget), func(a, b policyTarget) int {
		return cmp.Or(cmp.Compare(a.cluster, b.cluster), cmp.Compare(a.namespace, b.namespace), cmp.Compare(a.service, b.service), cmp.Compare(a.section, b.section))
	})
	for _, k := range keys {
		ps := t.policyByTarget[k]
		slices.SortStableFunc(ps, func(a, b *tlsPolicy) int {
			return cmp.Or(a.obj.Obj.CreationTimestamp.Compare(b.obj.Obj.CreationTimestamp.Time), cmp.Compare(a.name(), b.name()))
		})
		for _, loser := range ps[1:] {
			if loser.conflictMsg == "" {
				target := k.service
				if k.section != "" {
					target += " port " + k.section
				}
				loser.conflictMsg = fmt.Sprintf("Service %s is already targeted by the older BackendTLSPolicy %s", target, ps[0].name())
			}
		}
	}
}

func (t *translator) validatePolicy(p *tlsPolicy) {
	v := p.obj.Obj.Spec.Validation
	bt := &ir.BackendTLS{Hostname: string(v.Hostname)}
	for _, san := range v.SubjectAltNames {
		switch san.Type {
		case gwv1.HostnameSubjectAltNameType:
			bt.SubjectAltNames = append(bt.SubjectAltNames, ir.SubjectAltName{Type: ir.SANHostname, Value: string(san.Hostname)})
		case gwv1.URISubjectAltNameType:
			bt.SubjectAltNames = append(bt.SubjectAltNames, ir.SubjectAltName{Type: ir.SANURI, Value: string(san.URI)})
		default:
			p.acceptedReason, p.acceptedMsg = string(gwv1.PolicyReasonInvalid), fmt.Sprintf("subjectAltNames type %q is not supported", san.Type)
			return
		}
	}
	if w := v.WellKnownCACertificates; w != nil {
		if *w != gwv1.WellKnownCACertificatesSystem {
			p.acceptedReason, p.acceptedMsg = string(gwv1.PolicyReasonInvalid), fmt.Sprintf("wellKnownCACertificates %q is not supported", *w)
			return
		}
		bt.SystemRoots = true
	}
	var bad []string
	for i, ref := range v.CACertificateRefs {
		pem, reason, msg := t.resolveCA(p.obj.Cluster, p.obj.Obj.Namespace, ref)
		if reason != "" {
			if p.resolvedReason == "" {
				p.resolvedReason = reason
			}
			bad = append(bad, fmt.Sprintf("caCertificateRefs[%d]: %s", i, msg))
			continue
		}
		bt.CACertPEM = append(bt.CACertPEM, pem...)
	}
	if len(bad) > 0 {
		p.resolvedMsg = strings.Join(bad, "; ")
	}
	if len(bt.CACertPEM) == 0 && !bt.SystemRoots {
		p.acceptedReason = string(gwv1.BackendTLSPolicyReasonNoValidCACertificate)
		p.acceptedMsg = "no caCertificateRefs entry holds a usable CA certificate"
		return
	}
	p.tls = bt
}

// resolveCA reads the PEM bundle of a policy's caCertificateRefs entry: a ConfigMap in the
// policy's namespace, with the bundle under ca.crt.
func (t *translator) resolveCA(cluster, ns string, ref gwv1.LocalObjectReference) ([]byte, string, string) {
	if ref.Group != "" || ref.Kind != "ConfigMap" {
		return nil, string(gwv1.BackendTLSPolicyReasonInvalidKind), fmt.Sprintf("%s/%s is not a supported kind (core/ConfigMap)", ref.Group, ref.Kind)
	}
	pem, msg := caBundle(t.idx.configMaps[nsName{cluster, ns, string(ref.Name)}], ns, string(ref.Name))
	if msg != "" {
		return nil, string(gwv1.BackendTLSPolicyReasonInvalidCACertificateRef), msg
	}
	return pem, "", ""
}

// caBundle returns the CA certificates of a ConfigMap, or why it has none.
func caBundle(cm *corev1.ConfigMap, ns, name string) ([]byte, string) {
	if cm == nil {
		return nil, fmt.Sprintf("ConfigMap %s/%s not found", ns, name)
	}
	data := cm.Data[caCertKey]
	if data == "" {
		return nil, fmt.Sprintf("ConfigMap %s/%s has no %s", ns, name, caCertKey)
	}
	if !x509.NewCertPool().AppendCertsFromPEM([]byte(data)) {
		return nil, fmt.Sprintf("ConfigMap %s/%s: %s holds no PEM certificate", ns, name, caCertKey)
	}
	pem := []byte(data)
	if !strings.HasSuffix(data, "\n") {
		pem = append(pem, '\n')
	}
	return pem, ""
}

// backendPolicy returns the policy that applies to one Service port, and every policy that
// competed for it (they all report the route's Gateways as ancestors). A policy naming the port
// wins over one naming the whole Service.
func (t *translator) backendPolicy(cluster, ns, svc, port string) (*tlsPolicy, []*tlsPolicy) {
	if port != "" {
		if ps := t.policyByTarget[policyTarget{cluster, ns, svc, port}]; len(ps) > 0 {
			return ps[0], ps
		}
	}
	if ps := t.policyByTarget[policyTarget{cluster, ns, svc, ""}]; len(ps) > 0 {
		return ps[0], ps
	}
	return nil, nil
}

// tlsAppProtocol says whether a Service port's appProtocol allows speaking TLS to it.
func tlsAppProtocol(p *string) bool {
	switch ptrStr(p) {
	case "", "http", "HTTP", "https", "HTTPS", "kubernetes.io/https":
		return true
	}
	return false
}

// recordAncestors makes the Gateways a route names (ours) ancestors of the policies its backends use.
func (t *translator) recordAncestors(r *route) {
	if len(r.policies) == 0 {
		return
	}
	for _, ref := range r.parentRefs {
		grp, _ := t.findParent(r, ref)
		if grp == nil {
			continue
		}
		for _, p := range r.policies {
			p.ancestors[gatewayName{grp.namespace, grp.name}] = true
		}
	}
}

// policyStatuses emits the status of every policy that has ancestors.
func (t *translator) policyStatuses() {
	for _, p := range t.policies {
		if len(p.ancestors) == 0 {
			continue
		}
		gen := p.obj.Obj.Generation
		accepted := cond(string(gwv1.PolicyConditionAccepted), true, string(gwv1.PolicyReasonAccepted), "Policy is accepted", gen)
		switch {
		case p.conflictMsg != "":
			accepted = cond(string(gwv1.PolicyConditionAccepted), false, string(gwv1.PolicyReasonConflicted), p.conflictMsg, gen)
		case p.acceptedReason != "":
			accepted = cond(string(gwv1.PolicyConditionAccepted), false, p.acceptedReason, p.acceptedMsg, gen)
		}
		resolved := cond(string(gwv1.BackendTLSPolicyConditionResolvedRefs), true, string(gwv1.BackendTLSPolicyReasonResolvedRefs), "References are resolved", gen)
		if p.resolvedReason != "" {
			resolved = cond(string(gwv1.BackendTLSPolicyConditionResolvedRefs), false, p.resolvedReason, p.resolvedMsg, gen)
		}
		gws := make([]gatewayName, 0, len(p.ancestors))
		for a := range p.ancestors {
			gws = append(gws, a)
		}
		slices.SortFunc(gws, func(a, b gatewayName) int {
			return cmp.Or(cmp.Compare(a.namespace, b.namespace), cmp.Compare(a.name, b.name))
		})
		st := PolicyStatus{
			Ref:        ObjectRef{Cluster: p.obj.Cluster, Kind: "BackendTLSPolicy", Namespace: p.obj.Obj.Namespace, Name: p.obj.Obj.Name},
			Generation: gen,
		}
		for _, g := range gws[:min(len(gws), maxAncestors)] {
			ns := gwv1.Namespace(g.namespace)
			st.Ancestors = append(st.Ancestors, gwv1.PolicyAncestorStatus{
				AncestorRef:    gwv1.ParentReference{Group: &routeGroup, Kind: ptr.To(gwv1.Kind("Gateway")), Namespace: &ns, Name: gwv1.ObjectName(g.name)},
				ControllerName: gwv1.GatewayController(v1alpha1.ControllerName),
				Conditions:     []metav1.Condition{accepted, resolved},
			})
		}
		t.res.Policies = append(t.res.Policies, st)
	}
}
