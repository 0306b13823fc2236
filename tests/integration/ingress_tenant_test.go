package integration

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/dataplane/ir"
	"github.com/fleetgate/fleetgate/tests/testbed"
)

// TestIngressTenantIsolation sends real requests through the local-mode proxy of an Ingress class
// shared by two teams in two namespaces. A host named by team-b's Ingress gets team-b's rules and
// then 404: never the defaultBackend of team-a's older Ingress (which answered before KEP-1453's
// "defaultBackend for the host" was followed). Hosts no rule names go to the defaultBackend of an
// Ingress without host rules once there is one. Team-b's backends that only an EndpointSlice of no
// known manager, or an address the class denies, lead to get 503 and never reach those echoes, and
// Events on the Ingress say why.
func TestIngressTenantIsolation(t *testing.T) {
	e := newTrafficEnv(t)
	ctx, c := t.Context(), e.c.Client
	for _, ns := range []string{"team-a", "team-b"} {
		must(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
	e.backendIn("team-a", 40, "a-app", 9080)
	e.backendIn("team-a", 41, "a-default", 9080)
	e.backendIn("team-b", 42, "b-api", 9080)
	e.backendIn("team-b", 43, "b-default", 9080)
	// "meta" stands for a metadata service: its address is one the class denies.
	e.backendIn("team-b", 45, "meta", 9080)
	// "evil" selects pods (so the EndpointSlice controller owns its slices) but is published by a
	// hand-written slice that claims no manager.
	e.backendIn("team-b", 44, "evil-target", 9080)
	must(t, c.Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "evil"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "evil"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
	}))
	must(t, c.Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "evil-1",
			Labels: map[string]string{discoveryv1.LabelServiceName: "evil"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To(int32(9080))}},
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{testbed.BackendIP(44)}}},
	}))

	must(t, c.Create(ctx, &v1alpha1.GatewayClassConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "tenants"},
		Spec: v1alpha1.GatewayClassConfigSpec{Provider: v1alpha1.ProviderInCluster, Proxy: &v1alpha1.ProxyOptions{
			DeniedEndpointCIDRs: append(ir.DefaultDeniedEndpointCIDRs(), testbed.BackendIP(45)+"/32"),
		}},
	}))
	must(t, c.Create(ctx, &networkingv1.IngressClass{
		ObjectMeta: metav1.ObjectMeta{Name: "fleetgate"},
		Spec: networkingv1.IngressClassSpec{Controller: v1alpha1.IngressControllerName, Parameters: &networkingv1.IngressClassParametersReference{
			APIGroup: ptr.To(v1alpha1.Group), Kind: "GatewayClassConfig", Name: "tenants", Scope: ptr.To(networkingv1.IngressClassParametersReferenceScopeCluster)}},
	}))
	P := networkingv1.PathTypePrefix
	backend := func(name string) *networkingv1.IngressBackend {
		return &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: name, Port: networkingv1.ServiceBackendPort{Number: 80}}}
	}
	must(t, c.Create(ctx, &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "a"},
		Spec: networkingv1.IngressSpec{IngressClassName: ptr.To("fleetgate"), DefaultBackend: backend("a-default"),
			Rules: []networkingv1.IngressRule{ingressRule("a.example.com", ingressPath(P, "/app", "a-app"))}},
	}))
	// Younger than team-a's (or as old, and after it by namespace), whose defaultBackend answered
	// for its unmatched paths before.
	must(t, c.Create(ctx, &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "b"},
		Spec: networkingv1.IngressSpec{IngressClassName: ptr.To("fleetgate"),
			Rules: []networkingv1.IngressRule{ingressRule("b.example.com",
				ingressPath(P, "/api", "b-api"), ingressPath(P, "/evil", "evil"), ingressPath(P, "/meta", "meta"))}},
	}))

	ip := e.ingressAddress("team-b", "b", 60*time.Second)
	addr := net.JoinHostPort(ip, "80")
	e.answers(addr, "b.example.com", "/api", http.StatusOK, "b-api", 20*time.Second)
	type req struct {
		host, path string
		code       int
		backend    string
	}
	check := func(when string, want []req) {
		t.Helper()
		for _, w := range want {
			code, body := get(addr, w.host, w.path)
			if code != w.code || w.backend != "" && !strings.HasPrefix(body, w.backend+" ") {
				t.Errorf("%s: GET %s%s = %d %q, want %d from %q", when, w.host, w.path, code, body, w.code, w.backend)
			}
		}
	}
	check("two teams", []req{
		{"a.example.com", "/app", 200, "a-app"},
		{"a.example.com", "/other", 200, "a-default"},
		{"b.example.com", "/api", 200, "b-api"},
		{"b.example.com", "/other", 404, ""}, // not team-a's defaultBackend
		{"b.example.com", "/", 404, ""},
		{"b.example.com", "/evil", 503, ""}, // the untrusted slice is ignored
		{"b.example.com", "/meta", 503, ""}, // the denied endpoint is never used
		{"nobody.example.com", "/", 200, "a-default"},
	})
	// One Event per reason and object: the events API folds notes of the same reason into a series.
	e.event("team-b", "b", "EndpointSliceIgnored", "EndpointSlice evil-1")
	e.event("team-b", "b", "EndpointDenied", testbed.BackendIP(45))

	// An Ingress without host rules takes the hosts no rule names, and nothing else.
	must(t, c.Create(ctx, &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "catch-all"},
		Spec:       networkingv1.IngressSpec{IngressClassName: ptr.To("fleetgate"), DefaultBackend: backend("b-default")},
	}))
	e.answers(addr, "nobody.example.com", "/", http.StatusOK, "b-default", 20*time.Second)
	check("with a catch-all Ingress", []req{
		{"a.example.com", "/other", 200, "a-default"},
		{"b.example.com", "/other", 404, ""},
		{"b.example.com", "/api", 200, "b-api"},
	})
	e.event("team-a", "a", "DefaultBackendForNamedHosts", "team-b/catch-all")
}

// event waits for an Event about Ingress ns/name with the reason and a note containing text.
func (e *trafficEnv) event(ns, name, reason, text string) {
	e.t.Helper()
	testbed.Eventually(e.t, 20*time.Second, func() error {
		var evs eventsv1.EventList
		if err := e.c.Client.List(e.t.Context(), &evs, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, ev := range evs.Items {
			if ev.Regarding.Kind == "Ingress" && ev.Regarding.Name == name && ev.Reason == reason && strings.Contains(ev.Note, text) {
				return nil
			}
		}
		return fmt.Errorf("no %s Event mentioning %q for Ingress %s/%s among %d", reason, text, ns, name, len(evs.Items))
	})
}
