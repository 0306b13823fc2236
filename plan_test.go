package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/fleetgate/fleetgate/providers"
	"github.com/fleetgate/fleetgate/providers/aws"
)

func TestWritePlan(t *testing.T) {
	lb := &providers.LoadBalancer{Gateway: "hub/apps/web", Class: "aws-alb"}
	tests := []struct {
		name  string
		calls []aws.Call
		err   error
		want  string
	}{
		{name: "in sync", want: "hub/apps/web (class aws-alb): in sync\n"},
		{name: "calls", calls: []aws.Call{{Operation: "CreateLoadBalancer", Resource: "lb", Detail: "fg-web"}, {Operation: "CreateListener", Resource: "listener/80"}},
			want: "hub/apps/web (class aws-alb): 2 calls would be made\n    1. CreateLoadBalancer lb: fg-web\n    2. CreateListener listener/80\n"},
		{name: "error", err: errors.New("planning hub/apps/web: AccessDenied"),
			want: "hub/apps/web (class aws-alb): no plan: planning hub/apps/web: AccessDenied\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			writePlan(&b, lb, tt.calls, tt.err)
			if b.String() != tt.want {
				t.Errorf("got\n%q\nwant\n%q", b.String(), tt.want)
			}
		})
	}
}

// TestPlanMainFlags: --help is no failure, an unknown flag is a usage error, and a kubeconfig that
// cannot be read fails before any AWS call.
func TestPlanMainFlags(t *testing.T) {
	tests := []struct {
		args       []string
		want       int
		wantStderr string
	}{
		{args: []string{"--help"}, want: 0, wantStderr: "usage: fleetgate plan"},
		{args: []string{"--no-such-flag"}, want: 2, wantStderr: "no-such-flag"},
		{args: []string{"--kubeconfig", "/nonexistent/kubeconfig"}, want: 1, wantStderr: "loading kubeconfig /nonexistent/kubeconfig"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stdout, stderr strings.Builder
			if got := planMain(tt.args, &stdout, &stderr); got != tt.want {
				t.Errorf("exit %d, want %d; stderr: %s", got, tt.want, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.wantStderr) {
				t.Errorf("stderr %q has no %q", stderr.String(), tt.wantStderr)
			}
		})
	}
}
