package controllers

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/fleetgate/fleetgate/controllers/translate"
	"github.com/fleetgate/fleetgate/dataplane/ir"
	"github.com/fleetgate/fleetgate/providers"
)

// accountProvider answers Ensure per gateway key: a refusal, or success in account.
type accountProvider struct {
	mu      sync.Mutex
	refused map[string]*providers.CredentialsError
	account string
}

func (p *accountProvider) set(refused map[string]*providers.CredentialsError) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refused = refused
}

func (p *accountProvider) Ensure(_ context.Context, lb *providers.LoadBalancer) (providers.Status, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.refused[lb.Gateway]; err != nil {
		return providers.Status{}, err
	}
	return providers.Status{Ready: true, Direct: true, Reason: providers.ReasonProgrammed, Account: p.account}, nil
}

func (*accountProvider) Delete(context.Context, *providers.LoadBalancer) error  { return nil }
func (*accountProvider) List(context.Context) ([]providers.LoadBalancer, error) { return nil, nil }
func (*accountProvider) Capabilities(json.RawMessage) (providers.Capabilities, error) {
	return providers.FullCapabilities(), nil
}

// accountResult is a translation with two Gateways of class aws, and an Ingress gateway whose
// class (an IngressClass) has the same name.
func accountResult() *translate.Result {
	res := &translate.Result{
		GatewayClasses: []translate.ClassStatus{{Ref: translate.ObjectRef{Cluster: "hub", Kind: "GatewayClass", Name: "aws"}, Generation: 1,
			Conditions: []metav1.Condition{{Type: string(gwv1.GatewayClassConditionStatusAccepted), Status: metav1.ConditionTrue,
				Reason: "Accepted", ObservedGeneration: 1}}}},
	}
	for _, gw := range []string{"hub/ns/a", "hub/ns/b", "hub/ingress:aws"} {
		res.Configs = append(res.Configs, ir.Config{Gateway: gw, Listeners: []ir.Listener{{Name: "http", Port: 80, Protocol: ir.ProtocolHTTP,
			VirtualHosts: []ir.VirtualHost{{Hostname: gw}}}}})
		res.LoadBalancers = append(res.LoadBalancers, providers.LoadBalancer{Gateway: gw, Provider: "aws", Class: "aws"})
		if gw != "hub/ingress:aws" {
			res.Gateways = append(res.Gateways, translate.GatewayStatus{Gateway: gw, Generation: 1,
				Ref: translate.ObjectRef{Cluster: "hub", Kind: "Gateway", Namespace: "ns", Name: gw[len("hub/ns/"):]}})
		}
	}
	return res
}

// TestCloudAccounts: a class's account is refused when one of its Gateways' latest calls was
// (the first by key), answered when none was; an Ingress's refusal does not count for the
// GatewayClass of the same name.
func TestCloudAccounts(t *testing.T) {
	const account = "Secret ops/aws in us-east-1"
	rejected := &providers.CredentialsError{Reason: providers.ReasonCredentialsRejected, Account: account, Operation: "EC2 DescribeVpcs",
		Code: "InvalidClientTokenId", Message: "invalid"}
	denied := &providers.CredentialsError{Reason: providers.ReasonPermissionDenied, Account: account,
		Operation: "Elastic Load Balancing v2 CreateLoadBalancer", Code: "AccessDenied", Message: "not authorized"}
	prov := &accountProvider{account: account}
	configs := &fakeConfigs{versions: map[string]uint64{}, last: map[string]string{}}
	d := newDataplane(t, fakeProviders{"aws": prov}, configs)
	steps := []struct {
		name    string
		refused map[string]*providers.CredentialsError
		want    map[string]translate.CloudAccount
	}{
		{name: "both refused: the first by key", refused: map[string]*providers.CredentialsError{"hub/ns/a": denied, "hub/ns/b": rejected},
			want: map[string]translate.CloudAccount{"aws": {Failure: denied}}},
		{name: "one refused, one answered", refused: map[string]*providers.CredentialsError{"hub/ns/b": rejected},
			want: map[string]translate.CloudAccount{"aws": {Failure: rejected, Account: account}}},
		{name: "only the Ingress refused", refused: map[string]*providers.CredentialsError{"hub/ingress:aws": rejected},
			want: map[string]translate.CloudAccount{"aws": {Account: account}}},
	}
	for _, s := range steps {
		prov.set(s.refused)
		reensure(t, d, accountResult(), s.refused)
		if diff := cmp.Diff(s.want, d.CloudAccounts()); diff != "" {
			t.Errorf("%s (-want +got):\n%s", s.name, diff)
		}
	}
}

