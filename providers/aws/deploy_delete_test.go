package aws

import (
	"errors"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/google/go-cmp/cmp"
)

// leftovers counts what carries the fleet's tags, by kind (load balancers, target groups,
// security groups, certificates), and the listeners left on any load balancer of the test's VPC.
func (e *env) leftovers(fleet string) map[string]int {
	e.t.Helper()
	d := e.other(fleet)
	obs, err := d.observe(e.ctx, "", false)
	if err != nil {
		e.t.Fatal(err)
	}
	n := map[string]int{"lb": len(obs.lbs), "tg": len(obs.tgs), "sg": len(obs.sgs), "cert": len(obs.certs)}
	// listeners and rules die with their load balancer; check none is left on any LB of the VPC
	lbs, err := e.elb.DescribeLoadBalancers(e.ctx, &elbv2.DescribeLoadBalancersInput{})
	if err != nil {
		e.t.Fatal(err)
	}
	for _, lb := range lbs.LoadBalancers {
		if aws.ToString(lb.VpcId) != e.vpc {
			continue
		}
		ls, err := e.elb.DescribeListeners(e.ctx, &elbv2.DescribeListenersInput{LoadBalancerArn: lb.LoadBalancerArn})
		if err != nil {
			e.t.Fatal(err)
		}
		n["listener"] += len(ls.Listeners)
	}
	for k, v := range n {
		if v == 0 {
			delete(n, k)
		}
	}
	return n
}

func TestDelete(t *testing.T) {
	e := newEnv(t)
	s := e.albStack(selfSigned(t, "www.example.com", 1))
	e.deploy(s)
	if got := e.leftovers(e.fleet); got["lb"] != 1 || got["tg"] != 2 || got["sg"] != 1 || got["cert"] != 1 || got["listener"] != 2 {
		t.Fatalf("after Deploy: %v", got)
	}
	e.rec.take()
	if err := e.d.Delete(e.ctx, s.GatewayID); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	want := []string{"DeleteLoadBalancer", "DeleteTargetGroup", "DeleteTargetGroup", "DeleteCertificate", "DeleteSecurityGroup"}
	if diff := cmp.Diff(want, mutating(e.rec.take())); diff != "" {
		t.Errorf("Delete calls (-want +got):\n%s", diff)
	}
	if got := e.leftovers(e.fleet); len(got) != 0 {
		t.Errorf("left after Delete: %v", got)
	}
	if err := e.d.Delete(e.ctx, s.GatewayID); err != nil {
		t.Errorf("second Delete: %v", err)
	}
	if ops := mutating(e.rec.take()); len(ops) != 0 {
		t.Errorf("second Delete made %v", ops)
	}
}

