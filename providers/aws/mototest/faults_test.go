package mototest_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/acm"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	"github.com/aws/smithy-go"
	"github.com/google/go-cmp/cmp"

	"github.com/fleetgate/fleetgate/providers/aws/mototest"
)

var moto *mototest.Server

func TestMain(m *testing.M) { os.Exit(mototest.Main(m, &moto)) }

type clients struct {
	elb *elb.Client
	ec2 *ec2.Client
	acm *acm.Client
}

// setup resets moto and puts a shim in front of it, with clients that make one attempt per call.
func setup(t *testing.T) (*mototest.Faults, clients) {
	t.Helper()
	s := mototest.Require(t, moto)
	s.Reset(t, 1)
	f := mototest.NewFaults(s.URL)
	t.Cleanup(f.Close)
	cfg, err := mototest.Config(t.Context(), f.URL())
	if err != nil {
		t.Fatal(err)
	}
	return f, clients{elb.NewFromConfig(cfg), ec2.NewFromConfig(cfg), acm.NewFromConfig(cfg)}
}

// TestFaultWireShapes checks that every fault decodes, through the real SDK clients, into the AWS
// error code and status it stands for, and that the SDK's retryer classifies it as AWS's.
func TestFaultWireShapes(t *testing.T) {
	type call func(context.Context, clients) error
	describeLBs := func(ctx context.Context, c clients) error {
		_, err := c.elb.DescribeLoadBalancers(ctx, &elb.DescribeLoadBalancersInput{})
		return err
	}
	deleteTG := func(ctx context.Context, c clients) error {
		_, err := c.elb.DeleteTargetGroup(ctx, &elb.DeleteTargetGroupInput{TargetGroupArn: aws.String("arn:tg")})
		return err
	}
	deleteLB := func(ctx context.Context, c clients) error {
		_, err := c.elb.DeleteLoadBalancer(ctx, &elb.DeleteLoadBalancerInput{LoadBalancerArn: aws.String("arn:lb")})
		return err
	}
	describeVPCs := func(ctx context.Context, c clients) error {
		_, err := c.ec2.DescribeVpcs(ctx, &ec2.DescribeVpcsInput{})
		return err
	}
	deleteSG := func(ctx context.Context, c clients) error {
		_, err := c.ec2.DeleteSecurityGroup(ctx, &ec2.DeleteSecurityGroupInput{GroupId: aws.String("sg-1")})
		return err
	}
	deleteCert := func(ctx context.Context, c clients) error {
		_, err := c.acm.DeleteCertificate(ctx, &acm.DeleteCertificateInput{CertificateArn: aws.String("arn:aws:acm:us-east-1:123456789012:certificate/x")})
		return err
	}
	listCerts := func(ctx context.Context, c clients) error {
		_, err := c.acm.ListCertificates(ctx, &acm.ListCertificatesInput{})
		return err
	}
	tests := []struct {
		name      string
		action    string
		service   string
		call      call
		fault     mototest.Fault
		status    int
		retryable bool
	}{
		{"elbv2 throttling", "DescribeLoadBalancers", "elasticloadbalancing", describeLBs, mototest.Throttling(), 400, true},
		{"elbv2 500", "DescribeLoadBalancers", "elasticloadbalancing", describeLBs, mototest.ServerError(500), 500, true},
		{"elbv2 503", "DescribeLoadBalancers", "elasticloadbalancing", describeLBs, mototest.ServerError(503), 503, true},
		{"elbv2 resource in use", "DeleteTargetGroup", "elasticloadbalancing", deleteTG, mototest.ResourceInUse(), 400, false},
		{"elbv2 operation not permitted", "DeleteLoadBalancer", "elasticloadbalancing", deleteLB, mototest.OperationNotPermitted(), 400, false},
		{"ec2 request limit", "DescribeVpcs", "ec2", describeVPCs, mototest.RequestLimitExceeded(), 503, true},
		{"ec2 500", "DescribeVpcs", "ec2", describeVPCs, mototest.ServerError(500), 500, true},
		{"ec2 dependency violation", "DeleteSecurityGroup", "ec2", deleteSG, mototest.DependencyViolation(), 400, false},
		{"acm resource in use", "DeleteCertificate", "acm", deleteCert, mototest.ResourceInUseException(), 400, false},
		{"acm throttling", "ListCertificates", "acm", listCerts, mototest.Throttling(), 400, true},
		{"acm 503", "ListCertificates", "acm", listCerts, mototest.ServerError(503), 503, true},
		{"elbv2 invalid key", "DescribeLoadBalancers", "elasticloadbalancing", describeLBs, mototest.InvalidClientTokenId(), 403, false},
		{"elbv2 access denied", "DeleteLoadBalancer", "elasticloadbalancing", deleteLB, mototest.AccessDenied("elasticloadbalancing:DeleteLoadBalancer"), 403, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, c := setup(t)
			f.Fail(mototest.Rule{Actions: []string{tt.action}, Fault: tt.fault, First: 1})
			err := tt.call(t.Context(), c)
			var apiErr smithy.APIError
			if !errors.As(err, &apiErr) {
				t.Fatalf("error %v is not a smithy.APIError", err)
			}
			if got := apiErr.ErrorCode(); got != tt.fault.Code {
				t.Errorf("ErrorCode() = %q, want %q (error %v)", got, tt.fault.Code, err)
			}
			var respErr *awshttp.ResponseError
			if !errors.As(err, &respErr) || respErr.HTTPStatusCode() != tt.status {
				t.Errorf("error %v: want HTTP status %d", err, tt.status)
			}
			if got := retry.NewStandard().IsErrorRetryable(err); got != tt.retryable {
				t.Errorf("retryable = %v, want %v", got, tt.retryable)
			}
			want := []mototest.Request{{Service: tt.service, Action: tt.action, Injected: tt.fault.Code}}
			if diff := cmp.Diff(want, f.Calls(tt.action), cmp.Comparer(func(a, b mototest.Request) bool {
				return a.Service == b.Service && a.Action == b.Action && a.Injected == b.Injected
			})); diff != "" {
				t.Errorf("recorded (-want +got):\n%s", diff)
			}
			// The fault was for the first call only: the next one reaches moto.
			if err := tt.call(t.Context(), c); errors.As(err, &apiErr) && apiErr.ErrorCode() == tt.fault.Code {
				t.Errorf("second call failed with the injected fault again: %v", err)
			}
		})
	}
}

