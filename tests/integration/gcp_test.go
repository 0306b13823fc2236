package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/compute/apiv1/computepb"
	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1a2 "sigs.k8s.io/gateway-api/apis/v1alpha2"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/controllers"
	"github.com/fleetgate/fleetgate/providers/gcp"
	"github.com/fleetgate/fleetgate/providers/gcp/gcpfake"
	"github.com/fleetgate/fleetgate/tests/testbed"
)

const gcpProject = "fleet-project"

// gcpEnv is a real API server, the operator with the GCP provider, and the compute fake, which
// takes only tokens it issued for the keys it made.
type gcpEnv struct {
	t    *testing.T
	c    *testbed.Cluster
	fake *gcpfake.Server
}

// newGCPEnv starts the fake with auth on, gives the operator application default credentials (a
// key file, as GOOGLE_APPLICATION_CREDENTIALS names it) and classes a key Secret, and runs the
// operator with the gcp provider.
func newGCPEnv(t *testing.T) *gcpEnv {
	t.Helper()
	e := &gcpEnv{t: t, c: testbed.ForTest(t, "hub")[0], fake: gcpfake.NewServer(t)}
	e.fake.RequireAuth()
	adc, err := e.fake.NewServiceAccountKey(gcpProject, "operator@"+gcpProject+".iam.gserviceaccount.com")
	must(t, err)
	adcFile := filepath.Join(t.TempDir(), "adc.json")
	must(t, os.WriteFile(adcFile, adc, 0o600))
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", adcFile)
	classKey, err := e.fake.NewServiceAccountKey(gcpProject, "lb@"+gcpProject+".iam.gserviceaccount.com")
	must(t, err)
	ctx := t.Context()
	must(t, e.c.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gcp-creds"}}))
	must(t, e.c.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "gcp-creds", Name: "sa"},
		Data: map[string][]byte{"key.json": classKey}}))
	p, err := gcp.New(gcp.Options{
		Fleet:    "it-fleet",
		Defaults: v1alpha1.GCPOptions{Project: gcpProject, Region: "europe-west1", Endpoint: e.fake.URL()},
		Secrets:  secretsOf(e.c.Client),
		Retries:  gcp.Retries{MaxAttempts: 3, Initial: time.Millisecond, Max: 10 * time.Millisecond, Timeout: 10 * time.Second, Operation: 10 * time.Second},
		Log:      testr.New(t),
	})
	must(t, err)
	t.Cleanup(p.Close)
	runWithProvider(t, e.c, string(v1alpha1.ProviderGCP), p, controllers.Options{})
	return e
}

