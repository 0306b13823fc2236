package incluster_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgate/fleetgate/providers"
	"github.com/fleetgate/fleetgate/providers/incluster"
)

// testCA issues client certificates naming a gateway the way the operator's config server expects.
type testCA struct {
	mu      sync.Mutex // the provider issues for different gateways at once
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	pem     []byte
	issued  int
	expires time.Duration
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour * 365),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), expires: 90 * 24 * time.Hour}
}

func (ca *testCA) issue(gateway string) (incluster.Credentials, error) {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	ca.issued++
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return incluster.Credentials{}, err
	}
	u := &url.URL{Scheme: "fleetgate", Host: "gateway", Path: "/" + gateway}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(int64(ca.issued + 1)), Subject: pkix.Name{CommonName: "proxy"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(ca.expires),
		URIs: []*url.URL{u}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return incluster.Credentials{}, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return incluster.Credentials{}, err
	}
	return incluster.Credentials{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		CAPEM:   ca.pem,
	}, nil
}

// TestProxyCredentials: the proxy's client certificate lives in a Secret mounted into its pods, is
// issued once, reissued when the CA changes, and deleted with the gateway.
func TestProxyCredentials(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	ca := newTestCA(t)
	p, err := incluster.New(incluster.Options{
		Client:      func(string) (client.Client, error) { return e.counting, nil },
		Image:       "ghcr.io/fleetgate/fleetgate:test",
		XDSAddress:  "fleetgate-xds.fleetgate-system.svc:18000",
		Credentials: func(gw string) (incluster.Credentials, error) { return ca.issue(gw) },
		CA:          func() []byte { return ca.pem },
	})
	if err != nil {
		t.Fatal(err)
	}
	lb := model("creds")
	t.Cleanup(func() { _ = p.Delete(context.WithoutCancel(ctx), lb) })
	secretKey := client.ObjectKey{Namespace: namespace, Name: incluster.ObjectName(lb) + "-xds"}

	if _, err := p.Ensure(ctx, lb); err != nil {
		t.Fatal(err)
	}
	var secret corev1.Secret
	if err := e.admin.Get(ctx, secretKey, &secret); err != nil {
		t.Fatalf("credentials Secret: %v", err)
	}
	if secret.Type != corev1.SecretTypeTLS || len(secret.Data["tls.crt"]) == 0 || string(secret.Data["ca.crt"]) != string(ca.pem) {
		t.Errorf("credentials Secret type %s with keys %v", secret.Type, keys(secret.Data))
	}
	if secret.Labels[providers.LabelManagedBy] != providers.ManagedBy || len(secret.OwnerReferences) != 1 {
		t.Errorf("credentials Secret labels %v, owners %v; want ownership labels and the Gateway as owner", secret.Labels, secret.OwnerReferences)
	}
	var dep appsv1.Deployment
	if err := e.admin.Get(ctx, client.ObjectKey{Namespace: namespace, Name: incluster.ObjectName(lb)}, &dep); err != nil {
		t.Fatal(err)
	}
	pod := dep.Spec.Template.Spec
	if len(pod.Volumes) != 1 || pod.Volumes[0].Secret == nil || pod.Volumes[0].Secret.SecretName != secretKey.Name {
		t.Errorf("proxy pod volumes %+v, want the credentials Secret", pod.Volumes)
	}
	if args := pod.Containers[0].Args; !slices.Contains(args, "/etc/fleetgate/xds/tls.crt") || !slices.Contains(args, "/etc/fleetgate/xds/ca.crt") {
		t.Errorf("proxy args %v, want the mounted credentials", args)
	}

	before := e.mutations.Load()
	if _, err := p.Ensure(ctx, lb); err != nil {
		t.Fatal(err)
	}
	if ca.issued != 1 || e.mutations.Load() != before {
		t.Errorf("second Ensure issued %d certificates and made %d writes, want 1 and 0", ca.issued, e.mutations.Load()-before)
	}

	rotated := newTestCA(t)
	*ca = testCA{cert: rotated.cert, key: rotated.key, pem: rotated.pem, issued: ca.issued, expires: ca.expires}
	if _, err := p.Ensure(ctx, lb); err != nil {
		t.Fatal(err)
	}
	if err := e.admin.Get(ctx, secretKey, &secret); err != nil {
		t.Fatal(err)
	}
	if ca.issued != 2 || string(secret.Data["ca.crt"]) != string(rotated.pem) {
		t.Errorf("after a CA change: %d certificates issued, Secret CA updated %v; want 2, true", ca.issued, string(secret.Data["ca.crt"]) == string(rotated.pem))
	}

	if err := p.Delete(ctx, lb); err != nil {
		t.Fatal(err)
	}
	if err := e.admin.Get(ctx, secretKey, &secret); err == nil {
		t.Error("credentials Secret survived Delete")
	}
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
