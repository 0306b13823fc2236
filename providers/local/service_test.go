package local

import (
	"context"
	"os"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/fleetgate/fleetgate/providers"
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
	counting := interceptor.NewClient(wc, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.CreateOption) error {
			writes.Add(1)
			return c.Create(ctx, o, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.UpdateOption) error {
			writes.Add(1)
			return c.Update(ctx, o, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, o client.Object, opts ...client.SubResourceUpdateOption) error {
			writes.Add(1)
			return c.SubResource(sub).Update(ctx, o, opts...)
		},
	})
	if err := c.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps"}}); err != nil {
		t.Fatal(err)
	}
	p := newProvider(t, make(chan string, 1))
	p.opts.Client = func(string) (client.Client, error) { return counting, nil }
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
	if svc.Spec.Selector != nil || svc.Spec.LoadBalancerClass == nil || *svc.Spec.LoadBalancerClass != LoadBalancerClass {
		t.Errorf("spec = %+v, want no selector and class %s", svc.Spec, LoadBalancerClass)
	}
	if ing := svc.Status.LoadBalancer.Ingress; len(ing) != 1 || ing[0].IP != st.Addresses[0].Value {
		t.Errorf("status ingress = %+v, want the proxy address %s", ing, st.Addresses[0].Value)
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
