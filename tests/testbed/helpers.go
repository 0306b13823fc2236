package testbed

import (
	"context"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
)

// Eventually polls cond until it returns nil, and fails the test with its last error once timeout
// has passed.
func Eventually(t testing.TB, timeout time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %v", timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// CreateClass creates a GatewayClass of fleetgate's controller named name, with a GatewayClassConfig of
// the same name for the in-cluster provider and the given scope.
func CreateClass(ctx context.Context, c client.Client, name string, scope v1alpha1.Scope) error {
	return errors.Join(
		c.Create(ctx, &v1alpha1.GatewayClassConfig{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       v1alpha1.GatewayClassConfigSpec{Provider: v1alpha1.ProviderInCluster, Scope: scope},
		}),
		c.Create(ctx, &gwv1.GatewayClass{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: gwv1.GatewayClassSpec{ControllerName: v1alpha1.ControllerName,
				ParametersRef: &gwv1.ParametersReference{Group: v1alpha1.Group, Kind: "GatewayClassConfig", Name: name}},
		}),
	)
}
