package integration

import (
	"crypto/tls"
	"fmt"
	"io"
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
	"github.com/fleetgate/fleetgate/tests/testbed"
)

func ingressPath(typ networkingv1.PathType, path, svc string) networkingv1.HTTPIngressPath {
	return networkingv1.HTTPIngressPath{Path: path, PathType: ptr.To(typ), Backend: networkingv1.IngressBackend{
		Service: &networkingv1.IngressServiceBackend{Name: svc, Port: networkingv1.ServiceBackendPort{Number: 80}}}}
}

func ingressRule(host string, paths ...networkingv1.HTTPIngressPath) networkingv1.IngressRule {
	return networkingv1.IngressRule{Host: host, IngressRuleValue: networkingv1.IngressRuleValue{
		HTTP: &networkingv1.HTTPIngressRuleValue{Paths: paths}}}
}

// ingressAddress waits until the Ingress's status.loadBalancer has an IP (written only once the
// proxy ACKed its config) and returns it.
func (e *trafficEnv) ingressAddress(ns, name string, timeout time.Duration) string {
	var ip string
	testbed.Eventually(e.t, timeout, func() error {
		var ing networkingv1.Ingress
		if err := e.c.Client.Get(e.t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &ing); err != nil {
			return err
		}
		if lb := ing.Status.LoadBalancer.Ingress; len(lb) != 1 || lb[0].IP == "" {
			return fmt.Errorf("Ingress %s status.loadBalancer = %+v, want one IP", name, ing.Status.LoadBalancer)
		}
		ip = ing.Status.LoadBalancer.Ingress[0].IP
		return nil
	})
	return ip
}

// answers waits until GET host+path through addr is answered by backend ("" means the status alone).
func (e *trafficEnv) answers(addr, host, path string, code int, backend string, timeout time.Duration) {
	e.t.Helper()
	testbed.Eventually(e.t, timeout, func() error {
		got, body := get(addr, host, path)
		if got != code || backend != "" && !strings.HasPrefix(body, backend+" ") {
			return fmt.Errorf("GET %s%s = %d %q, want %d from %q", host, path, got, body, code, backend)
		}
		return nil
	})
}

