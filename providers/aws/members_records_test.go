package aws

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/providers/aws/mototest"
)

// memRecords keeps the member records in memory, as the MemberClusters' annotations would (the
// real store, on an API server, is tested in tests/integration).
type memRecords struct {
	mu   sync.Mutex
	recs map[string][]v1alpha1.AWSOptions
	fail error // returned by Record
}

func (r *memRecords) Recorded(context.Context) (map[string][]v1alpha1.AWSOptions, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][]v1alpha1.AWSOptions{}
	for m, as := range r.recs {
		out[m] = slices.Clone(as)
	}
	return out, nil
}

func (r *memRecords) Record(_ context.Context, member string, account v1alpha1.AWSOptions) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail != nil {
		return r.fail
	}
	if !slices.ContainsFunc(r.recs[member], func(a v1alpha1.AWSOptions) bool { return accountKey(a) == accountKey(account) }) {
		r.recs[member] = append(r.recs[member], account)
	}
	return nil
}

func (r *memRecords) Forget(_ context.Context, member string, accounts []v1alpha1.AWSOptions) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs[member] = slices.DeleteFunc(r.recs[member], func(a v1alpha1.AWSOptions) bool {
		return slices.ContainsFunc(accounts, func(b v1alpha1.AWSOptions) bool { return accountKey(a) == accountKey(b) })
	})
	if len(r.recs[member]) == 0 {
		delete(r.recs, member)
	}
	return nil
}

// keys are the recorded accounts by member, as accountKeys.
func (r *memRecords) keys() map[string][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][]string{}
	for m, as := range r.recs {
		for _, a := range as {
			out[m] = append(out[m], accountKey(a))
		}
		slices.Sort(out[m])
	}
	return out
}

// TestMemberRulesFollowRecords: the provider records a member's account before its first rule
// there, and SweepMembers revokes what no spec names any more, from the records alone: a group
// dropped in the same account, a move to another account (the old one is forgotten), a deleted
// member whose group another member still names (kept), then the last member gone (revoked, every
// record forgotten). A record that cannot be written stops the rules before any is made.
func TestMemberRulesFollowRecords(t *testing.T) {
	m := mototest.Require(t, moto)
	t.Parallel()
	e := newMemberEnv(t, m.URL)
	xAccount, yAccount := randomAccount(t), randomAccount(t)
	xRole, xVPC, xSG1, x := e.member(xAccount, "10.5.0.0/16")
	xSG2 := e.group(x, xVPC)
	yRole, yVPC, ySG, y := e.member(yAccount, "10.6.0.0/16")
	xKey := accountKey(v1alpha1.AWSOptions{Region: mototest.Region, Endpoint: m.URL, Credentials: memberCreds(xRole)})
	yKey := accountKey(v1alpha1.AWSOptions{Region: mototest.Region, Endpoint: m.URL, Credentials: memberCreds(yRole)})

	var mu sync.Mutex
	members := map[string]v1alpha1.MemberClusterSpec{}
	setMember := func(name string, spec *v1alpha1.MemberClusterSpec) {
		mu.Lock()
		defer mu.Unlock()
		if spec == nil {
			delete(members, name)
			return
		}
		members[name] = *spec
	}
	spec := func(role, vpc string, groups ...string) *v1alpha1.MemberClusterSpec {
		return &v1alpha1.MemberClusterSpec{Region: mototest.Region, Provider: v1alpha1.ProviderHints{VPC: vpc,
			AWS: &v1alpha1.MemberAWS{Credentials: memberCreds(role), SecurityGroups: groups}}}
	}
	recs := &memRecords{recs: map[string][]v1alpha1.AWSOptions{}}
	o := testOptions(m.URL, e.fleet)
	o.Namespace, o.HTTPClient, o.Records = "test", e.rec, recs
	o.Members = func(context.Context) (map[string]v1alpha1.MemberClusterSpec, error) {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(members), nil
	}
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	sweep := func() {
		t.Helper()
		if err := p.SweepMembers(e.ctx); err != nil {
			t.Fatalf("SweepMembers: %v", err)
		}
	}
	owned := " owned by hub/apps/records (fleetgate load balancer of gateway hub/apps/records)"
	rules := []string{"tcp/8080-8080 from 10.0.1.0/24" + owned, "tcp/8080-8080 from 10.0.2.0/24" + owned}
	check := func(step string, want map[string][]string, wantRecords map[string][]string) {
		t.Helper()
		got := map[string][]string{"x1": e.ingress(x, xSG1), "x2": e.ingress(x, xSG2), "y": e.ingress(y, ySG)}
		maps.DeleteFunc(got, func(_ string, rs []string) bool { return len(rs) == 0 })
		if diff := gocmp.Diff(want, got); diff != "" {
			t.Errorf("%s: rules (-want +got):\n%s", step, diff)
		}
		for _, keys := range wantRecords {
			slices.Sort(keys)
		}
		if diff := gocmp.Diff(wantRecords, recs.keys()); diff != "" {
			t.Errorf("%s: records (-want +got):\n%s", step, diff)
		}
	}
	lb := e.albLB("records", endpoint("east", "10.5.0.10", 8080))

	setMember("east", spec(xRole, xVPC, xSG1))
	e.ensure(p, lb)
	check("first Ensure", map[string][]string{"x1": rules}, map[string][]string{"east": {xKey}})

	// Same account, other group: the sweep alone revokes the old group's rules and keeps the record.
	setMember("east", spec(xRole, xVPC, xSG2))
	sweep()
	check("group dropped, swept", map[string][]string{}, map[string][]string{"east": {xKey}})
	e.ensure(p, lb)
	check("new group ensured", map[string][]string{"x2": rules}, map[string][]string{"east": {xKey}})

	// Another account: Ensure makes the new rules (recording y first) but no spec leads it to x
	// any more; the sweep revokes there from the record and forgets x.
	setMember("east", spec(yRole, yVPC, ySG))
	e.ensure(p, lb)
	check("moved, ensured", map[string][]string{"x2": rules, "y": rules}, map[string][]string{"east": {xKey, yKey}})
	sweep()
	check("moved, swept", map[string][]string{"y": rules}, map[string][]string{"east": {yKey}})

	// north names east's group too; east is deleted: the group's rules stay for north, east's
	// record goes (its finalizer with it).
	setMember("north", spec(yRole, yVPC, ySG))
	e.ensure(p, lb)
	setMember("east", nil)
	sweep()
	check("east deleted, group shared", map[string][]string{"y": rules}, map[string][]string{"north": {yKey}})

	// north goes too: nothing names y's group, so this fleet's rules there are revoked although
	// no gateway's Ensure visits y any more.
	setMember("north", nil)
	sweep()
	check("all gone", map[string][]string{}, map[string][]string{})

	// A record that cannot be written: no rule is made.
	recs.fail = errors.New("records unavailable")
	setMember("east", spec(xRole, xVPC, xSG1))
	e.mutations()
	if _, err := p.Ensure(e.ctx, lb); err == nil || !errors.Is(err, recs.fail) {
		t.Errorf("Ensure without a record: %v, want the record's error", err)
	}
	if got := e.rec.find("AuthorizeSecurityGroupIngress"); len(got) != 0 {
		t.Errorf("rules made without a record: %d AuthorizeSecurityGroupIngress calls", len(got))
	}
}
