package xds

import (
	"crypto/x509"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

func TestGatewayStatusProgrammed(t *testing.T) {
	tests := []struct {
		name       string
		st         GatewayStatus
		v          uint64
		want       bool
		wantReason string
	}{
		{name: "no config", st: GatewayStatus{}, v: 0, wantReason: "no configuration"},
		{name: "no replica", st: GatewayStatus{Version: 3}, v: 3, wantReason: "no proxy replica is connected"},
		{
			name: "all acked",
			st:   GatewayStatus{Version: 3, Replicas: []ReplicaStatus{{Node: "a", Acked: 3}, {Node: "b", Acked: 4}}},
			v:    3, want: true,
		},
		{
			name: "one behind",
			st:   GatewayStatus{Version: 3, Replicas: []ReplicaStatus{{Node: "a", Acked: 3}, {Node: "b", Acked: 2}}},
			v:    3, wantReason: "waiting for 1 of 2 proxy replicas to acknowledge version 3",
		},
		{
			name: "one rejected",
			st:   GatewayStatus{Version: 3, Replicas: []ReplicaStatus{{Node: "a", Acked: 3}, {Node: "b", Acked: 2, Nacked: 3, NackReason: "bad regex"}}},
			v:    3, wantReason: "proxy b rejected version 3: bad regex",
		},
		{
			name: "older rejection does not count",
			st:   GatewayStatus{Version: 3, Replicas: []ReplicaStatus{{Node: "b", Acked: 1, Nacked: 2, NackReason: "bad regex"}}},
			v:    3, wantReason: "waiting for 1 of 1",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, reason := tt.st.Programmed(tt.v)
			if got != tt.want || !strings.Contains(reason, tt.wantReason) {
				t.Errorf("Programmed(%d) = %v, %q; want %v, %q", tt.v, got, reason, tt.want, tt.wantReason)
			}
		})
	}
}

func TestCAMarshalLoad(t *testing.T) {
	ca, err := NewCA("test", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := ca.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := LoadCA(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ca.CertPEM(), loaded.CertPEM()); diff != "" {
		t.Errorf("CertPEM after LoadCA (-want +got):\n%s", diff)
	}
	// A certificate issued by the loaded CA verifies against the original.
	kp, err := loaded.IssueClient([]string{"c/ns/name", "ns/fleet"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ServerTLSConfig(kp, ca.CertPEM())
	if err != nil {
		t.Fatal(err)
	}
	leaf := cfg.Certificates[0].Leaf
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: cfg.ClientCAs, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("verify client certificate: %v", err)
	}
	got := certGateways(leaf)
	if diff := cmp.Diff(map[string]bool{"c/ns/name": true, "ns/fleet": true}, got); diff != "" {
		t.Errorf("gateways in certificate (-want +got):\n%s", diff)
	}

	if _, err := LoadCA(kp.CertPEM, kp.KeyPEM); err == nil {
		t.Error("LoadCA accepted a leaf certificate")
	}
	if _, err := loaded.IssueClient(nil, time.Hour); err == nil {
		t.Error("IssueClient accepted no gateway")
	}
}

func TestHostName(t *testing.T) {
	for _, k := range []ir.HostKey{
		{Listener: "http-80", Hostname: "a.example.com"},
		{Listener: "a/b", Hostname: "*.example.com"},
		{Listener: "l", Hostname: "*"},
		{},
	} {
		got, ok := parseHostName(hostName(k.Listener, k.Hostname))
		if !ok {
			t.Errorf("parseHostName(hostName(%q)) failed", k)
		}
		if diff := cmp.Diff(k, got); diff != "" {
			t.Errorf("parseHostName(hostName(%q)) (-want +got):\n%s", k, diff)
		}
	}
	for _, name := range []string{baseName, "host", "host/nolistener", "vhost/l/h"} {
		if k, ok := parseHostName(name); ok {
			t.Errorf("parseHostName(%q) = %q, want failure", name, k)
		}
	}
}