// reensure applies res and has every gateway of it ensured again (a refusal is otherwise
// retried only after its backoff), then waits until each has the answer refused says.
func reensure(t *testing.T, d *Dataplane, res *translate.Result, refused map[string]*providers.CredentialsError) {
	t.Helper()
	applyAndWait(t, d, res)
	for _, lb := range res.LoadBalancers {
		d.Recheck(lb.Gateway)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		done := true
		for _, lb := range res.LoadBalancers {
			o, ok := d.engine.Result(lb.Provider, lb.Gateway)
			if ce := refused[lb.Gateway]; ce != nil {
				done = done && ok && o.Err == error(ce)
			} else {
				done = done && ok && o.Err == nil && o.Status.Ready
			}
		}
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the gateways did not get their answers")
		}
	}
}

// TestDeliveryPassCloudAccount: the delivery pass that follows a provider's answer puts the
// class's account on its GatewayClass (False with the code, then True), and the refused Gateway's
// Programmed message keeps the code.
func TestDeliveryPassCloudAccount(t *testing.T) {
	const account = "Secret ops/aws in us-east-1"
	rejected := &providers.CredentialsError{Reason: providers.ReasonCredentialsRejected, Account: account, Operation: "EC2 DescribeVpcs",
		Code: "InvalidClientTokenId", Message: "invalid"}
	prov := &accountProvider{account: account}
	configs := &fakeConfigs{versions: map[string]uint64{}, last: map[string]string{}, acked: 100}
	d := newDataplane(t, fakeProviders{"aws": prov}, configs)
	w := NewStatusWriter(logr.Discard(), nil, nil)
	r := &GatewayReconciler{Apply: d, Status: w}
	res := accountResult()
	for i := range res.Gateways {
		res.Gateways[i].Conditions = []metav1.Condition{
			{Type: string(gwv1.GatewayConditionAccepted), Status: metav1.ConditionTrue, Reason: "Accepted", ObservedGeneration: 1},
			{Type: string(gwv1.GatewayConditionProgrammed), Status: metav1.ConditionFalse, Reason: "Pending", ObservedGeneration: 1},
		}
	}
	r.lastTranslation = res.Applied()
	desired := func(ref translate.ObjectRef) desiredStatus {
		t.Helper()
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.desired[ref] == nil {
			t.Fatalf("no desired status for %v", ref)
		}
		return w.desired[ref].want
	}
	steps := []struct {
		name           string
		refused        map[string]*providers.CredentialsError
		class          metav1.ConditionStatus
		reason, substr string
		gatewayMessage string
	}{
		{name: "refused", refused: map[string]*providers.CredentialsError{"hub/ns/a": rejected}, class: metav1.ConditionFalse,
			reason: providers.ReasonCredentialsRejected, substr: "InvalidClientTokenId", gatewayMessage: "provider error: " + rejected.Error()},
		{name: "fixed", class: metav1.ConditionTrue, reason: translate.ReasonCloudAccountReady, substr: account},
	}
	for _, s := range steps {
		prov.set(s.refused)
		reensure(t, d, res, s.refused)
		if _, err := r.Reconcile(t.Context(), deliveryKey); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		cs, ok := desired(res.GatewayClasses[0].Ref).(*translate.ClassStatus)
		if !ok {
			t.Fatalf("%s: the class's desired status is %T", s.name, cs)
		}
		c := meta.FindStatusCondition(cs.Conditions, translate.ConditionCloudAccountReady)
		if c == nil || c.Status != s.class || c.Reason != s.reason || !strings.Contains(c.Message, s.substr) || c.ObservedGeneration != 1 {
			t.Errorf("%s: %s = %+v, want %s/%s mentioning %q", s.name, translate.ConditionCloudAccountReady, c, s.class, s.reason, s.substr)
		}
		gs, ok := desired(res.Gateways[0].Ref).(*translate.GatewayStatus)
		if !ok {
			t.Fatalf("%s: the Gateway's desired status is %T", s.name, gs)
		}
		p := meta.FindStatusCondition(gs.Conditions, string(gwv1.GatewayConditionProgrammed))
		if s.gatewayMessage != "" && (p.Status != metav1.ConditionFalse || p.Message != s.gatewayMessage) {
			t.Errorf("%s: Programmed = %+v, want False with %q", s.name, p, s.gatewayMessage)
		}
		if s.gatewayMessage == "" && p.Status != metav1.ConditionTrue {
			t.Errorf("%s: Programmed = %+v, want True", s.name, p)
		}
	}
}
