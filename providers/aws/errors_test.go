package aws

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/aws/smithy-go"
	"github.com/google/go-cmp/cmp"

	"github.com/fleetgate/fleetgate/providers"
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

// TestCredentialsError: refusals of the caller become a CredentialsError naming the code and the
// call that failed (the STS call under the ELBv2 call it was signing for); everything else,
// including STS errors that are not API errors, comes back unchanged.
func TestCredentialsError(t *testing.T) {
	const account = "Secret ops/aws in us-east-1"
	apiErr := func(code, msg string) error { return &smithy.GenericAPIError{Code: code, Message: msg} }
	op := func(service, name string, err error) error {
		return &smithy.OperationError{ServiceID: service, OperationName: name, Err: err}
	}
	// As the SDK nests a role's failure: the signing call, then the credentials cache, then STS.
	assumed := func(err error) error {
		return op("Elastic Load Balancing v2", "DescribeLoadBalancers",
			fmt.Errorf("get identity: get credentials: failed to refresh cached credentials, %w", op("STS", "AssumeRole", err)))
	}
	tests := []struct {
		name string
		err  error
		want *providers.CredentialsError // nil: returned unchanged
	}{
		{name: "nil", err: nil},
		{name: "not an API error", err: context.DeadlineExceeded},
		{name: "throttling", err: op("EC2", "DescribeSubnets", apiErr("Throttling", "Rate exceeded"))},
		{name: "validation", err: op("Elastic Load Balancing v2", "CreateListener", apiErr("ValidationError", "bad port"))},
		{name: "invalid key", err: op("EC2", "DescribeSubnets", apiErr("InvalidClientTokenId", "The security token included in the request is invalid.")),
			want: &providers.CredentialsError{Reason: providers.ReasonCredentialsRejected, Operation: "EC2 DescribeSubnets",
				Code: "InvalidClientTokenId", Message: "The security token included in the request is invalid."}},
		{name: "bad signature", err: op("ACM", "ImportCertificate", apiErr("SignatureDoesNotMatch", "sig")),
			want: &providers.CredentialsError{Reason: providers.ReasonCredentialsRejected, Operation: "ACM ImportCertificate", Code: "SignatureDoesNotMatch", Message: "sig"}},
		{name: "unrecognized client", err: op("ACM", "ListCertificates", apiErr("UnrecognizedClientException", "m")),
			want: &providers.CredentialsError{Reason: providers.ReasonCredentialsRejected, Operation: "ACM ListCertificates", Code: "UnrecognizedClientException", Message: "m"}},
		{name: "expired", err: op("Elastic Load Balancing v2", "DescribeTags", apiErr("ExpiredToken", "m")),
			want: &providers.CredentialsError{Reason: providers.ReasonCredentialsRejected, Operation: "Elastic Load Balancing v2 DescribeTags", Code: "ExpiredToken", Message: "m"}},
		{name: "EC2 auth failure", err: op("EC2", "DescribeVpcs", apiErr("AuthFailure", "m")),
			want: &providers.CredentialsError{Reason: providers.ReasonCredentialsRejected, Operation: "EC2 DescribeVpcs", Code: "AuthFailure", Message: "m"}},
		{name: "ELBv2 access denied, wrapped", err: fmt.Errorf("creating load balancer: %w",
			op("Elastic Load Balancing v2", "CreateLoadBalancer", apiErr("AccessDenied", "not authorized to perform: elasticloadbalancing:CreateLoadBalancer"))),
			want: &providers.CredentialsError{Reason: providers.ReasonPermissionDenied, Operation: "Elastic Load Balancing v2 CreateLoadBalancer",
				Code: "AccessDenied", Message: "not authorized to perform: elasticloadbalancing:CreateLoadBalancer"}},
		{name: "ACM access denied", err: op("ACM", "ImportCertificate", apiErr("AccessDeniedException", "m")),
			want: &providers.CredentialsError{Reason: providers.ReasonPermissionDenied, Operation: "ACM ImportCertificate", Code: "AccessDeniedException", Message: "m"}},
		{name: "EC2 unauthorized", err: op("EC2", "CreateSecurityGroup", apiErr("UnauthorizedOperation", "m")),
			want: &providers.CredentialsError{Reason: providers.ReasonPermissionDenied, Operation: "EC2 CreateSecurityGroup", Code: "UnauthorizedOperation", Message: "m"}},
		{name: "role not assumable", err: assumed(apiErr("AccessDenied", "not authorized to perform: sts:AssumeRole")),
			want: &providers.CredentialsError{Reason: providers.ReasonPermissionDenied, Operation: "STS AssumeRole", Code: "AccessDenied", Message: "not authorized to perform: sts:AssumeRole"}},
		{name: "malformed role ARN", err: assumed(apiErr("ValidationError", "1 validation error detected")),
			want: &providers.CredentialsError{Reason: providers.ReasonCredentialsRejected, Operation: "STS AssumeRole", Code: "ValidationError", Message: "1 validation error detected"}},
		{name: "STS unreachable", err: assumed(errors.New("dial tcp: connection refused"))},
		{name: "STS throttling", err: assumed(apiErr("Throttling", "Rate exceeded"))},
		{name: "STS failing", err: assumed(&smithy.GenericAPIError{Code: "InternalFailure", Message: "m", Fault: smithy.FaultServer})},
		{name: "no credentials anywhere", err: op("EC2", "DescribeSubnets", fmt.Errorf("get identity: get credentials: failed to refresh cached credentials, no EC2 IMDS role found, %w",
			op("ec2imds", "GetMetadata", errors.New("http response error StatusCode: 403, request to EC2 IMDS failed")))),
			want: &providers.CredentialsError{Reason: providers.ReasonCredentialsUnavailable, Operation: "ec2imds GetMetadata",
				Message: "the default credential chain found none (environment, shared files, web identity, container, instance metadata)"}},
		// A member's account is the member's: the class's condition must not blame its own.
		{name: "a member's account", err: errors.Join(memberError([]string{"west"}, op("EC2", "DescribeSecurityGroupRules", apiErr("AccessDenied", "no"))))},
		{name: "a member's missing Secret", err: memberError([]string{"west"}, &providers.CredentialsError{Reason: providers.ReasonCredentialsUnavailable, Operation: "reading Secret ops/west"})},
		{name: "already classified", err: &providers.CredentialsError{Reason: providers.ReasonCredentialsUnavailable, Operation: "reading Secret ops/aws"},
			want: &providers.CredentialsError{Reason: providers.ReasonCredentialsUnavailable, Operation: "reading Secret ops/aws"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := credentialsError(tc.err, account)
			ce, ok := errors.AsType[*providers.CredentialsError](got)
			if tc.want == nil {
				if ok || got != tc.err {
					t.Fatalf("credentialsError = %v, want %v unchanged", got, tc.err)
				}
				return
			}
			if !ok {
				t.Fatalf("credentialsError = %v, want a CredentialsError", got)
			}
			if ce.Err != nil && !errors.Is(got, tc.err) {
				t.Errorf("the CredentialsError does not wrap the SDK's error %v", tc.err)
			}
			if tc.want.Account == "" && tc.name != "already classified" {
				tc.want.Account = account
			}
			c := *ce
			c.Err = nil
			if diff := cmp.Diff(*tc.want, c); diff != "" {
				t.Errorf("CredentialsError (-want +got):\n%s", diff)
			}
		})
	}
}
