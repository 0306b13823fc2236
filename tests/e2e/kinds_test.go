package e2e

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgate/fleetgate/tests/testbed"
)

// TestMemberServesKindLater connects a member that does not serve HTTPRoutes, then installs their
// CRD there: fleetgate reads the member's routes without reconnecting it (its other kinds are read
// all along), and serves them.
func TestMemberServesKindLater(t *testing.T) {
	clusters := testbed.ForTest(t, "hub", "member-c")
	hub, m := clusters[0], clusters[1]
	ctx := t.Context()
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
	must(t, m.Client.Get(ctx, client.ObjectKey{Name: "httproutes.gateway.networking.k8s.io"}, crd))
	saved := crd.DeepCopy()
	must(t, m.Client.Delete(ctx, crd))
	testbed.Eventually(t, 60*time.Second, func() error {
		if err := m.Client.Get(ctx, client.ObjectKey{Name: crd.GetName()}, crd.DeepCopy()); !apierrors.IsNotFound(err) {
			return fmt.Errorf("CRD still there (%v)", err)
		}
		return nil
	})

	binary, err := testbed.BuildOperator(t.TempDir())
	must(t, err)
	must(t, hub.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNS}}))
	op, err := testbed.StartOperator(binary, hub, t.TempDir(), "--namespace="+operatorNS, "--log-level=info")
	must(t, err)
	t.Cleanup(func() { must(t, op.Stop()) })
	must(t, testbed.RegisterMember(ctx, hub, m, operatorNS, 100, nil))
	f := &fleet{t: t, hub: hub}
	f.memberReady("member-c", metav1.ConditionTrue, 60*time.Second)
	classes(t, hub)
	classes(t, m)
	backend(t, m, 43, "c", "web")
	must(t, m.Client.Create(ctx, gateway("late", "fleet")))
	var addr string
	testbed.Eventually(t, 30*time.Second, func() error {
		a, err := gatewayAddress(ctx, m, "late")
		if err != nil || a == "" {
			return fmt.Errorf("gateway late not programmed yet (%v)", err)
		}
		addr = a
		return nil
	})

	saved.SetResourceVersion("")
	saved.SetUID("")
	saved.SetCreationTimestamp(metav1.Time{})
	saved.SetManagedFields(nil)
	unstructured.RemoveNestedField(saved.Object, "status")
	must(t, m.Client.Create(ctx, saved))
	installed := time.Now()
	// The test's own client learns of the new kind too: retry the create until it does.
	testbed.Eventually(t, 30*time.Second, func() error {
		return m.Client.Create(ctx, route("late", "late", "late.example.com", service("web")))
	})
	routeAccepted(t, m, "late", 30*time.Second)
	newProber(addr).serves(t, "late.example.com", "c", 10*time.Second)
	t.Logf("the member's HTTPRoute Accepted and served %s after its CRD was installed", time.Since(installed).Round(time.Millisecond))
}
