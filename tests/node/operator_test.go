// Package node runs fleetgate as it runs in production, on a real node of the test bed
// (testbed.NodeForTest): the operator as pods of the `make image` image with the bundle's
// Deployment, ServiceAccount and RBAC, and the in-cluster provider's proxies as pods.
package node

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
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
	node := testbed.NodeForTest(t, c, testbed.NodeOptions{Images: []string{archive, echo}})
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

	t.Run("LeaderKilledUnderLoad", func(t *testing.T) { leaderKilledUnderLoad(t, c, node, addr) })
}

// gatewayKey is the gateway of TestOperatorAsPod's Gateway default/gw.
const gatewayKey = "hub/default/gw"

// leaderKilledUnderLoad: every operator replica serves the proxies' configs. The leader's
// container is SIGKILLed while requests flow through the proxies, one of which at least is
// connected to it: that proxy reconnects to the other replica, both keep serving (0 failed
// requests), and a route made right after the kill is served without waiting for a new leader.
// Once one is elected, it writes the route's status, and the Gateway's next generation is
// Programmed from the ACKs of proxies connected to either replica.
func leaderKilledUnderLoad(t *testing.T, c *testbed.Cluster, node *testbed.Node, addr string) {
	ctx := t.Context()
	cl := c.Client
	leader := leaderOnProxies(t, c)

	var load loadCounter
	loadCtx, stopLoad := context.WithCancel(ctx)
	done := load.run(loadCtx, "http://"+addr+"/load", 4)
	defer func() { stopLoad(); <-done }()
	time.Sleep(2 * time.Second) // steady state first

	var pod corev1.Pod
	if err := cl.Get(ctx, client.ObjectKey{Namespace: namespace, Name: leader}, &pod); err != nil {
		t.Fatal(err)
	}
	restarts := pod.Status.ContainerStatuses[0].RestartCount
	if err := node.KillContainer(ctx, pod.Status.ContainerStatuses[0].ContainerID); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	t.Logf("SIGKILLed the leader %s's container", leader)

	// A new route, made right after the kill (the killed leader's Lease is still held for 15 s).
	// It rewrites the path, so that its answers tell it from the route that serves every host.
	route := &gwv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "after-kill"},
		Spec: gwv1.HTTPRouteSpec{
			CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "gw"}}},
			Hostnames:       []gwv1.Hostname{"after-kill.example"},
			Rules: []gwv1.HTTPRouteRule{{
				Filters: []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterURLRewrite, URLRewrite: &gwv1.HTTPURLRewriteFilter{
					Path: &gwv1.HTTPPathModifier{Type: gwv1.FullPathHTTPPathModifier, ReplaceFullPath: ptr.To("/served-by-after-kill")}}}},
				BackendRefs: []gwv1.HTTPBackendRef{{BackendRef: gwv1.BackendRef{
					BackendObjectReference: gwv1.BackendObjectReference{Name: "web", Port: ptr.To[gwv1.PortNumber](80)}}}}}},
		},
	}
	time.Sleep(500 * time.Millisecond)
	if err := cl.Create(ctx, route); err != nil {
		t.Fatal(err)
	}
	created := time.Now()
	var first time.Duration
	var last string
	for streak := 0; streak < 20; time.Sleep(50 * time.Millisecond) {
		body, err := getHost("http://"+addr+"/after-kill", "after-kill.example")
		if last = body; err != nil {
			last = err.Error()
		}
		if err != nil || !strings.HasSuffix(body, " GET after-kill.example/served-by-after-kill\n") {
			streak = 0
		} else {
			if first == 0 {
				first = time.Since(created)
			}
			streak++
		}
		if time.Since(created) > 15*time.Second {
			t.Fatalf("the route made after the kill is not served by every proxy 15 s later (first answer after %s); last answer %q", first, last)
		}
	}
	t.Logf("route made %s after the kill: first answer after %s, 20 in a row after %s", created.Sub(killed).Round(time.Millisecond),
		first.Round(time.Millisecond), time.Since(created).Round(time.Millisecond))
	// Served by the follower itself: no leader was elected meanwhile (the killed one's Lease runs
	// 15 s), so nothing waited for one.
	if now := leaderName(t, c); now != leader {
		t.Errorf("a new leader (%s) was elected before the route was served: the follower did not serve it", now)
	}

	// The killed container came back, and a leader writes status again.
	testbed.Eventually(t, 2*time.Minute, func() error {
		if err := cl.Get(ctx, client.ObjectKeyFromObject(&pod), &pod); err != nil {
			return err
		}
		if st := pod.Status.ContainerStatuses[0]; st.RestartCount <= restarts || !st.Ready {
			return fmt.Errorf("the killed operator container: restarts %d (was %d), ready %v", st.RestartCount, restarts, st.Ready)
		}
		return nil
	})
	testbed.Eventually(t, 2*time.Minute, func() error {
		if err := cl.Get(ctx, client.ObjectKeyFromObject(route), route); err != nil {
			return err
		}
		for _, p := range route.Status.Parents {
			if apimeta.IsStatusConditionTrue(p.Conditions, string(gwv1.RouteConditionAccepted)) {
				return nil
			}
		}
		return fmt.Errorf("route after-kill not Accepted yet: %+v", route.Status.Parents)
	})
	t.Logf("route after-kill Accepted %s after the kill; leader now %s", time.Since(killed).Round(time.Millisecond), leaderName(t, c))

	// A new generation of the Gateway is Programmed once the proxies ACK it, wherever connected.
	var gw gwv1.Gateway
	testbed.Eventually(t, 30*time.Second, func() error { // the leader writes its status meanwhile
		if err := cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: "gw"}, &gw); err != nil {
			return err
		}
		gw.Spec.Listeners = append(gw.Spec.Listeners, gwv1.Listener{Name: "other", Port: 80, Protocol: gwv1.HTTPProtocolType, Hostname: ptr.To[gwv1.Hostname]("other.example")})
		return cl.Update(ctx, &gw)
	})
	testbed.Eventually(t, time.Minute, func() error {
		if err := cl.Get(ctx, client.ObjectKeyFromObject(&gw), &gw); err != nil {
			return err
		}
		cond := apimeta.FindStatusCondition(gw.Status.Conditions, string(gwv1.GatewayConditionProgrammed))
		if cond == nil || cond.Status != metav1.ConditionTrue || cond.ObservedGeneration != gw.Generation {
			return fmt.Errorf("Gateway generation %d not Programmed: %+v", gw.Generation, cond)
		}
		return nil
	})
	t.Logf("Gateway generation %d Programmed; proxies by replica: %v", gw.Generation, proxiesByReplica(t, c))

	stopLoad()
	<-done
	total, failed, errs := load.result()
	t.Logf("load through the proxies: %d requests, %d failed, over %s", total, failed, time.Since(killed).Round(time.Second))
	if total == 0 || failed > 0 {
		t.Errorf("%d of %d requests failed while the leader was killed; first errors: %v", failed, total, errs)
	}
}

