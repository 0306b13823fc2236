package aws

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/fleetgate/fleetgate/providers"
	"github.com/fleetgate/fleetgate/providers/aws/mototest"
)

// faultBound is how many times the tests call Ensure or Delete for one gateway before they give
// up, as the engine's requeue would (with backoff) until the gateway converges.
const faultBound = 30

// faultRules fail about 30% of calls. First creates whose response is lost after moto made the
// resource (a 500 the SDK retries: a duplicate unless the provider finds it); the AWS refusals
// moto never makes, on the calls that get them on AWS (not retried by the SDK); then throttling
// and 5xx on every call, together 1-0.82·0.85 ≈ 30% (retried by the SDK).
func faultRules() []mototest.Rule {
	return []mototest.Rule{
		// Each refusal at least once whatever the seed draws, then at random.
		{Actions: []string{"DeleteTargetGroup"}, Fault: mototest.ResourceInUse(), First: 1},
		{Service: "ec2", Actions: []string{"DeleteSecurityGroup"}, Fault: mototest.DependencyViolation(), First: 1},
		{Actions: []string{"DeleteLoadBalancer"}, Fault: mototest.OperationNotPermitted(), First: 1},
		{Service: "acm", Actions: []string{"DeleteCertificate"}, Fault: mototest.ResourceInUseException(), First: 1},
		{Actions: []string{"CreateSecurityGroup", "ImportCertificate", "CreateTargetGroup", "CreateLoadBalancer", "CreateListener", "CreateRule"},
			Fault: mototest.ServerError(http.StatusInternalServerError), Rate: 0.15, Applied: true},
		{Actions: []string{"DeleteTargetGroup"}, Fault: mototest.ResourceInUse(), Rate: 0.3},
		{Service: "ec2", Actions: []string{"DeleteSecurityGroup"}, Fault: mototest.DependencyViolation(), Rate: 0.3},
		{Actions: []string{"DeleteLoadBalancer"}, Fault: mototest.OperationNotPermitted(), Rate: 0.3},
		{Service: "acm", Actions: []string{"DeleteCertificate"}, Fault: mototest.ResourceInUseException(), Rate: 0.3},
		{Service: "elasticloadbalancing", Fault: mototest.Throttling(), Rate: 0.18},
		{Service: "acm", Fault: mototest.Throttling(), Rate: 0.18},
		{Service: "ec2", Fault: mototest.RequestLimitExceeded(), Rate: 0.18},
		{Fault: mototest.ServerError(http.StatusServiceUnavailable), Rate: 0.15},
	}
}

