package proxy

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// tlsTransports are the connection pools of verified TLS backends, one per distinct verification
// setting (and client certificate). Like certCache they are keyed by content and carried across
// config swaps, so that a swap keeps their warm connections.
type tlsTransports map[[32]byte]*http.Transport

// backendTLSKey tells verification settings apart, for sharing compiled backends.
func backendTLSKey(bt *ir.BackendTLS) string {
	h := sha256.New()
	_ = json.NewEncoder(h).Encode(bt) // plain data: encoding cannot fail
	return string(h.Sum(nil))
}

// backendTransport returns the pool for a TLS backend verified as bt, presenting client (either
// may be nil). A backend with neither uses the shared unverified pool.
func (s *compiler) backendTransport(bt *ir.BackendTLS, client *ir.Certificate) (*http.Transport, error) {
	if bt == nil && client == nil {
		return s.up.tls, nil
	}
	h := sha256.New()
	if err := json.NewEncoder(h).Encode(struct {
		TLS    *ir.BackendTLS
		Client *ir.Certificate
	}{bt, client}); err != nil {
		return nil, fmt.Errorf("hashing backend TLS settings: %w", err)
	}
	var k [32]byte
	h.Sum(k[:0])
	if t := s.tlsNext[k]; t != nil {
		return t, nil
	}
	if t := s.tlsPools[k]; t != nil {
		s.tlsNext[k] = t
		return t, nil
	}
	cfg, err := backendTLSConfig(bt, client)
	if err != nil {
		return nil, err
	}
	t := s.up.tls.Clone()
	t.TLSClientConfig = cfg
	s.tlsNext[k] = t
	return t, nil
}

// backendTLSConfig builds the client side of a backend connection. The chain and names are
// checked in VerifyConnection rather than by crypto/tls, because a BackendTLSPolicy with
// subjectAltNames verifies against those names instead of the SNI hostname.
func backendTLSConfig(bt *ir.BackendTLS, client *ir.Certificate) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if client != nil {
		cert, err := tls.X509KeyPair(client.CertPEM, client.KeyPEM)
		if err != nil {
			return nil, fmt.Errorf("backend client certificate %q: %w", client.Name, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	if bt == nil {
		// Encrypted but unverified, as for any TLS backend without a BackendTLSPolicy.
		cfg.InsecureSkipVerify = true //nolint:gosec // see above
		return cfg, nil
	}
	var roots *x509.CertPool // nil: the system roots
	if !bt.SystemRoots {
		roots = x509.NewCertPool()
		if len(bt.CACertPEM) > 0 && !roots.AppendCertsFromPEM(bt.CACertPEM) {
			return nil, fmt.Errorf("backend CA certificates for %q: no certificate in PEM", bt.Hostname)
		}
	}
	cfg.ServerName = bt.Hostname
	cfg.InsecureSkipVerify = true //nolint:gosec // verified by VerifyConnection below
	cfg.VerifyConnection = func(cs tls.ConnectionState) error { return verifyBackend(cs, bt, roots) }
	return cfg, nil
}

var errBackendName = errors.New("backend certificate does not match")

func verifyBackend(cs tls.ConnectionState, bt *ir.BackendTLS, roots *x509.CertPool) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("backend presented no certificate")
	}
	leaf := cs.PeerCertificates[0]
	opts := x509.VerifyOptions{Roots: roots, Intermediates: x509.NewCertPool()}
	for _, c := range cs.PeerCertificates[1:] {
		opts.Intermediates.AddCert(c)
	}
	if _, err := leaf.Verify(opts); err != nil {
		return fmt.Errorf("verifying backend certificate: %w", err)
	}
	if len(bt.SubjectAltNames) == 0 {
		if err := leaf.VerifyHostname(bt.Hostname); err != nil {
			return fmt.Errorf("%w hostname %q: %w", errBackendName, bt.Hostname, err)
		}
		return nil
	}
	for _, san := range bt.SubjectAltNames {
		switch san.Type {
		case ir.SANHostname:
			if leaf.VerifyHostname(san.Value) == nil {
				return nil
			}
		case ir.SANURI:
			for _, u := range leaf.URIs {
				if u.String() == san.Value {
					return nil
				}
			}
		}
	}
	return fmt.Errorf("%w any of the subject alternative names %v", errBackendName, bt.SubjectAltNames)
}

// clientValidation makes an HTTPS listener ask for client certificates.
func clientValidation(cfg *tls.Config, cv *ir.ClientValidation) error {
	if cv == nil || cfg == nil {
		return nil
	}
	if cv.AllowInsecureFallback {
		// Any certificate, or none, is let through; the backend decides what to make of it.
		cfg.ClientAuth = tls.RequestClientCert
		return nil
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(cv.CACertPEM) {
		return errors.New("client validation: no CA certificate in PEM")
	}
	cfg.ClientAuth, cfg.ClientCAs = tls.RequireAndVerifyClientCert, pool
	return nil
}
