package integration

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/fleetgate/fleetgate/providers"
	"github.com/fleetgate/fleetgate/tests/testbed"
)

// TestInClusterMode runs the operator binary as it runs in a cluster: the CA goes into a Secret, each
// Gateway gets a proxy Deployment, Service, ServiceAccount and credentials Secret. With no kubelet
// here, the test plays the kubelet's part: it marks the Deployment available, gives the Service a
// load-balancer address, and runs the proxy the pod would run, with the credentials from the Secret.
// Programmed turns True only then, and deleting the Gateway removes everything.
func TestInClusterMode(t *testing.T) {
	c := testbed.ForTest(t, "hub")[0]
	ctx := t.Context()
	binary, xdsAddr := inClusterOperator(t, c)

	e := &trafficEnv{t: t, c: c}
	e.backend(30, "web", 9080)
	e.gateway(gwv1.Listener{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType})
	must(t, c.Client.Create(ctx, httpRoute("web", "www.example.com", "web")))

	sel := client.MatchingLabels{providers.LabelGateway: providers.GatewayID("hub/default/gw")}
	dep, svc, creds := proxyObjects(t, c, "hub/default/gw")
	var ca corev1.Secret
	must(t, c.Client.Get(ctx, client.ObjectKey{Namespace: "fleetgate-system", Name: "fleetgate-xds-ca"}, &ca))
	if img := dep.Spec.Template.Spec.Containers[0].Image; img != "fleetgate:test" {
		t.Errorf("proxy image %q, want fleetgate:test", img)
	}
	_, cond := e.programmed(metav1.ConditionFalse, 10*time.Second)
	t.Logf("before the proxy runs: Programmed=False %s: %s", cond.Reason, cond.Message)

	const lbIP = "127.0.0.77"
	playKubeletAndCloud(t, c, &dep, &svc, lbIP)
	runProxy(t, binary, xdsAddr, "hub/default/gw", "pod-1", lbIP, creds)

	addr, _ := e.programmed(metav1.ConditionTrue, 20*time.Second)
	if addr != lbIP {
		t.Errorf("Gateway address %s, want the Service's load-balancer IP %s", addr, lbIP)
	}
	e.serves(net.JoinHostPort(lbIP, "80"), "www.example.com", "web", 5*time.Second)

	must(t, c.Client.Delete(ctx, &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "gw"}}))
	testbed.Eventually(t, 20*time.Second, func() error {
		var deps appsv1.DeploymentList
		var secrets corev1.SecretList
		for _, l := range []client.ObjectList{&deps, &secrets} {
			if err := c.Client.List(ctx, l, client.InNamespace("default"), sel); err != nil {
				return err
			}
		}
		if len(deps.Items)+len(secrets.Items) != 0 {
			return fmt.Errorf("after the Gateway was deleted: %d Deployments, %d Secrets remain", len(deps.Items), len(secrets.Items))
		}
		return nil
	})
}

// inClusterOperator runs the operator binary on c with the in-cluster provider (proxy Deployments
// with the image fleetgate:test), its config server on a free loopback address, which it returns
// with the binary.
func inClusterOperator(t *testing.T, c *testbed.Cluster) (binary, xdsAddr string) {
	t.Helper()
	binary, err := testbed.BuildOperator(t.TempDir())
	must(t, err)
	must(t, c.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "fleetgate-system"}}))
	xdsAddr = freeAddr(t)
	op, err := testbed.StartOperator(binary, c, t.TempDir(), "--local-mode=false", "--namespace=fleetgate-system",
		"--xds-address="+xdsAddr, "--xds-public-address="+xdsAddr, "--proxy-image=fleetgate:test")
	must(t, err)
	t.Cleanup(func() { must(t, op.Stop()) })
	return binary, xdsAddr
}

// proxyObjects waits for the in-cluster provider's proxy Deployment, Service and credentials
// Secret of gateway in namespace default, and returns them.
func proxyObjects(t *testing.T, c *testbed.Cluster, gateway string) (dep appsv1.Deployment, svc corev1.Service, creds corev1.Secret) {
	t.Helper()
	sel := client.MatchingLabels{providers.LabelGateway: providers.GatewayID(gateway)}
	testbed.Eventually(t, 30*time.Second, func() error {
		var deps appsv1.DeploymentList
		var svcs corev1.ServiceList
		var secrets corev1.SecretList
		for _, l := range []client.ObjectList{&deps, &svcs, &secrets} {
			if err := c.Client.List(t.Context(), l, client.InNamespace("default"), sel); err != nil {
				return err
			}
		}
		if len(deps.Items) != 1 || len(svcs.Items) != 1 || len(secrets.Items) != 1 {
			return fmt.Errorf("proxy objects: %d Deployments, %d Services, %d Secrets; want one each", len(deps.Items), len(svcs.Items), len(secrets.Items))
		}
		dep, svc, creds = deps.Items[0], svcs.Items[0], secrets.Items[0]
		return nil
	})
	return dep, svc, creds
}

// playKubeletAndCloud does what no controller here does: it marks the proxy Deployment available
// (the kubelet's part) and gives its Service the load-balancer address lbIP (the cloud's).
func playKubeletAndCloud(t *testing.T, c *testbed.Cluster, dep *appsv1.Deployment, svc *corev1.Service, lbIP string) {
	t.Helper()
	dep.Status = appsv1.DeploymentStatus{ObservedGeneration: dep.Generation, Replicas: *dep.Spec.Replicas,
		UpdatedReplicas: *dep.Spec.Replicas, ReadyReplicas: *dep.Spec.Replicas, AvailableReplicas: *dep.Spec.Replicas}
	must(t, c.Client.Status().Update(t.Context(), dep))
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: lbIP}}
	must(t, c.Client.Status().Update(t.Context(), svc))
}

// runProxy runs the proxy a pod of gateway would run, as node, on lbIP, with the credentials of
// the Secret, until the test ends.
func runProxy(t *testing.T, binary, xdsAddr, gateway, node, lbIP string, creds corev1.Secret) {
	t.Helper()
	dir := t.TempDir()
	for _, k := range []string{"tls.crt", "tls.key", "ca.crt"} {
		must(t, os.WriteFile(filepath.Join(dir, k), creds.Data[k], 0o600))
	}
	ctx, stop := context.WithCancel(context.Background())
	proxy := exec.CommandContext(ctx, binary, "dataplane", "--gateway", gateway, "--node", node,
		"--xds-address", xdsAddr, "--address", lbIP, "--drain-timeout", "1s",
		"--cert", filepath.Join(dir, "tls.crt"), "--key", filepath.Join(dir, "tls.key"), "--ca", filepath.Join(dir, "ca.crt"))
	must(t, proxy.Start())
	t.Cleanup(func() { stop(); _ = proxy.Wait() })
}

// freeAddr returns a loopback address with a port nothing listens on right now.
func freeAddr(t *testing.T) string {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	defer lis.Close()
	return lis.Addr().String()
}