// TestFaults: behind a shim failing 30% of calls (seeded) with throttling, 5xx and the refusals
// moto never makes, Ensure, retried as the engine would, converges to what a clean run makes,
// without duplicates, with the retries in the provider's metrics; then Delete under the same
// faults leaves nothing.
func TestFaults(t *testing.T) {
	m := mototest.Require(t, moto)
	vpc := motoVPC(t, m.URL)
	cert := selfSigned(t, "kill-b.example.com", 1)
	models := killModels(vpc, cert.CertPEM, cert.KeyPEM)
	fleet := "faults-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	clean := converge(t, m.URL, fleet+"-clean", models)

	shim := mototest.NewFaults(m.URL)
	t.Cleanup(shim.Close)
	shim.Seed(30)
	for _, r := range faultRules() {
		shim.Fail(r)
	}
	o := testOptions(shim.URL(), fleet)
	reg := prometheus.NewRegistry()
	o.Registerer = reg
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	attempts := map[string]int{}
	for _, lb := range models {
		for attempts[lb.Name] = 1; ; attempts[lb.Name]++ {
			st, err := p.Ensure(t.Context(), lb)
			if err == nil && st.Ready {
				break
			}
			if attempts[lb.Name] == faultBound {
				t.Fatalf("Ensure %s under faults: not converged after %d attempts: %+v, %v", lb.Gateway, faultBound, st, err)
			}
		}
	}
	got := describeFleet(t, m.URL, fleet)
	if d := cmp.Diff(clean, got); d != "" {
		t.Errorf("under faults the account differs from a clean run's (-clean +faults):\n%s", d)
	}
	for gw, rs := range got {
		for _, r := range rs {
			if id, _, _ := strings.Cut(r, ": "); strings.Contains(id, "#") {
				t.Errorf("%s: duplicate %s", gw, r)
			}
		}
	}

	for _, lb := range models {
		for n := 1; ; n++ {
			err := p.Delete(t.Context(), lb)
			if err == nil {
				attempts[lb.Name+" delete"] = n
				break
			}
			if n == faultBound {
				t.Fatalf("Delete %s under faults: %d attempts, last: %v", lb.Gateway, faultBound, err)
			}
		}
	}
	if left := inventory(t, m.URL, fleet); len(left) > 0 {
		t.Errorf("left after Delete under faults: %v", left)
	}
	injected := map[string]int{}
	shim.Count(func(r mototest.Request) bool {
		if r.Injected != "" {
			injected[r.Injected]++
		}
		return false
	})
	retries, codes := apiMetricSums(t, reg)
	t.Logf("calls: %d, injected: %v; Ensure/Delete attempts: %v; retries: %v; final error codes: %v",
		shim.Count(nil), injected, attempts, retries, codes)
	// Every throttling or 5xx fault was either retried (a retry) or the last attempt of a call (its
	// final code): moto itself never throttles.
	retryable, finalRetryable := 0, 0.0
	for _, code := range []string{"Throttling", "RequestLimitExceeded", "ServiceUnavailable", "InternalFailure"} {
		retryable += injected[code]
		finalRetryable += codes[code]
	}
	if retries == 0 || retries+finalRetryable != float64(retryable) {
		t.Errorf("fleetgate_aws_api_retries_total = %v and %v calls failed with throttling or 5xx; want > 0 retries, and together the %d faults injected",
			retries, finalRetryable, retryable)
	}
	for _, code := range []string{"ResourceInUse", "DependencyViolation", "OperationNotPermitted", "ResourceInUseException"} {
		if injected[code] == 0 || codes[code] != float64(injected[code]) {
			t.Errorf("%s: injected %d, counted in fleetgate_aws_api_calls_total %v; want every injected one counted", code, injected[code], codes[code])
		}
	}
}

// apiMetricSums reads the provider's metrics: every retry, and the calls by final error code.
func apiMetricSums(t *testing.T, reg *prometheus.Registry) (retries float64, codes map[string]float64) {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	codes = map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			switch f.GetName() {
			case "fleetgate_aws_api_retries_total":
				retries += m.GetCounter().GetValue()
			case "fleetgate_aws_api_calls_total":
				for _, l := range m.GetLabel() {
					if l.GetName() == "code" {
						codes[l.GetValue()] += m.GetCounter().GetValue()
					}
				}
			}
		}
	}
	return retries, codes
}

