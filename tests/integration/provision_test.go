package integration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/providers"
	"github.com/fleetgate/fleetgate/tests/testbed"
)

// TestSlowProviderDoesNotDelayOthers: while the load balancer of one class's Gateway takes 2 s to
// ensure, a Gateway of another class becomes Programmed in well under that.
func TestSlowProviderDoesNotDelayOthers(t *testing.T) {
	c := testbed.ForTest(t, "hub")[0]
	ctx := t.Context()
	must(t, c.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cloudNamespace}}))
	var inSlow atomic.Int32
	entered := make(chan struct{}, 1)
	p := &configMapProvider{c: c.Client, slow: func(ctx context.Context, lb *providers.LoadBalancer) error {
		if lb.Class != "slow" {
			return nil
		}
		inSlow.Add(1)
		defer inSlow.Add(-1)
		select {
		case entered <- struct{}{}:
		default:
		}
		select {
		case <-time.After(2 * time.Second):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}}
	startProvisioning(t, c, p)
	must(t, testbed.CreateClass(ctx, c.Client, "slow", v1alpha1.ScopeCluster))
	must(t, testbed.CreateClass(ctx, c.Client, "fast", v1alpha1.ScopeCluster))
	createGateway(t, c.Client, "slow-gw", "slow")
	select {
	case <-entered:
	case <-time.After(30 * time.Second):
		t.Fatal("the slow gateway's Ensure never started")
	}

	start := time.Now()
	createGateway(t, c.Client, "fast-gw", "fast")
	var took time.Duration
	testbed.Eventually(t, 10*time.Second, func() error {
		ok, err := isProgrammed(ctx, c.Client, "fast-gw")
		if err != nil || !ok {
			return fmt.Errorf("fast-gw not programmed: %w", err)
		}
		took = time.Since(start)
		return nil
	})
	slowBusy := inSlow.Load() > 0
	t.Logf("fast-gw Programmed %s after it was created; the slow Ensure still running: %v", took, slowBusy)
	if took > 1500*time.Millisecond {
		t.Errorf("fast-gw took %s to be Programmed, want < 1.5s while the slow provider call runs", took)
	}
	if !slowBusy {
		t.Error("the slow Ensure had finished: the measurement proves nothing")
	}
	slowProgrammed, err := isProgrammed(ctx, c.Client, "slow-gw")
	must(t, err)
	if slowProgrammed && slowBusy {
		t.Error("slow-gw Programmed before its provider answered")
	}
	testbed.Eventually(t, 15*time.Second, func() error {
		if ok, err := isProgrammed(ctx, c.Client, "slow-gw"); err != nil || !ok {
			return fmt.Errorf("slow-gw not programmed: %w", err)
		}
		return nil
	})
}

// TestDeletionSurvivesRestart: a Gateway deleted while the operator is stopped keeps its
// finalizer until the operator is back and its load balancer is deleted; a load balancer that no
// object owns is removed by the sweep at start; what is still wanted stays.
func TestDeletionSurvivesRestart(t *testing.T) {
	c := testbed.ForTest(t, "hub")[0]
	ctx := t.Context()
	must(t, c.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cloudNamespace}}))
	p := &configMapProvider{c: c.Client}
	stop := startProvisioning(t, c, p)
	must(t, testbed.CreateClass(ctx, c.Client, "lb", v1alpha1.ScopeCluster))
	createGateway(t, c.Client, "keep", "lb")
	createGateway(t, c.Client, "gone", "lb")
	testbed.Eventually(t, 30*time.Second, func() error {
		for _, name := range []string{"keep", "gone"} {
			var gw gwv1.Gateway
			if err := c.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, &gw); err != nil {
				return err
			}
			if !slices.Contains(gw.Finalizers, v1alpha1.FinalizerLoadBalancer) {
				return fmt.Errorf("gateway %s has finalizers %v", name, gw.Finalizers)
			}
			if ok, err := isProgrammed(ctx, c.Client, name); err != nil || !ok {
				return fmt.Errorf("gateway %s not programmed: %w", name, err)
			}
		}
		if lbs := p.cloud(t); !lbs["hub/default/keep"] || !lbs["hub/default/gone"] {
			return fmt.Errorf("load balancers %v", lbs)
		}
		return nil
	})

	stop()
	must(t, c.Client.Delete(ctx, &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "gone"}}))
	ghost := &providers.LoadBalancer{Gateway: "hub/default/ghost", Namespace: "default", Name: "ghost"}
	must(t, c.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: cloudNamespace, Name: providers.ResourceName(ghost),
		Labels: providers.OwnerLabels(ghost), Annotations: map[string]string{providers.AnnotationGateway: ghost.Gateway}}}))
	time.Sleep(time.Second)
	var gone gwv1.Gateway
	must(t, c.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "gone"}, &gone))
	if gone.DeletionTimestamp == nil {
		t.Fatal("the deleted Gateway has no deletionTimestamp")
	}
	if lbs := p.cloud(t); !lbs["hub/default/gone"] {
		t.Fatalf("while the operator is stopped the load balancer of gone went away: %v", lbs)
	}

	start := time.Now()
	startProvisioning(t, c, p)
	testbed.Eventually(t, 30*time.Second, func() error {
		err := c.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "gone"}, &gwv1.Gateway{})
		if !apierrors.IsNotFound(err) {
			return errors.Join(errors.New("the deleted Gateway is still there"), err)
		}
		if lbs := p.cloud(t); len(lbs) != 1 || !lbs["hub/default/keep"] {
			return fmt.Errorf("load balancers %v, want hub/default/keep alone", lbs)
		}
		return nil
	})
	t.Logf("after the restart, gone's load balancer and the orphan were deleted and gone's finalizer released in %s", time.Since(start))

	// A deletion while the operator runs goes the same way.
	must(t, c.Client.Delete(ctx, &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "keep"}}))
	testbed.Eventually(t, 30*time.Second, func() error {
		err := c.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "keep"}, &gwv1.Gateway{})
		if !apierrors.IsNotFound(err) {
			return errors.Join(errors.New("keep is still there"), err)
		}
		if lbs := p.cloud(t); len(lbs) != 0 {
			return fmt.Errorf("load balancers %v remain", lbs)
		}
		return nil
	})
}
