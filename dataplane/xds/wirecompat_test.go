package xds

import (
	"encoding/json"
	"net"
	"os"
	"testing"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/fleetgate/fleetgate/dataplane/ir"
	"github.com/fleetgate/fleetgate/dataplane/xds/internal/wirev1"
)

// The frozen fixture of wire version 1: a representative config in that version's schema, and the
// response the server of that release sent for it (testdata/wire/v1/README.md says how it was
// recorded). Neither may be regenerated.
const (
	wireV1Config   = "testdata/wire/v1/config.json"
	wireV1Response = "testdata/wire/v1/response.json"
)

// loadWireV1 returns the fixture's config decoded both into the current IR, for a current server
// or proxy, and into the frozen schema, as a proxy of wire version 1 holds it.
func loadWireV1(t *testing.T) (*ir.Config, *wirev1.Config, *wirev1.Recording) {
	t.Helper()
	raw, err := os.ReadFile(wireV1Config)
	if err != nil {
		t.Fatal(err)
	}
	var cur ir.Config
	if err := json.Unmarshal(raw, &cur); err != nil {
		t.Fatal(err)
	}
	var old wirev1.Config
	if err := json.Unmarshal(raw, &old); err != nil {
		t.Fatal(err)
	}
	rec, err := wirev1.LoadRecording(wireV1Response)
	if err != nil {
		t.Fatal(err)
	}
	return &cur, &old, rec
}

// dial opens a gRPC connection to addr as a proxy of gateway.
func dial(t *testing.T, pk *pki, addr, gateway string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(pk.clientTLS(t, gateway))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// byHostname orders virtual hosts, which a proxy receives in no particular order.
var byHostname = cmpopts.SortSlices(func(a, b any) bool {
	switch a := a.(type) {
	case ir.VirtualHost:
		return a.Hostname < b.(ir.VirtualHost).Hostname
	case wirev1.VirtualHost:
		return a.Hostname < b.(wirev1.VirtualHost).Hostname
	}
	return false
})

// TestWireV1ProxyOnCurrentServer: a proxy of the release before wire versions subscribes to the
// current server, which sends it the fixture's config byte for byte as that release's server did;
// the old proxy decodes the whole config and ACKs it.
func TestWireV1ProxyOnCurrentServer(t *testing.T) {
	cur, old, rec := loadWireV1(t)
	pk := newPKI(t)
	srv := newServer(t, pk)
	addr, _ := serve(t, srv, "127.0.0.1:0")
	v := srv.SetConfig(cur.Gateway, cur)

	s, err := wirev1.Subscribe(t.Context(), dial(t, pk, addr, cur.Gateway), cur.Gateway, "old-pod", map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	u, err := s.Receive(nil)
	if err != nil {
		t.Fatalf("the old proxy rejected the config: %v", err)
	}
	got, err := u.Config()
	if err != nil {
		t.Fatal(err)
	}
	want := *old
	want.Version = v
	if diff := cmp.Diff(&want, got, byHostname); diff != "" {
		t.Errorf("old proxy's config (-want +got):\n%s", diff)
	}
	// Byte for byte what the old server sent: the old proxy's resource versions (hashes) stay valid
	// across the upgrade, so a reconnecting old proxy is sent nothing it already holds.
	wantResp, err := rec.Response(s.Last.GetNonce())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantResp, s.Last, protocmp.Transform(),
		protocmp.SortRepeated(func(a, b *discoveryv3.Resource) bool { return a.GetName() < b.GetName() })); diff != "" {
		t.Errorf("response differs from the recorded wire version 1 response (-recorded +sent):\n%s", diff)
	}
	waitProgrammed(t, srv, cur.Gateway, v)
}

// TestCurrentProxyOnWireV1Server: the current proxy subscribes to a server of the release before
// wire versions (its recorded response, replayed under that server's rules), gets the fixture's
// config and ACKs it.
func TestCurrentProxyOnWireV1Server(t *testing.T) {
	cur, _, rec := loadWireV1(t)
	pk := newPKI(t)
	answers := make(chan wirev1.Answer, 1)
	addr := serveGRPC(t, pk, &wirev1.Server{Gateway: cur.Gateway, Recording: rec, Answers: answers})
	p := &proxy{}
	run(t, newClient(t, addr, pk.clientTLS(t, cur.Gateway), cur.Gateway, "new-pod", p))

	a := <-answers
	if a.Nack != "" {
		t.Fatalf("the current proxy rejected the old server's config: %s", a.Nack)
	}
	got, _ := p.serving()
	want := *cur
	want.Version = 1
	if diff := cmp.Diff(&want, got, byHostname); diff != "" {
		t.Errorf("current proxy's config (-want +got):\n%s", diff)
	}
}

// serveGRPC serves ads over mutual TLS on a free port until the test ends.
func serveGRPC(t *testing.T, pk *pki, ads discoveryv3.AggregatedDiscoveryServiceServer) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(grpc.Creds(credentials.NewTLS(pk.serverTLS)))
	discoveryv3.RegisterAggregatedDiscoveryServiceServer(gs, ads)
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	return lis.Addr().String()
}