// TestGCPProvisioning runs Gateways of the global L7 and the network L4 classes, an Ingress and a
// LoadBalancer Service on a real API server against the compute fake: the resources are what the
// objects ask for, every object gets its load balancer's IP, a change costs only its own calls,
// and deleting everything leaves nothing.
func TestGCPProvisioning(t *testing.T) {
	e := newGCPEnv(t)
	ctx, cl := t.Context(), e.c.Client
	creds := &v1alpha1.GCPCredentials{SecretRef: &v1alpha1.ObjectRef{Namespace: "gcp-creds", Name: "sa"}}
	for name, typ := range map[string]v1alpha1.GCPLoadBalancerType{"gcp-global": v1alpha1.GCPGlobal, "gcp-network": v1alpha1.GCPNetwork} {
		must(t, cl.Create(ctx, &v1alpha1.GatewayClassConfig{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1alpha1.GatewayClassConfigSpec{Provider: v1alpha1.ProviderGCP,
				GCP: &v1alpha1.GCPOptions{LoadBalancerType: typ, Credentials: creds, Labels: map[string]string{"team": "edge"}}}}))
		must(t, cl.Create(ctx, &gwv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: gwv1.GatewayClassSpec{ControllerName: v1alpha1.ControllerName,
				ParametersRef: &gwv1.ParametersReference{Group: v1alpha1.Group, Kind: "GatewayClassConfig", Name: name}}}))
	}
	e.backend("web", corev1.ProtocolTCP, 8080, "10.0.1.10", "10.0.2.10")
	e.backend("canary", corev1.ProtocolTCP, 8080, "10.0.1.11")
	e.backend("tcp", corev1.ProtocolTCP, 9000, "10.0.1.20")
	must(t, cl.Create(ctx, &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "l7"},
		Spec: gwv1.GatewaySpec{GatewayClassName: "gcp-global",
			Listeners: []gwv1.Listener{{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType}}}}))
	must(t, cl.Create(ctx, gcpRoute()))
	must(t, cl.Create(ctx, &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "l4"},
		Spec: gwv1.GatewaySpec{GatewayClassName: "gcp-network",
			Listeners: []gwv1.Listener{{Name: "tcp", Port: 9000, Protocol: gwv1.TCPProtocolType}}}}))
	must(t, cl.Create(ctx, &gwv1a2.TCPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "tcp"},
		Spec: gwv1a2.TCPRouteSpec{CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "l4"}}},
			Rules: []gwv1a2.TCPRouteRule{{BackendRefs: []gwv1.BackendRef{{BackendObjectReference: gwv1.BackendObjectReference{
				Name: "tcp", Port: ptr.To[gwv1.PortNumber](9000)}}}}}}}))
	must(t, cl.Create(ctx, &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "gcp"},
		Spec: networkingv1.IngressClassSpec{Controller: v1alpha1.IngressControllerName,
			Parameters: &networkingv1.IngressClassParametersReference{APIGroup: ptr.To(v1alpha1.Group), Kind: "GatewayClassConfig", Name: "gcp-global"}}}))
	must(t, cl.Create(ctx, &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "shop"},
		Spec: networkingv1.IngressSpec{IngressClassName: ptr.To("gcp"),
			Rules: []networkingv1.IngressRule{ingressRule("shop.example.com", ingressPath(networkingv1.PathTypePrefix, "/", "web"))}}}))
	// A LoadBalancer Service of class gcp: the operator's defaults and its own credentials.
	must(t, cl.Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "dns"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, LoadBalancerClass: ptr.To(v1alpha1.LoadBalancerClassGCP),
			Ports: []corev1.ServicePort{{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt32(53)}}}}))
	e.slice("dns", corev1.ProtocolUDP, 53, "10.0.2.30")

	// Every object gets the IP of its own load balancer: global ones from the global range,
	// regional ones from the regional range.
	l7 := e.address(func(ctx context.Context) ([]string, error) { return gatewayIPs(ctx, cl, "l7") })
	l4 := e.address(func(ctx context.Context) ([]string, error) { return gatewayIPs(ctx, cl, "l4") })
	ing := e.address(func(ctx context.Context) ([]string, error) {
		var o networkingv1.Ingress
		err := cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: "shop"}, &o)
		return lbIPs(o.Status.LoadBalancer.Ingress), err
	})
	svc := e.address(func(ctx context.Context) ([]string, error) {
		var o corev1.Service
		err := cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: "dns"}, &o)
		var ips []string
		for _, i := range o.Status.LoadBalancer.Ingress {
			ips = append(ips, i.IP)
		}
		return ips, err
	})
	for what, ip := range map[string]string{"l7 Gateway": l7, "Ingress": ing} {
		if !strings.HasPrefix(ip, "203.0.113.") {
			t.Errorf("%s address %s is not a global address", what, ip)
		}
	}
	for what, ip := range map[string]string{"l4 Gateway": l4, "Service": svc} {
		if !strings.HasPrefix(ip, "198.51.100.") {
			t.Errorf("%s address %s is not a regional address", what, ip)
		}
	}
	t.Logf("addresses: l7 Gateway %s, Ingress %s, l4 Gateway %s, Service %s", l7, ing, l4, svc)
	if l7 == ing || l4 == svc {
		t.Errorf("objects share a load balancer: l7 %s, Ingress %s, l4 %s, Service %s", l7, ing, l4, svc)
	}

	// The L7 URL map says what the route asks for.
	um := e.urlMapWith("canary")
	rules := um.GetPathMatchers()[0].GetRouteRules()
	want := map[string]bool{"header match": false, "weights 3:1": false, "redirect": false, "rewrite": false, "header action": false}
	for _, r := range rules {
		for _, m := range r.GetMatchRules() {
			if slices.ContainsFunc(m.GetHeaderMatches(), func(h *computepb.HttpHeaderMatch) bool { return h.GetHeaderName() == "x-env" }) {
				want["header match"] = true
			}
		}
		if ws := r.GetRouteAction().GetWeightedBackendServices(); len(ws) == 2 && ws[0].GetWeight()*ws[1].GetWeight() == 3 {
			want["weights 3:1"] = true
		}
		if r.GetUrlRedirect().GetHttpsRedirect() {
			want["redirect"] = true
		}
		if r.GetRouteAction().GetUrlRewrite().GetPathPrefixRewrite() == "/v2" {
			want["rewrite"] = true
		}
		if len(r.GetHeaderAction().GetRequestHeadersToAdd()) > 0 {
			want["header action"] = true
		}
	}
	for what, found := range want {
		if !found {
			t.Errorf("no route rule with a %s in %v", what, rules)
		}
	}
	// NEGs hold the endpoints with their VMs.
	var endpoints []string
	for _, k := range e.fake.Keys("networkEndpointGroups") {
		for _, ep := range e.fake.Endpoints(k) {
			endpoints = append(endpoints, ep.GetIpAddress()+"@"+ep.GetInstance())
		}
	}
	slices.Sort(endpoints)
	if diff := slices.Compact(endpoints); !slices.Contains(diff, "10.0.1.10@node-0") || !slices.Contains(diff, "10.0.2.30@node-0") {
		t.Errorf("NEG endpoints %v lack the backends'", endpoints)
	}

	// A weight changes: only the L7 URL map is updated.
	e.fake.ResetCalls()
	var r gwv1.HTTPRoute
	must(t, cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: "web"}, &r))
	r.Spec.Rules[1].BackendRefs[1].Weight = ptr.To[int32](2)
	must(t, cl.Update(ctx, &r))
	testbed.Eventually(t, 30*time.Second, func() error {
		if m := e.mutations(); len(m) == 0 {
			return fmt.Errorf("no call yet")
		}
		return nil
	})
	time.Sleep(2 * time.Second) // anything else the change would (wrongly) cause
	m := e.mutations()
	t.Logf("a weight change: %v", m)
	if len(m) != 1 || !strings.HasPrefix(m[0], "PUT ") || !strings.Contains(m[0], "/global/urlMaps/") {
		t.Errorf("a weight change made %v, want one URL map update", m)
	}

	// Deleting everything leaves nothing.
	for _, o := range []client.Object{
		&gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "l7"}},
		&gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "l4"}},
		&networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "shop"}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "dns"}},
	} {
		must(t, cl.Delete(ctx, o))
	}
	testbed.Eventually(t, 60*time.Second, func() error {
		var left []string
		for _, c := range []string{"addresses", "firewalls", "healthChecks", "networkEndpointGroups", "backendServices", "sslCertificates",
			"urlMaps", "targetHttpProxies", "targetHttpsProxies", "forwardingRules"} {
			left = append(left, e.fake.Keys(c)...)
		}
		if len(left) > 0 {
			return fmt.Errorf("left: %v", left)
		}
		return nil
	})
}

