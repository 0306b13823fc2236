package aws

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetgate/fleetgate/dataplane/ir"
	"github.com/fleetgate/fleetgate/providers"
	"github.com/fleetgate/fleetgate/providers/aws/mototest"
)

// TestEnsureCredentialsErrors: through the real SDK, keys AWS rejects (InvalidClientTokenId, as
// the shim answers for them) and a denied permission (AccessDenied on CreateLoadBalancer) make
// Ensure fail with a CredentialsError naming the code and the call; a role moto's STS refuses
// (malformed ARN) names STS AssumeRole; valid keys then succeed and the status names the account.
func TestEnsureCredentialsErrors(t *testing.T) {
	m := mototest.Require(t, moto)
	shim := mototest.NewFaults(m.URL)
	t.Cleanup(shim.Close)
	vpc := motoVPC(t, m.URL)
	fleet := "creds-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	o := testOptions(shim.URL(), fleet)
	var mu sync.Mutex
	key := "AKIDREVOKED"
	o.Secrets = func(context.Context, string, string) (map[string][]byte, error) {
		mu.Lock()
		defer mu.Unlock()
		return map[string][]byte{"access-key-id": []byte(key), "secret-access-key": []byte("s")}, nil
	}
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	shim.Fail(mototest.Rule{AccessKey: "AKIDREVOKED", Fault: mototest.InvalidClientTokenId()})
	shim.Fail(mototest.Rule{Actions: []string{"CreateLoadBalancer"}, Fault: mototest.AccessDenied("elasticloadbalancing:CreateLoadBalancer")})
	account := "Secret test/aws in " + mototest.Region + " at " + shim.URL()
	nlb := json.RawMessage(`{"loadBalancerType":"network","vpc":"` + vpc + `"}`)
	lb := l4Model("creds", nlb, ir.ProtocolTCP, 7300)

	ensureFails := func(name string, lb *providers.LoadBalancer, want providers.CredentialsError) {
		t.Helper()
		st, err := p.Ensure(t.Context(), lb)
		ce, ok := errors.AsType[*providers.CredentialsError](err)
		if !ok {
			t.Fatalf("%s: Ensure = %+v, %v; want a CredentialsError", name, st, err)
		}
		got := *ce
		got.Err = nil
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: CredentialsError (-want +got):\n%s", name, diff)
		}
		if errorCode(err) != want.Code {
			t.Errorf("%s: the SDK's error is lost: code %q", name, errorCode(err))
		}
	}
	ensureFails("rejected keys", lb, providers.CredentialsError{Reason: providers.ReasonCredentialsRejected, Account: account,
		Operation: "EC2 DescribeVpcs", Code: "InvalidClientTokenId", Message: "The security token included in the request is invalid."})

	mu.Lock()
	key = "AKIDGOOD"
	mu.Unlock()
	ensureFails("denied permission", lb, providers.CredentialsError{Reason: providers.ReasonPermissionDenied, Account: account,
		Operation: "Elastic Load Balancing v2 CreateLoadBalancer", Code: "AccessDenied",
		Message: "User is not authorized to perform: elasticloadbalancing:CreateLoadBalancer"})

	role := json.RawMessage(`{"loadBalancerType":"network","vpc":"` + vpc + `","credentials":{"assumeRole":{"roleARN":"not-an-arn","sessionName":"fleetgate"}}}`)
	ensureFails("malformed role", l4Model("role", role, ir.ProtocolTCP, 7301), providers.CredentialsError{})

	shim.Reset()
	var st providers.Status
	for range 5 {
		if st, err = p.Ensure(t.Context(), lb); err != nil {
			t.Fatal(err)
		}
		if st.Ready {
			break
		}
	}
	if !st.Ready || st.Account != account {
		t.Errorf("after the fix: %+v; want ready, Account %q", st, account)
	}
	if err := p.Delete(t.Context(), lb); err != nil {
		t.Fatal(err)
	}
}
