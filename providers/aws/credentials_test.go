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
// Ensure fail with a CredentialsError naming the code and the call; a role STS refuses names STS
// AssumeRole under the call it was signing; valid keys then succeed and the status names the account.
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
	shim.Fail(mototest.Rule{AccessKey: "AKIDREVOKED", Fault: mototest.InvalidClientTokenId(), Rate: 1})
	shim.Fail(mototest.Rule{Actions: []string{"CreateLoadBalancer"}, Fault: mototest.AccessDenied("elasticloadbalancing:CreateLoadBalancer"), Rate: 1})
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
		Operation: "EC2 DescribeSubnets", Code: "InvalidClientTokenId", Message: "The security token included in the request is invalid."})

	mu.Lock()
	key = "AKIDGOOD"
	mu.Unlock()
	ensureFails("denied permission", lb, providers.CredentialsError{Reason: providers.ReasonPermissionDenied, Account: account,
		Operation: "Elastic Load Balancing v2 CreateLoadBalancer", Code: "AccessDenied",
		Message: "User is not authorized to perform: elasticloadbalancing:CreateLoadBalancer"})

	// moto's STS assumes any role: the shim refuses it as STS does a role that does not trust the caller.
	shim.Fail(mototest.Rule{Service: "sts", Actions: []string{"AssumeRole"}, Fault: mototest.AccessDenied("sts:AssumeRole"), Rate: 1})
	const roleARN = "arn:aws:iam::123456789012:role/untrusting"
	role := json.RawMessage(`{"loadBalancerType":"network","vpc":"` + vpc + `","credentials":{"secretRef":{"namespace":"test","name":"aws"},` +
		`"assumeRole":{"roleARN":"` + roleARN + `","sessionName":"fleetgate"}}}`)
	ensureFails("role not assumable", l4Model("role", role, ir.ProtocolTCP, 7301), providers.CredentialsError{
		Reason: providers.ReasonPermissionDenied, Account: "Secret test/aws as " + roleARN + " session fleetgate in " + mototest.Region + " at " + shim.URL(),
		Operation: "STS AssumeRole", Code: "AccessDenied", Message: "User is not authorized to perform: sts:AssumeRole"})

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
