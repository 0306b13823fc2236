package controllers

import (
	"cmp"
	"fmt"
	"slices"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/controllers/translate"
)

// BenchmarkPublish20k is one translated-part Publish of 20,000 routes whose statuses did not
// change since the last pass (the parents shared, as the translation Memo carries them over).
func BenchmarkPublish20k(b *testing.B) {
	res := &translate.Result{}
	parents := []gwv1.RouteParentStatus{{ControllerName: "fleetgate.dev/gateway-controller", ParentRef: gwv1.ParentReference{Name: "gw"}}}
	for i := range 20000 {
		res.Routes = append(res.Routes, &translate.RouteStatus{
			Ref:     translate.ObjectRef{Cluster: fmt.Sprintf("member-%d", i%10), Kind: "HTTPRoute", Namespace: fmt.Sprintf("ns-%d", i%100), Name: fmt.Sprintf("route-%d", i)},
			Parents: parents,
		})
	}
	w := NewStatusWriter(logr.Discard(), nil, nil)
	w.Publish(res, translated)
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		// A new result each pass, as translation makes, with the same statuses.
		next := &translate.Result{Routes: append([]*translate.RouteStatus(nil), res.Routes...)}
		b.StartTimer()
		w.Publish(next, translated)
	}
}

// TestPublishFollowsOrder: whatever the order, insertions and removals between passes, Publish
// holds exactly the latest statuses of the objects named, queues the new, changed and dropped
// ones, and nothing else.
func TestPublishFollowsOrder(t *testing.T) {
	for _, reuse := range []bool{false, true} {
		t.Run(fmt.Sprintf("reuse=%v", reuse), func(t *testing.T) { publishFollowsOrder(t, reuse) })
	}
}

// publishFollowsOrder is TestPublishFollowsOrder with statuses made anew on every pass, equal when
// unchanged, or (reuse), as translation does, the very object of the pass before while the status
// is the same (Publish's fast path).
func publishFollowsOrder(t *testing.T, reuse bool) {
	ref := func(name string) translate.ObjectRef {
		return translate.ObjectRef{Cluster: "c", Kind: "HTTPRoute", Namespace: "ns", Name: name}
	}
	parents := []gwv1.RouteParentStatus{{ControllerName: "fleetgate.dev/gateway-controller", ParentRef: gwv1.ParentReference{Name: "gw"}}}
	changed := []gwv1.RouteParentStatus{{ControllerName: "fleetgate.dev/gateway-controller", ParentRef: gwv1.ParentReference{Name: "other"}}}
	made := map[string]*translate.RouteStatus{}
	result := func(names ...string) *translate.Result {
		res := &translate.Result{}
		for _, n := range names {
			key, p := n, parents
			if n[0] == '*' { // a changed status
				n, p = n[1:], changed
			}
			st := made[key]
			if st == nil || !reuse {
				st = &translate.RouteStatus{Ref: ref(n), Parents: p}
				made[key] = st
			}
			res.Routes = append(res.Routes, st)
		}
		return res
	}
	w := NewStatusWriter(logr.Discard(), nil, nil)
	w.started = true
	queued := func() []string {
		var out []string
		for w.queue.Len() > 0 {
			r, _ := w.queue.Get()
			w.queue.Done(r)
			w.queue.Forget(r)
			out = append(out, r.Name)
		}
		slices.Sort(out)
		return out
	}
	for i, step := range []struct {
		names      []string
		wantQueued []string
	}{
		{[]string{"a", "b", "c", "d", "e"}, []string{"a", "b", "c", "d", "e"}},
		{[]string{"a", "b", "c", "d", "e"}, nil},
		{[]string{"b", "x", "*c", "a", "e"}, []string{"c", "d", "x"}}, // d dropped, x new, c changed
		{[]string{"e", "a", "*c", "x", "b"}, nil},                     // reversed
		{[]string{"a", "y", "b", "*c", "z", "e", "x"}, []string{"y", "z"}},
		{[]string{"a", "b", "c", "e", "x", "y", "z"}, []string{"c"}},
		{nil, []string{"a", "b", "c", "e", "x", "y", "z"}},
		{[]string{"a"}, []string{"a"}},
	} {
		res := result(step.names...)
		w.Publish(res, translated)
		if diff := gocmp.Diff(step.wantQueued, queued(), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("step %d: queued (-want +got):\n%s", i, diff)
		}
		if len(w.desired) != len(res.Routes) || w.count[translated] != uint64(len(res.Routes)) {
			t.Errorf("step %d: %d desired, count %d; want %d", i, len(w.desired), w.count[translated], len(res.Routes))
		}
		for j := range res.Routes {
			if d := w.desired[res.Routes[j].Ref]; d == nil || d.want != desiredStatus(res.Routes[j]) {
				t.Errorf("step %d: %s does not hold this pass's status", i, res.Routes[j].Ref.Name)
			}
		}
	}
}

