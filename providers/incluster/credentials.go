package incluster

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgate/fleetgate/providers"
)

// Credentials are what a proxy presents to the config server for one gateway.
type Credentials struct {
	CertPEM, KeyPEM, CAPEM []byte
}

const (
	credentialsMount = "/etc/fleetgate/xds"
	credentialsKeyCA = "ca.crt"
	// renewBefore is how long before expiry a proxy's certificate is replaced.
	renewBefore = 30 * 24 * time.Hour
)

func credentialsName(lb *providers.LoadBalancer) string { return ObjectName(lb) + "-xds" }

// ensureCredentials keeps a Secret with the proxy's client certificate. A certificate is issued only
// when none exists, it no longer chains to the current CA, or it expires soon, so that an
// unchanged gateway causes no writes.
func (p *Provider) ensureCredentials(ctx context.Context, c client.Client, lb *providers.LoadBalancer, cluster string) error {
	var cur corev1.Secret
	err := c.Get(ctx, client.ObjectKey{Namespace: lb.Namespace, Name: credentialsName(lb)}, &cur)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("reading proxy credentials: %w", err)
	case p.credentialsCurrent(lb.Gateway, &cur):
		return nil
	}
	creds, err := p.opts.Credentials(lb.Gateway)
	if err != nil {
		return fmt.Errorf("issuing proxy credentials: %w", err)
	}
	labels, annotations := objectMeta(lb)
	secret := corev1ac.Secret(credentialsName(lb), lb.Namespace).
		WithLabels(labels).WithAnnotations(annotations).
		WithOwnerReferences(ownerRef(lb, cluster)...).
		WithType(corev1.SecretTypeTLS).
		WithData(map[string][]byte{
			corev1.TLSCertKey:       creds.CertPEM,
			corev1.TLSPrivateKeyKey: creds.KeyPEM,
			credentialsKeyCA:        creds.CAPEM,
		})
	if err := c.Apply(ctx, secret, client.FieldOwner(p.opts.FieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("writing proxy credentials: %w", err)
	}
	return nil
}

// credentialsCurrent tells whether the Secret holds a certificate for this gateway that chains to
// the CA the operator issues with now and is not about to expire.
func (p *Provider) credentialsCurrent(gateway string, s *corev1.Secret) bool {
	block, _ := pem.Decode(s.Data[corev1.TLSCertKey])
	if block == nil || len(s.Data[corev1.TLSPrivateKeyKey]) == 0 {
		return false
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil || time.Until(cert.NotAfter) < renewBefore {
		return false
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(p.opts.CA()) || string(s.Data[credentialsKeyCA]) != string(p.opts.CA()) {
		return false
	}
	_, err = cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	return err == nil && certNamesGateway(cert, gateway)
}

func certNamesGateway(cert *x509.Certificate, gateway string) bool {
	for _, u := range cert.URIs {
		if u.Scheme == "fleetgate" && u.Host == "gateway" && u.Path == "/"+gateway {
			return true
		}
	}
	return false
}

// mountCredentials adds the credentials volume and the flags that point the proxy at it.
func mountCredentials(lb *providers.LoadBalancer, pod *corev1ac.PodSpecApplyConfiguration, ctr *corev1ac.ContainerApplyConfiguration) {
	pod.WithVolumes(corev1ac.Volume().WithName("xds-credentials").
		WithSecret(corev1ac.SecretVolumeSource().WithSecretName(credentialsName(lb)).WithDefaultMode(0o440)))
	ctr.WithVolumeMounts(corev1ac.VolumeMount().WithName("xds-credentials").WithMountPath(credentialsMount).WithReadOnly(true))
	ctr.WithArgs(
		"--cert", credentialsMount+"/"+corev1.TLSCertKey,
		"--key", credentialsMount+"/"+corev1.TLSPrivateKeyKey,
		"--ca", credentialsMount+"/"+credentialsKeyCA,
	)
}
