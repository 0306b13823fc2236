package aws

import (
	"errors"

	"github.com/aws/smithy-go"
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