// TestBacklogYieldsToChanges: the routes of the first pass (a cold start's backlog, one write
// each) are handed out after what changed since and after Gateways; a changed backlog route rises
// with its change.
func TestBacklogYieldsToChanges(t *testing.T) {
	route := func(name string, parent string) *translate.RouteStatus {
		return &translate.RouteStatus{Ref: translate.ObjectRef{Cluster: "c", Kind: "HTTPRoute", Namespace: "ns", Name: name},
			Parents: []gwv1.RouteParentStatus{{ControllerName: "fleetgate.dev/gateway-controller", ParentRef: gwv1.ParentReference{Name: gwv1.ObjectName(parent)}}}}
	}
	w := NewStatusWriter(logr.Discard(), nil, nil)
	w.started = true
	w.Publish(&translate.Result{Routes: []*translate.RouteStatus{route("a", "gw"), route("b", "gw"), route("c", "gw"), route("d", "gw")}}, translated)
	w.Publish(&translate.Result{Gateways: []translate.GatewayStatus{{Ref: translate.ObjectRef{Cluster: "c", Kind: "Gateway", Namespace: "ns", Name: "gw"}}}}, applied)
	w.Publish(&translate.Result{Routes: []*translate.RouteStatus{route("a", "gw"), route("b", "gw"), route("c", "other"), route("d", "gw"), route("x", "gw")}}, translated)
	if n := w.queue.Len(); n != 6 {
		t.Fatalf("%d queued, want 6", n)
	}
	// Within a priority the queue is FIFO.
	want := []handedOut{{"gw", 0}, {"c", 0}, {"x", 0}, {"a", -1}, {"b", -1}, {"d", -1}}
	if diff := gocmp.Diff(want, handOut(w)); diff != "" {
		t.Errorf("hand-out order (-want +got):\n%s", diff)
	}
}

// TestFollowerQueuesNothing: before Start (a follower) Publish keeps the desired statuses and
// queues nothing, whatever comes and goes, nor keeps the routes that left the results (the
// sweeper finds those whose statuses hold ours: TestSweepClearsWhatNoPassNames); Start queues
// every object known, routes as backlog, each once.
func TestFollowerQueuesNothing(t *testing.T) {
	route := func(name, parent string) *translate.RouteStatus {
		return &translate.RouteStatus{Ref: translate.ObjectRef{Cluster: "c", Kind: "HTTPRoute", Namespace: "ns", Name: name},
			Parents: []gwv1.RouteParentStatus{{ControllerName: "fleetgate.dev/gateway-controller", ParentRef: gwv1.ParentReference{Name: gwv1.ObjectName(parent)}}}}
	}
	w := NewStatusWriter(logr.Discard(), nil, nil)
	for _, routes := range [][]*translate.RouteStatus{
		{route("a", "gw"), route("b", "gw"), route("c", "gw")},
		{route("a", "gw"), route("b", "other"), route("d", "gw")}, // c dropped, b changed, d new
		{route("a", "gw"), route("b", "other")},                   // d dropped
		{route("a", "gw"), route("b", "other"), route("d", "gw")}, // d back
	} {
		w.Publish(&translate.Result{Routes: routes}, translated)
		w.Publish(&translate.Result{Gateways: []translate.GatewayStatus{{Ref: translate.ObjectRef{Cluster: "c", Kind: "Gateway", Namespace: "ns", Name: "gw"}}}}, applied)
		if n := w.queue.Len(); n != 0 {
			t.Fatalf("a follower's queue holds %d objects", n)
		}
		if len(w.dropped) != 0 {
			t.Fatalf("a follower keeps %d routes that left the results", len(w.dropped))
		}
	}
	w.begin()
	order := handOut(w)
	slices.SortFunc(order, func(a, b handedOut) int { return cmp.Compare(a.Name, b.Name) })
	want := []handedOut{{"a", -1}, {"b", -1}, {"d", -1}, {"gw", 0}}
	if diff := gocmp.Diff(want, order); diff != "" {
		t.Errorf("queued at Start (-want +got):\n%s", diff)
	}
	w.Publish(&translate.Result{Routes: []*translate.RouteStatus{route("a", "gw"), route("b", "gw"), route("d", "gw")}}, translated)
	if n := w.queue.Len(); n != 1 {
		t.Errorf("after Start, a change queued %d objects, want 1", n)
	}
}

