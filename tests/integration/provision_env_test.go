package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/go-logr/logr/testr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/fleetgate/fleetgate/controllers"
	"github.com/fleetgate/fleetgate/providers"
	"github.com/fleetgate/fleetgate/tests/testbed"
)

// cloudNamespace holds the "cloud resources" of configMapProvider.
const cloudNamespace = "cloud"

// configMapProvider is a provider whose cloud is ConfigMaps in cloudNamespace, one per gateway,
// with fleetgate's ownership labels: like cloud resources, they outlive the operator. Ensure
// waits for slow(lb) before it writes.
type configMapProvider struct {
	c    client.Client
	slow func(ctx context.Context, lb *providers.LoadBalancer) error
}

func (p *configMapProvider) Capabilities(json.RawMessage) (providers.Capabilities, error) {
	return providers.FullCapabilities(), nil
}

func (p *configMapProvider) Ensure(ctx context.Context, lb *providers.LoadBalancer) (providers.Status, error) {
	if p.slow != nil {
		if err := p.slow(ctx, lb); err != nil {
			return providers.Status{}, err
		}
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: cloudNamespace, Name: providers.ResourceName(lb),
		Labels: providers.OwnerLabels(lb), Annotations: map[string]string{providers.AnnotationGateway: lb.Gateway}}}
	if err := p.c.Create(ctx, cm); err != nil && !apierrors.IsAlreadyExists(err) {
		return providers.Status{}, fmt.Errorf("creating the load balancer of %s: %w", lb.Gateway, err)
	}
	return providers.Status{Ready: true, Addresses: []providers.Address{{Type: providers.AddressTypeIPAddress, Value: "192.0.2.1"}}}, nil
}

func (p *configMapProvider) Delete(ctx context.Context, lb *providers.LoadBalancer) error {
	err := p.c.DeleteAllOf(ctx, &corev1.ConfigMap{}, client.InNamespace(cloudNamespace), client.MatchingLabels(providers.OwnerSelector(lb.Gateway)))
	if err != nil {
		return fmt.Errorf("deleting the load balancer of %s: %w", lb.Gateway, err)
	}
	return nil
}

func (p *configMapProvider) List(ctx context.Context) ([]providers.LoadBalancer, error) {
	var cms corev1.ConfigMapList
	if err := p.c.List(ctx, &cms, client.InNamespace(cloudNamespace), client.MatchingLabels{providers.LabelManagedBy: providers.ManagedBy}); err != nil {
		return nil, fmt.Errorf("listing load balancers: %w", err)
	}
	var out []providers.LoadBalancer
	for _, cm := range cms.Items {
		out = append(out, providers.LoadBalancer{Gateway: cm.Annotations[providers.AnnotationGateway], Provider: "incluster",
			Namespace: cm.Labels[providers.LabelGatewayNamespace], Name: cm.Labels[providers.LabelGatewayName], Clusters: []string{"hub"}})
	}
	return out, nil
}

// cloud lists the gateway keys that have a load balancer.
func (p *configMapProvider) cloud(t *testing.T) map[string]bool {
	t.Helper()
	lbs, err := p.List(t.Context())
	must(t, err)
	out := map[string]bool{}
	for _, lb := range lbs {
		out[lb.Gateway] = true
	}
	return out
}

// startProvisioning runs the production controller wiring with a Dataplane over p, as main.go
// wires it, and returns a function that stops it and waits.
func startProvisioning(t *testing.T, c *testbed.Cluster, p providers.Provider) (stop func()) {
	t.Helper()
	registry := providers.NewRegistry()
	registry.Register("incluster", p)
	delivery := controllers.NewTrigger()
	return runOperator(t, c, testr.NewWithOptions(t, testr.Options{Verbosity: 0}), controllers.Options{
		Registry: prometheus.NewRegistry(),
		Apply: &controllers.Dataplane{Providers: registry, Configs: newAckingConfigs(func() { delivery.Fire("") }),
			Delivered: delivery.Fire},
		Delivery: delivery,
	})
}

func createGateway(t *testing.T, c client.Client, name, class string) {
	t.Helper()
	must(t, c.Create(t.Context(), &gwv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: gwv1.GatewaySpec{GatewayClassName: gwv1.ObjectName(class),
			Listeners: []gwv1.Listener{{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType}}},
	}))
}

// isProgrammed tells whether the Gateway is Programmed=True for its generation.
func isProgrammed(ctx context.Context, c client.Client, name string) (bool, error) {
	var gw gwv1.Gateway
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, &gw); err != nil {
		return false, err
	}
	cond := meta.FindStatusCondition(gw.Status.Conditions, string(gwv1.GatewayConditionProgrammed))
	return cond != nil && cond.Status == metav1.ConditionTrue && cond.ObservedGeneration == gw.Generation, nil
}
