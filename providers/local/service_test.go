package local

import (
	"context"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/providers"
	"github.com/fleetgate/fleetgate/providers/providertest"
	"github.com/fleetgate/fleetgate/tests/testbed"
)

// TestGatewayService runs the provider against a real API server: the gateway gets a Service that
// carries its infrastructure metadata, ports and proxy address, written only when something
// changed, and deleted with the gateway.
func TestGatewayService(t *testing.T) {
	c := testbed.ForTest(t, "local")[0]
	ctx := t.Context()
	wc, err := client.NewWithWatch(c.Config, client.Options{Scheme: c.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	var writes atomic.Int64
	counting := providertest.CountingClient(wc, &writes)
	if err := c.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps"}}); err != nil {
		t.Fatal(err)
	}
	p := newProvider(t, make(chan string, 1))
	p.opts.Client = func(string) (client.Client, error) { return counting, nil }
	p.opts.Clusters = func() []string { return []string{"hub"} }
	lb := &providers.LoadBalancer{
		Gateway: "hub/apps/web", Namespace: "apps", Name: "web", Clusters: []string{"hub"},
		Ports:       []providers.Port{{Port: 8080, Transport: providers.TransportTCP}, {Port: 53, Transport: providers.TransportUDP}},
		Labels:      map[string]string{"team": "edge"},
		Annotations: map[string]string{"note": "x"},
	}
	st, err := p.Ensure(ctx, lb)
	if err != nil || !st.Ready {
		t.Fatalf("Ensure = %+v, %v", st, err)
	}
	svc := &corev1.Service{}
	key := client.ObjectKey{Namespace: "apps", Name: providers.ResourceName(lb)}
	if err := c.Client.Get(ctx, key, svc); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"team": "edge", providers.LabelGatewayAPIName: "web", providers.LabelManagedBy: providers.ManagedBy} {
		if svc.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, svc.Labels[k], v)
		}
	}
	if svc.Annotations["note"] != "x" {
		t.Errorf("annotations = %v, want the infrastructure annotation note=x", svc.Annotations)
	}
	if len(svc.Spec.Ports) != 2 || svc.Spec.Ports[0].Port != 8080 || svc.Spec.Ports[1].Protocol != corev1.ProtocolUDP {
		t.Errorf("ports = %+v, want tcp 8080 and udp 53", svc.Spec.Ports)
	}
	if svc.Spec.Selector != nil || svc.Spec.LoadBalancerClass == nil || *svc.Spec.LoadBalancerClass != v1alpha1.LoadBalancerClassLocal {
		t.Errorf("spec = %+v, want no selector and class %s", svc.Spec, v1alpha1.LoadBalancerClassLocal)
	}
	if ing := svc.Status.LoadBalancer.Ingress; len(ing) != 1 || ing[0].IP != st.Addresses[0].Value || ptr.Deref(ing[0].IPMode, "") != corev1.LoadBalancerIPModeProxy {
		t.Errorf("status ingress = %+v, want the proxy address %s with ipMode Proxy (kube-proxy must leave it alone)", ing, st.Addresses[0].Value)
	}

	writes.Store(0)
	if _, err := p.Ensure(ctx, lb); err != nil {
		t.Fatal(err)
	}
	if n := writes.Load(); n != 0 {
		t.Errorf("an unchanged Ensure made %d writes", n)
	}

	lb.Labels = map[string]string{"team": "core"}
	if _, err := p.Ensure(ctx, lb); err != nil {
		t.Fatal(err)
	}
	if err := c.Client.Get(ctx, key, svc); err != nil {
		t.Fatal(err)
	}
	if svc.Labels["team"] != "core" {
		t.Errorf("label team = %q after the infrastructure changed, want core", svc.Labels["team"])
	}

	if err := p.Delete(ctx, lb); err != nil {
		t.Fatal(err)
	}
	if err := c.Client.Get(ctx, key, svc); !apierrors.IsNotFound(err) {
		t.Errorf("Service after Delete: %v, want not found", err)
	}
}

func TestMain(m *testing.M) {
	testbed.QuietGlobalLogger()
	os.Exit(m.Run())
}

// TestFleetGatewayLeavesOneCluster: a Service that cannot be written fails Ensure (which the engine
// retries); Delete with some of a gateway's clusters deletes its Services there only, and the
// proxy keeps serving the rest; Delete with the last one stops it.
func TestFleetGatewayLeavesOneCluster(t *testing.T) {
	clusters := testbed.ForTest(t, "east", "west")
	ctx := t.Context()
	byName := map[string]client.Client{}
	for _, c := range clusters {
		byName[c.Name] = c.Client
		if err := c.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps"}}); err != nil {
			t.Fatal(err)
		}
	}
	west, err := client.NewWithWatch(clusters[1].Config, client.Options{Scheme: clusters[1].Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	var refuse atomic.Bool
	refuse.Store(true)
	byName["west"] = interceptor.NewClient(west, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.CreateOption) error {
			if refuse.Load() {
				return apierrors.NewServiceUnavailable("west is down")
			}
			return c.Create(ctx, o, opts...)
		},
	})
	p := newProvider(t, make(chan string, 1))
	p.opts.Client = func(cluster string) (client.Client, error) { return byName[cluster], nil }
	p.opts.Clusters = func() []string { return []string{"east", "west"} }
	lb := &providers.LoadBalancer{
		Gateway: "apps/web", Namespace: "apps", Name: "web", Clusters: []string{"east", "west"},
		Ports: []providers.Port{{Port: 8080, Transport: providers.TransportTCP}},
	}
	if _, err := p.Ensure(ctx, lb); err == nil || !strings.Contains(err.Error(), "west is down") {
		t.Fatalf("Ensure with a Service that cannot be written: %v, want the error", err)
	}
	refuse.Store(false)
	if st, err := p.Ensure(ctx, lb); err != nil || !st.Ready {
		t.Fatalf("Ensure = %+v, %v", st, err)
	}
	key := client.ObjectKey{Namespace: "apps", Name: providers.ResourceName(lb)}
	leave := *lb
	leave.Clusters = []string{"west"}
	if err := p.Delete(ctx, &leave); err != nil {
		t.Fatal(err)
	}
	if err := byName["west"].Get(ctx, key, &corev1.Service{}); !apierrors.IsNotFound(err) {
		t.Errorf("Service in west after leaving it: %v, want not found", err)
	}
	if err := byName["east"].Get(ctx, key, &corev1.Service{}); err != nil {
		t.Errorf("Service in east after leaving west: %v", err)
	}
	if pr := p.procs[lb.Gateway]; pr == nil || exited(pr) {
		t.Fatal("the proxy stopped while the gateway is still in east")
	}
	proc := p.procs[lb.Gateway]
	last := *lb
	last.Clusters = []string{"east"}
	if err := p.Delete(ctx, &last); err != nil {
		t.Fatal(err)
	}
	if err := byName["east"].Get(ctx, key, &corev1.Service{}); !apierrors.IsNotFound(err) {
		t.Errorf("Service in east after the last Delete: %v, want not found", err)
	}
	if !exited(proc) {
		t.Error("the proxy runs after the gateway left its last cluster")
	}
	if _, err := os.Stat(p.dir(lb.Gateway)); !os.IsNotExist(err) {
		t.Errorf("state left after the last Delete: %v", err)
	}
}