// handedOut is an object as the queue hands it out.
type handedOut struct {
	Name     string
	Priority int
}

// handOut empties w's queue in the order it hands objects out.
func handOut(w *StatusWriter) []handedOut {
	var order []handedOut
	for w.queue.Len() > 0 {
		r, p, _ := w.queue.GetWithPriority()
		w.queue.Done(r)
		order = append(order, handedOut{r.Name, p})
	}
	return order
}

// TestSweepClearsWhatNoPassNames: once leading, the writer queues (as backlog) the objects of a
// cluster the last pass read whose statuses hold entries of ours that no pass names, and nothing
// else: not the routes a pass names, not those that hold only another controller's entries, not
// a cluster the pass did not read; a cluster is swept once, and again after it reconnects.
func TestSweepClearsWhatNoPassNames(t *testing.T) {
	ctx := t.Context()
	status := func(controller string) gwv1.HTTPRouteStatus {
		return gwv1.HTTPRouteStatus{RouteStatus: gwv1.RouteStatus{Parents: []gwv1.RouteParentStatus{{
			ControllerName: gwv1.GatewayController(controller), ParentRef: gwv1.ParentReference{Name: "gw"}}}}}
	}
	routes := []client.Object{
		&gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "named"}, Status: status(v1alpha1.ControllerName)},
		&gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "stale"}, Status: status(v1alpha1.ControllerName)},
		&gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "theirs"}, Status: status("example.com/other")},
		&gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "bare"}},
		&gwv1.GRPCRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "stale-grpc"},
			Status: gwv1.GRPCRouteStatus{RouteStatus: status(v1alpha1.ControllerName).RouteStatus}},
		&gwv1.BackendTLSPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "stale-policy"},
			Status: gwv1.PolicyStatus{Ancestors: []gwv1.PolicyAncestorStatus{{ControllerName: v1alpha1.ControllerName}}}},
	}
	scheme, err := NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(routes...).Build()
	w := NewStatusWriter(logr.Discard(), nil, nil)
	w.SetTarget("c", statusTarget{Reader: c, Writer: c})
	w.SetTarget("unread", statusTarget{Reader: c, Writer: c})
	named := &translate.RouteStatus{Ref: translate.ObjectRef{Cluster: "c", Kind: "HTTPRoute", Namespace: "ns", Name: "named"},
		Parents: status(v1alpha1.ControllerName).Parents}
	w.Publish(&translate.Result{Routes: []*translate.RouteStatus{named}, Clusters: []string{"c"}}, translated)
	if len(w.sweep) != 0 {
		t.Fatal("a follower's sweeper was woken")
	}
	w.begin()
	if len(w.sweep) != 1 {
		t.Fatal("starting to lead did not wake the sweeper")
	}
	<-w.sweep
	handOut(w) // what begin queued: the named route
	sweep := func() []handedOut {
		for _, cl := range w.unswept() {
			if err := w.sweepCluster(ctx, cl); err != nil {
				t.Fatal(err)
			}
		}
		order := handOut(w)
		slices.SortFunc(order, func(a, b handedOut) int { return cmp.Compare(a.Name, b.Name) })
		return order
	}
	want := []handedOut{{"stale", -1}, {"stale-grpc", -1}, {"stale-policy", -1}}
	if diff := gocmp.Diff(want, sweep()); diff != "" {
		t.Errorf("swept (-want +got):\n%s", diff)
	}
	if got := sweep(); len(got) != 0 {
		t.Errorf("a second sweep queued %v", got)
	}
	w.RemoveTarget("c")
	w.SetTarget("c", statusTarget{Reader: c, Writer: c})
	w.Publish(&translate.Result{Routes: []*translate.RouteStatus{named}, Clusters: []string{"c"}}, translated)
	if len(w.sweep) != 1 {
		t.Fatal("a pass reading a reconnected cluster did not wake the sweeper")
	}
	if diff := gocmp.Diff(want, sweep()); diff != "" {
		t.Errorf("swept after reconnecting (-want +got):\n%s", diff)
	}
}
