package testbed

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
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

// Published returns Service namespace/name on port 80 and an EndpointSlice with one ready endpoint
// ip:targetPort, as the EndpointSlice controller would publish a pod (there is no kubelet here).
func Published(namespace, name, ip string, targetPort int32) []client.Object {
	return []client.Object{
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(targetPort)}}}},
		&discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name + "-1",
				Labels: map[string]string{discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To(targetPort)}},
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		},
	}
}

// CreateAll creates objs in order.
func CreateAll(ctx context.Context, c client.Client, objs ...client.Object) error {
	for _, obj := range objs {
		if err := c.Create(ctx, obj); err != nil {
			return fmt.Errorf("creating %T %s: %w", obj, client.ObjectKeyFromObject(obj), err)
		}
	}
	return nil
}
