package clouddnsfake

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
	"net/http"
	"sync"
	"time"
)

// Proxy is an HTTPS proxy (HTTP CONNECT) that answers for hosts it was given: it terminates the
// tunnel's TLS with a certificate for the host, signed by its own CA, and hands the requests to
// the host's handler. It stands in for https://dns.<universe domain>/, the endpoint that
// google.golang.org/api/dns/v1 computes from GOOGLE_CLOUD_UNIVERSE_DOMAIN when a caller (like
// external-dns's google provider) gives it no endpoint. A process reaches it with
// HTTPS_PROXY=URL() and trusts it with SSL_CERT_FILE=<CAPEM() in a file>; Go reads both once per
// process, so set them before its first HTTPS request (in TestMain).
type Proxy struct {
	ca     *x509.Certificate
	caKey  *ecdsa.PrivateKey
	caPEM  []byte
	outer  *http.Server
	inner  *http.Server
	ln     net.Listener
	tunnel *tunnelListener

	mu     sync.Mutex
	routes map[string]http.Handler // by host name, no port
	certs  map[string]*tls.Certificate
}

// NewProxy starts a proxy on 127.0.0.1.
func NewProxy() (*Proxy, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "clouddnsfake test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{
		ca: ca, caKey: key, caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		ln: ln, tunnel: newTunnelListener(ln.Addr()),
		routes: map[string]http.Handler{}, certs: map[string]*tls.Certificate{},
	}
	p.outer = &http.Server{Handler: http.HandlerFunc(p.connect), ReadHeaderTimeout: 10 * time.Second}
	p.inner = &http.Server{Handler: http.HandlerFunc(p.serve), ReadHeaderTimeout: 10 * time.Second}
	tlsCfg := &tls.Config{GetCertificate: p.certificate, NextProtos: []string{"http/1.1"}, MinVersion: tls.VersionTLS12}
	go func() { _ = p.outer.Serve(ln) }()
	go func() { _ = p.inner.Serve(tls.NewListener(p.tunnel, tlsCfg)) }()
	return p, nil
}

// URL is the proxy's address, for HTTPS_PROXY.
func (p *Proxy) URL() string { return "http://" + p.ln.Addr().String() }

// CAPEM is the CA certificate that signs the hosts' certificates, for SSL_CERT_FILE.
func (p *Proxy) CAPEM() []byte { return p.caPEM }

// Route makes the proxy answer for host (a name, no port) with h, until the returned func runs.
func (p *Proxy) Route(host string, h http.Handler) (remove func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.routes[host] = h
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		delete(p.routes, host)
	}
}

// Close stops the proxy and its tunnels.
func (p *Proxy) Close() error {
	return errors.Join(p.outer.Close(), p.inner.Close())
}

func (p *Proxy) handler(host string) http.Handler {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.routes[host]
}

// connect opens a tunnel to a routed host: anything else is refused, so nothing leaves the machine.
func (p *Proxy) connect(w http.ResponseWriter, r *http.Request) {
	host, _, err := net.SplitHostPort(r.Host)
	if r.Method != http.MethodConnect || err != nil {
		http.Error(w, "only CONNECT host:port", http.StatusMethodNotAllowed)
		return
	}
	if p.handler(host) == nil {
		http.Error(w, "no route to "+host, http.StatusBadGateway)
		return
	}
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	if buf.Reader.Buffered() > 0 { // the client spoke before the tunnel was up
		_ = conn.Close()
		return
	}
	if _, err := conn.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
		_ = conn.Close()
		return
	}
	p.tunnel.push(conn)
}

// serve answers a request that came through a tunnel, by its Host.
func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	h := p.handler(host)
	if h == nil {
		http.Error(w, "no route to "+host, http.StatusBadGateway)
		return
	}
	h.ServeHTTP(w, r)
}

// certificate makes (once per name) a certificate for the TLS client's server name.
func (p *Proxy) certificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	name := hello.ServerName
	if p.handler(name) == nil {
		return nil, fmt.Errorf("no route to %q", name)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.certs[name]; ok {
		return c, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(int64(len(p.certs) + 2)), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		return nil, err
	}
	c := &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	p.certs[name] = c
	return c, nil
}

// tunnelListener hands the hijacked tunnel connections to the inner server.
type tunnelListener struct {
	addr  net.Addr
	conns chan net.Conn
	once  sync.Once
	done  chan struct{}
}

func newTunnelListener(addr net.Addr) *tunnelListener {
	return &tunnelListener{addr: addr, conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *tunnelListener) push(c net.Conn) {
	select {
	case l.conns <- c:
	case <-l.done:
		_ = c.Close()
	}
}

func (l *tunnelListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *tunnelListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *tunnelListener) Addr() net.Addr { return l.addr }
