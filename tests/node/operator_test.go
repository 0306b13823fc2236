// Package node runs fleetgate as it runs in production, on a real node of the test bed
// (testbed.NodeForTest): the operator as pods of the `make image` image with the bundle's
// Deployment, ServiceAccount and RBAC, and the in-cluster provider's proxies as pods.
package node

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/bundle"
	"github.com/fleetgate/fleetgate/providers"
	"github.com/fleetgate/fleetgate/tests/testbed"
)

// namespace is where the bundle is installed, as an OperatorGroup's target namespace would be.
const namespace = "fleetgate-system"

func TestMain(m *testing.M) {
	testbed.QuietGlobalLogger()
	os.Exit(m.Run())
}

// imageArchive is the operator image's amd64 docker archive that `make image` writes:
// $FLEETGATE_IMAGE_ARCHIVE, else bin/image/fleetgate.tar.
func imageArchive(t *testing.T) string {
	t.Helper()
	path := cmp.Or(os.Getenv("FLEETGATE_IMAGE_ARCHIVE"), filepath.Join(testbed.RepoRoot(), "bin", "image", "fleetgate.tar"))
	if _, err := os.Stat(path); err != nil {
		if os.Getenv("CI") == "" {
			t.Skipf("no operator image (run `make image`; with CI set this fails): %v", err)
		}
		t.Fatalf("no operator image (run `make image`): %v", err)
	}
	return path
}

