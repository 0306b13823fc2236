package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/controllers"
	"github.com/fleetgate/fleetgate/tests/testbed"
	"github.com/go-logr/logr/testr"
	"github.com/prometheus/client_golang/prometheus"
)

// TestStatusWriterSharesRoutes checks that fleetgate writes only its own RouteParentStatus entries:
// another controller's entry survives every write, and fleetgate's entry goes away when the route
// stops naming a fleetgate Gateway.
func TestStatusWriterSharesRoutes(t *testing.T) {
	c := testbed.ForTest(t, "hub")[0]
	ctx := t.Context()
	route := gatewayAndRoutes(t, c, "web")[0]

	startOperator(t, c)

	parents := func(want ...string) func() error {
		return func() error { return routeParents(ctx, c, route, want...) }
	}
	attached := func(want int32) func() error {
		return func() error {
			var gw gwv1.Gateway
			if err := c.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "gw"}, &gw); err != nil {
				return err
			}
			if len(gw.Status.Listeners) != 1 || gw.Status.Listeners[0].AttachedRoutes != want {
				return fmt.Errorf("listeners = %+v, want one with %d attached routes", gw.Status.Listeners, want)
			}
			return nil
		}
	}
	testbed.Eventually(t, 20*time.Second, parents("example.com/other-controller:elsewhere", "fleetgate.dev/gateway-controller:gw"))
	testbed.Eventually(t, 5*time.Second, attached(1))

	// Detach the route from fleetgate's Gateway: our entry goes, the other controller's stays.
	update(t, c.Client, route, func() { route.Spec.ParentRefs = []gwv1.ParentReference{{Name: "elsewhere"}} })
	testbed.Eventually(t, 10*time.Second, parents("example.com/other-controller:elsewhere"))
	testbed.Eventually(t, 5*time.Second, attached(0))
}

// TestStaleStatusClearedAfterRestart: what fleetgate wrote on a route that stopped naming its
// Gateways while no replica ran is cleared once one runs again, as it is when fleetgate watches
// the change; another controller's entry stays, and so does the status of a route still ours.
func TestStaleStatusClearedAfterRestart(t *testing.T) {
	c := testbed.ForTest(t, "hub")[0]
	ctx := t.Context()
	routes := gatewayAndRoutes(t, c, "moved", "kept")
	moved, kept := routes[0], routes[1]

	parents := func(route *gwv1.HTTPRoute, want ...string) func() error {
		return func() error { return routeParents(ctx, c, route, want...) }
	}
	stop := runOperator(t, c, testr.NewWithOptions(t, testr.Options{Verbosity: 0}), controllers.Options{Registry: prometheus.NewRegistry()})
	testbed.Eventually(t, 20*time.Second, parents(moved, "example.com/other-controller:elsewhere", "fleetgate.dev/gateway-controller:gw"))
	testbed.Eventually(t, 20*time.Second, parents(kept, "example.com/other-controller:elsewhere", "fleetgate.dev/gateway-controller:gw"))
	stop()

	// While no replica runs, the route stops naming fleetgate's Gateway.
	update(t, c.Client, moved, func() { moved.Spec.ParentRefs = []gwv1.ParentReference{{Name: "elsewhere"}} })
	runOperator(t, c, testr.NewWithOptions(t, testr.Options{Verbosity: 0}), controllers.Options{Registry: prometheus.NewRegistry()})
	testbed.Eventually(t, 20*time.Second, parents(moved, "example.com/other-controller:elsewhere"))
	testbed.Eventually(t, 5*time.Second, parents(kept, "example.com/other-controller:elsewhere", "fleetgate.dev/gateway-controller:gw"))
}

// gatewayAndRoutes creates a fleetgate class and Gateway default/gw, and an HTTPRoute of each name
// naming gw and "elsewhere", whose status holds another controller's Accepted entry for the latter.
func gatewayAndRoutes(t *testing.T, c *testbed.Cluster, names ...string) []*gwv1.HTTPRoute {
	t.Helper()
	ctx := t.Context()
	must(t, testbed.CreateClass(ctx, c.Client, "fleetgate", v1alpha1.ScopeCluster))
	must(t, c.Client.Create(ctx, &gwv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "gw"},
		Spec: gwv1.GatewaySpec{GatewayClassName: "fleetgate",
			Listeners: []gwv1.Listener{{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType}}},
	}))
	var out []*gwv1.HTTPRoute
	for _, name := range names {
		route := &gwv1.HTTPRoute{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
			Spec: gwv1.HTTPRouteSpec{CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{
				{Name: "gw"}, {Name: "elsewhere"},
			}}},
		}
		must(t, c.Client.Create(ctx, route))
		route.Status.Parents = []gwv1.RouteParentStatus{{
			ParentRef:      gwv1.ParentReference{Name: "elsewhere"},
			ControllerName: "example.com/other-controller",
			Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted",
				Message: "accepted by the other controller", ObservedGeneration: 1, LastTransitionTime: metav1.Now()}},
		}}
		must(t, c.Client.Status().Update(ctx, route))
		out = append(out, route)
	}
	return out
}

// routeParents checks that route's status parents are want, each "controller:parent name".
func routeParents(ctx context.Context, c *testbed.Cluster, route *gwv1.HTTPRoute, want ...string) error {
	var r gwv1.HTTPRoute
	if err := c.Client.Get(ctx, client.ObjectKeyFromObject(route), &r); err != nil {
		return err
	}
	var got []string
	for _, p := range r.Status.Parents {
		got = append(got, fmt.Sprintf("%s:%s", p.ControllerName, p.ParentRef.Name))
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		return fmt.Errorf("%s parents = %v, want %v", route.Name, got, want)
	}
	return nil
}
