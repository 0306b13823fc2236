// Package casecret keeps the config server's CA in a Kubernetes Secret, so that proxies keep
// trusting the operator across restarts and replicas. It is apart from package xds so that the
// proxy, which imports xds, does not link a Kubernetes client.
package casecret

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgate/fleetgate/dataplane/xds"
)

// validity is how long a CA made here is valid: proxies' certificates chain to it, and rotating it
// means reissuing every proxy's.
const validity = 10 * 365 * 24 * time.Hour

// Store is the part of a Kubernetes client LoadOrCreate uses. Give it an uncached client: the
// manager's cache does not run yet when the CA is needed.
type Store interface {
	Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error
	Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error
}

// LoadOrCreate returns the CA stored in the kubernetes.io/tls Secret key, creating the Secret with
// a new CA when there is none. When another replica creates it first, theirs is used, so that every
// replica signs with the same CA. A Secret that holds no usable CA is an error, never overwritten:
// proxies may trust it.
func LoadOrCreate(ctx context.Context, store Store, key client.ObjectKey) (*xds.CA, error) {
	for {
		var secret corev1.Secret
		err := store.Get(ctx, key, &secret)
		if err == nil {
			ca, err := xds.LoadCA(secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey])
			if err != nil {
				return nil, fmt.Errorf("the CA Secret %s holds no usable CA: %w", key, err)
			}
			return ca, nil
		}
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("reading CA Secret %s: %w", key, err)
		}
		ca, err := xds.NewCA("fleetgate config CA", validity)
		if err != nil {
			return nil, err
		}
		certPEM, keyPEM, err := ca.Marshal()
		if err != nil {
			return nil, fmt.Errorf("encoding the new CA: %w", err)
		}
		secret = corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
			Type:       corev1.SecretTypeTLS,
			Data:       map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM},
		}
		err = store.Create(ctx, &secret)
		if err == nil {
			return ca, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("creating CA Secret %s: %w", key, err)
		}
		// Another replica created it first: read theirs.
	}
}
