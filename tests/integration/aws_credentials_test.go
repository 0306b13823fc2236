package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1a2 "sigs.k8s.io/gateway-api/apis/v1alpha2"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/controllers/translate"
	"github.com/fleetgate/fleetgate/providers"
	"github.com/fleetgate/fleetgate/providers/aws/mototest"
	"github.com/fleetgate/fleetgate/tests/testbed"
)

// TestAWSCredentialsRejected: a class whose credentials Secret holds keys AWS rejects (the shim
// answers InvalidClientTokenId, HTTP 403, for every call they sign, as moto accepts any key) gets
// fleetgate.dev/CloudAccountReady=False/CredentialsRejected naming the code and the call, one
// Warning Event however often the engine retries, and its Gateway Programmed=False with the code.
// Once the Secret holds valid keys the condition turns True and the Gateway is programmed.
func TestAWSCredentialsRejected(t *testing.T) {
	e := newAWSEnv(t)
	ctx, cl := t.Context(), e.c.Client
	const revoked = "AKIDREVOKED"
	e.shim.Fail(mototest.Rule{AccessKey: revoked, Fault: mototest.InvalidClientTokenId(), Rate: 1})
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "aws-creds", Name: "revoked"},
		StringData: map[string]string{"access-key-id": revoked, "secret-access-key": "x"}}
	must(t, cl.Create(ctx, secret))
	must(t, cl.Create(ctx, &v1alpha1.GatewayClassConfig{ObjectMeta: metav1.ObjectMeta{Name: "aws-locked"},
		Spec: v1alpha1.GatewayClassConfigSpec{Provider: v1alpha1.ProviderAWS,
			AWS: &v1alpha1.AWSOptions{LoadBalancerType: v1alpha1.AWSNetwork, VPC: e.vpc,
				Credentials: &v1alpha1.AWSCredentials{SecretRef: &v1alpha1.ObjectRef{Namespace: "aws-creds", Name: "revoked"}}}}}))
	must(t, cl.Create(ctx, &gwv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "aws-locked"},
		Spec: gwv1.GatewayClassSpec{ControllerName: v1alpha1.ControllerName,
			ParametersRef: &gwv1.ParametersReference{Group: v1alpha1.Group, Kind: "GatewayClassConfig", Name: "aws-locked"}}}))
	e.backend("tcp", corev1.ProtocolTCP, 9000, "10.0.1.20")
	must(t, cl.Create(ctx, &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "locked"},
		Spec: gwv1.GatewaySpec{GatewayClassName: "aws-locked",
			Listeners: []gwv1.Listener{{Name: "tcp", Port: 9000, Protocol: gwv1.TCPProtocolType}}}}))
	must(t, cl.Create(ctx, &gwv1a2.TCPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "locked"},
		Spec: gwv1a2.TCPRouteSpec{CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "locked"}}},
			Rules: []gwv1a2.TCPRouteRule{{BackendRefs: []gwv1.BackendRef{{BackendObjectReference: gwv1.BackendObjectReference{
				Name: "tcp", Port: ptr.To[gwv1.PortNumber](9000)}}}}}}}))

	classCondition := func() (*metav1.Condition, int64, error) {
		var gc gwv1.GatewayClass
		if err := cl.Get(ctx, client.ObjectKey{Name: "aws-locked"}, &gc); err != nil {
			return nil, 0, err
		}
		return meta.FindStatusCondition(gc.Status.Conditions, translate.ConditionCloudAccountReady), gc.Generation, nil
	}
	gatewayProgrammed := func() (*metav1.Condition, error) {
		var gw gwv1.Gateway
		if err := cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: "locked"}, &gw); err != nil {
			return nil, err
		}
		return meta.FindStatusCondition(gw.Status.Conditions, string(gwv1.GatewayConditionProgrammed)), nil
	}
	testbed.Eventually(t, 60*time.Second, func() error {
		c, gen, err := classCondition()
		switch {
		case err != nil:
			return err
		case c == nil || c.Status != metav1.ConditionFalse || c.Reason != providers.ReasonCredentialsRejected:
			return fmt.Errorf("class condition %+v, want False/CredentialsRejected", c)
		case !strings.Contains(c.Message, "InvalidClientTokenId") || !strings.Contains(c.Message, "Secret aws-creds/revoked"):
			return fmt.Errorf("class condition message %q: want the code and the account", c.Message)
		case c.ObservedGeneration != gen:
			return fmt.Errorf("class condition observedGeneration %d, want %d", c.ObservedGeneration, gen)
		}
		p, err := gatewayProgrammed()
		if err != nil {
			return err
		}
		if p == nil || p.Status != metav1.ConditionFalse || !strings.Contains(p.Message, "InvalidClientTokenId") {
			return fmt.Errorf("Gateway Programmed %+v, want False naming InvalidClientTokenId", p)
		}
		return nil
	})
	if c, _, _ := classCondition(); c != nil {
		t.Logf("GatewayClass %s: %s: %s", c.Type, c.Reason, c.Message)
	}
	// Let the engine retry a few times: the Events stay one per object.
	calls := func() int { return e.shim.Count(func(r mototest.Request) bool { return r.AccessKey == revoked }) }
	seen := calls()
	testbed.Eventually(t, 60*time.Second, func() error {
		if n := calls(); n < seen+3 {
			return fmt.Errorf("%d calls with the revoked key since, want 3 retries", n-seen)
		}
		return nil
	})
	warnings := func(kind, name string) ([]eventsv1.Event, error) {
		var evs eventsv1.EventList
		if err := cl.List(ctx, &evs); err != nil {
			return nil, err
		}
		var out []eventsv1.Event
		for _, ev := range evs.Items {
			if ev.Regarding.Kind == kind && ev.Regarding.Name == name && ev.Reason == providers.ReasonCredentialsRejected {
				out = append(out, ev)
			}
		}
		return out, nil
	}
	for _, obj := range [][2]string{{"GatewayClass", "aws-locked"}, {"Gateway", "locked"}} {
		testbed.Eventually(t, 20*time.Second, func() error {
			evs, err := warnings(obj[0], obj[1])
			if err != nil {
				return err
			}
			if len(evs) == 0 {
				return fmt.Errorf("no CredentialsRejected Event for %s %s", obj[0], obj[1])
			}
			return nil
		})
		evs, err := warnings(obj[0], obj[1])
		must(t, err)
		if len(evs) != 1 || evs[0].Type != corev1.EventTypeWarning || evs[0].Series != nil || !strings.Contains(evs[0].Note, "InvalidClientTokenId") {
			t.Errorf("%s %s: want one Warning Event naming InvalidClientTokenId, not repeated; got %+v", obj[0], obj[1], evs)
		}
	}

	// Valid keys: the next retry goes through.
	update(t, cl, secret, func() {
		secret.Data = map[string][]byte{"access-key-id": []byte("testing"), "secret-access-key": []byte("testing")}
	})
	testbed.Eventually(t, 90*time.Second, func() error {
		c, _, err := classCondition()
		switch {
		case err != nil:
			return err
		case c == nil || c.Status != metav1.ConditionTrue || c.Reason != translate.ReasonCloudAccountReady:
			return fmt.Errorf("class condition %+v, want True/Ready", c)
		}
		p, err := gatewayProgrammed()
		if err != nil {
			return err
		}
		if p == nil || p.Status != metav1.ConditionTrue {
			return fmt.Errorf("Gateway Programmed %+v, want True", p)
		}
		return nil
	})
	if lbs := e.loadBalancers(); len(lbs) != 1 {
		t.Errorf("%d load balancers after the fix, want 1: %v", len(lbs), lbNames(lbs))
	}
}