// gcpRoute has a header match, a 3:1 split, an HTTPS redirect, a rewrite and a header modifier.
func gcpRoute() *gwv1.HTTPRoute {
	be := func(name string, w int32) gwv1.HTTPBackendRef {
		return gwv1.HTTPBackendRef{BackendRef: gwv1.BackendRef{Weight: ptr.To(w), BackendObjectReference: gwv1.BackendObjectReference{
			Name: gwv1.ObjectName(name), Port: ptr.To[gwv1.PortNumber](80)}}}
	}
	prefix := func(p string) []gwv1.HTTPRouteMatch {
		return []gwv1.HTTPRouteMatch{{Path: &gwv1.HTTPPathMatch{Type: ptr.To(gwv1.PathMatchPathPrefix), Value: ptr.To(p)}}}
	}
	return &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: gwv1.HTTPRouteSpec{CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "l7"}}},
			Hostnames: []gwv1.Hostname{"www.example.com"},
			Rules: []gwv1.HTTPRouteRule{
				{Matches: []gwv1.HTTPRouteMatch{{Path: &gwv1.HTTPPathMatch{Type: ptr.To(gwv1.PathMatchExact), Value: ptr.To("/env")},
					Headers: []gwv1.HTTPHeaderMatch{{Name: "x-env", Value: "prod"}}}},
					Filters: []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterRequestHeaderModifier,
						RequestHeaderModifier: &gwv1.HTTPHeaderFilter{Set: []gwv1.HTTPHeader{{Name: "x-via", Value: "gcp"}}}}},
					BackendRefs: []gwv1.HTTPBackendRef{be("web", 1)}},
				{Matches: prefix("/shop"), BackendRefs: []gwv1.HTTPBackendRef{be("web", 3), be("canary", 1)}},
				{Matches: prefix("/old"), Filters: []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterRequestRedirect,
					RequestRedirect: &gwv1.HTTPRequestRedirectFilter{Scheme: ptr.To("https"), StatusCode: ptr.To(301)}}}},
				{Matches: prefix("/api"), Filters: []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterURLRewrite,
					URLRewrite: &gwv1.HTTPURLRewriteFilter{Path: &gwv1.HTTPPathModifier{Type: gwv1.PrefixMatchHTTPPathModifier, ReplacePrefixMatch: ptr.To("/v2")}}}},
					BackendRefs: []gwv1.HTTPBackendRef{be("web", 1)}},
			}}}
}

