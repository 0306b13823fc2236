package provision

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/fleetgate/fleetgate/providers"
)

// call is one provider call as the fake saw it.
type call struct {
	Op       string
	Gateway  string
	Clusters []string
	Ports    int
}

// fake is a provider that records its calls, measures their overlap and can be slowed down or
// made to fail.
type fake struct {
	mu        sync.Mutex
	calls     []call
	active    int
	maxActive int
	perKey    map[string]int
	overlap   bool
	listed    []providers.LoadBalancer
	listErr   error // returned by List with listed, as a List that reached only some accounts
	lists     int
	// hook runs inside Ensure; a non-nil error fails the call.
	hook func(ctx context.Context, lb *providers.LoadBalancer) error
}

func (f *fake) enter(c call) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, c)
	f.active++
	f.maxActive = max(f.maxActive, f.active)
	if f.perKey == nil {
		f.perKey = map[string]int{}
	}
	f.perKey[c.Gateway]++
	if f.perKey[c.Gateway] > 1 {
		f.overlap = true
	}
}

func (f *fake) leave(gw string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.active--
	f.perKey[gw]--
}

func (f *fake) Capabilities(json.RawMessage) (providers.Capabilities, error) {
	return providers.FullCapabilities(), nil
}

func (f *fake) Ensure(ctx context.Context, lb *providers.LoadBalancer) (providers.Status, error) {
	f.enter(call{Op: "ensure", Gateway: lb.Gateway, Clusters: lb.Clusters, Ports: len(lb.Ports)})
	defer f.leave(lb.Gateway)
	f.mu.Lock()
	hook := f.hook
	f.mu.Unlock()
	if hook != nil {
		if err := hook(ctx, lb); err != nil {
			return providers.Status{}, err
		}
	}
	return providers.Status{Ready: true}, nil
}

func (f *fake) Delete(_ context.Context, lb *providers.LoadBalancer) error {
	f.enter(call{Op: "delete", Gateway: lb.Gateway, Clusters: lb.Clusters, Ports: len(lb.Ports)})
	defer f.leave(lb.Gateway)
	return nil
}

func (f *fake) List(context.Context) ([]providers.LoadBalancer, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists++
	return slices.Clone(f.listed), f.listErr
}

func (f *fake) snapshot() []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func (f *fake) count(op, gw string) int {
	n := 0
	for _, c := range f.snapshot() {
		if c.Op == op && c.Gateway == gw {
			n++
		}
	}
	return n
}

type registry map[string]providers.Provider

func (r registry) Get(name string) (providers.Provider, bool) { p, ok := r[name]; return p, ok }
func (r registry) Names() []string {
	var out []string
	for n := range r {
		out = append(out, n)
	}
	return out
}

// start runs an engine over f until the test ends and returns it with its registry.
func start(t *testing.T, f providers.Provider, o Options) (*Engine, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	if o.Providers == nil {
		o.Providers = registry{"p": f}
	}
	o.Log, o.Registerer = testr.New(t), reg
	o.BaseDelay = cmpOr(o.BaseDelay, 10*time.Millisecond)
	e, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("engine: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("engine did not stop")
		}
	})
	return e, reg
}

