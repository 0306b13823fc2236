package xds

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"strings"
	"time"
)

// gatewayURIScheme and gatewayURIHost form the URI SAN that names a gateway a proxy certificate may
// subscribe to: fleetgate://gateway/<key>, the key keeping its slashes ("cluster/ns/name").
const (
	gatewayURIScheme = "fleetgate"
	gatewayURIHost   = "gateway"
)

// clockSkew backdates certificates so that a peer whose clock is slightly behind accepts them.
const clockSkew = 5 * time.Minute

// CA is the operator-managed certificate authority that issues the config server's certificate and
// the proxies' client certificates. It lives in memory; Marshal and LoadCA let the operator keep it
// in a Secret.
type CA struct {
	cert    *x509.Certificate
	certPEM []byte
	key     *ecdsa.PrivateKey
}

// KeyPair is a PEM certificate and its PEM private key, as stored in a kubernetes.io/tls Secret.
type KeyPair struct {
	CertPEM []byte
	KeyPEM  []byte
}

// NewCA generates a self-signed ECDSA P-256 CA valid for validity.
func NewCA(commonName string, validity time.Duration) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate CA key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName, Organization: []string{"fleetgate"}},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("create CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse CA certificate: %w", err)
	}
	return &CA{cert: cert, certPEM: pemBlock("CERTIFICATE", der), key: key}, nil
}

// LoadCA restores a CA written by Marshal.
func LoadCA(certPEM, keyPEM []byte) (*CA, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("load CA key pair: %w", err)
	}
	key, ok := pair.PrivateKey.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("load CA: key is %T, want ECDSA", pair.PrivateKey)
	}
	cert := pair.Leaf
	if cert == nil {
		if cert, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return nil, fmt.Errorf("load CA certificate: %w", err)
		}
	}
	if !cert.IsCA {
		return nil, errors.New("load CA: certificate is not a CA")
	}
	return &CA{cert: cert, certPEM: pemBlock("CERTIFICATE", cert.Raw), key: key}, nil
}

// Marshal returns the CA certificate and private key as PEM.
func (ca *CA) Marshal() (certPEM, keyPEM []byte, err error) {
	der, err := x509.MarshalECPrivateKey(ca.key)
	if err != nil {
		return nil, nil, fmt.Errorf("marshal CA key: %w", err)
	}
	return ca.CertPEM(), pemBlock("EC PRIVATE KEY", der), nil
}

// CertPEM returns the CA certificate, which both sides trust.
func (ca *CA) CertPEM() []byte { return append([]byte(nil), ca.certPEM...) }

// IssueServer issues the config server's certificate for hosts, each a DNS name or an IP address.
func (ca *CA) IssueServer(hosts []string, validity time.Duration) (KeyPair, error) {
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "fleetgate-xds"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if len(hosts) > 0 {
		tmpl.Subject.CommonName = hosts[0]
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	return ca.issue(tmpl, validity)
}

// IssueClient issues a proxy's client certificate that may subscribe to the given gateways, named
// in URI SANs fleetgate://gateway/<key>.
func (ca *CA) IssueClient(gateways []string, validity time.Duration) (KeyPair, error) {
	if len(gateways) == 0 {
		return KeyPair{}, errors.New("issue client certificate: no gateway")
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "fleetgate-proxy", Organization: []string{"fleetgate"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	for _, g := range gateways {
		if g == "" {
			return KeyPair{}, errors.New("issue client certificate: empty gateway key")
		}
		tmpl.URIs = append(tmpl.URIs, gatewayURI(g))
	}
	return ca.issue(tmpl, validity)
}

func (ca *CA) issue(tmpl *x509.Certificate, validity time.Duration) (KeyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return KeyPair{}, fmt.Errorf("generate key: %w", err)
	}
	if tmpl.SerialNumber, err = newSerial(); err != nil {
		return KeyPair{}, err
	}
	now := time.Now()
	tmpl.NotBefore = now.Add(-clockSkew)
	tmpl.NotAfter = now.Add(validity)
	if tmpl.NotAfter.After(ca.cert.NotAfter) {
		tmpl.NotAfter = ca.cert.NotAfter
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return KeyPair{}, fmt.Errorf("create certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return KeyPair{}, fmt.Errorf("marshal key: %w", err)
	}
	return KeyPair{CertPEM: pemBlock("CERTIFICATE", der), KeyPEM: pemBlock("EC PRIVATE KEY", keyDER)}, nil
}

// ServerTLSConfig is the config server's TLS configuration: it presents kp and requires a client
// certificate signed by the CA in caPEM.
func ServerTLSConfig(kp KeyPair, caPEM []byte) (*tls.Config, error) {
	cert, pool, err := loadPair(kp, caPEM)
	if err != nil {
		return nil, err
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool,
		MinVersion:   tls.VersionTLS13,
	}, nil
}

// ClientTLSConfig is a proxy's TLS configuration: it presents kp and trusts only the CA in caPEM for
// a server certificate valid for serverName.
func ClientTLSConfig(kp KeyPair, caPEM []byte, serverName string) (*tls.Config, error) {
	cert, pool, err := loadPair(kp, caPEM)
	if err != nil {
		return nil, err
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		RootCAs:      pool,
		ServerName:   serverName,
		MinVersion:   tls.VersionTLS13,
	}, nil
}

func loadPair(kp KeyPair, caPEM []byte) (tls.Certificate, *x509.CertPool, error) {
	cert, err := tls.X509KeyPair(kp.CertPEM, kp.KeyPEM)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("load key pair: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return tls.Certificate{}, nil, errors.New("load CA bundle: no certificate found")
	}
	return cert, pool, nil
}

// gatewayURI is the URI SAN naming gateway key.
func gatewayURI(key string) *url.URL {
	return &url.URL{Scheme: gatewayURIScheme, Host: gatewayURIHost, Path: "/" + key}
}

// certGateways returns the gateway keys a verified client certificate names.
func certGateways(cert *x509.Certificate) map[string]bool {
	keys := make(map[string]bool)
	for _, u := range cert.URIs {
		if u.Scheme == gatewayURIScheme && u.Host == gatewayURIHost {
			if key := strings.TrimPrefix(u.Path, "/"); key != "" {
				keys[key] = true
			}
		}
	}
	return keys
}

func newSerial() (*big.Int, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("generate serial number: %w", err)
	}
	return serial, nil
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}
