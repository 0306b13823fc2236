package xds

import (
	"encoding/json"
	"errors"
	"net"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/go-logr/logr/testr"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
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

// rawSubscribe subscribes to gateway as node announcing features, the way a current client does.
func rawSubscribe(t *testing.T, conn *grpc.ClientConn, gateway, node string, features []string) discoveryv3.AggregatedDiscoveryService_DeltaAggregatedResourcesClient {
	t.Helper()
	s, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).DeltaAggregatedResources(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Send(&discoveryv3.DeltaDiscoveryRequest{
		Node:                   &corev3.Node{Id: node, Cluster: gateway, ClientFeatures: features},
		TypeUrl:                TypeURL,
		ResourceNamesSubscribe: []string{gateway},
	}); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestWireV2Response: a proxy announcing both versions is served WireV2, whose resources are the
// documents of WireV1 (the schema did not change) typed TypeURLV2, on a stream still typed TypeURL.
func TestWireV2Response(t *testing.T) {
	cur, _, rec := loadWireV1(t)
	pk := newPKI(t)
	srv := newServer(t, pk)
	addr, _ := serve(t, srv, "127.0.0.1:0")
	srv.SetConfig(cur.Gateway, cur)

	s := rawSubscribe(t, dial(t, pk, addr, cur.Gateway), cur.Gateway, "pod-1", clientFeatures(WireVersions()))
	got, err := s.Recv()
	if err != nil {
		t.Fatal(err)
	}
	want, err := rec.Response(got.GetNonce())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range want.GetResources() {
		r.Resource.TypeUrl = TypeURLV2
	}
	if diff := cmp.Diff(want, got, protocmp.Transform(),
		protocmp.SortRepeated(func(a, b *discoveryv3.Resource) bool { return a.GetName() < b.GetName() })); diff != "" {
		t.Errorf("WireV2 response (-want +got):\n%s", diff)
	}
}

// TestRollingUpgradeMixedWireVersions: halfway through a proxy rollout, a replica of the previous
// release (WireV1) and one of this release (WireV2) serve one gateway from the current operator:
// both get the first config and then a one-host change, each in its version, and the gateway is
// programmed once both ACKed.
func TestRollingUpgradeMixedWireVersions(t *testing.T) {
	cur, old, _ := loadWireV1(t)
	pk := newPKI(t)
	srv := newServer(t, pk)
	addr, _ := serve(t, srv, "127.0.0.1:0")
	v1 := srv.SetConfig(cur.Gateway, cur)

	oldProxy, err := wirev1.Subscribe(t.Context(), dial(t, pk, addr, cur.Gateway), cur.Gateway, "pod-old", map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := oldProxy.Receive(nil); err != nil {
		t.Fatalf("old proxy rejected version %d: %v", v1, err)
	}
	p := &proxy{}
	client := newClient(t, addr, pk.clientTLS(t, cur.Gateway), cur.Gateway, "pod-new", p)
	run(t, client)
	// Programmed alone could be the old replica's before the new one subscribed.
	eventually(t, "the current proxy to apply the config", func() bool { return client.Version() >= v1 })
	waitProgrammed(t, srv, cur.Gateway, v1)
	if got := client.WireVersion(); got != WireV2 {
		t.Errorf("current proxy speaks %v with the current operator, want %v", got, WireV2)
	}
	want := GatewayStatus{Version: v1, Replicas: []ReplicaStatus{
		{Node: "pod-new", Wire: WireV2, Acked: v1},
		{Node: "pod-old", Wire: WireV1, Acked: v1},
	}}
	if diff := cmp.Diff(want, srv.Status(cur.Gateway)); diff != "" {
		t.Errorf("Status (-want +got):\n%s", diff)
	}
	for _, wire := range []WireVersion{WireV1, WireV2} {
		if got := testutil.ToFloat64(srv.metrics.replicas.WithLabelValues(wire.String())); got != 1 {
			t.Errorf("fleetgate_xds_replicas{wire=%q} = %v, want 1", wire, got)
		}
	}

	// A route's backend weight changes: each proxy is sent that host alone.
	next := *cur
	next.Listeners = slices.Clone(cur.Listeners)
	next.Listeners[1].VirtualHosts = slices.Clone(cur.Listeners[1].VirtualHosts)
	vh := &next.Listeners[1].VirtualHosts[0]
	vh.Routes = slices.Clone(vh.Routes)
	vh.Routes[0].Backends = slices.Clone(vh.Routes[0].Backends)
	vh.Routes[0].Backends[0].Weight = 50
	v2 := srv.SetConfig(cur.Gateway, &next)

	u, err := oldProxy.Receive(nil)
	if err != nil {
		t.Fatalf("old proxy rejected version %d: %v", v2, err)
	}
	wantHost := old.Listeners[1].VirtualHosts[0]
	wantHost.Routes = slices.Clone(wantHost.Routes)
	wantHost.Routes[0].Backends = slices.Clone(wantHost.Routes[0].Backends)
	wantHost.Routes[0].Backends[0].Weight = 50
	wantUpdate := &wirev1.Update{Gateway: cur.Gateway, Version: v2, Hosts: []wirev1.ListenerHost{{Listener: "http-80", Host: wantHost}}}
	if diff := cmp.Diff(wantUpdate, u); diff != "" {
		t.Errorf("old proxy's update (-want +got):\n%s", diff)
	}
	waitProgrammed(t, srv, cur.Gateway, v2)
	got, _ := p.serving()
	wantCfg := next
	wantCfg.Version = v2
	if diff := cmp.Diff(&wantCfg, got, byHostname); diff != "" {
		t.Errorf("current proxy's config (-want +got):\n%s", diff)
	}
}

// TestWireRefusalTwoVersionsApart: an operator that dropped WireV1 (it speaks WireV2 only, as the
// release after next will speak v3 and v2) refuses a proxy of the release before wire versions
// with a clear error on both sides, and the gateway is refused (not programmed, rejected, saying
// why) until that replica is upgraded or has stopped retrying for RefusalTTL.
func TestWireRefusalTwoVersionsApart(t *testing.T) {
	cur, _, _ := loadWireV1(t)
	pk := newPKI(t)
	changes := make(chan string, 100)
	srv := NewServer(ServerOptions{TLS: pk.serverTLS, Logger: testr.New(t), WireVersions: []WireVersion{WireV2},
		OnChange: func(gw string) { changes <- gw }})
	// The stream handlers read the clock: atomic, as the test moves it.
	var now atomic.Int64
	now.Store(time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC).UnixNano())
	srv.now = func() time.Time { return time.Unix(0, now.Load()) }
	addr, _ := serve(t, srv, "127.0.0.1:0")
	v := srv.SetConfig(cur.Gateway, cur)
	conn := dial(t, pk, addr, cur.Gateway)

	const reason = "no common wire version: the proxy speaks v1, this operator v2; upgrade the proxy"
	s, err := wirev1.Subscribe(t.Context(), conn, cur.Gateway, "pod-1", map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Receive(nil)
	if st, _ := status.FromError(errors.Unwrap(err)); st.Code() != codes.FailedPrecondition || st.Message() != reason {
		t.Fatalf("old proxy's stream ended with %v; want FailedPrecondition %q", err, reason)
	}
	// The server records the refusal, and calls OnChange, before it ends the stream.
	select {
	case gw := <-changes:
		if gw != cur.Gateway {
			t.Errorf("OnChange(%q) after the refusal, want %q", gw, cur.Gateway)
		}
	default:
		t.Error("OnChange was not called for the refusal")
	}
	type result struct {
		OK, Rejected bool
		Reason       string
	}
	acknowledged := func() result {
		var r result
		r.OK, r.Rejected, r.Reason = srv.Acknowledged(cur.Gateway, v)
		return r
	}
	if diff := cmp.Diff(result{Rejected: true, Reason: "proxy pod-1 cannot be served: " + reason}, acknowledged()); diff != "" {
		t.Errorf("Acknowledged after the refusal (-want +got):\n%s", diff)
	}
	if got := testutil.ToFloat64(srv.metrics.refusals); got != 1 {
		t.Errorf("refusals counted: %v, want 1", got)
	}

	// A refused proxy that stopped retrying (rolled back, deleted) stops holding the gateway back.
	now.Add(int64(RefusalTTL))
	if diff := cmp.Diff(result{Reason: "no proxy replica is connected"}, acknowledged()); diff != "" {
		t.Errorf("Acknowledged once the refusal expired (-want +got):\n%s", diff)
	}

	// Refused again, then the same replica comes back upgraded: it is served, and the refusal is gone.
	s, err = wirev1.Subscribe(t.Context(), conn, cur.Gateway, "pod-1", map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Receive(nil); status.Code(errors.Unwrap(err)) != codes.FailedPrecondition {
		t.Fatalf("old proxy's second stream ended with %v; want FailedPrecondition", err)
	}
	if r := acknowledged(); !r.Rejected {
		t.Fatalf("Acknowledged after the second refusal: %+v, want rejected", r)
	}
	p := &proxy{}
	run(t, newClient(t, addr, pk.clientTLS(t, cur.Gateway), cur.Gateway, "pod-1", p))
	waitProgrammed(t, srv, cur.Gateway, v)
	want := GatewayStatus{Version: v, Replicas: []ReplicaStatus{{Node: "pod-1", Wire: WireV2, Acked: v}}}
	if diff := cmp.Diff(want, srv.Status(cur.Gateway)); diff != "" {
		t.Errorf("Status once upgraded (-want +got):\n%s", diff)
	}
}

// TestWireRefusalOfANewerProxy: a proxy two releases ahead (it speaks v4 and v3 only) is told to
// wait for the operator's upgrade.
func TestWireRefusalOfANewerProxy(t *testing.T) {
	pk := newPKI(t)
	srv := newServer(t, pk)
	addr, _ := serve(t, srv, "127.0.0.1:0")
	srv.SetConfig(gwA, config(8080))

	s := rawSubscribe(t, dial(t, pk, addr, gwA), gwA, "pod-1", []string{"fleetgate.dev/wire/v4", "fleetgate.dev/wire/v3"})
	_, err := s.Recv()
	const reason = "no common wire version: the proxy speaks v4, v3, this operator v2, v1; upgrade the operator or roll the proxy back"
	if st, _ := status.FromError(err); st.Code() != codes.FailedPrecondition || st.Message() != reason {
		t.Fatalf("stream ended with %v; want FailedPrecondition %q", err, reason)
	}
	want := GatewayStatus{Version: 1, Replicas: []ReplicaStatus{{Node: "pod-1", Refused: reason}}}
	if diff := cmp.Diff(want, srv.Status(gwA)); diff != "" {
		t.Errorf("Status (-want +got):\n%s", diff)
	}
}

// TestCurrentProxyNacksAWireVersionItDoesNotSpeak: a proxy that no longer speaks WireV1 (as the
// release after next will not) NACKs what a server of the release before wire versions sends,
// saying why, and that server records the NACK as it records any.
func TestCurrentProxyNacksAWireVersionItDoesNotSpeak(t *testing.T) {
	cur, _, rec := loadWireV1(t)
	pk := newPKI(t)
	answers := make(chan wirev1.Answer, 1)
	addr := serveGRPC(t, pk, &wirev1.Server{Gateway: cur.Gateway, Recording: rec, Answers: answers})
	p := &proxy{}
	c, err := NewClient(ClientOptions{Address: addr, TLS: pk.clientTLS(t, cur.Gateway), Gateway: cur.Gateway, Node: "pod-1",
		Apply: p.Apply, Logger: testr.New(t), WireVersions: []WireVersion{WireV2}})
	if err != nil {
		t.Fatal(err)
	}
	run(t, c)

	a := <-answers
	if !strings.HasSuffix(a.Nack, `type "type.googleapis.com/fleetgate.dev.ir.Config" is of no wire version this proxy speaks (v2)`) {
		t.Errorf("NACK %q; want the unspoken wire version named", a.Nack)
	}
	if diff := cmp.Diff([]string{"fleetgate.dev/wire/v2"}, a.Subscribe.GetNode().GetClientFeatures()); diff != "" {
		t.Errorf("announced features (-want +got):\n%s", diff)
	}
	if got, _ := p.serving(); got != nil || c.Version() != 0 {
		t.Errorf("the proxy applied version %d: %+v", c.Version(), got)
	}
}

// TestWireV1ProxyReconnectsToUpgradedOperator: a proxy of the release before wire versions, holding
// the recorded config, reconnects to the upgraded operator (which has the same config): its
// resource versions are still valid, so it is programmed without answering anything (it never
// reads its stream here).
func TestWireV1ProxyReconnectsToUpgradedOperator(t *testing.T) {
	cur, _, rec := loadWireV1(t)
	pk := newPKI(t)
	srv := newServer(t, pk)
	addr, _ := serve(t, srv, "127.0.0.1:0")
	v := srv.SetConfig(cur.Gateway, cur)

	held := map[string]string{cur.Gateway: rec.SystemVersionInfo}
	for _, r := range rec.Resources {
		held[r.Name] = r.Version
	}
	if _, err := wirev1.Subscribe(t.Context(), dial(t, pk, addr, cur.Gateway), cur.Gateway, "old-pod", held); err != nil {
		t.Fatal(err)
	}
	waitProgrammed(t, srv, cur.Gateway, v)
	want := GatewayStatus{Version: v, Replicas: []ReplicaStatus{{Node: "old-pod", Wire: WireV1, Acked: v}}}
	if diff := cmp.Diff(want, srv.Status(cur.Gateway)); diff != "" {
		t.Errorf("Status (-want +got):\n%s", diff)
	}
}
