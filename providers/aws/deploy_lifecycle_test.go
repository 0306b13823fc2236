package aws

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/acm"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/aws/smithy-go"
	"github.com/google/go-cmp/cmp"
)

func TestDeployRemovals(t *testing.T) {
	e := newEnv(t)
	s := e.albStack(selfSigned(t, "www.example.com", 1))
	e.deploy(s)
	p := e.prefix

	// rule/a is the only user of tg/b: remove both, and the HTTP listener.
	s.Rules = s.Rules[1:]
	s.TargetGroups = s.TargetGroups[:1]
	s.Listeners = s.Listeners[1:]
	s.SecurityGroup.Ingress = s.SecurityGroup.Ingress[:1]
	e.rec.take()
	e.deploy(s)
	want := []string{"RevokeSecurityGroupIngress", "DeleteRule", "DeleteListener", "DeleteTargetGroup"}
	if diff := cmp.Diff(want, mutating(e.rec.take())); diff != "" {
		t.Errorf("mutating calls (-want +got):\n%s", diff)
	}
	v := e.view(s.LoadBalancer.Name)
	if _, ok := v.TargetGroups[p+"-b"]; ok {
		t.Errorf("target group %s-b still exists", p)
	}
	if _, ok := v.Listeners[80]; ok || len(v.Listeners) != 1 {
		t.Errorf("listeners %v, want only 443", v.Listeners)
	}
	wantRules := []string{
		"443#1 method=GET,HEAD query=version:2 → redirect HTTP_302 #{protocol}://v2.example.com:#{port}",
		`443#2 host=c.example.com → fixed 503 "down"`,
	}
	if diff := cmp.Diff(wantRules, v.Rules); diff != "" {
		t.Errorf("rules (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"tcp/443 0.0.0.0/0"}, v.Ingress); diff != "" {
		t.Errorf("ingress (-want +got):\n%s", diff)
	}
}

func TestDeployCertificateRotation(t *testing.T) {
	e := newEnv(t)
	old := selfSigned(t, "www.example.com", 1)
	s := e.albStack(old)
	e.deploy(s)
	arns := e.certificates()
	if len(arns) != 1 {
		t.Fatalf("%d certificates, want 1", len(arns))
	}

	rotated := selfSigned(t, "www.example.com", 2)
	s.Certificates = []Certificate{rotated}
	e.rec.take()
	e.deploy(s)
	if diff := cmp.Diff([]string{"ImportCertificate", "AddTagsToCertificate"}, mutating(e.rec.take())); diff != "" {
		t.Errorf("mutating calls (-want +got):\n%s", diff)
	}
	if got := e.certificates(); !slices.Equal(got, arns) {
		t.Errorf("certificates after rotation %v, want the same ARN %v (re-imported in place)", got, arns)
	}
	out, err := e.acm.DescribeCertificate(e.ctx, &acm.DescribeCertificateInput{CertificateArn: &arns[0]})
	if err != nil {
		t.Fatal(err)
	}
	if serial := strings.TrimLeft(aws.ToString(out.Certificate.Serial), "0:"); serial != "2" {
		t.Errorf("serial of the imported certificate %q, want 02 (the rotated one)", serial)
	}
	e.deploy(s)
	if ops := mutating(e.rec.take()); len(ops) != 0 {
		t.Errorf("Deploy after the rotation made %v", ops)
	}

	// a second, SNI certificate is added to the listener, then removed and deleted
	extra := selfSigned(t, "api.example.com", 3)
	s.Certificates = append(s.Certificates, extra)
	s.Listeners[1].Certificates = append(s.Listeners[1].Certificates, extra.ID)
	e.deploy(s)
	if diff := cmp.Diff([]string{"ImportCertificate", "AddListenerCertificates"}, mutating(e.rec.take())); diff != "" {
		t.Errorf("adding an SNI certificate (-want +got):\n%s", diff)
	}
	if got := e.view(s.LoadBalancer.Name).Listeners[443].Certs; !slices.Equal(got, []string{"api.example.com", "www.example.com"}) {
		t.Errorf("listener certificates %v", got)
	}
	s.Certificates = s.Certificates[:1]
	s.Listeners[1].Certificates = s.Listeners[1].Certificates[:1]
	e.deploy(s)
	if diff := cmp.Diff([]string{"RemoveListenerCertificates", "DeleteCertificate"}, mutating(e.rec.take())); diff != "" {
		t.Errorf("removing the SNI certificate (-want +got):\n%s", diff)
	}
	if got := e.certificates(); !slices.Equal(got, arns) {
		t.Errorf("certificates %v, want %v", got, arns)
	}
}

// certificates are the ARNs of the test's fleet's certificates.
func (e *env) certificates() []string {
	e.t.Helper()
	out, err := e.acm.ListCertificates(e.ctx, &acm.ListCertificatesInput{})
	if err != nil {
		e.t.Fatal(err)
	}
	var arns []string
	for _, c := range out.CertificateSummaryList {
		tags, err := e.acm.ListTagsForCertificate(e.ctx, &acm.ListTagsForCertificateInput{CertificateArn: c.CertificateArn})
		if isNotFound(err) {
			continue // another test's, deleted meanwhile
		}
		if err != nil {
			e.t.Fatal(err)
		}
		for _, t := range tags.Tags {
			if aws.ToString(t.Key) == TagFleet && aws.ToString(t.Value) == e.fleet {
				arns = append(arns, aws.ToString(c.CertificateArn))
			}
		}
	}
	return arns
}

// TestDeployReplacement: without protection, a scheme change deletes and re-creates the load
// balancer, with its listeners and rules.
func TestDeployReplacement(t *testing.T) {
	e := newEnv(t)
	s := e.albStack(selfSigned(t, "www.example.com", 1))
	old := e.deploy(s)
	s.LoadBalancer.Scheme = "internal"
	e.rec.take()
	dep := e.deploy(s)
	if dep.ARN == old.ARN {
		t.Errorf("load balancer not replaced")
	}
	want := []string{"DeleteLoadBalancer", "CreateLoadBalancer", "ModifyLoadBalancerAttributes", "CreateListener", "CreateListener", "CreateRule", "CreateRule", "CreateRule"}
	if diff := cmp.Diff(want, mutating(e.rec.take())); diff != "" {
		t.Errorf("replacement calls (-want +got):\n%s", diff)
	}
	wantView := e.albView()
	wantView.LB.Scheme = "internal"
	if diff := cmp.Diff(wantView, e.view(s.LoadBalancer.Name)); diff != "" {
		t.Errorf("after replacement (-want +got):\n%s", diff)
	}
}

// goneELB answers DescribeTags of several ARNs with LoadBalancerNotFound, as AWS does when one
// of them was deleted since it was listed.
type goneELB struct{ elbAPI }

func (g goneELB) DescribeTags(ctx context.Context, in *elbv2.DescribeTagsInput, opts ...func(*elbv2.Options)) (*elbv2.DescribeTagsOutput, error) {
	if len(in.ResourceArns) > 1 {
		return nil, &smithy.GenericAPIError{Code: "LoadBalancerNotFound"}
	}
	return g.elbAPI.DescribeTags(ctx, in, opts...)
}

func TestObserveResourceGone(t *testing.T) {
	e := newEnv(t)
	s := e.albStack(selfSigned(t, "www.example.com", 1))
	e.deploy(s)
	d := newDeployer(goneELB{e.elb}, e.ec2, e.acm, e.fleet, e.d.log)
	obs, err := d.observe(e.ctx, s.GatewayID, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(obs.lbs) != 1 || len(obs.tgs) != 2 {
		t.Errorf("observed %d load balancers and %d target groups, want 1 and 2", len(obs.lbs), len(obs.tgs))
	}
}

// TestDeployTargetGroupReplaced: a port change needs a new target group; it is created under its
// new name first, the rule moves to it, then the old one goes.
func TestDeployTargetGroupReplaced(t *testing.T) {
	e := newEnv(t)
	s := e.albStack(selfSigned(t, "www.example.com", 1))
	e.deploy(s)
	s.TargetGroups[1].Port, s.TargetGroups[1].Name = 9091, e.prefix+"-b2"
	s.TargetGroups[1].Targets = []Target{{IP: "10.0.1.20", Port: 9091}}
	e.rec.take()
	e.deploy(s)
	want := []string{"CreateTargetGroup", "ModifyRule", "RegisterTargets", "DeleteTargetGroup"}
	if diff := cmp.Diff(want, mutating(e.rec.take())); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	v := e.view(s.LoadBalancer.Name)
	if _, ok := v.TargetGroups[e.prefix+"-b"]; ok {
		t.Error("the old target group is still there")
	}
	if tg := v.TargetGroups[e.prefix+"-b2"]; tg.Port != 9091 || !slices.Equal(tg.Targets, []string{"10.0.1.20:9091"}) {
		t.Errorf("new target group %+v", tg)
	}
	if want := "443#1 host=a.example.com path=/api/* x-env=prod → forward " + e.prefix + "-a=80," + e.prefix + "-b2=20"; v.Rules[0] != want {
		t.Errorf("rule %q, want %q", v.Rules[0], want)
	}
	// the same name for a replacement cannot work on AWS: say so instead of failing on a duplicate
	s.TargetGroups[1].Port = 9092
	if _, err := e.d.Deploy(e.ctx, s); err == nil || !strings.Contains(err.Error(), "same name") {
		t.Errorf("replacement under the same name: %v, want an error saying so", err)
	}
}