// TestOperatorAsPod installs the bundle on a cluster with a real node and runs the operator as its
// Deployment's two pods from the `make image` image, with the bundle ServiceAccount's token; one
// is elected leader. A Gateway of an in-cluster class gets a proxy Deployment, whose pods take
// their config over xDS (mTLS) from the operator's Service, and an HTTPRoute's requests from the
// host reach the backend pods through the proxy Service's ClusterIP (kube-proxy). A LoadBalancer
// Service of our class gets proxy pods too, and an address that serves.
func TestOperatorAsPod(t *testing.T) {
	testbed.RequireNode(t)
	archive := imageArchive(t)
	ctx := t.Context()
	c := testbed.ForTestWith(t, "hub", testbed.Options{Node: true, PrerequisitesOnly: true})
	echo, err := testbed.BuildImage(ctx, t.TempDir(), testbed.EchoImage)
	if err != nil {
		t.Fatal(err)
	}
	testbed.NodeForTest(t, c, testbed.NodeOptions{Images: []string{archive, echo}})
	cl := c.Client

	start := time.Now()
	deploy := install(t, c)
	t.Cleanup(func() {
		if t.Failed() {
			operatorLogs(t, c)
		}
	})
	testbed.Eventually(t, 3*time.Minute, func() error {
		return testbed.DeploymentReady(ctx, cl, namespace, deploy.Name, *deploy.Spec.Replicas)
	})
	t.Logf("operator Deployment: %d pods Ready %s after the install", *deploy.Spec.Replicas, time.Since(start).Round(time.Millisecond))
	var pods corev1.PodList
	if err := cl.List(ctx, &pods, client.InNamespace(namespace), client.MatchingLabels(deploy.Spec.Selector.MatchLabels)); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range pods.Items {
		if p.Spec.NodeName != testbed.NodeName || p.Spec.ServiceAccountName != deploy.Spec.Template.Spec.ServiceAccountName {
			t.Errorf("operator pod %s on node %q as %q, want on %s as the bundle's ServiceAccount", p.Name, p.Spec.NodeName, p.Spec.ServiceAccountName, testbed.NodeName)
		}
		names = append(names, p.Name)
	}
	testbed.Eventually(t, time.Minute, func() error {
		var lease coordinationv1.Lease
		if err := cl.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "fleetgate.dev"}, &lease); err != nil {
			return err
		}
		holder, _, _ := strings.Cut(ptr.Deref(lease.Spec.HolderIdentity, ""), "_")
		if !slices.Contains(names, holder) {
			return fmt.Errorf("leader %q is none of the operator pods %v", holder, names)
		}
		t.Logf("leader: %s", holder)
		return nil
	})

	// The backends, and a class whose proxies are exposed by a ClusterIP Service.
	if err := testbed.CreateAll(ctx, cl, testbed.EchoDeployment("default", "web", 2), &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}},
	}); err != nil {
		t.Fatal(err)
	}
	if err := testbed.CreateAll(ctx, cl,
		&v1alpha1.GatewayClassConfig{
			ObjectMeta: metav1.ObjectMeta{Name: "node"},
			Spec: v1alpha1.GatewayClassConfigSpec{Provider: v1alpha1.ProviderInCluster, Scope: v1alpha1.ScopeCluster,
				InCluster: &v1alpha1.InClusterOptions{Replicas: ptr.To[int32](2), ServiceType: v1alpha1.ServiceType(corev1.ServiceTypeClusterIP)}},
		},
		&gwv1.GatewayClass{
			ObjectMeta: metav1.ObjectMeta{Name: "node"},
			Spec: gwv1.GatewayClassSpec{ControllerName: v1alpha1.ControllerName,
				ParametersRef: &gwv1.ParametersReference{Group: v1alpha1.Group, Kind: "GatewayClassConfig", Name: "node"}},
		},
		&gwv1.Gateway{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "gw"},
			Spec: gwv1.GatewaySpec{GatewayClassName: "node",
				Listeners: []gwv1.Listener{{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType}}},
		},
		&gwv1.HTTPRoute{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
			Spec: gwv1.HTTPRouteSpec{
				CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "gw"}}},
				Rules: []gwv1.HTTPRouteRule{{BackendRefs: []gwv1.HTTPBackendRef{{BackendRef: gwv1.BackendRef{
					BackendObjectReference: gwv1.BackendObjectReference{Name: "web", Port: ptr.To[gwv1.PortNumber](80)}}}}}},
			},
		},
	); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	var addr string
	testbed.Eventually(t, 3*time.Minute, func() error {
		var gw gwv1.Gateway
		if err := cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: "gw"}, &gw); err != nil {
			return err
		}
		cond := apimeta.FindStatusCondition(gw.Status.Conditions, string(gwv1.GatewayConditionProgrammed))
		if cond == nil || cond.Status != metav1.ConditionTrue || len(gw.Status.Addresses) == 0 {
			return fmt.Errorf("gateway not Programmed with an address: %+v", gw.Status)
		}
		addr = gw.Status.Addresses[0].Value
		return nil
	})
	t.Logf("Gateway Programmed at %s %s after it was created", addr, time.Since(start).Round(time.Millisecond))

	// The proxies are pods of the operator's image on the node.
	var proxies corev1.PodList
	if err := cl.List(ctx, &proxies, client.MatchingLabels{providers.LabelManagedBy: providers.ManagedBy}); err != nil {
		t.Fatal(err)
	}
	running := 0
	for _, p := range proxies.Items {
		if p.Status.Phase == corev1.PodRunning && p.Spec.NodeName == testbed.NodeName {
			running++
		}
	}
	if running == 0 {
		t.Errorf("no proxy pod runs on the node: %d proxy pods", len(proxies.Items))
	}

	var backends corev1.PodList
	if err := cl.List(ctx, &backends, client.InNamespace("default"), client.MatchingLabels{"app": "web"}); err != nil {
		t.Fatal(err)
	}
	var backendNames []string
	for _, p := range backends.Items {
		backendNames = append(backendNames, p.Name)
	}
	var body string
	testbed.Eventually(t, time.Minute, func() error {
		var err error
		body, err = get("http://" + addr + "/through-the-proxy")
		return err
	})
	name, rest, _ := strings.Cut(body, " ")
	if !slices.Contains(backendNames, name) || !strings.HasPrefix(rest, "GET ") || !strings.HasSuffix(rest, "/through-the-proxy\n") {
		t.Errorf("GET through the proxy Service: %q, want an answer of one of the backend pods %v", body, backendNames)
	}

	// A LoadBalancer Service of our class gets proxies of its own, behind a LoadBalancer Service
	// of theirs. No load-balancer controller runs here, so the test plays the cloud's part, as
	// cloud-provider-kind would: it gives that Service an ingress IP, which kube-proxy serves.
	lbIP := "198.18.10.1"
	lb := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-lb"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, LoadBalancerClass: ptr.To(v1alpha1.LoadBalancerClassInCluster),
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Name: "tcp", Port: 8088, TargetPort: intstr.FromInt32(8080)}}},
	}
	if err := cl.Create(ctx, lb); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	testbed.Eventually(t, time.Minute, func() error {
		var svcs corev1.ServiceList
		if err := cl.List(ctx, &svcs, client.MatchingLabels{providers.LabelManagedBy: providers.ManagedBy}); err != nil {
			return err
		}
		for _, s := range svcs.Items {
			if s.Spec.Type != corev1.ServiceTypeLoadBalancer {
				continue
			}
			if len(s.Status.LoadBalancer.Ingress) == 0 {
				s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: lbIP}}
				return cl.Status().Update(ctx, &s)
			}
			return nil
		}
		return errors.New("no LoadBalancer proxy Service yet")
	})
	testbed.Eventually(t, 3*time.Minute, func() error {
		if err := cl.Get(ctx, client.ObjectKeyFromObject(lb), lb); err != nil {
			return err
		}
		// ipMode Proxy: kube-proxy leaves the address to the proxies rather than short-cutting
		// to the Service's own endpoints, so the requests below go through the proxy pods.
		if ing := lb.Status.LoadBalancer.Ingress; len(ing) != 1 || ing[0].IP != lbIP || ptr.Deref(ing[0].IPMode, "") != corev1.LoadBalancerIPModeProxy {
			return fmt.Errorf("Service %s has load balancer %+v, want %s with ipMode Proxy", lb.Name, ing, lbIP)
		}
		return nil
	})
	t.Logf("LoadBalancer Service got its address %s %s after it was created", lbIP, time.Since(start).Round(time.Millisecond))
	testbed.Eventually(t, time.Minute, func() error {
		var err error
		body, err = get("http://" + lbIP + ":8088/through-the-lb")
		return err
	})
	if name, _, _ := strings.Cut(body, " "); !slices.Contains(backendNames, name) || !strings.HasSuffix(body, "/through-the-lb\n") {
		t.Errorf("GET through the LoadBalancer Service: %q, want an answer of one of the backend pods %v", body, backendNames)
	}
}

