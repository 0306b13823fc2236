package aws

import (
	"context"
	"errors"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/google/go-cmp/cmp"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/providers"
	"github.com/fleetgate/fleetgate/providers/aws/mototest"
)

// TestAccountsSecretCredentials: static keys from a Secret sign the calls; the clients are shared
// until the Secret changes, and then made again with the new keys but the same rate limiter.
func TestAccountsSecretCredentials(t *testing.T) {
	srv := mototest.Require(t, moto)
	t.Parallel()
	ctx := motoContext(t)
	var mu sync.Mutex
	secret := map[string][]byte{"access-key-id": []byte("AKIDFIRST"), "secret-access-key": []byte("first-secret")}
	rec := &recorder{}
	a := testAccounts(accountOptions{HTTPClient: rec, Secrets: func(_ context.Context, namespace, name string) (map[string][]byte, error) {
		if namespace != "ops" || name != "aws" {
			return nil, errors.New("no such Secret")
		}
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(secret), nil
	}})
	o := motoOptions(t, srv.URL, `,"credentials":{"secretRef":{"namespace":"ops","name":"aws"}}`)
	signedWith := func(c *clients) string {
		t.Helper()
		if _, err := c.EC2.DescribeVpcs(ctx, &ec2.DescribeVpcsInput{}); err != nil {
			t.Fatalf("DescribeVpcs: %v", err)
		}
		calls := rec.find("DescribeVpcs")
		return calls[len(calls)-1].AccessKey
	}

	first, err := a.clients(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if got := signedWith(first); got != "AKIDFIRST" {
		t.Errorf("signed with %q, want the Secret's AKIDFIRST", got)
	}
	again, err := a.clients(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if again != first {
		t.Error("an unchanged Secret gave new clients")
	}

	mu.Lock()
	secret["access-key-id"] = []byte("AKIDSECOND")
	mu.Unlock()
	rotated, err := a.clients(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if rotated == first {
		t.Fatal("a rotated Secret kept the old clients")
	}
	if rotated.limiter != first.limiter {
		t.Error("a rotated Secret got a new rate limiter; it is the same account")
	}
	if got := signedWith(rotated); got != "AKIDSECOND" {
		t.Errorf("signed with %q after rotation, want AKIDSECOND", got)
	}
	if want := "Secret ops/aws in us-east-1 at " + srv.URL; rotated.Account != want {
		t.Errorf("Account = %q, want %q (never the keys)", rotated.Account, want)
	}
}

// TestAccountsSecretErrors: a Secret that cannot give keys is a CredentialsError of the account
// (CredentialsUnavailable), so that the class shows it; the message says what is wrong.
func TestAccountsSecretErrors(t *testing.T) {
	o, err := decodeOptions([]byte(`{"credentials":{"secretRef":{"namespace":"ops","name":"aws"}}}`), v1alpha1.AWSOptions{Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		secrets func(context.Context, string, string) (map[string][]byte, error)
		message string
	}{{
		name:    "no Secrets reader",
		message: "this operator reads no Secrets",
	}, {
		name: "read fails",
		secrets: func(context.Context, string, string) (map[string][]byte, error) {
			return nil, errors.New(`secrets "aws" is forbidden`)
		},
		message: `secrets "aws" is forbidden`,
	}, {
		name: "a key is missing",
		secrets: func(context.Context, string, string) (map[string][]byte, error) {
			return map[string][]byte{"access-key-id": []byte("AKID"), "secret_access_key": []byte("typo")}, nil
		},
		message: "the keys access-key-id and secret-access-key are required",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := testAccounts(accountOptions{})
			a.opts.Secrets = tc.secrets
			c, err := a.clients(t.Context(), o)
			ce, ok := errors.AsType[*providers.CredentialsError](err)
			if !ok {
				t.Fatalf("clients = %v, %v; want a CredentialsError", c, err)
			}
			want := providers.CredentialsError{Reason: providers.ReasonCredentialsUnavailable, Account: "Secret ops/aws in us-east-1",
				Operation: "reading Secret ops/aws", Message: tc.message}
			got := *ce
			got.Err = nil
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("CredentialsError (-want +got):\n%s", diff)
			}
			if wantMsg := "reading Secret ops/aws (Secret ops/aws in us-east-1): CredentialsUnavailable: " + tc.message; err.Error() != wantMsg {
				t.Errorf("error = %q, want %q", err, wantMsg)
			}
		})
	}
}

// TestAccountsRoles: web identity and assumed roles go to STS (moto's) with what the class says,
// and the calls are then signed with the role's keys.
func TestAccountsRoles(t *testing.T) {
	srv := mototest.Require(t, moto)
	token := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(token, []byte("projected-sa-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The operator's own credentials, for the cases without a Secret.
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDOPERATOR")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "operator-secret")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	secrets := func(context.Context, string, string) (map[string][]byte, error) {
		return map[string][]byte{"access-key-id": []byte("AKIDSECRET"), "secret-access-key": []byte("s")}, nil
	}
	const role = "arn:aws:iam::111122223333:role/fleetgate-lb"
	tests := []struct {
		name  string
		creds string
		// want are the STS calls, in order, each with what its body must hold and the key that
		// signed it ("" for none).
		want []stsCall
		// signer is the key that must not sign the EC2 call (the base credentials).
		notSigner string
	}{{
		name:  "operator's own credentials",
		creds: `{}`,
		want:  nil,
	}, {
		name:  "assumed role on a Secret's keys",
		creds: `{"secretRef":{"namespace":"ops","name":"aws"},"assumeRole":{"roleARN":"` + role + `","externalID":"ext-42"}}`,
		want: []stsCall{{action: "AssumeRole", signer: "AKIDSECRET",
			body: []string{"RoleArn=" + url.QueryEscape(role), "ExternalId=ext-42", "RoleSessionName=fleetgate"}}},
		notSigner: "AKIDSECRET",
	}, {
		name:  "assumed role on the operator's credentials, own session name",
		creds: `{"assumeRole":{"roleARN":"` + role + `","sessionName":"team-a"}}`,
		want: []stsCall{{action: "AssumeRole", signer: "AKIDOPERATOR",
			body: []string{"RoleArn=" + url.QueryEscape(role), "RoleSessionName=team-a"}}},
		notSigner: "AKIDOPERATOR",
	}, {
		name:  "web identity",
		creds: `{"webIdentity":{"roleARN":"` + role + `","tokenFile":"` + token + `"}}`,
		want: []stsCall{{action: "AssumeRoleWithWebIdentity", signer: "",
			body: []string{"WebIdentityToken=projected-sa-token", "RoleSessionName=fleetgate"}}},
		notSigner: "AKIDOPERATOR",
	}, {
		name:  "web identity, then a role in another account",
		creds: `{"webIdentity":{"roleARN":"` + role + `","tokenFile":"` + token + `"},"assumeRole":{"roleARN":"arn:aws:iam::444455556666:role/lb"}}`,
		want: []stsCall{
			{action: "AssumeRoleWithWebIdentity", signer: "", body: []string{"WebIdentityToken=projected-sa-token"}},
			{action: "AssumeRole", signer: "ASIA", body: []string{"RoleArn=" + url.QueryEscape("arn:aws:iam::444455556666:role/lb")}},
		},
		notSigner: "AKIDOPERATOR",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := motoContext(t)
			rec := &recorder{}
			a := testAccounts(accountOptions{HTTPClient: rec, Secrets: secrets})
			c, err := a.clients(ctx, motoOptions(t, srv.URL, `,"credentials":`+tc.creds))
			if err != nil {
				t.Fatal(err)
			}
			// Twice: the second call reuses the role's cached credentials.
			for range 2 {
				if _, err := c.EC2.DescribeVpcs(ctx, &ec2.DescribeVpcsInput{}); err != nil {
					t.Fatalf("DescribeVpcs: %v", err)
				}
			}
			var got []recordedCall
			for _, call := range rec.calls {
				if call.Action == "AssumeRole" || call.Action == "AssumeRoleWithWebIdentity" {
					got = append(got, call)
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("STS calls %+v, want %d", got, len(tc.want))
			}
			for i, want := range tc.want {
				if got[i].Action != want.action || !strings.HasPrefix(got[i].AccessKey, want.signer) || (want.signer == "") != (got[i].AccessKey == "") {
					t.Errorf("STS call %d: %s signed by %q, want %s signed by %q", i, got[i].Action, got[i].AccessKey, want.action, want.signer)
				}
				for _, b := range want.body {
					if !strings.Contains(got[i].Body, b) {
						t.Errorf("%s body %q lacks %q", want.action, got[i].Body, b)
					}
				}
				if n := counterValue(t, a.metrics.calls.WithLabelValues("STS", want.action, "")); n != 1 {
					t.Errorf("fleetgate_aws_api_calls_total{STS,%s} = %v, want 1", want.action, n)
				}
			}
			ec2Calls := rec.find("DescribeVpcs")
			signer := ec2Calls[len(ec2Calls)-1].AccessKey
			if tc.notSigner != "" && (signer == tc.notSigner || signer == "") {
				t.Errorf("DescribeVpcs signed by %q, want the role's keys", signer)
			}
			if tc.notSigner == "" && signer != "AKIDOPERATOR" {
				t.Errorf("DescribeVpcs signed by %q, want the operator's AKIDOPERATOR", signer)
			}
		})
	}
}

type stsCall struct {
	action, signer string
	body           []string
}

// TestAccountsRoleDenied: a role that cannot be assumed fails the call with STS's error code, which
// is what the Gateway's condition shows.
func TestAccountsRoleDenied(t *testing.T) {
	srv := mototest.Require(t, moto)
	t.Parallel()
	ctx := motoContext(t)
	shim := faultShim(t, srv.URL, "AssumeRole", 100, 403, `<ErrorResponse><Error><Type>Sender</Type><Code>AccessDenied</Code>`+
		`<Message>User is not authorized to perform: sts:AssumeRole</Message></Error></ErrorResponse>`)
	a := testAccounts(accountOptions{})
	o := motoOptions(t, shim, `,"credentials":{"secretRef":{"namespace":"test","name":"aws"},"assumeRole":{"roleARN":"arn:aws:iam::111122223333:role/lb"}}`)
	c, err := a.clients(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.EC2.DescribeVpcs(ctx, &ec2.DescribeVpcsInput{})
	if code := errorCode(err); code != "AccessDenied" {
		t.Fatalf("DescribeVpcs with a denied role: %v (code %q), want AccessDenied", err, code)
	}
	if n := counterValue(t, a.metrics.calls.WithLabelValues("STS", "AssumeRole", "AccessDenied")); n != 1 {
		t.Errorf("fleetgate_aws_api_calls_total{STS,AssumeRole,AccessDenied} = %v, want 1", n)
	}
}

// TestAccountsIdlePruned: the clients of an account and region nobody asked for within IdleTTL are
// dropped (with the provider's deployer of them) the next time any account is asked for; one in
// use is kept, and a dropped one comes back as new clients.
func TestAccountsIdlePruned(t *testing.T) {
	now := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	a := testAccounts(accountOptions{IdleTTL: time.Hour, Now: func() time.Time { return now }})
	p := &Provider{accounts: a, deployers: map[string]accountDeployer{}}
	ctx := context.Background()
	const endpoint = "http://127.0.0.1:1" // making clients calls nothing
	in := func(region string) v1alpha1.AWSOptions {
		return motoOptions(t, endpoint, `,"region":"`+region+`"`+testKeys)
	}
	deployed := func() []string { return slices.Sorted(maps.Keys(p.deployers)) }
	east, err := a.clients(ctx, in("us-east-1"))
	if err != nil {
		t.Fatal(err)
	}
	west, err := a.clients(ctx, in("us-west-2"))
	if err != nil {
		t.Fatal(err)
	}
	for _, region := range []string{"us-east-1", "us-west-2"} {
		if _, _, err := p.deployer(ctx, in(region)); err != nil {
			t.Fatal(err)
		}
	}
	if got := deployed(); len(got) != 2 {
		t.Fatalf("deployers %v, want two", got)
	}

	now = now.Add(40 * time.Minute)
	if again, _ := a.clients(ctx, in("us-east-1")); again != east {
		t.Fatal("clients in use within IdleTTL were replaced")
	}
	now = now.Add(30 * time.Minute) // west idle 70 min, east 30
	if again, _ := a.clients(ctx, in("us-east-1")); again != east {
		t.Fatal("clients in use within IdleTTL were replaced")
	}
	if a.current(west) || !a.current(east) {
		t.Errorf("current: west %v (idle past IdleTTL), east %v; want false, true", a.current(west), a.current(east))
	}
	if _, _, err := p.deployer(ctx, in("eu-west-1")); err != nil {
		t.Fatal(err)
	}
	want := []string{east.Account, accountKey(in("eu-west-1"))}
	slices.Sort(want)
	if diff := cmp.Diff(want, deployed()); diff != "" {
		t.Errorf("deployers (-want +got):\n%s", diff)
	}
	back, err := a.clients(ctx, in("us-west-2"))
	if err != nil {
		t.Fatal(err)
	}
	if back == west || back.limiter == west.limiter {
		t.Error("a pruned account came back with its old clients")
	}
}
