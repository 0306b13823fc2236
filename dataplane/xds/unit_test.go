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
			name: "refused replica",
			st:   GatewayStatus{Version: 3, Replicas: []ReplicaStatus{{Node: "a", Acked: 3}, {Node: "b", Refused: "no common wire version"}}},
			v:    3, wantReason: "proxy b cannot be served: no common wire version",
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

// TestGatewayStatusAcknowledged checks the NACK derivation the controllers' Programmed uses: a
// refusal is told apart from waiting, and only a refusal of v (or newer) that no ACK superseded.
func TestGatewayStatusAcknowledged(t *testing.T) {
	type result struct {
		OK, Rejected bool
		Reason       string
	}
	tests := []struct {
		name string
		st   GatewayStatus
		v    uint64
		want result
	}{
		{name: "no replica", st: GatewayStatus{Version: 3}, v: 3, want: result{Reason: "no proxy replica is connected"}},
		{name: "all acked", v: 3, want: result{OK: true},
			st: GatewayStatus{Version: 3, Replicas: []ReplicaStatus{{Node: "a", Acked: 3}, {Node: "b", Acked: 4}}}},
		{name: "one waiting is not a rejection", v: 3,
			st:   GatewayStatus{Version: 3, Replicas: []ReplicaStatus{{Node: "a", Acked: 3}, {Node: "b", Acked: 2}}},
			want: result{Reason: "waiting for 1 of 2 proxy replicas to acknowledge version 3"}},
		{name: "nack of v", v: 3,
			st:   GatewayStatus{Version: 3, Replicas: []ReplicaStatus{{Node: "a", Acked: 3}, {Node: "b", Acked: 2, Nacked: 3, NackReason: "bad regex"}}},
			want: result{Rejected: true, Reason: "proxy b rejected version 3: bad regex"}},
		{name: "nack of a newer version rejects v too", v: 3,
			st:   GatewayStatus{Version: 4, Replicas: []ReplicaStatus{{Node: "b", Acked: 2, Nacked: 4, NackReason: "bad regex"}}},
			want: result{Rejected: true, Reason: "proxy b rejected version 4: bad regex"}},
		{name: "nack of an older version is waiting", v: 3,
			st:   GatewayStatus{Version: 3, Replicas: []ReplicaStatus{{Node: "b", Acked: 1, Nacked: 2, NackReason: "bad regex"}}},
			want: result{Reason: "waiting for 1 of 1 proxy replicas to acknowledge version 3"}},
		{name: "a refused replica rejects even when the others acked", v: 3,
			st: GatewayStatus{Version: 3, Replicas: []ReplicaStatus{
				{Node: "a", Wire: WireV2, Acked: 3},
				{Node: "b", Refused: "no common wire version: the proxy speaks v1, this operator v3, v2; upgrade the proxy"},
			}},
			want: result{Rejected: true, Reason: "proxy b cannot be served: no common wire version: the proxy speaks v1, this operator v3, v2; upgrade the proxy"}},
		{name: "nack superseded by an ack of v", v: 3,
			st:   GatewayStatus{Version: 4, Replicas: []ReplicaStatus{{Node: "b", Acked: 3, Nacked: 4, NackReason: "bad regex"}}},
			want: result{OK: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got result
			got.OK, got.Rejected, got.Reason = tt.st.Acknowledged(tt.v)
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("Acknowledged(%d) (-want +got):\n%s", tt.v, d)
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

func TestNegotiate(t *testing.T) {
	tests := []struct {
		name          string
		server, proxy []WireVersion
		want          WireVersion
		wantErr       string
	}{
		{name: "both current", server: []WireVersion{WireV2, WireV1}, proxy: []WireVersion{WireV2, WireV1}, want: WireV2},
		{name: "old proxy", server: []WireVersion{WireV2, WireV1}, proxy: []WireVersion{WireV1}, want: WireV1},
		{name: "newer proxy one apart", server: []WireVersion{WireV2, WireV1}, proxy: []WireVersion{3, WireV2}, want: WireV2},
		{name: "order does not matter", server: []WireVersion{WireV1, WireV2}, proxy: []WireVersion{WireV1, WireV2}, want: WireV2},
		{name: "proxy two apart behind", server: []WireVersion{3, WireV2}, proxy: []WireVersion{WireV1},
			wantErr: "no common wire version: the proxy speaks v1, this operator v3, v2; upgrade the proxy"},
		{name: "proxy two apart ahead", server: []WireVersion{WireV2, WireV1}, proxy: []WireVersion{4, 3},
			wantErr: "no common wire version: the proxy speaks v4, v3, this operator v2, v1; upgrade the operator or roll the proxy back"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := negotiate(tt.server, tt.proxy)
			if got != tt.want || errString(err) != tt.wantErr {
				t.Errorf("negotiate(%v, %v) = %v, %q; want %v, %q", tt.server, tt.proxy, got, errString(err), tt.want, tt.wantErr)
			}
		})
	}
}

func TestAnnouncedWireVersions(t *testing.T) {
	tests := []struct {
		name     string
		features []string
		want     []WireVersion
	}{
		{name: "a proxy from before wire versions announces nothing", features: nil, want: []WireVersion{WireV1}},
		{name: "other features only", features: []string{"envoy.lb.does_not_support_overprovisioning"}, want: []WireVersion{WireV1}},
		{name: "what a current client sends", features: clientFeatures(WireVersions()), want: []WireVersion{WireV2, WireV1}},
		{name: "at most four, without duplicates", features: []string{"fleetgate.dev/wire/v9", "fleetgate.dev/wire/v9", "fleetgate.dev/wire/v8",
			"fleetgate.dev/wire/v7", "fleetgate.dev/wire/v6", "fleetgate.dev/wire/v5"}, want: []WireVersion{9, 8, 7, 6}},
		{name: "unknown versions are kept to be named", features: []string{"fleetgate.dev/wire/v7", "fleetgate.dev/wire/vx", "fleetgate.dev/wire/v0"}, want: []WireVersion{7}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, announcedWireVersions(tt.features)); diff != "" {
				t.Errorf("announcedWireVersions(%q) (-want +got):\n%s", tt.features, diff)
			}
		})
	}
}

func TestCheckWireVersions(t *testing.T) {
	if got, err := checkWireVersions(nil); err != nil || !cmp.Equal(got, WireVersions()) {
		t.Errorf("checkWireVersions(nil) = %v, %v; want every version this build speaks", got, err)
	}
	if _, err := checkWireVersions([]WireVersion{WireV2, 3}); err == nil || !strings.Contains(err.Error(), "wire version v3 is not one this build speaks (v2, v1)") {
		t.Errorf("checkWireVersions(v2, v3) = %v; want an unknown version refused", err)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestRefusalExpiryCallsOnChange: a refusal that runs out calls OnChange as its arrival did (the
// gateway may be programmed without it, and nothing else would say so), once per expiry; a
// gateway removed meanwhile is not reported.
func TestRefusalExpiryCallsOnChange(t *testing.T) {
	changes := make(chan string, 10)
	const ttl = 50 * time.Millisecond
	srv := NewServer(ServerOptions{RefusalTTL: ttl, OnChange: func(gw string) { changes <- gw }})
	// next is the next OnChange within the given time; 0: one made already.
	next := func(within time.Duration) string {
		if within == 0 {
			select {
			case gw := <-changes:
				return gw
			default:
				return ""
			}
		}
		select {
		case gw := <-changes:
			return gw
		case <-time.After(within):
			return ""
		}
	}
	srv.refuse("hub/ns/a", "pod-1", "no common wire version")
	if gw := next(0); gw != "hub/ns/a" {
		t.Fatalf("OnChange after the refusal: %q", gw)
	}
	srv.refuse("hub/ns/b", "pod-1", "no common wire version")
	srv.RemoveGateway("hub/ns/b")
	if gw := next(0); gw != "hub/ns/b" {
		t.Fatalf("OnChange after the refusal: %q", gw)
	}
	if gw := next(10 * time.Second); gw != "hub/ns/a" {
		t.Fatalf("OnChange after the refusal's TTL: %q, want hub/ns/a", gw)
	}
	if st := srv.Status("hub/ns/a"); len(st.Replicas) != 0 {
		t.Errorf("replicas after the refusal expired: %+v", st.Replicas)
	}
	if gw := next(4 * ttl); gw != "" {
		t.Errorf("OnChange(%q) after the only expiry, or for a removed gateway", gw)
	}
}