// TestFleets: two fleets in one account, each with a gateway of the same key: neither lists,
// changes or deletes the other's.
func TestFleets(t *testing.T) {
	e := newEnv(t)
	other := e.other(e.fleet + "-b")
	a := e.albStack(selfSigned(t, "www.example.com", 1))
	b := e.albStack(selfSigned(t, "www.example.com", 2))
	b.LoadBalancer.Name, b.SecurityGroup.Name = e.prefix+"-alb-b", e.prefix+"-sg-b"
	for i := range b.TargetGroups {
		b.TargetGroups[i].Name += "-b"
	}
	e.deploy(a)
	if _, err := other.Deploy(e.ctx, b); err != nil {
		t.Fatal(err)
	}
	e.rec.take()
	e.deploy(a)
	if ops := mutating(e.rec.take()); len(ops) != 0 {
		t.Errorf("fleet a's Deploy touched something after fleet b deployed: %v", ops)
	}
	for _, d := range []*deployer{e.d, other} {
		owned, err := d.List(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := []Owned{{Gateway: a.Gateway, GatewayID: a.GatewayID, Clusters: []string{"c1", "c2"}}}
		if diff := cmp.Diff(want, owned); diff != "" {
			t.Errorf("List of %s (-want +got):\n%s", d.fleet, diff)
		}
	}
	if err := e.d.Delete(e.ctx, a.GatewayID); err != nil {
		t.Fatal(err)
	}
	if got := e.leftovers(e.fleet); len(got) != 1 || got["listener"] != 2 {
		t.Errorf("fleet a left %v, want only fleet b's 2 listeners on b's LB", got)
	}
	if got := e.leftovers(other.fleet); got["lb"] != 1 || got["tg"] != 2 || got["sg"] != 1 || got["cert"] != 1 {
		t.Errorf("fleet b has %v after fleet a's Delete, want all of it", got)
	}
	if err := other.Delete(e.ctx, b.GatewayID); err != nil {
		t.Fatal(err)
	}
	if got := e.leftovers(other.fleet); len(got) != 0 {
		t.Errorf("fleet b left %v", got)
	}
}

func TestDeletionProtection(t *testing.T) {
	e := newEnv(t)
	s := e.albStack(selfSigned(t, "www.example.com", 1))
	s.LoadBalancer.Attributes["deletion_protection.enabled"] = "true"
	dep := e.deploy(s)

	// a replacement is refused before any call, even for the parts that could change
	s.LoadBalancer.Scheme = "internal"
	s.Rules[0].Action.Forward[0].Weight = 1
	e.rec.take()
	_, err := e.d.Deploy(e.ctx, s)
	var refused *ReplacementRefusedError
	if !errors.As(err, &refused) || !slices.Equal(refused.Changes, []string{"scheme internet-facing→internal"}) {
		t.Errorf("Deploy of a new scheme under protection: %v, want *ReplacementRefusedError naming the scheme", err)
	}
	if ops := mutating(e.rec.take()); len(ops) != 0 {
		t.Errorf("refused Deploy made %v", ops)
	}
	s.LoadBalancer.Scheme = "internet-facing"
	s.Rules[0].Action.Forward[0].Weight = 80

	// protection is never turned off by fleetgate
	s.LoadBalancer.Attributes["deletion_protection.enabled"] = "false"
	e.deploy(s)
	if ops := mutating(e.rec.take()); len(ops) != 0 {
		t.Errorf("Deploy asking protection off made %v, want none", ops)
	}

	// Delete keeps the LB and what it uses, deletes the rest, and says why
	stale := e.albStack(selfSigned(t, "www.example.com", 1)).TargetGroups[1]
	stale.ID, stale.Name = "tg/stale", e.prefix+"-stale"
	s.TargetGroups = append(s.TargetGroups, stale)
	e.deploy(s)
	e.rec.take()
	err = e.d.Delete(e.ctx, s.GatewayID)
	var protected *DeletionProtectedError
	if !errors.As(err, &protected) || protected.LoadBalancer != s.LoadBalancer.Name {
		t.Errorf("Delete: %v, want *DeletionProtectedError for %s", err, s.LoadBalancer.Name)
	}
	if diff := cmp.Diff([]string{"DeleteTargetGroup"}, mutating(e.rec.take())); diff != "" {
		t.Errorf("Delete under protection (-want +got):\n%s", diff)
	}
	if got := e.leftovers(e.fleet); got["lb"] != 1 || got["tg"] != 2 || got["sg"] != 1 || got["cert"] != 1 || got["listener"] != 2 {
		t.Errorf("after Delete under protection: %v, want the LB and all it uses", got)
	}
	if again := e.deploy(s); again.ARN != dep.ARN {
		t.Errorf("load balancer changed: %s, was %s", again.ARN, dep.ARN)
	}
}

// TestDeleteBusy: a target group refused as in use right after its load balancer went is
// retried; refused for good, Delete returns the error and the next Delete finishes.
func TestDeleteBusy(t *testing.T) {
	e := newEnv(t)
	s := e.albStack(selfSigned(t, "www.example.com", 1))
	e.deploy(s)
	busy := newDeployer(&busyELB{elbAPI: e.elb, busy: 1}, e.ec2, e.acm, e.fleet, e.d.log)
	if err := busy.Delete(e.ctx, s.GatewayID); err != nil {
		t.Fatalf("Delete with one ResourceInUse: %v", err)
	}
	if got := e.leftovers(e.fleet); len(got) != 0 {
		t.Errorf("left: %v", got)
	}

	e.deploy(s)
	stuck := newDeployer(&busyELB{elbAPI: e.elb, busy: 1000}, e.ec2, e.acm, e.fleet, e.d.log)
	if err := stuck.Delete(e.ctx, s.GatewayID); !hasCode(err, "ResourceInUse") {
		t.Fatalf("Delete with target groups in use for good: %v, want ResourceInUse", err)
	}
	if got := e.leftovers(e.fleet); got["lb"] != 0 || got["tg"] != 2 || got["cert"] != 0 || got["sg"] != 0 {
		t.Errorf("after the failed Delete: %v, want only the 2 target groups", got)
	}
	if err := e.d.Delete(e.ctx, s.GatewayID); err != nil {
		t.Fatal(err)
	}
	if got := e.leftovers(e.fleet); len(got) != 0 {
		t.Errorf("left after the second Delete: %v", got)
	}
}
