package providers

import (
	"cmp"
	"fmt"
)

// Reasons of a CredentialsError: why the class's cloud account cannot be used.
const (
	// ReasonCredentialsRejected: the cloud refused the credentials (unknown, malformed or expired
	// keys; a role that cannot be assumed).
	ReasonCredentialsRejected = "CredentialsRejected"
	// ReasonPermissionDenied: the credentials are valid but lack a permission a call needs.
	ReasonPermissionDenied = "PermissionDenied"
	// ReasonCredentialsUnavailable: there are no credentials to sign with (a missing Secret, a
	// Secret without its keys).
	ReasonCredentialsUnavailable = "CredentialsUnavailable"
)

// CredentialsError is a provider call that failed because of who made it, not what it asked for:
// retrying will not help until the account's credentials or permissions are fixed. Providers
// return it (possibly wrapped) from Ensure, so that the controller can tell the owner of the class
// with errors.As, without knowing the cloud: the GatewayClass gets a condition naming Code and
// Operation, and the Gateway's Programmed message carries Error().
type CredentialsError struct {
	// Reason is one of ReasonCredentialsRejected, ReasonPermissionDenied and
	// ReasonCredentialsUnavailable.
	Reason string
	// Account names where the credentials come from (a Secret's name, a role ARN, a region),
	// never the credentials themselves.
	Account string
	// Operation is the call that failed, e.g. "Elastic Load Balancing v2 DescribeLoadBalancers",
	// "STS AssumeRole" or "reading Secret ns/name".
	Operation string
	// Code is the cloud's error code (AccessDenied, InvalidClientTokenId, …); "" when the cloud
	// was not reached.
	Code string
	// Message is the cloud's message for Code, or what went wrong before any call. It carries no
	// request ID, so that the same failure gives the same condition and is told once.
	Message string
	// Err is the error as the SDK returned it.
	Err error
}

func (e *CredentialsError) Error() string {
	what := cmp.Or(e.Code, e.Reason)
	return fmt.Sprintf("%s (%s): %s: %s", e.Operation, e.Account, what, e.Message)
}

func (e *CredentialsError) Unwrap() error { return e.Err }