// install creates the namespace and what OLM would create from the bundle in it. The operator's
// Deployment gets one change: no cluster DNS runs on the test node, so proxies are told the xDS
// Service by its ClusterIP rather than its DNS name. It returns the Deployment.
func install(t *testing.T, c *testbed.Cluster) *appsv1.Deployment {
	t.Helper()
	ctx := t.Context()
	if err := c.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace,
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}}}); err != nil {
		t.Fatal(err)
	}
	b, err := bundle.Load(filepath.Join(testbed.RepoRoot(), "bundle"))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := b.Objects(namespace)
	if err != nil {
		t.Fatal(err)
	}
	var deploys []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "Deployment" {
			deploys = append(deploys, o)
			continue
		}
		if err := c.Client.Create(ctx, o); err != nil {
			t.Fatalf("installing %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
	if len(deploys) != 1 {
		t.Fatalf("bundle has %d Deployments, want 1", len(deploys))
	}
	var xds corev1.Service
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "fleetgate-xds"}, &xds); err != nil {
		t.Fatalf("the bundle's xDS Service: %v", err)
	}
	var deploy appsv1.Deployment
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(deploys[0].Object, &deploy); err != nil {
		t.Fatal(err)
	}
	ctr := &deploy.Spec.Template.Spec.Containers[0]
	ctr.Args = append(ctr.Args, "--xds-public-address="+xds.Spec.ClusterIP+":18000")
	if err := c.Client.Create(ctx, &deploy); err != nil {
		t.Fatalf("installing the operator Deployment: %v", err)
	}
	return &deploy
}

// operatorLogs shows the end of each operator and proxy container's log, through the kubelet.
func operatorLogs(t *testing.T, c *testbed.Cluster) {
	var pods corev1.PodList
	// t.Context() has ended by the time cleanups run.
	if err := c.Client.List(context.Background(), &pods); err != nil {
		t.Logf("listing pods: %v", err)
		return
	}
	for _, p := range pods.Items {
		t.Logf("pod %s/%s: %s %v", p.Namespace, p.Name, p.Status.Phase, p.Status.ContainerStatuses)
	}
	logs, _ := filepath.Glob("/var/log/pods/*/*/*.log")
	for _, l := range logs {
		if !strings.Contains(l, namespace) && !strings.Contains(l, "/default_gw") && !strings.Contains(l, "proxy") {
			continue
		}
		b, _ := os.ReadFile(l)
		if len(b) > 3000 {
			b = b[len(b)-3000:]
		}
		t.Logf("--- %s ---\n%s", l, b)
	}
}

func get(url string) (string, error) {
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", errors.New(resp.Status + ": " + string(b))
	}
	return string(b), nil
}