// TestFaultsAccessKey fails the calls signed with one access key only, as AWS rejects revoked
// keys while others keep working (moto takes any).
func TestFaultsAccessKey(t *testing.T) {
	f, c := setup(t)
	ctx := t.Context()
	f.Fail(mototest.Rule{AccessKey: "AKIDREVOKED", Fault: mototest.InvalidClientTokenId(), Rate: 1})
	if _, err := c.elb.DescribeLoadBalancers(ctx, &elb.DescribeLoadBalancersInput{}); err != nil {
		t.Fatalf("a call signed with other keys failed: %v", err)
	}
	cfg, err := mototest.Config(ctx, f.URL())
	if err != nil {
		t.Fatal(err)
	}
	cfg.Credentials = credentials.NewStaticCredentialsProvider("AKIDREVOKED", "x", "")
	_, err = ec2.NewFromConfig(cfg).DescribeVpcs(ctx, &ec2.DescribeVpcsInput{})
	if apiErr, ok := errors.AsType[smithy.APIError](err); !ok || apiErr.ErrorCode() != "InvalidClientTokenId" {
		t.Fatalf("a call signed with the revoked key: %v, want InvalidClientTokenId", err)
	}
	want := []mototest.Request{{Service: "elasticloadbalancing", AccessKey: "testing"}, {Service: "ec2", AccessKey: "AKIDREVOKED", Injected: "InvalidClientTokenId"}}
	got := make([]mototest.Request, 0, 2)
	f.Count(func(r mototest.Request) bool {
		got = append(got, mototest.Request{Service: r.Service, AccessKey: r.AccessKey, Injected: r.Injected})
		return true
	})
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("recorded (-want +got):\n%s", diff)
	}
}