// TestIngressServesTraffic sends real requests through the local-mode proxy of an Ingress class:
// the KEP-1453 path table, single-label wildcard hosts, the default backend and 404 without it,
// TLS by SNI, the status address, conflicts told through Events, and a LoadBalancer Service
// forwarding TCP with its source ranges enforced, next to a Service of another class left alone.
func TestIngressServesTraffic(t *testing.T) {
	e := newTrafficEnv(t)
	e.backend(30, "a", 9080)
	e.backend(31, "b", 9080)
	e.backend(32, "fallback", 9080)
	ctx, c := t.Context(), e.c.Client

	must(t, c.Create(ctx, &networkingv1.IngressClass{
		ObjectMeta: metav1.ObjectMeta{Name: "fleetgate"},
		Spec:       networkingv1.IngressClassSpec{Controller: v1alpha1.IngressControllerName},
	}))
	crt, key, pool := testbed.SelfSignedPEM(t, "secure.example.com")
	must(t, c.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "secure-tls"},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{corev1.TLSCertKey: crt, corev1.TLSPrivateKeyKey: key},
	}))
	P, X, I := networkingv1.PathTypePrefix, networkingv1.PathTypeExact, networkingv1.PathTypeImplementationSpecific
	must(t, c.Create(ctx, &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: networkingv1.IngressSpec{
			IngressClassName: ptr.To("fleetgate"),
			DefaultBackend: &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
				Name: "fallback", Port: networkingv1.ServiceBackendPort{Name: "http"}}},
			TLS: []networkingv1.IngressTLS{{Hosts: []string{"secure.example.com"}, SecretName: "secure-tls"}},
			Rules: []networkingv1.IngressRule{
				ingressRule("www.example.com",
					ingressPath(P, "/foo/", "a"),
					ingressPath(X, "/exact", "b"),
					ingressPath(P, "/aaa/bb", "a"),
					ingressPath(P, "/aaa/bbb", "b"),
					ingressPath(I, "/impl", "b"),
					networkingv1.HTTPIngressPath{Path: "/bucket", PathType: ptr.To(P), Backend: networkingv1.IngressBackend{
						Resource: &corev1.TypedLocalObjectReference{APIGroup: ptr.To("k8s.example.com"), Kind: "StorageBucket", Name: "assets"}}},
				),
				ingressRule("*.wild.example.com", ingressPath(P, "/", "b")),
				ingressRule("secure.example.com", ingressPath(P, "/", "a")),
			},
		},
	}))

	ip := e.ingressAddress("default", "web", 60*time.Second)
	addr := net.JoinHostPort(ip, "80")
	// status.loadBalancer is written only after the proxy ACKed, so the first request must work.
	if code, body := get(addr, "www.example.com", "/foo"); code != http.StatusOK || !strings.HasPrefix(body, "a ") {
		t.Fatalf("first request after the address was published: %d %q, want 200 from a", code, body)
	}

	t.Run("KEP-1453 path table", func(t *testing.T) {
		for _, tt := range []struct{ path, want string }{
			{"/foo", "a"}, {"/foo/", "a"}, {"/foo/bar", "a"}, {"/foobar", "fallback"},
			{"/exact", "b"}, {"/exact/", "fallback"},
			{"/aaa/bbb", "b"}, {"/aaa/bbb/", "b"}, {"/aaa/bbb/c", "b"}, {"/aaa/bbbxyz", "fallback"},
			{"/aaa/bb", "a"}, {"/aaa/bb/c", "a"},
			{"/impl", "b"}, {"/impl/x", "b"}, {"/implx", "fallback"},
		} {
			if code, body := get(addr, "www.example.com", tt.path); code != http.StatusOK || !strings.HasPrefix(body, tt.want+" ") {
				t.Errorf("GET www.example.com%s = %d %q, want 200 from %s", tt.path, code, body, tt.want)
			}
		}
	})

	t.Run("resource backends answer 503", func(t *testing.T) {
		if code, body := get(addr, "www.example.com", "/bucket/x"); code != http.StatusServiceUnavailable {
			t.Errorf("GET www.example.com/bucket/x = %d %q, want 503", code, body)
		}
	})

	t.Run("wildcard hosts cover one label", func(t *testing.T) {
		for host, want := range map[string]string{
			"x.wild.example.com":   "b",
			"a.b.wild.example.com": "fallback",
			"wild.example.com":     "fallback",
			"unknown.example.com":  "fallback",
		} {
			if code, body := get(addr, host, "/"); code != http.StatusOK || !strings.HasPrefix(body, want+" ") {
				t.Errorf("GET %s/ = %d %q, want 200 from %s", host, code, body, want)
			}
		}
	})

	t.Run("TLS by SNI", func(t *testing.T) {
		hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
			DisableKeepAlives: true,
			TLSClientConfig:   &tls.Config{ServerName: "secure.example.com", RootCAs: pool},
		}}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+net.JoinHostPort(ip, "443")+"/x", nil)
		must(t, err)
		req.Host = "secure.example.com"
		res, err := hc.Do(req)
		if err != nil {
			t.Fatalf("HTTPS: %v", err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusOK || !strings.HasPrefix(string(body), "a ") {
			t.Errorf("HTTPS secure.example.com/x = %d %q, want 200 from a", res.StatusCode, body)
		}
	})

	t.Run("conflict: the older Ingress wins, the newer is told", func(t *testing.T) {
		must(t, c.Create(ctx, &networkingv1.Ingress{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "newer"},
			Spec: networkingv1.IngressSpec{IngressClassName: ptr.To("fleetgate"), Rules: []networkingv1.IngressRule{
				ingressRule("www.example.com", ingressPath(P, "/foo", "b"), ingressPath(P, "/new", "b")),
			}},
		}))
		e.answers(addr, "www.example.com", "/new", http.StatusOK, "b", 20*time.Second)
		e.answers(addr, "www.example.com", "/foo", http.StatusOK, "a", time.Second)
		testbed.Eventually(t, 20*time.Second, func() error {
			var evs eventsv1.EventList
			if err := c.List(ctx, &evs, client.InNamespace("default")); err != nil {
				return err
			}
			for _, ev := range evs.Items {
				if ev.Regarding.Kind == "Ingress" && ev.Regarding.Name == "newer" && ev.Reason == "IngressConflict" {
					return nil
				}
			}
			return fmt.Errorf("no IngressConflict Event for Ingress newer among %d events", len(evs.Items))
		})
	})

	t.Run("without a default backend unmatched requests get 404", func(t *testing.T) {
		ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}}
		update(t, c, ing, func() { ing.Spec.DefaultBackend = nil })
		e.answers(addr, "unknown.example.com", "/", http.StatusNotFound, "", 20*time.Second)
		e.answers(addr, "www.example.com", "/foobar", http.StatusNotFound, "", time.Second)
		e.answers(addr, "www.example.com", "/foo", http.StatusOK, "a", time.Second)
	})

	t.Run("LoadBalancer Service forwards TCP within its source ranges", func(t *testing.T) {
		e.loadBalancerService(t)
	})
}

