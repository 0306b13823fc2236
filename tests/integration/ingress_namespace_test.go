package integration

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/providers"
	"github.com/fleetgate/fleetgate/tests/testbed"
)

// TestIngressProxyNamespace runs the operator in in-cluster mode with an IngressClass whose
// GatewayClassConfig sets spec.ingressNamespace: the proxy Deployment, Service and credentials of
// its Ingresses go there, not to namespace default.
func TestIngressProxyNamespace(t *testing.T) {
	c := testbed.ForTest(t, "hub")[0]
	ctx := t.Context()
	binary, err := testbed.BuildOperator(t.TempDir())
	must(t, err)
	for _, ns := range []string{"fleetgate-system", "ingress-system", "apps"} {
		must(t, c.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
	xdsAddr := freeAddr(t)
	op, err := testbed.StartOperator(binary, c, t.TempDir(), "--local-mode=false", "--namespace=fleetgate-system",
		"--xds-address="+xdsAddr, "--xds-public-address="+xdsAddr, "--proxy-image=fleetgate:test")
	must(t, err)
	t.Cleanup(func() { must(t, op.Stop()) })

	must(t, testbed.CreateAll(ctx, c.Client, append([]client.Object{
		&v1alpha1.GatewayClassConfig{ObjectMeta: metav1.ObjectMeta{Name: "scoped"},
			Spec: v1alpha1.GatewayClassConfigSpec{Provider: v1alpha1.ProviderInCluster, IngressNamespace: "ingress-system"}},
		&networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "scoped"}, Spec: networkingv1.IngressClassSpec{
			Controller: v1alpha1.IngressControllerName,
			Parameters: &networkingv1.IngressClassParametersReference{APIGroup: ptr.To(v1alpha1.Group), Kind: "GatewayClassConfig", Name: "scoped"}}},
		&networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web"}, Spec: networkingv1.IngressSpec{
			IngressClassName: ptr.To("scoped"),
			DefaultBackend: &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
				Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}}},
	}, testbed.Published("apps", "web", "10.0.0.1", 8080)...)...))

	sel := client.MatchingLabels{providers.LabelGateway: providers.GatewayID("hub/ingress:scoped")}
	count := func(ns string) (int, error) {
		var deps appsv1.DeploymentList
		var svcs corev1.ServiceList
		for _, l := range []client.ObjectList{&deps, &svcs} {
			if err := c.Client.List(ctx, l, client.InNamespace(ns), sel); err != nil {
				return 0, err
			}
		}
		return len(deps.Items) + len(svcs.Items), nil
	}
	testbed.Eventually(t, 30*time.Second, func() error {
		n, err := count("ingress-system")
		if err != nil {
			return err
		}
		if n != 2 {
			return fmt.Errorf("%d proxy Deployments and Services of the Ingress class in ingress-system, want 2", n)
		}
		return nil
	})
	if n, err := count("default"); err != nil || n != 0 {
		t.Errorf("proxy objects of the Ingress class in default: %d (%v), want none", n, err)
	}
}
