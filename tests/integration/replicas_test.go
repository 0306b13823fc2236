package integration

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/go-logr/logr/testr"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/controllers"
	"github.com/fleetgate/fleetgate/providers"
	"github.com/fleetgate/fleetgate/tests/testbed"
)

// TestDeliveryReports runs the pipeline as replica "a" on a real API server: it publishes what its
// proxies acknowledged in its Lease, renews it, merges the report another replica ("b") keeps in
// its own Lease into the Gateway's Programmed — a proxy of b's refusing the latest config makes the
// Gateway Invalid with the proxy's reason —, ignores b's report once it is not renewed or is
// gone, deletes reports not renewed for an hour, and deletes its own Lease when it stops.
func TestDeliveryReports(t *testing.T) {
	c := testbed.ForTest(t, "hub")[0]
	ctx, cl := t.Context(), c.Client
	const ns = "fleetgate-system"
	must(t, cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))

	registry := providers.NewRegistry()
	registry.Register(string(v1alpha1.ProviderInCluster), readyProvider{})
	delivery := controllers.NewTrigger()
	apply := &controllers.Dataplane{Providers: registry, Configs: newAckingConfigs(func() { delivery.Fire("") }), Delivered: delivery.Fire}
	stop := runOperator(t, c, testr.New(t), controllers.Options{Registry: prometheus.NewRegistry(), Apply: apply, Delivery: delivery,
		Replica: &controllers.ReplicaOptions{Name: "a", Namespace: ns, Period: time.Second}})

	must(t, testbed.CreateClass(ctx, cl, "fleetgate", v1alpha1.ScopeCluster))
	gw := &gwv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "gw"},
		Spec: gwv1.GatewaySpec{GatewayClassName: "fleetgate",
			Listeners: []gwv1.Listener{{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType}}},
	}
	must(t, cl.Create(ctx, gw))
	programmed := func(status metav1.ConditionStatus, reason, message string) func() error {
		return func() error {
			if err := cl.Get(ctx, client.ObjectKeyFromObject(gw), gw); err != nil {
				return err
			}
			cond := apimeta.FindStatusCondition(gw.Status.Conditions, string(gwv1.GatewayConditionProgrammed))
			if cond == nil || cond.Status != status || cond.Reason != reason || message != "" && cond.Message != message {
				return fmt.Errorf("Programmed %+v, want %s/%s %q", cond, status, reason, message)
			}
			return nil
		}
	}
	testbed.Eventually(t, 30*time.Second, programmed(metav1.ConditionTrue, "Programmed", ""))

	// a's own report: its proxy serves its latest config of the Gateway's generation.
	type proxy struct {
		Node    string `json:"node"`
		Acked   int    `json:"acked,omitempty"`
		Nacked  int    `json:"nacked,omitempty"`
		Reason  string `json:"reason,omitempty"`
		Refused string `json:"refused,omitempty"`
	}
	type gateway struct {
		Generations string  `json:"generations,omitempty"`
		Proxies     []proxy `json:"proxies"`
	}
	type report struct {
		Gateways map[string]gateway `json:"gateways,omitempty"`
	}
	var own report
	var renewed time.Time
	testbed.Eventually(t, 30*time.Second, func() error {
		var l coordinationv1.Lease
		if err := cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: "fleetgate-delivery-a"}, &l); err != nil {
			return err
		}
		if l.Labels[controllers.LabelDeliveryReport] != "true" || ptr.Deref(l.Spec.HolderIdentity, "") != "a" || l.Spec.RenewTime == nil {
			return fmt.Errorf("Lease %+v", l.ObjectMeta)
		}
		if err := json.Unmarshal([]byte(l.Annotations["fleetgate.dev/delivery"]), &own); err != nil {
			return err
		}
		if g := own.Gateways["hub/default/gw"]; len(g.Proxies) != 1 || g.Proxies[0] != (proxy{Node: "proxy", Acked: 2}) || g.Generations == "" {
			return fmt.Errorf("own report %+v", own)
		}
		renewed = l.Spec.RenewTime.Time
		return nil
	})
	// Renewed while nothing changes.
	testbed.Eventually(t, 10*time.Second, func() error {
		var l coordinationv1.Lease
		if err := cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: "fleetgate-delivery-a"}, &l); err != nil {
			return err
		}
		if !l.Spec.RenewTime.After(renewed) {
			return fmt.Errorf("not renewed since %s", renewed)
		}
		return nil
	})

	// b's proxy refuses b's latest config of the same generation.
	peer := report{Gateways: map[string]gateway{"hub/default/gw": {Generations: own.Gateways["hub/default/gw"].Generations,
		Proxies: []proxy{{Node: "q", Acked: 1, Nacked: 2, Reason: "bad regex"}}}}}
	b, err := json.Marshal(peer)
	must(t, err)
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fleetgate-delivery-b",
			Labels: map[string]string{controllers.LabelDeliveryReport: "true"}, Annotations: map[string]string{"fleetgate.dev/delivery": string(b)}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("b"), RenewTime: ptr.To(metav1.NewMicroTime(time.Now()))},
	}
	must(t, cl.Create(ctx, lease))
	testbed.Eventually(t, 30*time.Second, programmed(metav1.ConditionFalse, "Invalid", ""))
	cond := apimeta.FindStatusCondition(gw.Status.Conditions, string(gwv1.GatewayConditionProgrammed))
	t.Logf("with b's report: %s", cond.Message)
	must(t, cl.Delete(ctx, lease))
	testbed.Eventually(t, 30*time.Second, programmed(metav1.ConditionTrue, "Programmed", ""))

	// A report not renewed for three periods is ignored.
	lease = lease.DeepCopy()
	lease.ResourceVersion = ""
	lease.Spec.RenewTime = ptr.To(metav1.NewMicroTime(time.Now().Add(-time.Minute)))
	must(t, cl.Create(ctx, lease))
	time.Sleep(2 * time.Second) // a pass with it in the cache
	must(t, programmed(metav1.ConditionTrue, "Programmed", "")())

	// One not renewed for over an hour (a replica killed outside a pod) is deleted by the leader.
	stale := lease.DeepCopy()
	stale.Name, stale.ResourceVersion = "fleetgate-delivery-gone", ""
	stale.Spec.RenewTime = ptr.To(metav1.NewMicroTime(time.Now().Add(-2 * time.Hour)))
	must(t, cl.Create(ctx, stale))
	testbed.Eventually(t, 10*time.Second, func() error {
		if err := cl.Get(ctx, client.ObjectKeyFromObject(stale), &coordinationv1.Lease{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("stale report: %v, want it deleted", err)
		}
		return nil
	})
	must(t, cl.Get(ctx, client.ObjectKeyFromObject(lease), &coordinationv1.Lease{})) // a minute old: kept

	stop()
	err = cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: "fleetgate-delivery-a"}, &coordinationv1.Lease{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("a's Lease after it stopped: %v, want it deleted", err)
	}
}
