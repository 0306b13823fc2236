package xds

import (
	"crypto/tls"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestListen checks the address proxies are told to dial, and that a proxy dialling the listener
// with that address's host as server name completes the mTLS handshake.
func TestListen(t *testing.T) {
	ca, err := NewCA("test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name               string
		public, publicHost string
		want               func(lis net.Addr) string
		wantErr            string
	}{
		{name: "local: the listener's own address", want: func(a net.Addr) string { return a.String() }},
		{name: "cluster: the listener's port on the Service name", publicHost: "fleetgate-xds.fleetgate-system.svc",
			want: func(a net.Addr) string {
				return "fleetgate-xds.fleetgate-system.svc:" + strconv.Itoa(a.(*net.TCPAddr).Port)
			}},
		{name: "an explicit public address wins", public: "xds.example.com:443", publicHost: "ignored.svc",
			want: func(net.Addr) string { return "xds.example.com:443" }},
		{name: "a public address without a port", public: "xds.example.com", wantErr: "public address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ep, err := Listen(ca, "127.0.0.1:0", tt.public, tt.publicHost)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Listen error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer ep.Listener.Close()
			if want := tt.want(ep.Listener.Addr()); ep.Public != want {
				t.Errorf("Public = %q, want %q", ep.Public, want)
			}
			host, _, _ := net.SplitHostPort(ep.Public)
			if err := handshake(t, ca, ep, host); err != nil {
				t.Errorf("a proxy dialling %s: %v", host, err)
			}
		})
	}
}

// handshake dials ep's listener as a proxy expecting a server certificate for serverName.
func handshake(t *testing.T, ca *CA, ep *Endpoint, serverName string) error {
	t.Helper()
	kp, err := ca.IssueClient([]string{"hub/ns/gw"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	clientTLS, err := ClientTLSConfig(kp, ca.CertPEM(), serverName)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() {
		conn, err := ep.Listener.Accept()
		if err != nil {
			served <- err
			return
		}
		defer conn.Close()
		served <- tls.Server(conn, ep.TLS).Handshake()
	}()
	conn, err := tls.Dial("tcp", ep.Listener.Addr().String(), clientTLS)
	if err != nil {
		return errors.Join(err, <-served)
	}
	defer conn.Close()
	return <-served
}
