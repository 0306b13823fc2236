package proxy

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// echo is what echo backends answer: the request as the backend saw it.
type echo struct {
	Backend string      `json:"backend"`
	Method  string      `json:"method"`
	Path    string      `json:"path"`
	Query   string      `json:"query"`
	Host    string      `json:"host"`
	Proto   string      `json:"proto"`
	Headers http.Header `json:"headers"`
	Body    string      `json:"body"`
}

// echoBackend is a local backend that records how many requests it saw.
type echoBackend struct {
	name string
	srv  *httptest.Server
	hits atomic.Int64
	// status, if set, is answered instead of 200 for the first failN requests.
	failN  atomic.Int64
	status int
	delay  time.Duration
}

func (b *echoBackend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.hits.Add(1)
	if b.delay > 0 {
		select {
		case <-time.After(b.delay):
		case <-r.Context().Done():
			return
		}
	}
	body, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Backend", b.name)
	if b.failN.Add(-1) >= 0 {
		w.WriteHeader(b.status)
	}
	_ = json.NewEncoder(w).Encode(echo{Backend: b.name, Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery,
		Host: r.Host, Proto: r.Proto, Headers: r.Header, Body: string(body)})
}

func newEcho(t *testing.T, name string, h2c bool) *echoBackend {
	t.Helper()
	b := &echoBackend{name: name}
	b.srv = httptest.NewUnstartedServer(b)
	if h2c {
		p := new(http.Protocols)
		p.SetHTTP1(true)
		p.SetUnencryptedHTTP2(true)
		b.srv.Config.Protocols = p
	}
	b.srv.Start()
	t.Cleanup(b.srv.Close)
	return b
}

func (b *echoBackend) backend(weight uint32) ir.Backend {
	return irBackend(b.name, weight, b.srv.Listener.Addr())
}

func irBackend(name string, weight uint32, addrs ...net.Addr) ir.Backend {
	be := ir.Backend{Name: name, Weight: weight}
	for _, a := range addrs {
		host, port, _ := net.SplitHostPort(a.String())
		p, _ := strconv.Atoi(port)
		be.Endpoints = append(be.Endpoints, ir.Endpoint{Address: host, Port: uint32(p)})
	}
	return be
}

// freePort finds a loopback port that is free right now.
func freePort(t *testing.T, udp bool) uint32 { return freePortTB(t, udp) }

func freePortTB(t testing.TB, udp bool) uint32 {
	t.Helper()
	if udp {
		c, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return uint32(c.LocalAddr().(*net.UDPAddr).Port)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return uint32(l.Addr().(*net.TCPAddr).Port)
}

func newProxy(t *testing.T, cfg *ir.Config) *Server {
	t.Helper()
	return newProxyOpts(t, cfg, Options{})
}

func newProxyOpts(t *testing.T, cfg *ir.Config, opts Options) *Server {
	t.Helper()
	opts.Address, opts.Registry, opts.DrainTimeout = "127.0.0.1", prometheus.NewRegistry(), 2*time.Second
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if cfg != nil {
		if err := s.Apply(cfg); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return s
}

// httpConfig is a one-listener HTTP config on a free port.
func httpConfig(t *testing.T, vhosts ...ir.VirtualHost) (*ir.Config, uint32) {
	port := freePort(t, false)
	return &ir.Config{Gateway: "ns/gw", Version: 1, Listeners: []ir.Listener{{
		Name: "http", Port: port, Protocol: ir.ProtocolHTTP, VirtualHosts: vhosts,
	}}}, port
}

func baseURL(port uint32) string { return "http://127.0.0.1:" + strconv.Itoa(int(port)) }

// noRedirect is a client that reports redirects instead of following them.
func testClient() *http.Client {
	return &http.Client{
		Timeout:       10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Transport:     &http.Transport{DisableCompression: true},
	}
}

type result struct {
	code int
	hdr  http.Header
	echo echo
}

func do(t *testing.T, c *http.Client, req *http.Request) result {
	t.Helper()
	res, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	r := result{code: res.StatusCode, hdr: res.Header}
	if res.Header.Get("Content-Type") == "application/json" {
		if err := json.Unmarshal(body, &r.echo); err != nil {
			t.Fatalf("decoding %q: %v", body, err)
		}
	}
	return r
}

func get(t *testing.T, c *http.Client, url, host string, hdr ...string) result {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	return do(t, c, req)
}

// selfSigned makes a certificate for the names and returns it as an ir.Certificate and a pool
// that trusts it.
func selfSigned(t testing.TB, name string, hosts ...string) (ir.Certificate, *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: name},
		DNSNames:              hosts,
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:                  true,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return ir.Certificate{
		Name:      name,
		Hostnames: hosts,
		CertPEM:   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:    pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}),
	}, cert
}

// peerCN dials a TLS port with the SNI and returns the served certificate's common name and ALPN.
func peerCN(t *testing.T, addr, sni string, alpn ...string) (string, string) {
	t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{ServerName: sni, InsecureSkipVerify: true, NextProtos: alpn}) //nolint:gosec // test
	if err != nil {
		t.Fatalf("dial %s sni %q: %v", addr, sni, err)
	}
	defer c.Close()
	st := c.ConnectionState()
	return st.PeerCertificates[0].Subject.CommonName, st.NegotiatedProtocol
}

func prefix(v string) *ir.StringMatch { return &ir.StringMatch{Type: ir.MatchPrefix, Value: v} }
func exact(v string) *ir.StringMatch  { return &ir.StringMatch{Type: ir.MatchExact, Value: v} }
func regex(v string) *ir.StringMatch  { return &ir.StringMatch{Type: ir.MatchRegex, Value: v} }

// compile validates cfg and builds its table, as Apply does but without serving it.
func (srv *Server) compile(cfg *ir.Config, certs certCache, pools tlsTransports) (*table, error) {
	s := newCompiler(srv.compileDeps(), cfg.BackendClientCertificate, pools)
	t, err := s.compileConfig(cfg, certs)
	if err != nil {
		s.abort()
		return nil, err
	}
	return t, nil
}
