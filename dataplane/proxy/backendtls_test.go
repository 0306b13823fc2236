package proxy

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// testCA issues certificates for the TLS tests.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign, IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue signs a leaf for the DNS names and URIs, usable as server and client certificate.
func (ca *testCA) issue(t *testing.T, cn string, dns []string, uris ...string) ir.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn}, DNSNames: dns,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, u := range uris {
		pu, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		tmpl.URIs = append(tmpl.URIs, pu)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return ir.Certificate{Name: cn, CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})}
}

func keyPair(t *testing.T, c ir.Certificate) tls.Certificate {
	t.Helper()
	kp, err := tls.X509KeyPair(c.CertPEM, c.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return kp
}

// tlsEcho is a TLS backend that answers with the SNI it was asked for and the CN of the client
// certificate it got, if any. clientCAs, when set, makes a verified client certificate mandatory.
func tlsEcho(t *testing.T, cert ir.Certificate, clientCAs *testCA) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-SNI", r.TLS.ServerName)
		if len(r.TLS.PeerCertificates) > 0 {
			w.Header().Set("X-Client-CN", r.TLS.PeerCertificates[0].Subject.CommonName)
		}
		_, _ = io.WriteString(w, "ok")
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{keyPair(t, cert)}}
	if clientCAs != nil {
		pool := x509.NewCertPool()
		pool.AddCert(clientCAs.cert)
		srv.TLS.ClientAuth, srv.TLS.ClientCAs = tls.RequireAndVerifyClientCert, pool
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

func tlsBackend(srv *httptest.Server, bt *ir.BackendTLS) ir.Backend {
	b := irBackend("tls", 1, srv.Listener.Addr())
	b.AppProtocol, b.TLS = ir.AppTLS, bt
	return b
}

func TestBackendTLSVerification(t *testing.T) {
	ca := newTestCA(t, "backend-ca")
	other := newTestCA(t, "other-ca")
	srv := tlsEcho(t, ca.issue(t, "backend", []string{"abc.example.com"}, "spiffe://abc.example.com/test-identity"), nil)
	san := func(typ ir.SubjectAltNameType, v string) ir.SubjectAltName {
		return ir.SubjectAltName{Type: typ, Value: v}
	}
	cases := []struct {
		name     string
		tls      *ir.BackendTLS
		wantCode int
		wantSNI  string
	}{
		{"valid CA and hostname", &ir.BackendTLS{Hostname: "abc.example.com", CACertPEM: ca.pem}, 200, "abc.example.com"},
		{"hostname mismatch", &ir.BackendTLS{Hostname: "mismatch.example.com", CACertPEM: ca.pem}, http.StatusBadGateway, ""},
		{"untrusted CA", &ir.BackendTLS{Hostname: "abc.example.com", CACertPEM: other.pem}, http.StatusBadGateway, ""},
		{"no CA and no system roots", &ir.BackendTLS{Hostname: "abc.example.com"}, http.StatusBadGateway, ""},
		// With subjectAltNames the hostname is only the SNI.
		{"SAN hostname", &ir.BackendTLS{Hostname: "sni.example.com", CACertPEM: ca.pem, SubjectAltNames: []ir.SubjectAltName{san(ir.SANHostname, "abc.example.com")}}, 200, "sni.example.com"},
		{"SAN hostname mismatch", &ir.BackendTLS{Hostname: "abc.example.com", CACertPEM: ca.pem, SubjectAltNames: []ir.SubjectAltName{san(ir.SANHostname, "dce.example.com")}}, http.StatusBadGateway, ""},
		{"SAN URI", &ir.BackendTLS{Hostname: "abc.example.com", CACertPEM: ca.pem, SubjectAltNames: []ir.SubjectAltName{san(ir.SANURI, "spiffe://abc.example.com/test-identity")}}, 200, "abc.example.com"},
		{"SAN URI mismatch", &ir.BackendTLS{Hostname: "abc.example.com", CACertPEM: ca.pem, SubjectAltNames: []ir.SubjectAltName{san(ir.SANURI, "spiffe://def.example.com/test-identity")}}, http.StatusBadGateway, ""},
		{"one of several SANs", &ir.BackendTLS{Hostname: "abc.example.com", CACertPEM: ca.pem, SubjectAltNames: []ir.SubjectAltName{san(ir.SANURI, "spiffe://def.example.com/x"), san(ir.SANHostname, "abc.example.com")}}, 200, "abc.example.com"},
		{"none of several SANs", &ir.BackendTLS{Hostname: "abc.example.com", CACertPEM: ca.pem, SubjectAltNames: []ir.SubjectAltName{san(ir.SANURI, "spiffe://def.example.com/x"), san(ir.SANHostname, "def.example.com")}}, http.StatusBadGateway, ""},
	}
	var vhosts []ir.VirtualHost
	for i, c := range cases {
		vhosts = append(vhosts, ir.VirtualHost{Hostname: "h" + strconv.Itoa(i) + ".test", Routes: []ir.Route{{Name: c.name, Backends: []ir.Backend{tlsBackend(srv, c.tls)}}}})
	}
	cfg, port := httpConfig(t, vhosts...)
	newProxy(t, cfg)
	cl := testClient()
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := get(t, cl, baseURL(port)+"/", "h"+strconv.Itoa(i)+".test")
			if res.code != c.wantCode {
				t.Fatalf("status %d, want %d", res.code, c.wantCode)
			}
			if got := res.hdr.Get("X-SNI"); got != c.wantSNI {
				t.Errorf("backend saw SNI %q, want %q", got, c.wantSNI)
			}
		})
	}
}

