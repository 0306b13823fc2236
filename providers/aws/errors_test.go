package aws

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/aws/smithy-go"
)

func TestErrorCode(t *testing.T) {
	apiErr := func(code string) error { return &smithy.GenericAPIError{Code: code, Message: "m"} }
	tests := []struct {
		name     string
		err      error
		code     string
		notFound bool
	}{
		{name: "nil", err: nil, code: ""},
		{name: "no API error", err: context.DeadlineExceeded, code: ""},
		{name: "wrapped throttling", err: fmt.Errorf("creating rule: %w", apiErr("Throttling")), code: "Throttling"},
		{name: "joined", err: errors.Join(errors.New("x"), apiErr("AccessDenied")), code: "AccessDenied"},
		{name: "load balancer", err: apiErr("LoadBalancerNotFound"), code: "LoadBalancerNotFound", notFound: true},
		{name: "target group", err: apiErr("TargetGroupNotFound"), code: "TargetGroupNotFound", notFound: true},
		{name: "listener", err: apiErr("ListenerNotFound"), code: "ListenerNotFound", notFound: true},
		{name: "rule", err: apiErr("RuleNotFound"), code: "RuleNotFound", notFound: true},
		{name: "ELB certificate", err: apiErr("CertificateNotFound"), code: "CertificateNotFound", notFound: true},
		{name: "ACM certificate", err: apiErr("ResourceNotFoundException"), code: "ResourceNotFoundException", notFound: true},
		{name: "security group", err: apiErr("InvalidGroup.NotFound"), code: "InvalidGroup.NotFound", notFound: true},
		{name: "EIP", err: apiErr("InvalidAllocationID.NotFound"), code: "InvalidAllocationID.NotFound", notFound: true},
		{name: "in use is not gone", err: apiErr("ResourceInUse"), code: "ResourceInUse"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := errorCode(tc.err); got != tc.code {
				t.Errorf("errorCode = %q, want %q", got, tc.code)
			}
			if got := isNotFound(tc.err); got != tc.notFound {
				t.Errorf("isNotFound = %v, want %v", got, tc.notFound)
			}
		})
	}
}
