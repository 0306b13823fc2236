package integration

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"

	"github.com/fleetgate/fleetgate/providers/aws/mototest"
	"github.com/fleetgate/fleetgate/tests/testbed"
)

// TestPlanCommand runs the built `fleetgate plan` against a real API server holding a Gateway of an
// ALB class on moto (through the fault shim, which counts calls): it lists the creates of the
// whole stack, and moto holds no load balancer and has received no mutating call afterwards.
// --gateway selects one Gateway; an unknown one is an error.
func TestPlanCommand(t *testing.T) {
	c := testbed.ForTest(t, "plan")[0]
	moto := planMoto(t)
	shim := mototest.NewFaults(moto.URL)
	t.Cleanup(shim.Close)
	ctx := t.Context()
	vpc, err := testbed.MotoVPC(ctx, moto.URL)
	must(t, err)
	objs := testbed.AWSClass("aws-alb", shim.URL(), vpc)
	objs = append(objs, testbed.Published("default", "web", "10.0.1.10", 8080)...)
	objs = append(objs, testbed.HTTPGateway("default", "web", "aws-alb", "web.example.com", "web")...)
	objs = append(objs, testbed.HTTPGateway("default", "api", "aws-alb", "api.example.com", "web")...)
	must(t, testbed.CreateAll(ctx, c.Client, objs...))
	bin, err := testbed.BuildOperator(t.TempDir())
	must(t, err)

	tests := []struct {
		name     string
		args     []string
		want     []string // substrings of stdout
		wantNot  []string
		wantFail bool
	}{
		{name: "every gateway", want: []string{"hub/default/web (class aws-alb):", "hub/default/api (class aws-alb):",
			"CreateSecurityGroup", "CreateTargetGroup", "CreateLoadBalancer", "CreateListener", "CreateRule", "RegisterTargets"}},
		{name: "one gateway", args: []string{"--gateway", "default/api"},
			want: []string{"hub/default/api (class aws-alb):", "CreateLoadBalancer"}, wantNot: []string{"hub/default/web"}},
		{name: "unknown gateway", args: []string{"--gateway", "default/none"}, wantFail: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"plan", "--kubeconfig", c.KubeconfigPath, "--fleet-id", "plan-test"}, tt.args...)
			cmd := exec.CommandContext(ctx, bin, args...)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			t.Logf("fleetgate %s:\n%s", strings.Join(args, " "), out)
			if (err != nil) != tt.wantFail {
				t.Fatalf("fleetgate plan: %v (want failure %v)\nstdout:\n%s\nstderr:\n%s", err, tt.wantFail, out, stderr.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("stdout has no %q:\n%s", w, out)
				}
			}
			for _, w := range tt.wantNot {
				if strings.Contains(string(out), w) {
					t.Errorf("stdout has %q:\n%s", w, out)
				}
			}
		})
	}

	if mutating, reads := shim.Counts(); mutating != 0 || reads == 0 {
		t.Errorf("the plans made %d mutating and %d read calls, want 0 mutating and some reads", mutating, reads)
	}
	cfg, err := mototest.Config(ctx, moto.URL)
	must(t, err)
	lbs, err := elbv2.NewFromConfig(cfg).DescribeLoadBalancers(ctx, &elbv2.DescribeLoadBalancersInput{})
	must(t, err)
	if len(lbs.LoadBalancers) != 0 {
		t.Errorf("moto holds %d load balancers after the plans, want 0", len(lbs.LoadBalancers))
	}
}

// planMoto starts a moto server for the test; without moto_server the test skips, except in CI.
func planMoto(t *testing.T) *mototest.Server {
	t.Helper()
	s, err := mototest.Start()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skipf("%v", err)
	}
	t.Cleanup(s.Stop)
	return s
}