// backend creates a selectorless Service on port 80 (or port for L4) and its EndpointSlice.
func (e *gcpEnv) backend(name string, proto corev1.Protocol, port int32, ips ...string) {
	svcPort := int32(80)
	if proto != corev1.ProtocolTCP || port == 9000 {
		svcPort = port
	}
	must(e.t, e.c.Client.Create(e.t.Context(), &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "p", Port: svcPort, Protocol: proto, TargetPort: intstr.FromInt32(port)}}}}))
	e.slice(name, proto, port, ips...)
}

// slice publishes ips as the EndpointSlice controller would, with the zone and node GCE needs.
func (e *gcpEnv) slice(svc string, proto corev1.Protocol, port int32, ips ...string) {
	eps := make([]discoveryv1.Endpoint, 0, len(ips))
	for i, ip := range ips {
		eps = append(eps, discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
			Zone: ptr.To("europe-west1-" + string(rune('b'+i%2))), NodeName: ptr.To(fmt.Sprintf("node-%d", i))})
	}
	name := "p"
	if svc == "dns" {
		name = "dns"
	}
	must(e.t, e.c.Client.Create(e.t.Context(), &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: svc + "-1",
			Labels: map[string]string{discoveryv1.LabelServiceName: svc, discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io"}},
		AddressType: discoveryv1.AddressTypeIPv4, Endpoints: eps,
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To(name), Port: ptr.To(port), Protocol: ptr.To(proto)}},
	}))
}

// address waits for ips to report one address and returns it.
func (e *gcpEnv) address(ips func(context.Context) ([]string, error)) string {
	var addr string
	testbed.Eventually(e.t, 60*time.Second, func() error {
		got, err := ips(e.t.Context())
		if err != nil {
			return err
		}
		if len(got) != 1 || got[0] == "" {
			return fmt.Errorf("addresses %v", got)
		}
		addr = got[0]
		return nil
	})
	return addr
}

func gatewayIPs(ctx context.Context, cl client.Client, name string) ([]string, error) {
	var gw gwv1.Gateway
	if err := cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, &gw); err != nil {
		return nil, err
	}
	if !meta.IsStatusConditionTrue(gw.Status.Conditions, string(gwv1.GatewayConditionProgrammed)) {
		return nil, fmt.Errorf("gateway %s not programmed: %+v", name, gw.Status.Conditions)
	}
	var ips []string
	for _, a := range gw.Status.Addresses {
		ips = append(ips, a.Value)
	}
	return ips, nil
}

func lbIPs(in []networkingv1.IngressLoadBalancerIngress) []string {
	var ips []string
	for _, i := range in {
		ips = append(ips, i.IP)
	}
	return ips
}

// urlMapWith is the URL map whose route rules reach a backend service of backend.
func (e *gcpEnv) urlMapWith(backend string) *computepb.UrlMap {
	e.t.Helper()
	for _, k := range e.fake.Keys("urlMaps") {
		um, ok := gcpfake.Get[*computepb.UrlMap](e.fake, k)
		if !ok {
			continue
		}
		for _, pm := range um.GetPathMatchers() {
			for _, r := range pm.GetRouteRules() {
				for _, w := range r.GetRouteAction().GetWeightedBackendServices() {
					bs, ok := gcpfake.Get[*computepb.BackendService](e.fake, strings.TrimPrefix(w.GetBackendService(), gcpfake.LinkPrefix))
					if ok && strings.Contains(bs.GetDescription(), "default/"+backend+":") {
						return um
					}
				}
			}
		}
	}
	e.t.Fatalf("no URL map reaches %s", backend)
	return nil
}

func (e *gcpEnv) mutations() []string {
	var out []string
	for _, c := range e.fake.Mutations() {
		out = append(out, c.Method+" "+c.Path)
	}
	return out
}
