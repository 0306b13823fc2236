package translate

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/fleetgate/fleetgate/providers"
)

func TestSetCloudAccount(t *testing.T) {
	accepted := cond(string(gwv1.GatewayClassConditionStatusAccepted), true, "Accepted", "GatewayClass is accepted", 4)
	invalid := cond(string(gwv1.GatewayClassConditionStatusAccepted), false, "InvalidParameters", "bad", 4)
	ref := ObjectRef{Cluster: "hub", Kind: "GatewayClass", Name: "aws"}
	denied := &providers.CredentialsError{Reason: providers.ReasonPermissionDenied, Account: "Secret ops/aws in us-east-1",
		Operation: "Elastic Load Balancing v2 CreateLoadBalancer", Code: "AccessDenied", Message: "not authorized"}
	const deniedMsg = "The cloud account cannot be used: Elastic Load Balancing v2 CreateLoadBalancer (Secret ops/aws in us-east-1): AccessDenied: not authorized"
	tests := []struct {
		name    string
		class   string
		have    []metav1.Condition
		account CloudAccount
		want    []metav1.Condition
	}{{
		name: "refused", class: "aws", have: []metav1.Condition{accepted},
		account: CloudAccount{Failure: denied, Account: "Secret ops/aws in us-east-1"},
		want: []metav1.Condition{accepted,
			cond(ConditionCloudAccountReady, false, providers.ReasonPermissionDenied, deniedMsg, 4)},
	}, {
		name: "answered replaces a refusal", class: "aws",
		have:    []metav1.Condition{accepted, cond(ConditionCloudAccountReady, false, providers.ReasonPermissionDenied, deniedMsg, 3)},
		account: CloudAccount{Account: "Secret ops/aws in us-east-1"},
		want: []metav1.Condition{accepted,
			cond(ConditionCloudAccountReady, true, ReasonCloudAccountReady, "Calls with Secret ops/aws in us-east-1 succeed", 4)},
	}, {
		name: "nothing known", class: "aws", have: []metav1.Condition{accepted},
		want: []metav1.Condition{accepted},
	}, {
		name: "another class", class: "gcp", have: []metav1.Condition{accepted}, account: CloudAccount{Failure: denied},
		want: []metav1.Condition{accepted},
	}, {
		name: "a class that is not accepted says only that", class: "aws", have: []metav1.Condition{invalid},
		account: CloudAccount{Failure: denied},
		want:    []metav1.Condition{invalid},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &Result{GatewayClasses: []ClassStatus{{Ref: ref, Generation: 4, Conditions: tc.have}}}
			r.SetCloudAccount(tc.class, tc.account)
			r.SetCloudAccount(tc.class, tc.account) // idempotent
			if diff := cmp.Diff(tc.want, r.GatewayClasses[0].Conditions); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			// The status writer tells its changes: no notice of its own.
			if len(r.Notices) > 0 {
				t.Errorf("notices %v, want none", r.Notices)
			}
		})
	}
}

// TestSetProgrammedCredentials: a gateway stopped by its account's refusal keeps the code in its
// Programmed message, and each of its Gateway objects gets a Warning notice with it.
func TestSetProgrammedCredentials(t *testing.T) {
	f := &providers.CredentialsError{Reason: providers.ReasonCredentialsRejected, Account: "a", Operation: "EC2 DescribeVpcs",
		Code: "InvalidClientTokenId", Message: "invalid"}
	ref := ObjectRef{Cluster: "hub", Kind: "Gateway", Namespace: "ns", Name: "gw"}
	r := &Result{Gateways: []GatewayStatus{{Ref: ref, Gateway: "hub/ns/gw", Generation: 2, Conditions: []metav1.Condition{
		cond(string(gwv1.GatewayConditionAccepted), true, "Accepted", "ok", 2),
		cond(string(gwv1.GatewayConditionProgrammed), false, "Pending", "waiting", 2),
	}}}}
	msg := "provider error: " + f.Error()
	r.SetProgrammed("hub/ns/gw", Programmed{Reason: "Pending", Message: msg, Credentials: f})
	want := cond(string(gwv1.GatewayConditionProgrammed), false, "Pending", msg, 2)
	if diff := cmp.Diff(want, *findCondition(r.Gateways[0].Conditions, string(gwv1.GatewayConditionProgrammed))); diff != "" {
		t.Errorf("Programmed (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]Notice{{Ref: ref, Type: "Warning", Reason: providers.ReasonCredentialsRejected, Message: msg}}, r.Notices); diff != "" {
		t.Errorf("notices (-want +got):\n%s", diff)
	}
}
