package integration

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/fleetgate/fleetgate/dataplane/xds"
	"github.com/fleetgate/fleetgate/providers"
	"github.com/fleetgate/fleetgate/tests/testbed"
)

// TestWireRefusalReachesGatewayStatus: a proxy replica two releases ahead of the operator (it
// speaks wire versions v4 and v3 only) is refused, and the Gateway's Programmed condition, written
// by the operator binary on a real API server, says so and what to do; once that replica runs this
// release's proxy, the Gateway is programmed.
func TestWireRefusalReachesGatewayStatus(t *testing.T) {
	c := testbed.ForTest(t, "hub")[0]
	ctx := t.Context()
	binary, err := testbed.BuildOperator(t.TempDir())
	must(t, err)
	must(t, c.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "fleetgate-system"}}))
	xdsAddr := freeAddr(t)
	op, err := testbed.StartOperator(binary, c, t.TempDir(), "--local-mode=false", "--namespace=fleetgate-system",
		"--xds-address="+xdsAddr, "--xds-public-address="+xdsAddr, "--proxy-image=fleetgate:test")
	must(t, err)
	t.Cleanup(func() { must(t, op.Stop()) })

	e := &trafficEnv{t: t, c: c}
	e.backend(31, "web", 9080)
	e.gateway(gwv1.Listener{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType})
	must(t, c.Client.Create(ctx, httpRoute("web", "www.example.com", "web")))

	// The kubelet's and the cloud's part, as in TestInClusterMode: the provider is ready, so only
	// the proxies stand between the Gateway and Programmed.
	sel := client.MatchingLabels{providers.LabelGateway: providers.GatewayID("hub/default/gw")}
	var dep appsv1.Deployment
	var svc corev1.Service
	var creds corev1.Secret
	testbed.Eventually(t, 30*time.Second, func() error {
		var deps appsv1.DeploymentList
		var svcs corev1.ServiceList
		var secrets corev1.SecretList
		for _, l := range []client.ObjectList{&deps, &svcs, &secrets} {
			if err := c.Client.List(ctx, l, client.InNamespace("default"), sel); err != nil {
				return err
			}
		}
		if len(deps.Items) != 1 || len(svcs.Items) != 1 || len(secrets.Items) != 1 {
			return fmt.Errorf("proxy objects: %d Deployments, %d Services, %d Secrets; want one each", len(deps.Items), len(svcs.Items), len(secrets.Items))
		}
		dep, svc, creds = deps.Items[0], svcs.Items[0], secrets.Items[0]
		return nil
	})
	dep.Status = appsv1.DeploymentStatus{ObservedGeneration: dep.Generation, Replicas: *dep.Spec.Replicas,
		UpdatedReplicas: *dep.Spec.Replicas, ReadyReplicas: *dep.Spec.Replicas, AvailableReplicas: *dep.Spec.Replicas}
	must(t, c.Client.Status().Update(ctx, &dep))
	lbIP := "127.0.0.78"
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: lbIP}}
	must(t, c.Client.Status().Update(ctx, &svc))

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
	dir := t.TempDir()
	for _, k := range []string{"tls.crt", "tls.key", "ca.crt"} {
		must(t, os.WriteFile(filepath.Join(dir, k), creds.Data[k], 0o600))
	}
	proxyCtx, stopProxy := context.WithCancel(context.Background())
	proxy := exec.CommandContext(proxyCtx, binary, "dataplane", "--gateway", "hub/default/gw", "--node", "pod-1",
		"--xds-address", xdsAddr, "--address", lbIP, "--drain-timeout", "1s",
		"--cert", filepath.Join(dir, "tls.crt"), "--key", filepath.Join(dir, "tls.key"), "--ca", filepath.Join(dir, "ca.crt"))
	must(t, proxy.Start())
	t.Cleanup(func() { stopProxy(); _ = proxy.Wait() })
	e.programmed(metav1.ConditionTrue, 20*time.Second)
}
