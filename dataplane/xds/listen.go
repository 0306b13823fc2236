package xds

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"
)

// serverValidity is the config server certificate's lifetime; the operator issues a new one at
// every start.
const serverValidity = 365 * 24 * time.Hour

// Endpoint is where a config server listens and how its proxies reach it.
type Endpoint struct {
	Listener net.Listener
	// Public is the address proxies dial; the server certificate names its host.
	Public string
	// TLS presents that certificate and requires proxies' certificates from the same CA.
	TLS *tls.Config
}

// Listen opens the config server's listener on addr and issues its certificate from ca for the
// address proxies dial: public when set; else the listener's port on publicHost when set (the name
// of the config server's Service); else the listener's own address (proxies on the same host).
func Listen(ca *CA, addr, public, publicHost string) (*Endpoint, error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("config server: %w", err)
	}
	ep, err := endpoint(ca, lis, public, publicHost)
	if err != nil {
		return nil, errors.Join(err, lis.Close())
	}
	return ep, nil
}

func endpoint(ca *CA, lis net.Listener, public, publicHost string) (*Endpoint, error) {
	switch {
	case public != "":
	case publicHost != "":
		public = net.JoinHostPort(publicHost, strconv.Itoa(lis.Addr().(*net.TCPAddr).Port))
	default:
		public = lis.Addr().String()
	}
	host, _, err := net.SplitHostPort(public)
	if err != nil {
		return nil, fmt.Errorf("config server public address: %w", err)
	}
	kp, err := ca.IssueServer([]string{host}, serverValidity)
	if err != nil {
		return nil, fmt.Errorf("config server certificate: %w", err)
	}
	cfg, err := ServerTLSConfig(kp, ca.CertPEM())
	if err != nil {
		return nil, err
	}
	return &Endpoint{Listener: lis, Public: public, TLS: cfg}, nil
}