// leaderOnProxies returns the leader's pod name once at least one of the Gateway's proxies is
// connected to it, as its delivery report says; while none is, it deletes a proxy pod, whose
// replacement connects to one of the replicas through the xDS Service.
func leaderOnProxies(t *testing.T, c *testbed.Cluster) string {
	t.Helper()
	ctx := t.Context()
	for attempt := 0; ; attempt++ {
		leader := leaderName(t, c)
		var byReplica map[string][]string
		var pods corev1.PodList
		// Every Ready proxy pod, and only those, in the reports: they are current.
		testbed.Eventually(t, 2*time.Minute, func() error {
			if err := c.Client.List(ctx, &pods, client.InNamespace("default"), client.MatchingLabels(providers.OwnerSelector(gatewayKey))); err != nil {
				return err
			}
			var ready []string
			for _, p := range pods.Items {
				if p.DeletionTimestamp == nil && len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].Ready {
					ready = append(ready, p.Name)
				}
			}
			byReplica = proxiesByReplica(t, c)
			var listed []string
			for _, nodes := range byReplica {
				listed = append(listed, nodes...)
			}
			slices.Sort(ready)
			slices.Sort(listed)
			if len(ready) < 2 || !slices.Equal(ready, listed) {
				return fmt.Errorf("Ready proxy pods %v, in the replicas' reports %v", ready, byReplica)
			}
			return nil
		})
		if mine := byReplica[leader]; len(mine) > 0 {
			t.Logf("leader %s serves proxies %v (all: %v)", leader, mine, byReplica)
			endpointsSettled(t, c, pods.Items)
			return leader
		}
		if attempt == 8 {
			t.Fatalf("no proxy of %s connected to the leader %s after %d proxy restarts", gatewayKey, leader, attempt)
		}
		if err := c.Client.Delete(ctx, &pods.Items[0], client.GracePeriodSeconds(0)); err != nil {
			t.Fatal(err)
		}
	}
}

