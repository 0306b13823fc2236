package controllers

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// TestReportRemovedWhenStoppedMidWrite: a replica that stops while renewing its report still
// deletes its Lease; the renewal cut short by the shutdown does not make it forget the Lease.
func TestReportRemovedWhenStoppedMidWrite(t *testing.T) {
	scheme, err := NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	renewing := make(chan struct{}, 1)
	cl := fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, o ...client.UpdateOption) error {
			select {
			case renewing <- struct{}{}:
			default:
			}
			<-ctx.Done() // the API server answers only after the shutdown began
			return ctx.Err()
		},
	}).Build()
	o := ReplicaOptions{Name: "a", Namespace: "fleetgate-system", Period: 20 * time.Millisecond}
	w := &reportWriter{client: cl, live: cl, o: o, report: func() deliveryReport { return deliveryReport{} },
		peers: newPeerReports(o.Name, 3*o.Period), expired: func() {}, wake: make(chan struct{}, 1),
		log: testr.New(t), size: prometheus.NewGauge(prometheus.GaugeOpts{Name: "report_bytes"})}

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- w.Start(ctx) }()
	select {
	case <-renewing: // created, and now renewing
	case <-time.After(10 * time.Second):
		t.Fatal("the report was never renewed")
	}
	key := client.ObjectKey{Namespace: o.Namespace, Name: "fleetgate-delivery-a"}
	if err := cl.Get(t.Context(), key, &coordinationv1.Lease{}); err != nil {
		t.Fatalf("the report's Lease before the shutdown: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Start: %v", err)
	}
	if err := cl.Get(t.Context(), key, &coordinationv1.Lease{}); !apierrors.IsNotFound(err) {
		t.Errorf("the report's Lease after the shutdown: %v, want it deleted", err)
	}
}