func model(gw string, ports int, clusters ...string) providers.LoadBalancer {
	lb := providers.LoadBalancer{Gateway: gw, Provider: "p", Clusters: clusters}
	for i := range ports {
		lb.Ports = append(lb.Ports, providers.Port{Port: int32(80 + i), Transport: providers.TransportTCP})
	}
	return lb
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestCoalescing: an unchanged model is not queued again; while a call runs, a burst of changes
// collapses into one more call with the latest model.
func TestCoalescing(t *testing.T) {
	release := make(chan struct{})
	f := &fake{hook: func(ctx context.Context, lb *providers.LoadBalancer) error {
		if len(lb.Ports) == 1 {
			<-release
		}
		return nil
	}}
	e, _ := start(t, f, Options{})
	e.Set([]Desired{{Model: model("a", 1), Version: 1}}, nil)
	eventually(t, "the first ensure", func() bool { return f.count("ensure", "a") == 1 })
	for v := range uint64(20) {
		e.Set([]Desired{{Model: model("a", 2+int(v)), Version: 1}}, nil)
	}
	close(release)
	eventually(t, "a settled", func() bool { return e.Settled("a") })
	// Routing changes by version alone; the same version again is no change.
	e.Set([]Desired{{Model: model("a", 21), Version: 2}}, nil)
	eventually(t, "a settled", func() bool { return e.Settled("a") })
	e.Set([]Desired{{Model: model("a", 21), Version: 2}}, nil)
	time.Sleep(50 * time.Millisecond)
	want := []call{
		{Op: "ensure", Gateway: "a", Ports: 1},
		{Op: "ensure", Gateway: "a", Ports: 21},
		{Op: "ensure", Gateway: "a", Ports: 21},
	}
	if diff := cmp.Diff(want, f.snapshot()); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	o, ok := e.Result("p", "a")
	if !ok || !o.Current || o.Version != 2 || !o.Status.Ready {
		t.Errorf("result %+v, %v; want a current ready result for version 2", o, ok)
	}
}

// TestConcurrency: different gateways run in parallel up to Workers, never two calls for one
// gateway at once, even when it changes while it is being ensured.
func TestConcurrency(t *testing.T) {
	for _, workers := range []int{1, 3} {
		t.Run(fmt.Sprint(workers), func(t *testing.T) {
			f := &fake{hook: func(context.Context, *providers.LoadBalancer) error {
				time.Sleep(20 * time.Millisecond)
				return nil
			}}
			e, _ := start(t, f, Options{Workers: workers})
			var desired []Desired
			for i := range 8 {
				desired = append(desired, Desired{Model: model(fmt.Sprint("g", i), 1), Version: 1})
			}
			for v := range uint64(5) {
				for i := range desired {
					desired[i].Version = v + 1
				}
				e.Set(desired, nil)
				time.Sleep(10 * time.Millisecond)
			}
			eventually(t, "every gateway settled", func() bool {
				for _, d := range desired {
					if !e.Settled(d.Model.Gateway) {
						return false
					}
				}
				return true
			})
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.maxActive != workers || f.overlap {
				t.Errorf("at most %d calls at once (want %d); calls for one gateway overlapped: %v", f.maxActive, workers, f.overlap)
			}
		})
	}
}

// TestResync: a gateway in sync is ensured again periodically without any Set.
func TestResync(t *testing.T) {
	f := &fake{}
	e, _ := start(t, f, Options{Resync: 30 * time.Millisecond})
	e.Set([]Desired{{Model: model("a", 1), Version: 1}}, nil)
	eventually(t, "three resyncs", func() bool { return f.count("ensure", "a") >= 4 })
}

// TestNotReady: a load balancer that is not ready is ensured again by the next Set even with the
// same model, and polled without one.
func TestNotReady(t *testing.T) {
	for _, tc := range []struct {
		name string
		poll time.Duration
		set  bool
	}{
		{name: "next Set", poll: time.Hour, set: true},
		{name: "poll", poll: 20 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			ready := false
			f := &fake{}
			f.hook = func(context.Context, *providers.LoadBalancer) error { return nil }
			e, _ := start(t, &notReady{fake: f, ready: func() bool { mu.Lock(); defer mu.Unlock(); return ready }}, Options{NotReadyPoll: tc.poll})
			d := []Desired{{Model: model("a", 1), Version: 1}}
			e.Set(d, nil)
			eventually(t, "a not-ready result", func() bool { o, ok := e.Result("p", "a"); return ok && !o.Status.Ready })
			mu.Lock()
			ready = true
			mu.Unlock()
			if tc.set {
				e.Set(d, nil)
			}
			eventually(t, "a ready result", func() bool { o, ok := e.Result("p", "a"); return ok && o.Status.Ready })
		})
	}
}

// notReady reports not ready until ready says otherwise.
type notReady struct {
	*fake
	ready func() bool
}

func (n *notReady) Ensure(ctx context.Context, lb *providers.LoadBalancer) (providers.Status, error) {
	st, err := n.fake.Ensure(ctx, lb)
	st.Ready = n.ready()
	return st, err
}

// TestRecheck: a gateway in sync is ensured again on request, and only it.
func TestRecheck(t *testing.T) {
	f := &fake{}
	e, _ := start(t, f, Options{})
	e.Set([]Desired{{Model: model("a", 1), Version: 1}, {Model: model("b", 1), Version: 1}}, nil)
	eventually(t, "both ensured", func() bool { return e.Settled("a") && e.Settled("b") })
	e.Recheck("a")
	e.Recheck("unknown")
	eventually(t, "a ensured again", func() bool { return f.count("ensure", "a") == 2 && e.Settled("a") })
	if n := f.count("ensure", "b"); n != 1 {
		t.Errorf("b ensured %d times, want 1", n)
	}
}

