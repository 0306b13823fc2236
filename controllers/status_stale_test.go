package controllers

import (
	"context"
	"testing"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/fleetgate/fleetgate/controllers/translate"
)

// frozenReader is a cache that never catches up: it answers with the object as it was.
type frozenReader struct{ obj client.Object }

func (r frozenReader) Get(_ context.Context, _ client.ObjectKey, out client.Object, _ ...client.GetOption) error {
	r.obj.(*networkingv1.Ingress).DeepCopyInto(out.(*networkingv1.Ingress))
	return nil
}

func (frozenReader) List(context.Context, client.ObjectList, ...client.ListOption) error { return nil }

// TestStatusNotSkippedOnStaleCache: a status that went X → empty → X is written back to X even
// when the cache still shows X from before the empty write (the Ingress addresses that stayed
// empty under churn). Without Live the writer takes the cache's X for "already written".
func TestStatusNotSkippedOnStaleCache(t *testing.T) {
	ctx := context.Background()
	addr := networkingv1.IngressLoadBalancerStatus{Ingress: []networkingv1.IngressLoadBalancerIngress{{IP: "198.18.0.9"}}}
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web"}}
	ing.Status.LoadBalancer = addr
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(ing).WithStatusSubresource(ing).Build()
	if err := c.Get(ctx, client.ObjectKeyFromObject(ing), ing); err != nil {
		t.Fatal(err)
	}
	stale := frozenReader{obj: ing.DeepCopy()}

	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	w := NewStatusWriter(logr.Discard(), nil, m)
	w.SetTarget("hub", statusTarget{Reader: stale, Live: c, Writer: c})
	ref := translate.ObjectRef{Cluster: "hub", Kind: "Ingress", Namespace: "apps", Name: "web"}
	for i, want := range []networkingv1.IngressLoadBalancerStatus{{}, addr} {
		w.desired[ref] = &desiredEntry{want: &translate.IngressStatus{Ref: ref, LoadBalancer: want}}
		if err := w.write(ctx, ref); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		var got networkingv1.Ingress
		if err := c.Get(ctx, client.ObjectKeyFromObject(ing), &got); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got.Status.LoadBalancer); diff != "" {
			t.Errorf("after write %d, status.loadBalancer (-want +got):\n%s", i, diff)
		}
	}
}
