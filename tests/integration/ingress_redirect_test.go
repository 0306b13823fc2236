package integration

import (
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/tests/testbed"
)

// TestIngressSSLRedirect sends real requests through the local-mode proxy of an Ingress with
// fleetgate.dev/ssl-redirect: plain HTTP for its TLS host gets a 308 to the same URL on https
// (with the proxy's Server header), its other host is served on plain HTTP, and HTTPS serves.
func TestIngressSSLRedirect(t *testing.T) {
	e := newTrafficEnv(t)
	e.backend(30, "a", 9080)
	ctx, c := t.Context(), e.c.Client
	crt, key, pool := testbed.SelfSignedPEM(t, "secure.example.com")
	P := networkingv1.PathTypePrefix
	must(t, c.Create(ctx, &networkingv1.IngressClass{
		ObjectMeta: metav1.ObjectMeta{Name: "fleetgate"},
		Spec:       networkingv1.IngressClassSpec{Controller: v1alpha1.IngressControllerName},
	}))
	must(t, c.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "secure-tls"},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{corev1.TLSCertKey: crt, corev1.TLSPrivateKeyKey: key},
	}))
	must(t, c.Create(ctx, &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", Annotations: map[string]string{"fleetgate.dev/ssl-redirect": "true"}},
		Spec: networkingv1.IngressSpec{
			IngressClassName: ptr.To("fleetgate"),
			TLS:              []networkingv1.IngressTLS{{Hosts: []string{"secure.example.com"}, SecretName: "secure-tls"}},
			Rules: []networkingv1.IngressRule{
				ingressRule("secure.example.com", ingressPath(P, "/", "a")),
				ingressRule("plain.example.com", ingressPath(P, "/", "a")),
			},
		},
	}))
	ip := e.ingressAddress("default", "web", 60*time.Second)

	noFollow := &http.Client{Timeout: 5 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Transport:     &http.Transport{DisableKeepAlives: true, TLSClientConfig: &tls.Config{ServerName: "secure.example.com", RootCAs: pool}}}
	type answer struct {
		Code             int
		Location, Server string
		Backend          string
	}
	do := func(scheme, port, host, path string) answer {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, scheme+"://"+net.JoinHostPort(ip, port)+path, nil)
		must(t, err)
		req.Host = host
		res, err := noFollow.Do(req)
		must(t, err)
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		backend, _, _ := strings.Cut(string(body), " ")
		if res.StatusCode != http.StatusOK {
			backend = ""
		}
		return answer{Code: res.StatusCode, Location: res.Header.Get("Location"), Server: res.Header.Get("Server"), Backend: backend}
	}
	for _, tc := range []struct {
		name                     string
		scheme, port, host, path string
		want                     answer
	}{
		{name: "plain HTTP for the TLS host", scheme: "http", port: "80", host: "secure.example.com", path: "/x/y?q=1",
			want: answer{Code: http.StatusPermanentRedirect, Location: "https://secure.example.com/x/y?q=1", Server: "fleetgate"}},
		{name: "plain HTTP for the host without TLS", scheme: "http", port: "80", host: "plain.example.com", path: "/x",
			want: answer{Code: http.StatusOK, Server: "fleetgate", Backend: "a"}},
		{name: "HTTPS", scheme: "https", port: "443", host: "secure.example.com", path: "/x",
			want: answer{Code: http.StatusOK, Server: "fleetgate", Backend: "a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, do(tc.scheme, tc.port, tc.host, tc.path)); diff != "" {
				t.Errorf("GET %s://%s%s (-want +got):\n%s", tc.scheme, tc.host, tc.path, diff)
			}
		})
	}
}