// endpointsSettled waits until the proxy Service's endpoints are exactly the Ready proxy pods, then
// gives kube-proxy a sync period: a proxy pod deleted just before would otherwise still get new
// connections, which hang (its address is gone) — the test's doing, not what it measures.
func endpointsSettled(t *testing.T, c *testbed.Cluster, pods []corev1.Pod) {
	t.Helper()
	var want []string
	for _, p := range pods {
		if p.DeletionTimestamp == nil && len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].Ready {
			want = append(want, p.Status.PodIP)
		}
	}
	slices.Sort(want)
	testbed.Eventually(t, time.Minute, func() error {
		// The EndpointSlice controller gives the slices their Service's labels.
		var list discoveryv1.EndpointSliceList
		if err := c.Client.List(t.Context(), &list, client.InNamespace("default"), client.MatchingLabels(providers.OwnerSelector(gatewayKey))); err != nil {
			return err
		}
		var got []string
		for _, s := range list.Items {
			for _, e := range s.Endpoints {
				if ptr.Deref(e.Conditions.Ready, false) {
					got = append(got, e.Addresses...)
				}
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			return fmt.Errorf("proxy Service endpoints %v, want the Ready proxy pods' %v", got, want)
		}
		return nil
	})
	time.Sleep(time.Second) // kube-proxy's minimum sync period
}

// leaderName is the pod holding the leader-election Lease.
func leaderName(t *testing.T, c *testbed.Cluster) string {
	t.Helper()
	var lease coordinationv1.Lease
	if err := c.Client.Get(t.Context(), client.ObjectKey{Namespace: namespace, Name: "fleetgate.dev"}, &lease); err != nil {
		t.Fatal(err)
	}
	holder, _, _ := strings.Cut(ptr.Deref(lease.Spec.HolderIdentity, ""), "_")
	return holder
}

// proxiesByReplica reads the operator replicas' delivery reports: the proxies of gatewayKey
// connected to each replica.
func proxiesByReplica(t *testing.T, c *testbed.Cluster) map[string][]string {
	t.Helper()
	var leases coordinationv1.LeaseList
	if err := c.Client.List(t.Context(), &leases, client.InNamespace(namespace), client.HasLabels{"fleetgate.dev/delivery-report"}); err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, l := range leases.Items {
		var report struct {
			Gateways map[string]struct {
				Proxies []struct {
					Node string `json:"node"`
				} `json:"proxies"`
			} `json:"gateways"`
		}
		if err := json.Unmarshal([]byte(l.Annotations["fleetgate.dev/delivery"]), &report); err != nil {
			t.Fatalf("Lease %s: %v", l.Name, err)
		}
		replica := ptr.Deref(l.Spec.HolderIdentity, "")
		for _, p := range report.Gateways[gatewayKey].Proxies {
			out[replica] = append(out[replica], p.Node)
		}
	}
	return out
}

// loadCounter sends requests without keep-alive (each one a new connection, spread over the
// proxy pods by kube-proxy) and counts them.
type loadCounter struct {
	mu            sync.Mutex
	total, failed int
	errs          []string
}

func (l *loadCounter) run(ctx context.Context, url string, workers int) <-chan struct{} {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				_, err := get(url)
				l.mu.Lock()
				l.total++
				if err != nil && ctx.Err() == nil {
					l.failed++
					if len(l.errs) < 5 {
						l.errs = append(l.errs, time.Now().Format("15:04:05.000")+" "+err.Error())
					}
				}
				l.mu.Unlock()
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
	go func() { wg.Wait(); close(done) }()
	return done
}

func (l *loadCounter) result() (total, failed int, errs []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total, l.failed, l.errs
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

func get(url string) (string, error) { return getHost(url, "") }

// getHost GETs url on a new connection, with host as the Host header when set.
func getHost(url, host string) (string, error) {
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	req.Host = host
	resp, err := c.Do(req)
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
