package integration

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/fleetgate/fleetgate/dataplane/xds"
	"github.com/fleetgate/fleetgate/tests/testbed"
)

// TestWireRefusalReachesGatewayStatus: a proxy replica two releases ahead of the operator (it
// speaks wire versions v4 and v3 only) is refused, and the Gateway's Programmed condition, written
// by the operator binary on a real API server, says so and what to do; once that replica runs this
// release's proxy, the Gateway is programmed.
func TestWireRefusalReachesGatewayStatus(t *testing.T) {
	c := testbed.ForTest(t, "hub")[0]
	ctx := t.Context()
	binary, xdsAddr := inClusterOperator(t, c)

	e := &trafficEnv{t: t, c: c}
	e.backend(31, "web", 9080)
	e.gateway(gwv1.Listener{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType})
	must(t, c.Client.Create(ctx, httpRoute("web", "www.example.com", "web")))

	// The kubelet's and the cloud's part, as in TestInClusterMode: the provider is ready, so only
	// the proxies stand between the Gateway and Programmed.
	dep, svc, creds := proxyObjects(t, c, "hub/default/gw")
	const lbIP = "127.0.0.78"
	playKubeletAndCloud(t, c, &dep, &svc, lbIP)

	// The newer proxy, with the replica's real credentials, subscribes announcing what it speaks.
	xdsHost, _, err := net.SplitHostPort(xdsAddr)
	must(t, err)
	tlsCfg, err := xds.ClientTLSConfig(xds.KeyPair{CertPEM: creds.Data["tls.crt"], KeyPEM: creds.Data["tls.key"]}, creds.Data["ca.crt"], xdsHost)
	must(t, err)
	conn, err := grpc.NewClient(xdsAddr, grpc.WithTransportCredentials(credentials.NewTLS(tlsCfg)))
	must(t, err)
	t.Cleanup(func() { conn.Close() })
	stream, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).DeltaAggregatedResources(ctx)
	must(t, err)
	must(t, stream.Send(&discoveryv3.DeltaDiscoveryRequest{
		Node:                   &corev3.Node{Id: "pod-1", Cluster: "hub/default/gw", ClientFeatures: []string{"fleetgate.dev/wire/v4", "fleetgate.dev/wire/v3"}},
		TypeUrl:                xds.TypeURL,
		ResourceNamesSubscribe: []string{"hub/default/gw"},
	}))
	const reason = "no common wire version: the proxy speaks v4, v3, this operator v2, v1; upgrade the operator or roll the proxy back"
	if _, err := stream.Recv(); status.Code(err) != codes.FailedPrecondition || status.Convert(err).Message() != reason {
		t.Fatalf("the newer proxy's stream ended with %v; want FailedPrecondition %q", err, reason)
	}
	var cond metav1.Condition
	testbed.Eventually(t, 15*time.Second, func() error {
		_, cond = e.programmed(metav1.ConditionFalse, 15*time.Second)
		if cond.Reason != string(gwv1.GatewayReasonInvalid) || !strings.Contains(cond.Message, "proxy pod-1 cannot be served: "+reason) {
			return fmt.Errorf("Programmed = %s: %s, want Invalid saying why pod-1 cannot be served", cond.Reason, cond.Message)
		}
		return nil
	})
	t.Logf("Programmed=False %s: %s", cond.Reason, cond.Message)

	// The replica is rolled back to this release's proxy, under the same name.
	runProxy(t, binary, xdsAddr, "hub/default/gw", "pod-1", lbIP, creds)
	e.programmed(metav1.ConditionTrue, 20*time.Second)
}
