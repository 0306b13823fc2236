package controllers

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/fleetgate/fleetgate/controllers/translate"
)

// replicaConfigs numbers configs like fakeConfigs and lists the proxies connected to its replica.
type replicaConfigs struct {
	fakeConfigs
	proxies []ProxyState
}

func (c *replicaConfigs) Proxies(string) []ProxyState { return c.proxies }

func newReplicaConfigs() *replicaConfigs {
	return &replicaConfigs{fakeConfigs: fakeConfigs{versions: map[string]uint64{}, last: map[string]string{}}}
}

// leaseOf is the Lease a replica's report writer would publish, renewed at renewed.
func leaseOf(t *testing.T, name string, d *Dataplane, renewed time.Time) *coordinationv1.Lease {
	t.Helper()
	b, err := json.Marshal(d.report())
	if err != nil {
		t.Fatal(err)
	}
	at := metav1.NewMicroTime(renewed)
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "fleetgate-delivery-" + name, Annotations: map[string]string{annotationReport: string(b)}},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &name, RenewTime: &at},
	}
}

// TestProgrammedAcrossReplicas: the leader counts the proxies connected to a follower through the
// follower's report, in its own version numbers, only when the follower translated the same
// Gateway generations; its own view of a proxy wins over a report; a report not renewed expires.
func TestProgrammedAcrossReplicas(t *testing.T) {
	ip := gwv1.IPAddressType
	addr := []gwv1.GatewayStatusAddress{{Type: &ip, Value: "203.0.113.1"}}
	ready := translate.Programmed{Ready: true, Addresses: addr}
	pending := func(msg string) translate.Programmed {
		return translate.Programmed{Reason: "Pending", Message: msg, Addresses: addr}
	}
	provs := fakeProviders{"incluster": &fakeProvider{ready: true}}
	leaderConfigs, followerConfigs := newReplicaConfigs(), newReplicaConfigs()
	leader, follower := newDataplane(t, provs, leaderConfigs), newDataplane(t, provs, followerConfigs)
	leader.peers = newPeerReports("a", 15*time.Second)
	now := time.Now()
	leader.peers.now = func() time.Time { return now }

	// The follower's numbering runs ahead of the leader's, as after a restart: only levels cross.
	followerConfigs.versions["hub/ns/gw"] = 40
	steps := []struct {
		name               string
		leaderRes          *translate.Result
		followerRes        *translate.Result // nil: the follower has not translated this yet
		local, followerSee []ProxyState
		renewed            time.Duration // of the follower's report, before now
		want               translate.Programmed
	}{
		{name: "no proxy anywhere", leaderRes: result(1, "a"), followerRes: result(1, "a"),
			want: pending("no proxy replica is connected")},
		{name: "a proxy on the follower serves its config", leaderRes: result(1, "a"), followerRes: result(1, "a"),
			followerSee: []ProxyState{{Node: "q", Acked: 41}}, want: ready},
		{name: "the leader saw a new generation first", leaderRes: result(2, "c"),
			followerSee: []ProxyState{{Node: "q", Acked: 41}},
			want:        pending("waiting for 1 of 1 proxy replicas: operator replica b has not translated the Gateway's current generation yet")},
		{name: "the follower translated it, the proxy has not ACKed", leaderRes: result(2, "c"), followerRes: result(2, "c"),
			followerSee: []ProxyState{{Node: "q", Acked: 41}},
			want:        pending("waiting for 1 of 1 proxy replicas to acknowledge version 2")},
		{name: "it ACKed", leaderRes: result(2, "c"), followerRes: result(2, "c"),
			followerSee: []ProxyState{{Node: "q", Acked: 42}}, want: ready},
		{name: "a proxy here and one there", leaderRes: result(2, "c"), followerRes: result(2, "c"),
			local: []ProxyState{{Node: "p", Acked: 2}}, followerSee: []ProxyState{{Node: "q", Acked: 42}}, want: ready},
		{name: "the follower's route change, refused, shows before the leader has it", leaderRes: result(2, "c"), followerRes: result(2, "d"),
			followerSee: []ProxyState{{Node: "q", Acked: 42, Nacked: 43, NackReason: "bad regex"}},
			want:        translate.Programmed{Reason: "Invalid", Message: "proxy q rejected version 2: bad regex", Addresses: addr}},
		{name: "a route change refused there shows here", leaderRes: result(2, "d"), followerRes: result(2, "d"),
			followerSee: []ProxyState{{Node: "q", Acked: 42, Nacked: 43, NackReason: "bad regex"}},
			want:        translate.Programmed{Reason: "Invalid", Message: "proxy q rejected version 3: bad regex", Addresses: addr}},
		{name: "the proxy moved here: the stale report does not count", leaderRes: result(2, "d"), followerRes: result(2, "d"),
			local: []ProxyState{{Node: "q", Acked: 3}}, followerSee: []ProxyState{{Node: "q", Acked: 42, Nacked: 43, NackReason: "bad regex"}},
			want: ready},
		{name: "a refusal there shows here", leaderRes: result(2, "d"), followerRes: result(2, "d"),
			followerSee: []ProxyState{{Node: "q", Refused: "no common wire version"}},
			want:        translate.Programmed{Reason: "Invalid", Message: "proxy q cannot be served: no common wire version", Addresses: addr}},
		{name: "the follower's report expired", leaderRes: result(2, "d"), followerRes: result(2, "d"),
			followerSee: []ProxyState{{Node: "q", Acked: 44}}, renewed: 16 * time.Second,
			want: pending("no proxy replica is connected")},
	}
	for _, s := range steps {
		leaderConfigs.proxies, followerConfigs.proxies = s.local, s.followerSee
		applyAndWait(t, leader, s.leaderRes)
		if s.followerRes != nil {
			applyAndWait(t, follower, s.followerRes)
		}
		leader.peers.set("b", leaseOf(t, "b", follower, now.Add(-s.renewed)))
		leader.peers.expire()
		if diff := cmp.Diff(s.want, leader.Programmed()["hub/ns/gw"], cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s (-want +got):\n%s", s.name, diff)
		}
	}
	if leader.peers.set("a", leaseOf(t, "a", leader, now)) {
		t.Error("the leader merged its own report")
	}
}

