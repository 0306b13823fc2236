package translate

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/fleetgate/fleetgate/providers"
)

// ConditionCloudAccountReady is fleetgate's GatewayClass condition on the cloud account its
// provider calls with: False (CredentialsRejected, PermissionDenied, CredentialsUnavailable) once
// a call of one of its gateways was refused for the credentials or permissions, True (Ready) once
// calls succeed again. It sits beside Accepted, which stays about the class's parameters; a class
// whose provider has no cloud account, or whose gateways have not been provisioned yet, has none.
const ConditionCloudAccountReady = "fleetgate.dev/CloudAccountReady"

// ReasonCloudAccountReady is the reason of a True ConditionCloudAccountReady.
const ReasonCloudAccountReady = "Ready"

// CloudAccount is what provisioning learnt of one GatewayClass's cloud account from the latest
// provider call of each of its gateways.
type CloudAccount struct {
	// Failure is a refusal of the account's credentials or permissions; nil when none of the
	// latest calls was refused.
	Failure *providers.CredentialsError
	// Account names the account of a call that succeeded (providers.Status.Account).
	Account string
}

// SetCloudAccount merges what provisioning learnt of class's cloud account into the status of
// every accepted GatewayClass of that name: ConditionCloudAccountReady, whose every change of
// status or reason the status writer tells in an Event (a Warning while False), once. Nothing is
// set when a says nothing. Pure and idempotent.
func (r *Result) SetCloudAccount(class string, a CloudAccount) {
	if a.Failure == nil && a.Account == "" {
		return
	}
	for i := range r.GatewayClasses {
		cs := &r.GatewayClasses[i]
		if cs.Ref.Name != class {
			continue
		}
		if c := findCondition(cs.Conditions, string(gwv1.GatewayClassConditionStatusAccepted)); c == nil || c.Status != metav1.ConditionTrue {
			continue
		}
		c := cond(ConditionCloudAccountReady, true, ReasonCloudAccountReady, "Calls with "+a.Account+" succeed", cs.Generation)
		if f := a.Failure; f != nil {
			c = cond(ConditionCloudAccountReady, false, f.Reason, "The cloud account cannot be used: "+f.Error(), cs.Generation)
		}
		cs.Conditions = slices.DeleteFunc(cs.Conditions, func(c metav1.Condition) bool { return c.Type == ConditionCloudAccountReady })
		cs.Conditions = append(cs.Conditions, c)
	}
}
