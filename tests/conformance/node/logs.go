package node

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// maxLogLines bounds each container's kept log, as a kubelet's log rotation would.
const maxLogLines = 20000

type logLine struct {
	at   time.Time
	text string
}

// logBuffer keeps a container's output line by line with the time each line arrived, so that
// sinceTime queries (the mirror tests read echo logs that way) can be answered.
type logBuffer struct {
	mu      sync.Mutex
	partial []byte
	lines   []logLine
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	b.partial = append(b.partial, p...)
	for {
		i := bytes.IndexByte(b.partial, '\n')
		if i < 0 {
			break
		}
		b.lines = append(b.lines, logLine{at: now, text: string(b.partial[:i])})
		b.partial = b.partial[i+1:]
	}
	if len(b.lines) > maxLogLines {
		b.lines = append([]logLine(nil), b.lines[len(b.lines)-maxLogLines/2:]...)
	}
	return len(p), nil
}

func (b *logBuffer) since(t time.Time) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var sb strings.Builder
	for _, l := range b.lines {
		if !l.at.Before(t) {
			sb.WriteString(l.text)
			sb.WriteByte('\n')
		}
	}
	return sb.String()
}

// serveLogs answers the kubelet's /containerLogs/{namespace}/{pod}/{container} endpoint, which the
// API server's pods/log subresource proxies to, over TLS with a throwaway certificate (the test API
// server does not verify kubelet certificates).
func (n *Node) serveLogs(lis net.Listener) error {
	cert, err := selfSigned(n.opts.IP)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /containerLogs/{namespace}/{pod}/{container}", func(w http.ResponseWriter, r *http.Request) {
		buf := n.logsOf(r.PathValue("namespace"), r.PathValue("pod"))
		if buf == nil {
			http.Error(w, "pod not running on this node", http.StatusNotFound)
			return
		}
		var since time.Time
		if s := r.URL.Query().Get("sinceTime"); s != "" {
			if since, err = time.Parse(time.RFC3339, s); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
		}
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, buf.since(since))
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}
	return srv.ServeTLS(lis, "", "")
}

func selfSigned(ip string) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("kubelet key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "conformance-node"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		IPAddresses:  []net.IP{net.ParseIP(ip)},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("kubelet certificate: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
