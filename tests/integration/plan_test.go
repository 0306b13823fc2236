package integration

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/fleetgate/fleetgate/providers/aws/mototest"
	"github.com/fleetgate/fleetgate/tests/testbed"
)

// TestPlanCommand runs the built `fleetgate plan` against a real API server holding a Gateway of an
// ALB class on moto (through the fault shim, which counts calls): it lists the creates of the
// whole stack, and moto holds no load balancer and has received no mutating call afterwards.
// --gateway selects one Gateway; an unknown one is an error. Once the operator binary has deployed
// the Gateways, plan finds them in sync: its translation and fleet are the operator's.
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

	plan := func(t *testing.T, args ...string) (string, error) {
		t.Helper()
		args = append([]string{"plan", "--kubeconfig", c.KubeconfigPath, "--fleet-id", "plan-test"}, args...)
		cmd := exec.CommandContext(ctx, bin, args...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		t.Logf("fleetgate %s:\n%s%s", strings.Join(args, " "), out, stderr.String())
		return string(out), err
	}

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
			out, err := plan(t, tt.args...)
			if (err != nil) != tt.wantFail {
				t.Fatalf("fleetgate plan: %v (want failure %v)", err, tt.wantFail)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("stdout has no %q:\n%s", w, out)
				}
			}
			for _, w := range tt.wantNot {
				if strings.Contains(out, w) {
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

	// Once the operator (same fleet) has deployed both, plan agrees with it: nothing to do.
	t.Setenv("AWS_ACCESS_KEY_ID", "testing") // the operator's own account, swept too, is moto
	t.Setenv("AWS_SECRET_ACCESS_KEY", "testing")
	op, err := testbed.StartOperator(bin, c, t.TempDir(), "--fleet-id", "plan-test", "--aws-region", mototest.Region, "--aws-endpoint", moto.URL)
	must(t, err)
	t.Cleanup(func() {
		if err := op.Stop(); err != nil {
			t.Error(err)
		}
	})
	for _, name := range []string{"web", "api"} {
		testbed.Eventually(t, 60*time.Second, func() error {
			var gw gwv1.Gateway
			if err := c.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, &gw); err != nil {
				return err
			}
			if !meta.IsStatusConditionTrue(gw.Status.Conditions, string(gwv1.GatewayConditionProgrammed)) {
				return fmt.Errorf("Gateway default/%s is not Programmed: %v", name, gw.Status.Conditions)
			}
			return nil
		})
	}
	out, err := plan(t)
	must(t, err)
	for _, want := range []string{"hub/default/api (class aws-alb): in sync\n", "hub/default/web (class aws-alb): in sync\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("after the operator deployed, stdout has no %q:\n%s", want, out)
		}
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