// TestRecheckProvider: every desired gateway of one provider is ensured again, those of another
// provider and deleted ones are not.
func TestRecheckProvider(t *testing.T) {
	p, other := &fake{}, &fake{}
	e, _ := start(t, nil, Options{Providers: registry{"p": p, "q": other}})
	onQ := model("c", 1)
	onQ.Provider = "q"
	e.Set([]Desired{{Model: model("a", 1), Version: 1}, {Model: model("b", 1), Version: 1}, {Model: model("gone", 1), Version: 1}, {Model: onQ, Version: 1}}, nil)
	eventually(t, "all ensured", func() bool { return e.Settled("a") && e.Settled("b") && e.Settled("gone") && e.Settled("c") })
	e.Set([]Desired{{Model: model("a", 1), Version: 1}, {Model: model("b", 1), Version: 1}, {Model: onQ, Version: 1}}, nil)
	eventually(t, "gone deleted", func() bool { return p.count("delete", "gone") == 1 && e.Settled("gone") })
	e.RecheckProvider("p")
	e.RecheckProvider("unknown")
	eventually(t, "a and b ensured again", func() bool {
		return p.count("ensure", "a") == 2 && p.count("ensure", "b") == 2 && e.Settled("a") && e.Settled("b")
	})
	got := map[string]int{"gone": p.count("ensure", "gone") + p.count("delete", "gone"), "c": other.count("ensure", "c")}
	if diff := cmp.Diff(map[string]int{"gone": 2, "c": 1}, got); diff != "" {
		t.Errorf("calls of the gateways not rechecked (-want +got):\n%s", diff)
	}
}

// TestRetry: a failed Ensure shows in the result and is retried with backoff until it succeeds.
func TestRetry(t *testing.T) {
	var mu sync.Mutex
	fail := 2
	f := &fake{hook: func(context.Context, *providers.LoadBalancer) error {
		mu.Lock()
		defer mu.Unlock()
		if fail > 0 {
			fail--
			return errors.New("cloud says no")
		}
		return nil
	}}
	e, reg := start(t, f, Options{})
	e.Set([]Desired{{Model: model("a", 1), Version: 1}}, nil)
	eventually(t, "an error result", func() bool { o, ok := e.Result("p", "a"); return ok && o.Err != nil })
	eventually(t, "success", func() bool { return e.Settled("a") })
	if n := metricValue(t, reg, "fleetgate_provider_calls_total", map[string]string{"op": "ensure", "result": "error"}); n != 2 {
		t.Errorf("%v failed ensures counted, want 2", n)
	}
	if n := metricValue(t, reg, "fleetgate_provider_call_duration_seconds", map[string]string{"op": "ensure"}); n != 3 {
		t.Errorf("%v ensure durations observed, want 3", n)
	}
}

// TestDeletion: a gateway that leaves the desired set is deleted with its last model; one whose
// clusters shrink is deleted from the removed clusters, then ensured.
func TestDeletion(t *testing.T) {
	f := &fake{}
	e, _ := start(t, f, Options{})
	e.Set([]Desired{{Model: model("a", 1, "x", "y"), Version: 1}, {Model: model("b", 2, "x"), Version: 1}}, nil)
	eventually(t, "both ensured", func() bool { return e.Settled("a") && e.Settled("b") })
	e.Set([]Desired{{Model: model("a", 1, "x"), Version: 1}}, nil)
	eventually(t, "a shrunk and b deleted", func() bool {
		return e.Settled("a") && e.Settled("b") && f.count("ensure", "a") == 2
	})
	got := f.snapshot()[2:]
	slices.SortStableFunc(got, func(a, b call) int { return strings.Compare(a.Gateway, b.Gateway) })
	want := []call{
		{Op: "delete", Gateway: "a", Clusters: []string{"y"}, Ports: 1},
		{Op: "ensure", Gateway: "a", Clusters: []string{"x"}, Ports: 1},
		{Op: "delete", Gateway: "b", Clusters: []string{"x"}, Ports: 2},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("calls after the change (-want +got):\n%s", diff)
	}
	if _, ok := e.Result("p", "b"); ok {
		t.Error("a deleted gateway still has a result")
	}
}

