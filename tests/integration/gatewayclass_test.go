package integration

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/controllers"
	"github.com/fleetgate/fleetgate/tests/testbed"
)

func TestGatewayClassAcceptance(t *testing.T) {
	c := testbed.ForTest(t, "hub")[0]
	startOperator(t, c)
	ctx := t.Context()

	params := func(kind, name string) *gwv1.ParametersReference {
		return &gwv1.ParametersReference{Group: v1alpha1.Group, Kind: gwv1.Kind(kind), Name: name}
	}
	class := func(name string, ref *gwv1.ParametersReference) *gwv1.GatewayClass {
		return &gwv1.GatewayClass{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       gwv1.GatewayClassSpec{ControllerName: v1alpha1.ControllerName, ParametersRef: ref},
		}
	}
	cfg := &v1alpha1.GatewayClassConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "local"},
		Spec:       v1alpha1.GatewayClassConfigSpec{Provider: v1alpha1.ProviderInCluster},
	}
	must(t, c.Client.Create(ctx, cfg))
	for _, gc := range []*gwv1.GatewayClass{
		class("good", params("GatewayClassConfig", "local")),
		class("no-params", nil),
		class("wrong-kind", params("ConfigMap", "local")),
		class("missing-config", params("GatewayClassConfig", "later")),
		{
			ObjectMeta: metav1.ObjectMeta{Name: "not-ours"},
			Spec:       gwv1.GatewayClassSpec{ControllerName: "example.com/other"},
		},
	} {
		must(t, c.Client.Create(ctx, gc))
	}

	wantAccepted := func(name string, status metav1.ConditionStatus, reason gwv1.GatewayClassConditionReason) func() error {
		return func() error {
			var gc gwv1.GatewayClass
			if err := c.Client.Get(ctx, client.ObjectKey{Name: name}, &gc); err != nil {
				return err
			}
			cond := meta.FindStatusCondition(gc.Status.Conditions, string(gwv1.GatewayClassConditionStatusAccepted))
			if cond == nil || cond.Status != status || cond.Reason != string(reason) || cond.ObservedGeneration != gc.Generation {
				return fmt.Errorf("GatewayClass %s Accepted = %+v, want %s/%s at generation %d", name, cond, status, reason, gc.Generation)
			}
			// Only a class fleetgate accepts advertises what fleetgate supports.
			var features []gwv1.SupportedFeature
			if status == metav1.ConditionTrue {
				features = controllers.SupportedFeatures()
			}
			if diff := cmp.Diff(features, gc.Status.SupportedFeatures, cmpopts.EquateEmpty()); diff != "" {
				return fmt.Errorf("GatewayClass %s supportedFeatures (-want +got):\n%s", name, diff)
			}
			return nil
		}
	}
	testbed.Eventually(t, 20*time.Second, wantAccepted("good", metav1.ConditionTrue, gwv1.GatewayClassReasonAccepted))
	testbed.Eventually(t, 5*time.Second, wantAccepted("no-params", metav1.ConditionFalse, gwv1.GatewayClassReasonInvalidParameters))
	testbed.Eventually(t, 5*time.Second, wantAccepted("wrong-kind", metav1.ConditionFalse, gwv1.GatewayClassReasonInvalidParameters))
	testbed.Eventually(t, 5*time.Second, wantAccepted("missing-config", metav1.ConditionFalse, gwv1.GatewayClassReasonInvalidParameters))

	// The GatewayClassConfig watch brings the class to Accepted once its parameters exist.
	later := cfg.DeepCopy()
	later.ObjectMeta = metav1.ObjectMeta{Name: "later"}
	must(t, c.Client.Create(ctx, later))
	testbed.Eventually(t, 10*time.Second, wantAccepted("missing-config", metav1.ConditionTrue, gwv1.GatewayClassReasonAccepted))

	// Classes of other controllers are left alone.
	var other gwv1.GatewayClass
	must(t, c.Client.Get(ctx, client.ObjectKey{Name: "not-ours"}, &other))
	for _, cond := range other.Status.Conditions {
		if cond.Reason != string(gwv1.GatewayClassReasonPending) {
			t.Errorf("GatewayClass of another controller got condition %+v", cond)
		}
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
