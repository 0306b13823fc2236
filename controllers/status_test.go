package controllers

import (
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/fleetgate/fleetgate/controllers/translate"
)

// A write that keeps failing is retried within statusRetryMax, and its failures do not delay
// writes of other objects.
func TestStatusRetryBackoff(t *testing.T) {
	l := statusRateLimiter()
	stuck := translate.ObjectRef{Cluster: "hub", Kind: "Gateway", Namespace: "ns", Name: "stuck"}
	for range 100 {
		if d := l.When(stuck); d > statusRetryMax {
			t.Fatalf("retry after %v, want at most %v", d, statusRetryMax)
		}
	}
	other := translate.ObjectRef{Cluster: "hub", Kind: "Gateway", Namespace: "ns", Name: "other"}
	if d := l.When(other); d > 10*time.Millisecond {
		t.Fatalf("first retry of another object after %v", d)
	}
}

// TestStatusWorkers: the writer count is bounded, and 0 means the default.
func TestStatusWorkers(t *testing.T) {
	for _, tc := range []struct {
		asked, want int
		fails       bool
	}{
		{0, DefaultStatusWorkers, false},
		{1, 1, false},
		{64, 64, false},
		{MaxStatusWorkers, MaxStatusWorkers, false},
		{MaxStatusWorkers + 1, 0, true},
		{-1, 0, true},
	} {
		got, err := statusWorkers(tc.asked)
		if (err != nil) != tc.fails || got != tc.want {
			t.Errorf("statusWorkers(%d) = %d, %v; want %d, failure %v", tc.asked, got, err, tc.want, tc.fails)
		}
	}
}

// TestPublishQueues checks which objects a Publish queues for writing: new and changed ones, those
// of the same part that dropped out of the result, and nothing else.
func TestPublishQueues(t *testing.T) {
	ref := func(kind, name string) translate.ObjectRef {
		return translate.ObjectRef{Cluster: "hub", Kind: kind, Namespace: "default", Name: name}
	}
	route := func(name string, gen int64) *translate.RouteStatus {
		return &translate.RouteStatus{Ref: ref("HTTPRoute", name), Generation: gen}
	}
	gateway := translate.GatewayStatus{Ref: ref("Gateway", "gw")}
	withRoutes := func(n int32, reason string) translate.GatewayStatus {
		g := gateway
		g.Conditions = []metav1.Condition{{Type: "Programmed", Status: metav1.ConditionTrue, Reason: reason}}
		g.Listeners = []gwv1.ListenerStatus{{Name: "http", AttachedRoutes: n}}
		return g
	}
	steps := []struct {
		name   string
		res    translate.Result
		part   statusPart
		queued []string
		// later are queued only after the writer's countsDelay.
		later []string
	}{
		{"first routes", translate.Result{Routes: []*translate.RouteStatus{route("a", 1), route("b", 1)}}, translated, []string{"a", "b"}, nil},
		{"gateway", translate.Result{Gateways: []translate.GatewayStatus{gateway}}, applied, []string{"gw"}, nil},
		{"unchanged", translate.Result{Routes: []*translate.RouteStatus{route("a", 1), route("b", 1)}}, translated, nil, nil},
		{"one changed, one new", translate.Result{Routes: []*translate.RouteStatus{route("a", 2), route("b", 1), route("c", 1)}}, translated, []string{"a", "c"}, nil},
		{"one dropped; the gateway of the other part stays", translate.Result{Routes: []*translate.RouteStatus{route("a", 2), route("c", 1)}}, translated, []string{"b"}, nil},
		{"dropped again: nothing", translate.Result{Routes: []*translate.RouteStatus{route("a", 2), route("c", 1)}}, translated, nil, nil},
		{"gateway with a route", translate.Result{Gateways: []translate.GatewayStatus{withRoutes(1, "Programmed")}}, applied, []string{"gw"}, nil},
		{"only attachedRoutes changed: coalesced", translate.Result{Gateways: []translate.GatewayStatus{withRoutes(2, "Programmed")}}, applied, nil, []string{"gw"}},
		{"a condition changed: at once", translate.Result{Gateways: []translate.GatewayStatus{withRoutes(3, "Pending")}}, applied, []string{"gw"}, nil},
		{"gateway dropped", translate.Result{}, applied, []string{"gw"}, nil},
	}
	w := NewStatusWriter(logr.Discard(), nil, nil)
	w.started = true
	w.countsDelay = 50 * time.Millisecond
	drain := func() []string {
		var got []string
		for w.queue.Len() > 0 {
			r, _ := w.queue.Get()
			got = append(got, r.Name)
			w.queue.Done(r)
			w.queue.Forget(r)
		}
		slices.Sort(got)
		return got
	}
	for _, st := range steps {
		w.Publish(&st.res, st.part)
		if diff := cmp.Diff(st.queued, drain()); diff != "" {
			t.Errorf("%s: queued (-want +got):\n%s", st.name, diff)
		}
		if st.later == nil {
			continue
		}
		time.Sleep(4 * w.countsDelay)
		if diff := cmp.Diff(st.later, drain()); diff != "" {
			t.Errorf("%s: queued after the delay (-want +got):\n%s", st.name, diff)
		}
	}
	if _, ok := w.desired[ref("HTTPRoute", "b")]; ok {
		t.Error("a dropped route is still desired")
	}
	if got := w.count; got != [2]uint64{2, 0} {
		t.Errorf("desired counts = %v, want [2 0]", got)
	}
}
