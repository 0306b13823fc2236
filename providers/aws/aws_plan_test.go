package aws

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/providers"
	"github.com/fleetgate/fleetgate/providers/aws/mototest"
)

// TestProviderPlan: Plan lists the creates of a new gateway without a mutating call, the calls of a
// change once it exists, nothing once in sync, and an error for a model it cannot build.
func TestProviderPlan(t *testing.T) {
	m := mototest.Require(t, moto)
	shim := mototest.NewFaults(m.URL)
	t.Cleanup(shim.Close)
	vpc := motoVPC(t, m.URL)
	fleet := "plan-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	p := newTestProvider(t, shim.URL(), fleet)
	ctx := t.Context()
	alb := json.RawMessage(`{"loadBalancerType":"application","vpc":"` + vpc + `"}`)
	lb := httpModel("plan", alb, nil, nil, "/a")
	changed := httpModel("plan", alb, nil, nil, "/a", "/b")

	ops := func(calls []Call) []string {
		var out []string
		for _, c := range calls {
			out = append(out, c.Operation)
		}
		return out
	}
	plan := func(lb *providers.LoadBalancer) []string {
		t.Helper()
		before, _ := shim.Counts()
		calls, err := p.Plan(ctx, lb)
		if err != nil {
			t.Fatal(err)
		}
		if after, _ := shim.Counts(); after != before {
			t.Errorf("Plan made %d mutating calls", after-before)
		}
		return ops(calls)
	}

	created := plan(lb)
	for _, want := range []string{"CreateSecurityGroup", "CreateTargetGroup", "CreateLoadBalancer", "CreateListener", "CreateRule", "RegisterTargets"} {
		if !slices.Contains(created, want) {
			t.Errorf("plan of a new gateway %v: no %s", created, want)
		}
	}
	if got := inventory(t, m.URL, fleet); len(got) != 0 {
		t.Errorf("Plan left resources: %v", got)
	}

	// A dry-run annotation changes nothing to Plan: it is the full diff either way.
	dry := httpModel("plan", alb, nil, nil, "/a")
	dry.Annotations = map[string]string{AnnotationDryRun: "true"}
	if got := plan(dry); !slices.Equal(got, created) {
		t.Errorf("plan of a dry-run gateway %v, want %v", got, created)
	}

	if _, err := p.Ensure(ctx, lb); err != nil {
		t.Fatal(err)
	}
	if got := plan(lb); len(got) != 0 {
		t.Errorf("plan of a deployed gateway: %v, want none (in sync)", got)
	}
	if got := plan(changed); !slices.Contains(got, "CreateRule") || slices.Contains(got, "CreateLoadBalancer") {
		t.Errorf("plan of a new route: %v, want a CreateRule and no new load balancer", got)
	}

	bad := httpModel("plan", json.RawMessage(`{"loadBalancerType":"application","proxyProtocolV2":true}`), nil, nil)
	if _, err := p.Plan(ctx, bad); err == nil || !strings.Contains(err.Error(), "proxyProtocolV2") {
		t.Errorf("plan of invalid options: %v, want an error naming proxyProtocolV2", err)
	}
	if err := p.Delete(ctx, lb); err != nil {
		t.Fatal(err)
	}
}
