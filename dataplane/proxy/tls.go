package proxy

import (
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// certTable chooses a certificate by SNI: exact name, then most specific wildcard, then a
// certificate without hostnames, then the listener's first certificate.
type certTable struct {
	byName *hostMap[*tls.Certificate]
	def    *tls.Certificate
}

func (c *certTable) get(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	if hello.ServerName != "" {
		if cert, ok := c.byName.lookup(normalizeHost(hello.ServerName)); ok {
			return cert, nil
		}
	}
	return c.def, nil
}

// certCache keeps parsed key pairs across config swaps: parsing thousands of certificates on every
// swap would stall Apply. Keyed by content, so a renewed certificate is parsed again.
type certCache map[[32]byte]*tls.Certificate

func (cc certCache) load(c *ir.Certificate, next certCache) (*tls.Certificate, error) {
	h := sha256.New()
	h.Write(c.CertPEM)
	h.Write([]byte{0})
	h.Write(c.KeyPEM)
	var k [32]byte
	h.Sum(k[:0])
	if cert := cc[k]; cert != nil {
		next[k] = cert
		return cert, nil
	}
	cert, err := tls.X509KeyPair(c.CertPEM, c.KeyPEM)
	if err != nil {
		return nil, fmt.Errorf("certificate %q: %w", c.Name, err)
	}
	next[k] = &cert
	return &cert, nil
}

func (s *compiler) compileCerts(in []ir.Certificate, next certCache, alpn []string) (*tls.Config, error) {
	if len(in) == 0 {
		return nil, nil
	}
	t := &certTable{byName: newHostMap[*tls.Certificate]()}
	for i := range in {
		cert, err := s.certs.load(&in[i], next)
		if err != nil {
			return nil, err
		}
		if t.def == nil {
			t.def = cert
		}
		if len(in[i].Hostnames) == 0 {
			t.byName.add("*", cert)
		}
		for _, h := range in[i].Hostnames {
			t.byName.add(h, cert)
		}
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: alpn, GetCertificate: t.get}
	if s.lim == nil || !s.lim.allowCBC {
		cfg.CipherSuites = aeadSuites()
	}
	return cfg, nil
}

// aeadSuites are the TLS 1.2 suites offered unless limits.allowCBC: Go's defaults without the
// CBC-SHA ones (Lucky13-style padding oracles; Mozilla's "intermediate" profile drops them too).
// TLS 1.3 suites are all AEAD and not configurable.
func aeadSuites() []uint16 {
	return []uint16{
		tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
		tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
		tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
		tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
		tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
		tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
	}
}

var errHelloRead = errors.New("client hello read")

// peekClientHello reads the TLS ClientHello from c and returns its SNI together with a conn that
// replays the bytes read, so the connection can be passed through or terminated afterwards.
func peekClientHello(c net.Conn, timeout time.Duration) (string, net.Conn, error) {
	var buf bytes.Buffer
	if err := c.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		return "", nil, err
	}
	var sni string
	seen := false
	// The standard library parses the hello; the read-only conn makes sure nothing is written back
	// and the callback aborts the handshake as soon as the hello is known.
	err := tls.Server(readOnlyConn{r: io.TeeReader(c, &buf)}, &tls.Config{
		GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
			sni, seen = h.ServerName, true
			return nil, errHelloRead
		},
	}).Handshake()
	if !seen {
		return "", nil, fmt.Errorf("reading TLS client hello: %w", err)
	}
	if err := c.SetReadDeadline(time.Time{}); err != nil {
		return "", nil, err
	}
	return sni, &prefixConn{Conn: c, prefix: buf.Bytes()}, nil
}

// readOnlyConn feeds the hello parser and refuses every write.
type readOnlyConn struct {
	net.Conn
	r io.Reader
}

func (c readOnlyConn) Read(p []byte) (int, error)     { return c.r.Read(p) }
func (readOnlyConn) Write([]byte) (int, error)        { return 0, io.ErrClosedPipe }
func (readOnlyConn) Close() error                     { return nil }
func (readOnlyConn) LocalAddr() net.Addr              { return nil }
func (readOnlyConn) RemoteAddr() net.Addr             { return nil }
func (readOnlyConn) SetDeadline(time.Time) error      { return nil }
func (readOnlyConn) SetReadDeadline(time.Time) error  { return nil }
func (readOnlyConn) SetWriteDeadline(time.Time) error { return nil }

// prefixConn replays bytes already read before reading from the conn.
type prefixConn struct {
	net.Conn
	prefix []byte
}

func (c *prefixConn) Read(p []byte) (int, error) {
	if len(c.prefix) > 0 {
		n := copy(p, c.prefix)
		c.prefix = c.prefix[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// CloseWrite lets the TCP half-close pass through the wrapper.
func (c *prefixConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