func TestBackendClientCertificate(t *testing.T) {
	ca := newTestCA(t, "ca")
	srv := tlsEcho(t, ca.issue(t, "backend", []string{"abc.example.com"}), ca)
	client := ca.issue(t, "gateway-client", nil)
	route := ir.Route{Name: "r", Backends: []ir.Backend{tlsBackend(srv, &ir.BackendTLS{Hostname: "abc.example.com", CACertPEM: ca.pem})}}
	for _, c := range []struct {
		name     string
		client   *ir.Certificate
		wantCode int
		wantCN   string
	}{
		{"with client certificate", &client, 200, "gateway-client"},
		{"without client certificate", nil, http.StatusBadGateway, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, port := httpConfig(t, ir.VirtualHost{Hostname: "*", Routes: []ir.Route{route}})
			cfg.BackendClientCertificate = c.client
			newProxy(t, cfg)
			res := get(t, testClient(), baseURL(port)+"/", "abc.example.com")
			if res.code != c.wantCode || res.hdr.Get("X-Client-CN") != c.wantCN {
				t.Fatalf("got %d with client CN %q, want %d with %q", res.code, res.hdr.Get("X-Client-CN"), c.wantCode, c.wantCN)
			}
		})
	}
}

// A config swap that keeps the same verification keeps the pool; one that changes it gets a new one.
func TestBackendTLSPoolsAcrossSwaps(t *testing.T) {
	ca := newTestCA(t, "ca")
	srv := tlsEcho(t, ca.issue(t, "backend", []string{"abc.example.com"}), nil)
	mk := func(host string) *ir.Config {
		cfg := &ir.Config{Gateway: "ns/gw", Version: 1, Listeners: []ir.Listener{{Name: "http", Port: freePort(t, false), Protocol: ir.ProtocolHTTP,
			VirtualHosts: []ir.VirtualHost{{Hostname: "*", Routes: []ir.Route{{Name: "r", Backends: []ir.Backend{tlsBackend(srv, &ir.BackendTLS{Hostname: host, CACertPEM: ca.pem})}}}}}}}}
		return cfg
	}
	s := newProxy(t, mk("abc.example.com"))
	first := s.tlsPools
	if err := s.Apply(mk("abc.example.com")); err != nil {
		t.Fatal(err)
	}
	if len(s.tlsPools) != 1 || len(first) != 1 {
		t.Fatalf("pools: %d then %d, want 1 each", len(first), len(s.tlsPools))
	}
	for k, p := range first {
		if s.tlsPools[k] != p {
			t.Error("an unchanged backend TLS setting got a new pool")
		}
	}
	if err := s.Apply(mk("other.example.com")); err != nil {
		t.Fatal(err)
	}
	for k := range first {
		if s.tlsPools[k] != nil {
			t.Error("a pool no config uses was kept")
		}
	}
}

func TestFrontendClientValidation(t *testing.T) {
	ca := newTestCA(t, "client-ca")
	other := newTestCA(t, "other-ca")
	serverCA := newTestCA(t, "server-ca")
	serverCert := serverCA.issue(t, "gateway", []string{"example.org"})
	good := keyPair(t, ca.issue(t, "good-client", nil))
	bad := keyPair(t, other.issue(t, "bad-client", nil))
	be := newEcho(t, "be", false)
	roots := x509.NewCertPool()
	roots.AddCert(serverCA.cert)
	for _, c := range []struct {
		name     string
		fallback bool
		client   *tls.Certificate
		wantOK   bool
	}{
		{"valid certificate", false, &good, true},
		{"certificate of another CA", false, &bad, false},
		{"no certificate", false, nil, false},
		{"fallback: valid certificate", true, &good, true},
		{"fallback: certificate of another CA", true, &bad, true},
		{"fallback: no certificate", true, nil, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			port := freePort(t, false)
			newProxy(t, &ir.Config{Gateway: "ns/gw", Version: 1, Listeners: []ir.Listener{{
				Name: "https", Port: port, Protocol: ir.ProtocolHTTPS, Certificates: []ir.Certificate{serverCert},
				ClientValidation: &ir.ClientValidation{CACertPEM: ca.pem, AllowInsecureFallback: c.fallback},
				VirtualHosts:     []ir.VirtualHost{{Hostname: "*", Routes: []ir.Route{{Name: "r", Backends: []ir.Backend{be.backend(1)}}}}},
			}}})
			cfg := &tls.Config{RootCAs: roots, ServerName: "example.org"}
			if c.client != nil {
				cfg.Certificates = []tls.Certificate{*c.client}
			}
			cl := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
			res, err := cl.Get("https://127.0.0.1:" + strconv.Itoa(int(port)) + "/")
			if err == nil {
				res.Body.Close()
			}
			if ok := err == nil && res.StatusCode == 200; ok != c.wantOK {
				t.Fatalf("request succeeded=%v (err %v), want %v", ok, err, c.wantOK)
			}
		})
	}
}
