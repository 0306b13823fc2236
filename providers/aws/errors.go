package aws

import (
	"errors"

	"github.com/aws/smithy-go"

	"github.com/fleetgate/fleetgate/providers"
)

// errorCode is the AWS API error code of err (Throttling, AccessDenied, ValidationError, …), ""
// when err carries none: conditions and metrics name it so that a user can look it up.
func errorCode(err error) string {
	if apiErr, ok := errors.AsType[smithy.APIError](err); ok {
		return apiErr.ErrorCode()
	}
	return ""
}

// isNotFound tells whether err says the resource does not exist. TargetGroupNotFound and
// RuleNotFound come back from deletes too, where AWS documents only ResourceInUse: a delete that
// finds nothing is done.
func isNotFound(err error) bool {
	switch errorCode(err) {
	case "LoadBalancerNotFound", "TargetGroupNotFound", "ListenerNotFound", "RuleNotFound",
		"CertificateNotFound", "ResourceNotFoundException",
		"InvalidGroup.NotFound", "InvalidAllocationID.NotFound":
		return true
	}
	return false
}

// credentialsReason says whether an AWS error code refuses the caller rather than the request:
// the credentials (ReasonCredentialsRejected) or a permission (ReasonPermissionDenied); "" for
// every other code. The codes are those of the AWS common errors and of EC2, ELBv2, ACM and STS.
func credentialsReason(code string) string {
	switch code {
	case "InvalidClientTokenId", "SignatureDoesNotMatch", "UnrecognizedClientException",
		"ExpiredToken", "ExpiredTokenException", "AuthFailure", "InvalidAccessKeyId",
		"IncompleteSignature", "MissingAuthenticationToken", "InvalidIdentityToken", "IDPRejectedClaim":
		return providers.ReasonCredentialsRejected
	case "AccessDenied", "AccessDeniedException", "UnauthorizedOperation":
		return providers.ReasonPermissionDenied
	}
	return ""
}

// credentialsError returns err as a *providers.CredentialsError of account when AWS refused the
// caller: a credentials or permission code from any call, or any client error from STS but
// throttling (its only calls here get the credentials of a role: AssumeRole,
// AssumeRoleWithWebIdentity); or when the SDK's default chain found no credentials, its last
// resort (instance metadata) failing too. Other errors come back unchanged.
func credentialsError(err error, account string) error {
	if err == nil {
		return nil
	}
	if _, ok := errors.AsType[*MemberError](err); ok {
		return err // a member's account, named in the Gateway's message: the class's account works
	}
	if _, ok := errors.AsType[*providers.CredentialsError](err); ok {
		return err
	}
	service, operation := failedOperation(err)
	apiErr, ok := errors.AsType[smithy.APIError](err)
	if !ok {
		if service == "ec2imds" {
			return &providers.CredentialsError{Reason: providers.ReasonCredentialsUnavailable, Account: account,
				Operation: service + " " + operation, Err: err,
				Message: "the default credential chain found none (environment, shared files, web identity, container, instance metadata)"}
		}
		return err
	}
	reason := credentialsReason(apiErr.ErrorCode())
	// STS refusing a role is about the credentials, whatever the code; its throttling and
	// failures are not.
	if reason == "" && service == "STS" && apiErr.ErrorFault() != smithy.FaultServer && apiErr.ErrorCode() != "Throttling" {
		reason = providers.ReasonCredentialsRejected
	}
	if reason == "" {
		return err
	}
	return &providers.CredentialsError{Reason: reason, Account: account, Operation: service + " " + operation,
		Code: apiErr.ErrorCode(), Message: apiErr.ErrorMessage(), Err: err}
}

// failedOperation is the innermost SDK operation in err's chain: a call whose credentials come
// from STS fails as "ELBv2 DescribeLoadBalancers" wrapping the "STS AssumeRole" that failed.
func failedOperation(err error) (service, operation string) {
	for {
		opErr, ok := errors.AsType[*smithy.OperationError](err)
		if !ok {
			return service, operation
		}
		service, operation, err = opErr.Service(), opErr.Operation(), opErr.Err
	}
}
