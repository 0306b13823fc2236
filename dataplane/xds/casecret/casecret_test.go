package casecret_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/fleetgate/fleetgate/dataplane/xds"
	"github.com/fleetgate/fleetgate/dataplane/xds/casecret"
	"github.com/fleetgate/fleetgate/tests/testbed"
)

const namespace = "fleetgate-system"

// TestLoadOrCreate runs LoadOrCreate against a real API server: each case has its own Secret name,
// what the Secret holds before, and what the API server answers in between.
func TestLoadOrCreate(t *testing.T) {
	c := testbed.ForTest(t, "hub")[0]
	ctx := t.Context()
	if err := c.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		t.Fatal(err)
	}
	base, err := client.NewWithWatch(c.Config, client.Options{Scheme: c.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "ca", errors.New("no RBAC"))
	garbage := map[string][]byte{corev1.TLSCertKey: []byte("not a certificate"), corev1.TLSPrivateKeyKey: []byte("nor a key")}

	tests := []struct {
		name string
		// before is the Secret's data before the call; nil means there is no Secret.
		before map[string][]byte
		// rival makes another replica create the Secret just before this call's Create.
		rival bool
		funcs interceptor.Funcs
		// wantErr is a substring of the error; empty means the call succeeds.
		wantErr string
		// wantForbidden says the API server's Forbidden reaches the caller through %w.
		wantForbidden bool
	}{
		{name: "no Secret: a new CA is stored"},
		{name: "a stored CA is loaded", before: caData(t)},
		{name: "another replica creates it first: theirs is used", rival: true},
		{name: "a corrupt Secret is an error and stays", before: garbage, wantErr: "holds no usable CA"},
		{name: "a read error other than NotFound", wantErr: "reading CA Secret", wantForbidden: true,
			funcs: interceptor.Funcs{Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
				return forbidden
			}}},
		{name: "a create error other than AlreadyExists", wantErr: "creating CA Secret", wantForbidden: true,
			funcs: interceptor.Funcs{Create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error {
				return forbidden
			}}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := client.ObjectKey{Namespace: namespace, Name: "ca-" + string(rune('a'+i))}
			if tt.before != nil {
				must(t, base.Create(ctx, tlsSecret(key, tt.before)))
			}
			var rivalCert []byte
			if tt.rival {
				tt.funcs.Create = func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
					if rivalCert == nil {
						data := caData(t)
						rivalCert = data[corev1.TLSCertKey]
						must(t, c.Create(ctx, tlsSecret(key, data)))
					}
					return c.Create(ctx, obj, opts...) // the API server's own AlreadyExists
				}
			}
			ca, err := casecret.LoadOrCreate(ctx, interceptor.NewClient(base, tt.funcs), key)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("LoadOrCreate error = %v, want one containing %q", err, tt.wantErr)
				}
				if apierrors.IsForbidden(err) != tt.wantForbidden {
					t.Errorf("IsForbidden(%v) = %v, want %v", err, !tt.wantForbidden, tt.wantForbidden)
				}
				if tt.before != nil {
					if got := stored(t, base, key); !bytes.Equal(got, tt.before[corev1.TLSCertKey]) {
						t.Errorf("the Secret was changed to %q", got)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("LoadOrCreate: %v", err)
			}
			got := stored(t, base, key)
			if !bytes.Equal(ca.CertPEM(), got) {
				t.Error("the CA returned is not the one stored in the Secret")
			}
			want := tt.before[corev1.TLSCertKey]
			if tt.rival {
				want = rivalCert
			}
			if want != nil && !bytes.Equal(got, want) {
				t.Error("the Secret's CA was replaced")
			}
			// The CA is usable: it signs a server certificate that chains to it.
			if _, err := ca.IssueServer([]string{"fleetgate-xds"}, time.Hour); err != nil {
				t.Errorf("issuing with the loaded CA: %v", err)
			}
		})
	}
}

func caData(t *testing.T) map[string][]byte {
	t.Helper()
	ca, err := xds.NewCA("test CA", time.Hour)
	must(t, err)
	certPEM, keyPEM, err := ca.Marshal()
	must(t, err)
	return map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM}
}

func tlsSecret(key client.ObjectKey, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}, Type: corev1.SecretTypeTLS, Data: data}
}

// stored returns the certificate the Secret holds, checking that it is a kubernetes.io/tls Secret.
func stored(t *testing.T, c client.Client, key client.ObjectKey) []byte {
	t.Helper()
	var s corev1.Secret
	must(t, c.Get(t.Context(), key, &s))
	if s.Type != corev1.SecretTypeTLS {
		t.Errorf("Secret %s has type %q, want %q", key, s.Type, corev1.SecretTypeTLS)
	}
	return s.Data[corev1.TLSCertKey]
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