// TestFaultsFirstN fails the first calls of one action only, and shows the SDK's retryer getting
// through them.
func TestFaultsFirstN(t *testing.T) {
	f, c := setup(t)
	ctx := t.Context()
	f.Fail(mototest.Rule{Actions: []string{"DescribeLoadBalancers"}, Fault: mototest.Throttling(), First: 2})
	var got []string
	for range 3 {
		_, err := c.elb.DescribeLoadBalancers(ctx, &elb.DescribeLoadBalancersInput{})
		got = append(got, errorCode(err))
	}
	if _, err := c.elb.DescribeTargetGroups(ctx, &elb.DescribeTargetGroupsInput{}); err != nil {
		t.Errorf("another action failed: %v", err)
	}
	// DescribeTags of EC2 only: ELBv2's passes.
	f.Fail(mototest.Rule{Service: "ec2", Actions: []string{"DescribeTags"}, Fault: mototest.RequestLimitExceeded(), First: 1})
	if _, err := c.elb.DescribeTags(ctx, &elb.DescribeTagsInput{ResourceArns: []string{"arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer/app/x/1"}}); errorCode(err) == "RequestLimitExceeded" {
		t.Errorf("ELBv2 DescribeTags got the EC2 fault: %v", err)
	}
	_, err := c.ec2.DescribeTags(ctx, &ec2.DescribeTagsInput{})
	got = append(got, errorCode(err))
	if diff := cmp.Diff([]string{"Throttling", "Throttling", "", "RequestLimitExceeded"}, got); diff != "" {
		t.Errorf("codes of the calls (-want +got):\n%s", diff)
	}

	f.Reset()
	f.Fail(mototest.Rule{Actions: []string{"DescribeLoadBalancers"}, Fault: mototest.Throttling(), First: 2})
	cfg, err := mototest.Config(ctx, f.URL())
	if err != nil {
		t.Fatal(err)
	}
	cfg.RetryMaxAttempts = 0 // Config's single attempt would override the retryer's
	cfg.Retryer = func() aws.Retryer {
		return retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = 3
			o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return time.Millisecond, nil })
		})
	}
	if _, err := elb.NewFromConfig(cfg).DescribeLoadBalancers(ctx, &elb.DescribeLoadBalancersInput{}); err != nil {
		t.Fatalf("with 3 attempts: %v", err)
	}
	if n := f.Count(nil); n != 3 {
		t.Errorf("%d attempts recorded, want 3", n)
	}
}

func errorCode(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode()
	}
	if err != nil {
		return err.Error()
	}
	return ""
}

// TestFaultsRate checks that a seeded 30% fault rate fails about 30% of the calls, and the same
// ones again with the same seed.
func TestFaultsRate(t *testing.T) {
	f, c := setup(t)
	run := func() []bool {
		f.Reset()
		f.Seed(42)
		f.Fail(mototest.Rule{Fault: mototest.ServerError(http.StatusServiceUnavailable), Rate: 0.3})
		var failed []bool
		for range 60 {
			_, err := c.elb.DescribeTargetGroups(t.Context(), &elb.DescribeTargetGroupsInput{})
			failed = append(failed, err != nil)
		}
		return failed
	}
	first := run()
	n := 0
	for _, failed := range first {
		if failed {
			n++
		}
	}
	if n < 9 || n > 27 {
		t.Errorf("%d of 60 calls failed at a 30%% rate", n)
	}
	if injected := f.Count(func(r mototest.Request) bool { return r.Injected != "" }); injected != n {
		t.Errorf("%d injected faults recorded, %d calls failed", injected, n)
	}
	if diff := cmp.Diff(first, run()); diff != "" {
		t.Errorf("the same seed failed other calls (-first +second):\n%s", diff)
	}
}

