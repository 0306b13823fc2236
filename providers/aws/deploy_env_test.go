package aws

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"math/big"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/acm"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/aws/smithy-go/middleware"
	"github.com/go-logr/logr/testr"

	"github.com/fleetgate/fleetgate/providers/aws/mototest"
)

// callRecorder sees every call the real SDK clients make (an initialize middleware), with its input,
// so tests count mutating calls and read what was sent where moto drops it.
type callRecorder struct {
	mu    sync.Mutex
	calls []sdkCall
}

type sdkCall struct {
	Operation string
	Input     any
}

func (r *callRecorder) attach(cfg *aws.Config) {
	cfg.APIOptions = append(cfg.APIOptions, func(s *middleware.Stack) error {
		return s.Initialize.Add(middleware.InitializeMiddlewareFunc("fleetgate-record",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				r.mu.Lock()
				r.calls = append(r.calls, sdkCall{Operation: awsmiddleware.GetOperationName(ctx), Input: in.Parameters})
				r.mu.Unlock()
				return next.HandleInitialize(ctx, in)
			}), middleware.After)
	})
}

// take returns the calls sdkCall since the last take and forgets them.
func (r *callRecorder) take() []sdkCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.calls
	r.calls = nil
	return c
}

// mutating are the operations of calls that change something.
func mutating(calls []sdkCall) []string {
	var ops []string
	for _, c := range calls {
		if !strings.HasPrefix(c.Operation, "Describe") && !strings.HasPrefix(c.Operation, "List") {
			ops = append(ops, c.Operation)
		}
	}
	return ops
}

func operations(calls []Call) []string {
	ops := make([]string, len(calls))
	for i, c := range calls {
		ops[i] = c.Operation
	}
	return ops
}

// env is one test's corner of moto: its own fleet, VPC and two subnets, so tests run in parallel.
type env struct {
	t       *testing.T
	ctx     context.Context
	rec     *callRecorder
	elb     *elbv2.Client
	ec2     *ec2.Client
	acm     *acm.Client
	d       *deployer
	fleet   string
	prefix  string // for names, unique per test
	vpc     string
	subnets []string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	mototest.Require(t, moto)
	t.Parallel()
	ctx := t.Context()
	cfg, err := mototest.Config(ctx, moto.URL)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, ctx: ctx, rec: &callRecorder{}}
	e.rec.attach(&cfg)
	e.elb, e.ec2, e.acm = elbv2.NewFromConfig(cfg), ec2.NewFromConfig(cfg), acm.NewFromConfig(cfg)
	// random, so that a test run again on the same server (-count) meets nothing of its last run
	e.prefix = "t" + strings.ToLower(rand.Text()[:8])
	e.fleet = "fleet-" + e.prefix
	e.d = newDeployer(e.elb, e.ec2, e.acm, e.fleet, testr.New(t))
	vpc, err := e.ec2.CreateVpc(ctx, &ec2.CreateVpcInput{CidrBlock: aws.String("10.0.0.0/16")})
	if err != nil {
		t.Fatal(err)
	}
	e.vpc = aws.ToString(vpc.Vpc.VpcId)
	for i, az := range []string{"us-east-1a", "us-east-1b"} {
		sn, err := e.ec2.CreateSubnet(ctx, &ec2.CreateSubnetInput{VpcId: &e.vpc, AvailabilityZone: aws.String(az), CidrBlock: aws.String([]string{"10.0.1.0/24", "10.0.2.0/24"}[i])})
		if err != nil {
			t.Fatal(err)
		}
		e.subnets = append(e.subnets, aws.ToString(sn.Subnet.SubnetId))
	}
	e.rec.take()
	return e
}

// other is a second deployer on the same account for another fleet.
func (e *env) other(fleet string) *deployer {
	return newDeployer(e.elb, e.ec2, e.acm, fleet, testr.New(e.t))
}

func (e *env) deploy(s *Stack) Deployed {
	e.t.Helper()
	dep, err := e.d.Deploy(e.ctx, s)
	if err != nil {
		e.t.Fatalf("Deploy: %v", err)
	}
	return dep
}

func (e *env) eip() (allocation, ip string) {
	e.t.Helper()
	out, err := e.ec2.AllocateAddress(e.ctx, &ec2.AllocateAddressInput{Domain: ec2types.DomainTypeVpc})
	if err != nil {
		e.t.Fatal(err)
	}
	return aws.ToString(out.AllocationId), aws.ToString(out.PublicIp)
}

// selfSigned makes a certificate for host as ACM imports it.
func selfSigned(t testing.TB, host string, serial int64) Certificate {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: host}, DNSNames: []string{host},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c := Certificate{
		ID:      "cert/" + host,
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}),
	}
	sum := sha256.Sum256(append(c.CertPEM, c.KeyPEM...))
	c.Fingerprint = hex.EncodeToString(sum[:8])
	return c
}

func (e *env) lbARN(name string) string {
	e.t.Helper()
	out, err := e.elb.DescribeLoadBalancers(e.ctx, &elbv2.DescribeLoadBalancersInput{Names: []string{name}})
	if err != nil {
		e.t.Fatal(err)
	}
	return aws.ToString(out.LoadBalancers[0].LoadBalancerArn)
}
