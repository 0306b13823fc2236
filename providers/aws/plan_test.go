package aws

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestPlan: a plan makes no mutating call and lists the calls Deploy then makes.
func TestPlan(t *testing.T) {
	e := newEnv(t)
	s := e.albStack(selfSigned(t, "www.example.com", 1))

	plan, err := e.d.Plan(e.ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if ops := mutating(e.rec.take()); len(ops) != 0 {
		t.Fatalf("Plan made mutating calls %v", ops)
	}
	if len(plan) == 0 {
		t.Fatal("empty plan for an empty account")
	}
	dep := e.deploy(s)
	if diff := cmp.Diff(operations(plan), mutating(e.rec.take())); diff != "" {
		t.Errorf("Deploy's calls differ from the plan's (-plan +deploy):\n%s", diff)
	}
	if diff := cmp.Diff(operations(plan), operations(dep.Calls)); diff != "" {
		t.Errorf("Deploy's reported calls differ from the plan's (-plan +deploy):\n%s", diff)
	}

	// a change: no resource is new, so the plan is exactly what Deploy does, details included
	s.Rules[0].Action.Forward[0].Weight = 10
	s.Rules = s.Rules[:2]
	s.LoadBalancer.Attributes["idle_timeout.timeout_seconds"] = "30"
	s.TargetGroups[1].Targets = nil
	plan, err = e.d.Plan(e.ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if ops := mutating(e.rec.take()); len(ops) != 0 {
		t.Fatalf("Plan made mutating calls %v", ops)
	}
	want := []string{"ModifyLoadBalancerAttributes", "ModifyRule", "DeregisterTargets", "DeleteRule"}
	if diff := cmp.Diff(want, operations(plan)); diff != "" {
		t.Errorf("plan (-want +got):\n%s", diff)
	}
	dep = e.deploy(s)
	if diff := cmp.Diff(plan, dep.Calls); diff != "" {
		t.Errorf("Deploy's calls differ from the plan (-plan +deploy):\n%s", diff)
	}
	if diff := cmp.Diff(want, mutating(e.rec.take())); diff != "" {
		t.Errorf("Deploy's calls (-want +got):\n%s", diff)
	}

	// a DryRun Stack is planned, not deployed
	s.DryRun = true
	s.Rules = s.Rules[:1]
	planned := e.deploy(s)
	if ops := mutating(e.rec.take()); len(ops) != 0 {
		t.Errorf("Deploy of a DryRun stack made %v", ops)
	}
	if diff := cmp.Diff([]Call{{"DeleteRule", "rule/b", ""}}, planned.Calls, cmpopts.IgnoreFields(Call{}, "Detail")); diff != "" {
		t.Errorf("Deploy of a DryRun stack (-want +got):\n%s", diff)
	}
}

func TestCallString(t *testing.T) {
	tests := []struct {
		call Call
		want string
	}{
		{Call{"CreateRule", "listener/443 rule/ab12", "host-header=[a.example.com] → forward tg/a=1 (priority 3)"},
			"CreateRule listener/443 rule/ab12: host-header=[a.example.com] → forward tg/a=1 (priority 3)"},
		{Call{"DeleteListener", "listener/80", ""}, "DeleteListener listener/80"},
	}
	for _, tt := range tests {
		if got := tt.call.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}