// TestFaultsRecord checks what the shim records: an NLB's EIP allocation (which moto's response
// drops), the JSON services' actions, and the mutating/read split.
func TestFaultsRecord(t *testing.T) {
	f, c := setup(t)
	ctx := t.Context()
	vpc, err := c.ec2.CreateVpc(ctx, &ec2.CreateVpcInput{CidrBlock: aws.String("10.1.0.0/16")})
	if err != nil {
		t.Fatal(err)
	}
	subnet, err := c.ec2.CreateSubnet(ctx, &ec2.CreateSubnetInput{VpcId: vpc.Vpc.VpcId, CidrBlock: aws.String("10.1.1.0/24"), AvailabilityZone: aws.String("us-east-1a")})
	if err != nil {
		t.Fatal(err)
	}
	eip, err := c.ec2.AllocateAddress(ctx, &ec2.AllocateAddressInput{Domain: ec2types.DomainTypeVpc})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.elb.CreateLoadBalancer(ctx, &elb.CreateLoadBalancerInput{
		Name:           aws.String("nlb"),
		Type:           elbtypes.LoadBalancerTypeEnumNetwork,
		SubnetMappings: []elbtypes.SubnetMapping{{SubnetId: subnet.Subnet.SubnetId, AllocationId: eip.AllocationId}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.elb.DescribeLoadBalancers(ctx, &elb.DescribeLoadBalancersInput{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.acm.ListCertificates(ctx, &acm.ListCertificatesInput{}); err != nil {
		t.Fatal(err)
	}

	creates := f.Calls("CreateLoadBalancer")
	if len(creates) != 1 {
		t.Fatalf("%d CreateLoadBalancer calls recorded, want 1", len(creates))
	}
	form := creates[0].Form
	got := [3]string{creates[0].Service, form.Get("SubnetMappings.member.1.SubnetId"), form.Get("SubnetMappings.member.1.AllocationId")}
	want := [3]string{"elasticloadbalancing", *subnet.Subnet.SubnetId, *eip.AllocationId}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("CreateLoadBalancer service, subnet, allocation (-want +got):\n%s", diff)
	}
	if list := f.Calls("ListCertificates"); len(list) != 1 || list[0].Service != "acm" || list[0].Form != nil {
		t.Errorf("ListCertificates recorded as %+v, want one acm call without a form", list)
	}
	mutating, reads := f.Counts()
	if diff := cmp.Diff([2]int{4, 2}, [2]int{mutating, reads}); diff != "" {
		t.Errorf("mutating, reads (-want +got):\n%s", diff)
	}
	if n := f.Count(func(r mototest.Request) bool { return r.Service == "ec2" }); n != 3 {
		t.Errorf("%d ec2 calls, want 3", n)
	}
}

// TestFaultsConcurrent fails exactly First calls of many concurrent ones and records them all.
func TestFaultsConcurrent(t *testing.T) {
	f, c := setup(t)
	f.Fail(mototest.Rule{Actions: []string{"DescribeLoadBalancers"}, Fault: mototest.Throttling(), First: 15})
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		failed int
	)
	for range 6 {
		wg.Go(func() {
			for range 10 {
				if _, err := c.elb.DescribeLoadBalancers(t.Context(), &elb.DescribeLoadBalancersInput{}); err != nil {
					mu.Lock()
					failed++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if diff := cmp.Diff([2]int{15, 60}, [2]int{failed, f.Count(nil)}); diff != "" {
		t.Errorf("failed, recorded (-want +got):\n%s", diff)
	}
}

// TestFaultsApplied checks that an Applied fault reaches moto first: the caller gets the error,
// and the resource exists all the same.
func TestFaultsApplied(t *testing.T) {
	f, c := setup(t)
	ctx := t.Context()
	f.Fail(mototest.Rule{Actions: []string{"CreateSecurityGroup"}, Fault: mototest.ServerError(http.StatusInternalServerError), First: 1, Applied: true})
	f.Fail(mototest.Rule{Actions: []string{"CreateSecurityGroup"}, Fault: mototest.ServerError(http.StatusInternalServerError), First: 1})
	for _, name := range []string{"applied", "refused", "passed"} {
		_, err := c.ec2.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{GroupName: aws.String(name), Description: aws.String(name)})
		if want := name == "passed"; (err == nil) != want {
			t.Errorf("CreateSecurityGroup %s: %v", name, err)
		}
	}
	out, err := c.ec2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: []ec2types.Filter{
		{Name: aws.String("group-name"), Values: []string{"applied", "refused", "passed"}}}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, g := range out.SecurityGroups {
		got = append(got, aws.ToString(g.GroupName))
	}
	slices.Sort(got)
	if diff := cmp.Diff([]string{"applied", "passed"}, got); diff != "" {
		t.Errorf("security groups in moto (-want +got):\n%s", diff)
	}
}