// loadBalancerService exposes backend a through a Service of class fleetgate.dev/incluster and
// checks TCP forwarding, loadBalancerSourceRanges, and that a Service of another class is untouched.
func (e *trafficEnv) loadBalancerService(t *testing.T) {
	ctx, c := t.Context(), e.c.Client
	lbService := func(name, class string) *corev1.Service {
		return &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
			Spec: corev1.ServiceSpec{
				Type: corev1.ServiceTypeLoadBalancer, LoadBalancerClass: ptr.To(class),
				// Loopback clients: the proxy sees 127.0.0.1 (or the 198.18.0.x backends' range).
				LoadBalancerSourceRanges: []string{"127.0.0.0/8", "198.18.0.0/15"},
				Ports:                    []corev1.ServicePort{{Name: "http", Port: 8088, Protocol: corev1.ProtocolTCP}},
			},
		}
	}
	must(t, c.Create(ctx, lbService("other", "example.com/other-lb")))
	must(t, c.Create(ctx, lbService("lb", v1alpha1.LoadBalancerClassInCluster)))
	must(t, c.Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "lb-1",
			Labels: map[string]string{discoveryv1.LabelServiceName: "lb", discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To(int32(9080))}},
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{testbed.BackendIP(30)}}},
	}))
	var ip string
	testbed.Eventually(t, 60*time.Second, func() error {
		var svc corev1.Service
		if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "lb"}, &svc); err != nil {
			return err
		}
		lb := svc.Status.LoadBalancer.Ingress
		if len(lb) != 1 || lb[0].IP == "" || len(lb[0].Ports) != 1 || lb[0].Ports[0].Port != 8088 {
			return fmt.Errorf("status.loadBalancer = %+v, want one IP with port 8088", svc.Status.LoadBalancer)
		}
		ip = lb[0].IP
		return nil
	})
	addr := net.JoinHostPort(ip, "8088")
	// The proxy forwards bytes: the HTTP echo behind it answers as for any TCP client.
	if code, body := get(addr, "anything", "/tcp"); code != http.StatusOK || !strings.HasPrefix(body, "a ") {
		t.Fatalf("through the LoadBalancer Service: %d %q, want 200 from a", code, body)
	}

	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "lb"}}
	update(t, c, svc, func() { svc.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/8"} })
	e.answers(addr, "anything", "/tcp", 0, "", 20*time.Second) // connection dropped: outside the ranges
	update(t, c, svc, func() { svc.Spec.LoadBalancerSourceRanges = []string{"127.0.0.0/8", "198.18.0.0/15"} })
	e.answers(addr, "anything", "/tcp", http.StatusOK, "a", 20*time.Second)

	var other corev1.Service
	must(t, c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "other"}, &other))
	if len(other.Status.LoadBalancer.Ingress) != 0 {
		t.Errorf("Service of another class got status %+v", other.Status.LoadBalancer)
	}
}