// TestSweep: no sweep before the first Set (everything would look orphaned); then the orphans,
// and the clusters of a desired gateway it no longer has, are deleted, and nothing desired.
func TestSweep(t *testing.T) {
	f := &fake{listed: []providers.LoadBalancer{model("orphan", 0, "x"), model("a", 0, "x", "gone"), model("b", 0, "x")}}
	e, reg := start(t, f, Options{})
	time.Sleep(100 * time.Millisecond)
	f.mu.Lock()
	lists := f.lists
	f.mu.Unlock()
	if calls := f.snapshot(); len(calls) != 0 || lists != 0 || e.Swept() {
		t.Fatalf("before the first Set: calls %v, %d lists, swept %v", calls, lists, e.Swept())
	}
	e.Set([]Desired{{Model: model("a", 1, "x"), Version: 1}, {Model: model("b", 1, "x"), Version: 1}}, nil)
	eventually(t, "the sweep's deletions", func() bool { return e.Swept() })
	var deletes []call
	for _, c := range f.snapshot() {
		if c.Op == "delete" {
			deletes = append(deletes, c)
		}
	}
	slices.SortFunc(deletes, func(a, b call) int { return strings.Compare(a.Gateway, b.Gateway) })
	want := []call{{Op: "delete", Gateway: "a", Clusters: []string{"gone"}, Ports: 1}, {Op: "delete", Gateway: "orphan", Clusters: []string{"x"}}}
	if diff := cmp.Diff(want, deletes); diff != "" {
		t.Errorf("deletes (-want +got):\n%s", diff)
	}
	if n := metricValue(t, reg, "fleetgate_provider_swept_gateways_total", nil); n != 2 {
		t.Errorf("%v gateways swept, want 2", n)
	}
}

// TestSweepPartialList: what a failing List still found is swept; the failure is retried.
func TestSweepPartialList(t *testing.T) {
	f := &fake{listed: []providers.LoadBalancer{model("orphan", 0, "x")}, listErr: errors.New("account b: AccessDenied")}
	e, _ := start(t, f, Options{})
	e.Set([]Desired{{Model: model("a", 1, "x"), Version: 1}}, nil)
	eventually(t, "the orphan's deletion", func() bool { return f.count("delete", "orphan") > 0 })
	if e.Swept() {
		t.Error("a sweep whose List failed counts as done")
	}
}

// TestSweepLeavesWhatAnotherProviderServes: resources of a gateway that provider q lists but
// provider p serves (p runs them for it) are not q's orphans; once p lets the gateway go, they are.
func TestSweepLeavesWhatAnotherProviderServes(t *testing.T) {
	p := &fake{}
	q := &fake{listed: []providers.LoadBalancer{model("g", 0, "x")}}
	e, _ := start(t, nil, Options{Providers: registry{"p": p, "q": q}, SweepEvery: 100 * time.Millisecond})
	e.Set([]Desired{{Model: model("g", 1, "x"), Version: 1}}, nil)
	eventually(t, "a sweep", func() bool { return e.Swept() })
	if n := q.count("delete", "g"); n != 0 {
		t.Fatalf("q deleted what p serves (%d calls)", n)
	}
	e.Set(nil, nil)
	eventually(t, "q's deletion once p let go", func() bool { return q.count("delete", "g") > 0 })
}