// TestDeleteAtLimit: with the account at its limit of load balancers or target groups, a new
// gateway fails with AWS's error code, and Delete still removes it (what it got made before the
// limit) and an existing gateway, making no create call.
func TestDeleteAtLimit(t *testing.T) {
	m := mototest.Require(t, moto)
	vpc := motoVPC(t, m.URL)
	cert := selfSigned(t, "kill-b.example.com", 1)
	all := killModels(vpc, cert.CertPEM, cert.KeyPEM)
	for _, tc := range []struct {
		name          string
		action, limit string
		existing, new *providers.LoadBalancer
	}{
		// The new gateways get some resources before the limit: target groups before the load
		// balancer, the security group and certificate before the target groups.
		{name: "load balancers", action: "CreateLoadBalancer", limit: "TooManyLoadBalancers", existing: all[0], new: all[3]},
		{name: "target groups", action: "CreateTargetGroup", limit: "TooManyTargetGroups", existing: all[2], new: all[1]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shim := mototest.NewFaults(m.URL)
			t.Cleanup(shim.Close)
			fleet := "limit-" + strconv.FormatInt(time.Now().UnixNano(), 36)
			p, err := New(testOptions(shim.URL(), fleet))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.Ensure(t.Context(), tc.existing); err != nil {
				t.Fatalf("Ensure %s before the limit: %v", tc.existing.Gateway, err)
			}
			shim.Fail(mototest.Rule{Actions: []string{tc.action}, Rate: 1,
				Fault: mototest.Fault{Status: http.StatusBadRequest, Code: tc.limit, Message: "the account is at its limit"}})
			if _, err := p.Ensure(t.Context(), tc.new); errorCode(err) != tc.limit {
				t.Fatalf("Ensure %s at the limit: %v; want error code %s", tc.new.Gateway, err, tc.limit)
			}
			if !slices.ContainsFunc(inventory(t, m.URL, fleet), func(r resource) bool { return r.gateway == tc.new.Gateway }) {
				t.Fatalf("nothing of %s was made before the limit: the test would delete nothing of it", tc.new.Gateway)
			}
			shim.Reset()
			shim.Fail(mototest.Rule{Actions: []string{tc.action}, Rate: 1,
				Fault: mototest.Fault{Status: http.StatusBadRequest, Code: tc.limit, Message: "the account is at its limit"}})
			for _, lb := range []*providers.LoadBalancer{tc.new, tc.existing} {
				if err := p.Delete(t.Context(), lb); err != nil {
					t.Errorf("Delete %s at the limit: %v", lb.Gateway, err)
				}
			}
			if creates := shim.Count(func(r mototest.Request) bool { return strings.HasPrefix(r.Action, "Create") }); creates > 0 {
				t.Errorf("Delete made %d create calls", creates)
			}
			if left := inventory(t, m.URL, fleet); len(left) > 0 {
				t.Errorf("left after Delete at the limit: %v", left)
			}
		})
	}
}

// TestLostCreateResponse: when the response to a create is lost after AWS made the resource (the
// SDK retries the 500), the gateway still converges to one of each resource, as a clean run's.
func TestLostCreateResponse(t *testing.T) {
	m := mototest.Require(t, moto)
	vpc := motoVPC(t, m.URL)
	cert := selfSigned(t, "kill-b.example.com", 1)
	lb := killModels(vpc, cert.CertPEM, cert.KeyPEM)[1] // HTTPS ALB: every kind of resource
	base := "lost-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	clean := converge(t, m.URL, base+"-clean", []*providers.LoadBalancer{lb})
	for _, action := range []string{"CreateSecurityGroup", "ImportCertificate", "CreateTargetGroup", "CreateLoadBalancer", "CreateListener", "CreateRule"} {
		t.Run(action, func(t *testing.T) {
			shim := mototest.NewFaults(m.URL)
			t.Cleanup(shim.Close)
			shim.Fail(mototest.Rule{Actions: []string{action}, Fault: mototest.ServerError(http.StatusInternalServerError), First: 1, Applied: true})
			fleet := base + "-" + strings.ToLower(action)
			p, err := New(testOptions(shim.URL(), fleet))
			if err != nil {
				t.Fatal(err)
			}
			for n := 1; ; n++ {
				st, err := p.Ensure(t.Context(), lb)
				if err == nil && st.Ready {
					t.Logf("converged in %d Ensures, %d %s calls", n, len(shim.Calls(action)), action)
					break
				}
				if n == faultBound {
					t.Fatalf("Ensure: not converged after %d attempts: %+v, %v", n, st, err)
				}
				t.Logf("Ensure %d: %v", n, err)
			}
			if shim.Count(func(r mototest.Request) bool { return r.Injected != "" }) != 1 {
				t.Fatalf("the lost response of %s was never injected", action)
			}
			if d := cmp.Diff(clean, describeFleet(t, m.URL, fleet)); d != "" {
				t.Errorf("after a lost %s response the account differs from a clean run's (-clean +got):\n%s", action, d)
			}
			if err := p.Delete(t.Context(), lb); err != nil {
				t.Fatal(err)
			}
			if left := inventory(t, m.URL, fleet); len(left) > 0 {
				t.Errorf("left after Delete: %v", left)
			}
		})
	}
}
