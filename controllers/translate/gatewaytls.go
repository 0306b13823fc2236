package translate

import (
	"cmp"
	"crypto/tls"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// frontendValidation returns the client certificate validation that applies to a port of a
// Gateway: its perPort entry, else the default.
func frontendValidation(gw *gwv1.Gateway, port gwv1.PortNumber) *gwv1.FrontendTLSValidation {
	if gw.Spec.TLS == nil || gw.Spec.TLS.Frontend == nil {
		return nil
	}
	f := gw.Spec.TLS.Frontend
	for _, pp := range f.PerPort {
		if pp.Port == port {
			return pp.TLS.Validation
		}
	}
	return f.Default.Validation
}

// insecureFrontend says whether any of a Gateway's frontend validations allows insecure fallback.
func insecureFrontend(gw *gwv1.Gateway) bool {
	if gw.Spec.TLS == nil || gw.Spec.TLS.Frontend == nil {
		return false
	}
	f := gw.Spec.TLS.Frontend
	if v := f.Default.Validation; v != nil && v.Mode == gwv1.AllowInsecureFallback {
		return true
	}
	for _, pp := range f.PerPort {
		if v := pp.TLS.Validation; v != nil && v.Mode == gwv1.AllowInsecureFallback {
			return true
		}
	}
	return false
}

// listenerClientValidation resolves the frontend client certificate validation of an HTTPS
// listener. An unusable CA reference makes ResolvedRefs false; when none is usable the listener
// is not accepted, since serving it without the validation asked for would let anyone in.
func (t *translator) listenerClientValidation(l *listener) {
	if l.spec.Protocol != gwv1.HTTPSProtocolType {
		return // the spec scopes frontend validation to HTTPS listeners
	}
	g := validatingGateway(l)
	if g == nil {
		return
	}
	v := frontendValidation(g.object(), l.spec.Port)
	if v == nil {
		return
	}
	var pem []byte
	for i, ref := range v.CACertificateRefs {
		p, reason, msg := t.resolveFrontendCA(g, ref)
		if reason != "" {
			l.unresolved(reason, fmt.Sprintf("frontend validation caCertificateRefs[%d]: %s", i, msg))
			continue
		}
		pem = append(pem, p...)
	}
	if len(pem) == 0 {
		l.accept(false, string(gwv1.ListenerReasonNoValidCACertificate), "no frontend validation caCertificateRefs entry holds a usable CA certificate")
		return
	}
	l.clientValidation = &ir.ClientValidation{CACertPEM: pem, AllowInsecureFallback: v.Mode == gwv1.AllowInsecureFallback}
}

// validatingGateway is the Gateway whose spec.tls.frontend governs l: its own, or for a ListenerSet's
// listener the parent Gateway (in the set's cluster when the gateway spans several), so that a set
// cannot open an unvalidated port beside the Gateway's.
func validatingGateway(l *listener) *gatewayObject {
	if l.gateway != nil {
		return l.gateway
	}
	if l.set == nil || l.set.group == nil || len(l.set.group.gateways) == 0 {
		return nil
	}
	for _, g := range l.set.group.gateways {
		if g.obj.Cluster == l.set.obj.Cluster {
			return g
		}
	}
	return l.set.group.gateways[0]
}

func (t *translator) resolveFrontendCA(g *gatewayObject, ref gwv1.ObjectReference) ([]byte, gwv1.ListenerConditionReason, string) {
	gw := g.object()
	if ref.Group != "" || ref.Kind != "ConfigMap" {
		return nil, gwv1.ListenerReasonInvalidCACertificateKind, fmt.Sprintf("%s/%s is not a supported kind (core/ConfigMap)", ref.Group, ref.Kind)
	}
	ns := cmp.Or(ptrStr(ref.Namespace), gw.Namespace)
	cluster := g.obj.Cluster
	if !t.idx.permitted(cluster, groupKind{gwv1.GroupName, "Gateway"}, gw.Namespace, groupKind{"", "ConfigMap"}, ns, string(ref.Name)) {
		return nil, gwv1.ListenerReasonRefNotPermitted, fmt.Sprintf("ConfigMap %s/%s is not permitted by any ReferenceGrant", ns, ref.Name)
	}
	pem, msg := caBundle(t.idx.configMaps[nsName{cluster, ns, string(ref.Name)}], ns, string(ref.Name))
	if msg != "" {
		return nil, gwv1.ListenerReasonInvalidCACertificateRef, msg
	}
	return pem, "", ""
}

// resolveClientCert resolves a Gateway's spec.tls.backend.clientCertificateRef, the certificate
// the proxy presents to TLS backends. A bad reference leaves the Gateway accepted (only backend
// connections are affected) with ResolvedRefs false.
func (t *translator) resolveClientCert(g *gatewayObject) {
	gw := g.object()
	if gw.Spec.TLS == nil || gw.Spec.TLS.Backend == nil || gw.Spec.TLS.Backend.ClientCertificateRef == nil {
		return
	}
	ref := gw.Spec.TLS.Backend.ClientCertificateRef
	fail := func(reason gwv1.GatewayConditionReason, format string, args ...any) {
		g.clientCertReason, g.clientCertMsg = string(reason), "tls.backend.clientCertificateRef: "+fmt.Sprintf(format, args...)
	}
	group, kind := ptrStr(ref.Group), cmp.Or(ptrStr(ref.Kind), "Secret")
	ns := cmp.Or(ptrStr(ref.Namespace), gw.Namespace)
	if group != "" || kind != "Secret" {
		fail(gwv1.GatewayReasonInvalidClientCertificateRef, "%s/%s is not a supported kind (core/Secret)", group, kind)
		return
	}
	if !t.idx.permitted(g.obj.Cluster, groupKind{gwv1.GroupName, "Gateway"}, gw.Namespace, groupKind{"", "Secret"}, ns, string(ref.Name)) {
		fail(gwv1.GatewayReasonRefNotPermitted, "Secret %s/%s is not permitted by any ReferenceGrant", ns, ref.Name)
		return
	}
	sec := t.idx.secrets[nsName{g.obj.Cluster, ns, string(ref.Name)}]
	if sec == nil {
		fail(gwv1.GatewayReasonInvalidClientCertificateRef, "Secret %s/%s not found", ns, ref.Name)
		return
	}
	crt, key := sec.Data[corev1.TLSCertKey], sec.Data[corev1.TLSPrivateKeyKey]
	if _, err := tls.X509KeyPair(crt, key); err != nil {
		fail(gwv1.GatewayReasonInvalidClientCertificateRef, "Secret %s/%s: %v", ns, ref.Name, err)
		return
	}
	g.clientCert = &ir.Certificate{Name: ns + "/" + string(ref.Name), CertPEM: crt, KeyPEM: key}
}

// gatewayTLSConditions are the Gateway conditions of spec.tls: ResolvedRefs when a backend client
// certificate is set (the only Gateway-level reference), and InsecureFrontendValidationMode while
// some frontend validation allows insecure fallback.
func gatewayTLSConditions(g *gatewayObject, unresolvedListeners []string, gen int64) []metav1.Condition {
	gw := g.object()
	var out []metav1.Condition
	if gw.Spec.TLS != nil && gw.Spec.TLS.Backend != nil && gw.Spec.TLS.Backend.ClientCertificateRef != nil {
		typ := string(gwv1.GatewayConditionResolvedRefs)
		switch {
		case g.clientCertReason != "":
			out = append(out, cond(typ, false, g.clientCertReason, g.clientCertMsg, gen))
		case len(unresolvedListeners) > 0:
			out = append(out, cond(typ, false, string(gwv1.GatewayReasonListenersNotResolved), fmt.Sprintf("listeners with unresolved references: %v", unresolvedListeners), gen))
		default:
			out = append(out, cond(typ, true, string(gwv1.GatewayReasonResolvedRefs), "References are resolved", gen))
		}
	}
	if insecureFrontend(gw) {
		out = append(out, cond(string(gwv1.GatewayConditionInsecureFrontendValidationMode), true, string(gwv1.GatewayReasonConfigurationChanged),
			"Frontend client certificate validation allows connections without a valid certificate (AllowInsecureFallback)", gen))
	}
	return out
}