// TestReportLevels: a report places each proxy against the replica's own delivery of the gateway
// and leaves out gateways it has no proxies of.
func TestReportLevels(t *testing.T) {
	configs := newReplicaConfigs()
	d := newDataplane(t, fakeProviders{"incluster": &fakeProvider{ready: true}}, configs)
	applyAndWait(t, d, result(1, "a")) // version 1
	applyAndWait(t, d, result(2, "b")) // version 2: a new generation
	applyAndWait(t, d, result(2, "c")) // version 3: a route change
	configs.proxies = []ProxyState{
		{Node: "old", Acked: 1},
		{Node: "since", Acked: 2, Nacked: 3, NackReason: "bad"},
		{Node: "latest", Acked: 3},
		{Node: "refused", Refused: "no common wire version"},
	}
	want := deliveryReport{Gateways: map[string]reportedGateway{"hub/ns/gw": {Generations: "hub/ns/gw@2;", Proxies: []reportedProxy{
		{Node: "old", Acked: levelNone},
		{Node: "since", Acked: levelSince, Nacked: levelLatest, Reason: "bad"},
		{Node: "latest", Acked: levelLatest},
		{Node: "refused", Refused: "no common wire version"},
	}}}}
	if diff := cmp.Diff(want, d.report(), cmp.AllowUnexported(reportedProxy{})); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}
	configs.proxies = nil
	if diff := cmp.Diff(deliveryReport{Gateways: map[string]reportedGateway{}}, d.report()); diff != "" {
		t.Errorf("report without proxies (-want +got):\n%s", diff)
	}
}