// TestShutdown: cancelling the context reaches a call in flight, and Start returns.
func TestShutdown(t *testing.T) {
	entered := make(chan struct{})
	cancelled := make(chan error, 1)
	f := &fake{hook: func(ctx context.Context, _ *providers.LoadBalancer) error {
		close(entered)
		<-ctx.Done()
		cancelled <- ctx.Err()
		return ctx.Err()
	}}
	e, err := New(Options{Providers: registry{"p": f}, Log: testr.New(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Start(ctx) }()
	e.Set([]Desired{{Model: model("a", 1), Version: 1}}, nil)
	<-entered
	cancel()
	select {
	case err := <-cancelled:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the call saw %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the call in flight never saw the cancellation")
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Start: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Start did not return")
	}
}

// TestUnknownClustersKeepTheirResources: a member that translation did not read (unreachable, or not
// connected yet after a start) only looks as if its gateways were gone. Nothing is deleted there,
// by Set or by the sweep, until it is read again and the gateway is still gone.
func TestUnknownClustersKeepTheirResources(t *testing.T) {
	f := &fake{}
	e, _ := start(t, f, Options{})
	e.Set([]Desired{{Model: model("a", 1, "x"), Version: 1}, {Model: model("b", 1, "x", "y"), Version: 1}, {Model: model("c", 1, "y"), Version: 1}}, []string{"x", "y"})
	eventually(t, "all ensured", func() bool { return e.Settled("a") && e.Settled("b") && e.Settled("c") })
	ensured := len(f.snapshot())

	// y is lost: its objects leave translation, which reads x alone.
	e.Set([]Desired{{Model: model("a", 1, "x"), Version: 1}, {Model: model("b", 1, "x"), Version: 1}}, []string{"x"})
	eventually(t, "b ensured without y", func() bool { return e.Settled("b") && f.count("ensure", "b") == 2 })
	time.Sleep(200 * time.Millisecond) // room for a wrong delete to happen
	for _, c := range f.snapshot()[ensured:] {
		if c.Op == "delete" {
			t.Errorf("deleted while y was not read: %+v", c)
		}
	}
	if e.Settled("c") {
		t.Error("c, parked in an unknown cluster, reads as settled: its finalizer would be released")
	}

	// y is back and c and b's part in y are really gone now: they go.
	e.Set([]Desired{{Model: model("a", 1, "x"), Version: 1}, {Model: model("b", 1, "x"), Version: 1}}, []string{"x", "y"})
	eventually(t, "c and b's y deleted", func() bool {
		return f.count("delete", "c") == 1 && f.count("delete", "b") == 1 && e.Settled("b")
	})
	if _, ok := e.Result("p", "c"); ok {
		t.Error("c still has an entry after its deletion")
	}
}

// TestFollowerQueuesNothing: before Start (a follower replica), Set only records the desired
// models: the queues stay empty, so that their depth metrics do not count work no worker will
// take. Start (elected) queues every gateway, desired or to delete, once.
func TestFollowerQueuesNothing(t *testing.T) {
	f := &fake{}
	reg := prometheus.NewRegistry()
	e, err := New(Options{Providers: registry{"p": f}, Log: testr.New(t), Registerer: reg, BaseDelay: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	e.Set([]Desired{{Model: model("a", 1), Version: 1}, {Model: model("b", 1), Version: 1}, {Model: model("c", 1), Version: 1}}, nil)
	e.Recheck("a")
	e.RecheckProvider("p")
	e.Set([]Desired{{Model: model("a", 2), Version: 2}, {Model: model("b", 1), Version: 1}}, nil)
	if n := e.queues["p"].q.Len(); n != 0 {
		t.Errorf("a follower's queue holds %d gateways, want 0", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
	}()
	eventually(t, "a and b settled", func() bool { return e.Settled("a") && e.Settled("b") })
	want := map[string]int{"a": 1, "b": 1}
	for gw, n := range want {
		if got := f.count("ensure", gw); got != n {
			t.Errorf("%s ensured %d times, want %d", gw, got, n)
		}
	}
	if got := f.count("ensure", "c"); got != 0 {
		t.Errorf("c, no longer desired, was ensured %d times", got)
	}
	if o, ok := e.Result("p", "a"); !ok || o.Version != 2 {
		t.Errorf("a's result %+v, %v; want one for version 2", o, ok)
	}
}

// TestHolding: a member read as present but empty (its MemberCluster is being deleted) is held
// by the gateways that had resources in it until they are deleted there: b's whole load balancer,
// c's part in it; a gateway parked while the member was unknown holds it too.
func TestHolding(t *testing.T) {
	f := &fake{}
	e, _ := start(t, f, Options{})
	e.Set([]Desired{{Model: model("a", 1, "x"), Version: 1}, {Model: model("b", 1, "y"), Version: 1}, {Model: model("c", 1, "x", "y"), Version: 1}}, []string{"x", "y"})
	eventually(t, "all ensured", func() bool { return e.Settled("a") && e.Settled("b") && e.Settled("c") })
	if diff := cmp.Diff([]string{"b", "c"}, e.Holding("y")); diff != "" {
		t.Errorf("holding y while it has objects (-want +got):\n%s", diff)
	}

	// y unknown (unreachable): b is parked, c keeps its part in y; both still hold it.
	e.Set([]Desired{{Model: model("a", 1, "x"), Version: 1}, {Model: model("c", 1, "x"), Version: 1}}, []string{"x"})
	eventually(t, "c ensured without y", func() bool { return e.Settled("c") && f.count("ensure", "c") == 2 })
	if diff := cmp.Diff([]string{"b", "c"}, e.Holding("y")); diff != "" {
		t.Errorf("holding y while it is unknown (-want +got):\n%s", diff)
	}

	// y read as empty: what was made for it goes, and then nothing holds it.
	e.Set([]Desired{{Model: model("a", 1, "x"), Version: 1}, {Model: model("c", 1, "x"), Version: 1}}, []string{"x", "y"})
	eventually(t, "b and c's part in y deleted", func() bool { return f.count("delete", "b") == 1 && f.count("delete", "c") == 1 && e.Settled("c") })
	eventually(t, "nothing holds y", func() bool { return len(e.Holding("y")) == 0 })
	if diff := cmp.Diff([]string{"a", "c"}, e.Holding("x")); diff != "" {
		t.Errorf("holding x (-want +got):\n%s", diff)
	}
}
