package translate

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/fleetgate/fleetgate/controllers/snapshot"
	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// versioned gives every object of s what the API server would: a UID (from its name) and a
// resourceVersion that changes whenever its content does (a hash of it), so that snapshots of
// different golden files can share one Memo exactly as successive states of one cluster would.
func versioned(t *testing.T, s *snapshot.Snapshot) *snapshot.Snapshot {
	t.Helper()
	// Every list of the snapshot, found by reflection so that a new input kind cannot be missed.
	v := reflect.ValueOf(s).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		if f.Kind() != reflect.Slice {
			continue
		}
		for j := range f.Len() {
			o := f.Index(j)
			m, ok := o.Addr().MethodByName("Meta").Call(nil)[0].Interface().(metav1.Object)
			if !ok {
				t.Fatalf("snapshot field %s has no object metadata", v.Type().Field(i).Name)
			}
			if m.GetUID() == "" {
				m.SetUID(types.UID(fmt.Sprintf("%s/%s/%s/%s", o.FieldByName("Cluster").String(), v.Type().Field(i).Name, m.GetNamespace(), m.GetName())))
			}
			js, err := json.Marshal(o.FieldByName("Obj").Interface())
			if err != nil {
				t.Fatal(err)
			}
			h := fnv.New64a()
			h.Write(js)
			m.SetResourceVersion(fmt.Sprint(h.Sum64()))
			if name := v.Type().Field(i).Name; name == "Gateways" || name == "GatewayClasses" || name == "ListenerSets" {
				// The Memo takes these by generation, which the API server raises on every change of
				// their specs (fleetgate's status writes change only their resourceVersions).
				js, err := json.Marshal(o.FieldByName("Obj").Elem().FieldByName("Spec").Interface())
				if err != nil {
					t.Fatal(err)
				}
				h := fnv.New64a()
				h.Write(js)
				m.SetGeneration(int64(h.Sum64() >> 1))
			}
		}
	}
	return s
}

func loadVersioned(t *testing.T, in string, fx fixtures) *snapshot.Snapshot {
	t.Helper()
	data, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	s, err := loadSnapshot(data, fx)
	if err != nil {
		t.Fatal(err)
	}
	return versioned(t, s)
}

func render(t *testing.T, res *Result, fx fixtures) string {
	t.Helper()
	out, err := renderResult(res, fx)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// TestMemoMatchesTranslate runs every golden input through one shared Memo, forwards and then
// backwards (so inputs meet routes compiled for other inputs), twice each, and requires exactly
// what Translate returns; the second translation of each input must reuse all its routes. It
// does so without a catalog and with the goldens' one, whose refusals differ per parent class.
func TestMemoMatchesTranslate(t *testing.T) {
	for name, opts := range map[string][]Option{"no catalog": nil, "catalog": {WithCatalog(testCatalog{})}} {
		t.Run(name, func(t *testing.T) { testMemoMatchesTranslate(t, opts) })
	}
}

func testMemoMatchesTranslate(t *testing.T, opts []Option) {
	fx := readFixtures(t)
	ins, err := filepath.Glob(filepath.Join("testdata", "*.in.yaml"))
	if err != nil || len(ins) == 0 {
		t.Fatalf("no golden inputs: %v", err)
	}
	c := NewMemo(opts...)
	order := slices.Clone(ins)
	for i := len(ins) - 1; i >= 0; i-- {
		order = append(order, ins[i])
	}
	reused, hostsReused := 0, 0
	for _, in := range order {
		name := strings.TrimSuffix(filepath.Base(in), ".in.yaml")
		s := loadVersioned(t, in, fx)
		want := render(t, Translate(s, opts...), fx)
		for pass := range 2 {
			got := render(t, c.Translate(s), fx)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("%s, pass %d: cached translation differs (-Translate +Memo.Translate):\n%s", name, pass, diff)
			}
		}
		for k, e := range c.routes {
			// Pointing into a snapshot other than through src (cleared by the first snapshot of
			// other objects) would keep every pass's object arrays alive.
			if _, ok := e.r.meta.(*metav1.ObjectMeta); !ok && e.r.meta != e.src {
				t.Fatalf("%s: cached route %v keeps its snapshot object (%T)", name, k, e.r.meta)
			}
		}
		routes := len(s.HTTPRoutes) + len(s.GRPCRoutes) + len(s.TLSRoutes) + len(s.TCPRoutes) + len(s.UDPRoutes)
		if c.hits+c.uncached != routes {
			t.Errorf("%s: second pass reused %d of %d routes (%d not cacheable)", name, c.hits, routes, c.uncached)
		}
		reused += c.hits
		hostsReused += c.hosts.hits
	}
	if reused == 0 {
		t.Fatal("the memo never reused a route")
	}
	if hostsReused == 0 {
		t.Fatal("the memo never reused a virtual host")
	}
}

// TestMemoForgetsParents: a remembered route is handed to every pass that reuses it, so a pass in
// which it attaches nowhere must not report the parents of the pass before.
func TestMemoForgetsParents(t *testing.T) {
	fx := readFixtures(t)
	with := fleetSnapshot(3)
	without := *with
	without.Gateways = nil
	c := NewMemo()
	for i, s := range []*snapshot.Snapshot{with, &without, with} {
		want := render(t, Translate(s), fx)
		got := render(t, c.Translate(s), fx)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("pass %d: cached translation differs (-Translate +Memo.Translate):\n%s", i, diff)
		}
		if c.hits == 0 && i > 0 {
			t.Fatalf("pass %d reused no route", i)
		}
	}
	if res := c.Translate(&without); len(res.Routes) != 0 {
		t.Errorf("without Gateways the routes still have statuses: %+v", res.Routes)
	}
}

// TestMemoKeepsUnchangedStatuses: a pass hands on the parent statuses of the pass before for the
// routes whose statuses did not change (no allocation, and Same at once), and new ones for the rest.
func TestMemoKeepsUnchangedStatuses(t *testing.T) {
	c := NewMemo()
	before := c.Translate(fleetSnapshot(3))
	s := fleetSnapshot(3)
	changed := s.HTTPRoutes[1].Obj
	changed.Generation, changed.ResourceVersion = 2, "changed"
	after := c.Translate(s)
	if len(before.Routes) != 3 || len(after.Routes) != 3 {
		t.Fatalf("want 3 route statuses before and after, got %d and %d", len(before.Routes), len(after.Routes))
	}
	for i := range after.Routes {
		b, a := before.Routes[i], after.Routes[i]
		shared := &a.Parents[0] == &b.Parents[0]
		if want := a.Ref.Name != changed.Name; shared != want || (a == b) != want {
			t.Errorf("%s: parents shared with the pass before: %v, the very status: %v; want %v", a.Ref.Name, shared, a == b, want)
		}
		if got := a.Parents[0].Conditions[0].ObservedGeneration; got != a.Generation {
			t.Errorf("%s: observedGeneration %d, want %d", a.Ref.Name, got, a.Generation)
		}
		if a.Same(b) != (a.Ref.Name != changed.Name) {
			t.Errorf("%s: Same = %v across the change", a.Ref.Name, a.Same(b))
		}
	}
}

// TestMemoFollowsChanges: routes deleted, added and changed between passes, alone and in runs,
// are told apart from the unchanged ones, which are all reused, found in snapshot order or not.
func TestMemoFollowsChanges(t *testing.T) {
	fx := readFixtures(t)
	drop := func(s *snapshot.Snapshot, names ...string) *snapshot.Snapshot {
		s.HTTPRoutes = slices.DeleteFunc(s.HTTPRoutes, func(o snapshot.Object[gwv1.HTTPRoute]) bool { return slices.Contains(names, o.Obj.Name) })
		return s
	}
	change := func(s *snapshot.Snapshot, name string) *snapshot.Snapshot {
		for _, o := range s.HTTPRoutes {
			if o.Obj.Name == name {
				o.Obj.ResourceVersion += "x"
				o.Obj.Spec.Hostnames = append(o.Obj.Spec.Hostnames, "more.example.com")
			}
		}
		return s
	}
	c := NewMemo()
	c.Translate(fleetSnapshot(30))
	for _, step := range []struct {
		name  string
		s     *snapshot.Snapshot
		reuse int
	}{
		{"one deleted", drop(fleetSnapshot(30), "r7"), 29},
		{"it comes back", fleetSnapshot(30), 29},
		{"a run deleted", drop(fleetSnapshot(30), "r3", "r6", "r9", "r12", "r15"), 25},
		{"the run back and three more", fleetSnapshot(33), 25},
		{"one changed", change(fleetSnapshot(33), "r12"), 32},
		{"one changed, one back, one deleted, one added", change(drop(fleetSnapshot(34), "r20"), "r4"), 30},
	} {
		want := render(t, Translate(step.s), fx)
		if diff := cmp.Diff(want, render(t, c.Translate(step.s), fx)); diff != "" {
			t.Fatalf("%s: cached translation differs (-Translate +Memo.Translate):\n%s", step.name, diff)
		}
		if c.hits != step.reuse {
			t.Errorf("%s: reused %d routes, want %d", step.name, c.hits, step.reuse)
		}
	}
}

// TestMemoRandomChanges: passes of one Memo over a run of random changes (routes added, deleted,
// given other hostnames or paths, on listeners that share a port and own each other's hostnames
// by specificity; now and then a listener more or less) equal Translate from scratch, whether the
// pass built a port group's hosts host by host or whole, and attached unchanged routes as before
// or anew; most passes must have done the former.
func TestMemoRandomChanges(t *testing.T) {
	fx := readFixtures(t)
	rnd := rand.New(rand.NewPCG(22, 12))
	hostnames := func() []gwv1.Hostname {
		switch n := rnd.IntN(20); {
		case n == 0:
			return nil // the listeners' hostnames, the catch-all among them
		case n == 1:
			return []gwv1.Hostname{"*.example.com"}
		case n < 5:
			return []gwv1.Hostname{gwv1.Hostname(fmt.Sprintf("h%d.example.com", rnd.IntN(8))), "x.other.org"}
		default:
			return []gwv1.Hostname{gwv1.Hostname(fmt.Sprintf("h%d.example.com", rnd.IntN(8)))}
		}
	}
	newRoute := func(i, version int) *gwv1.HTTPRoute {
		r := scaleRoute(i)
		r.CreationTimestamp = metav1.NewTime(time.Unix(int64(1000+i%17), 0))
		r.ResourceVersion = fmt.Sprintf("%d-%d", i, version)
		r.Spec.Hostnames = hostnames()
		for range rnd.IntN(3) {
			r.Spec.Rules = append(r.Spec.Rules, gwv1.HTTPRouteRule{
				Matches:     []gwv1.HTTPRouteMatch{{Path: &gwv1.HTTPPathMatch{Value: ptr.To(fmt.Sprintf("/p%d", rnd.IntN(4)))}}},
				BackendRefs: r.Spec.Rules[0].BackendRefs,
			})
		}
		return r
	}
	routes := map[int]*gwv1.HTTPRoute{}
	next := 0
	for range 30 {
		routes[next] = newRoute(next, 0)
		next++
	}
	extra := false // a listener of h2.example.com on the Gateways, whose generation it raises
	snap := func() *snapshot.Snapshot {
		s := membersSnapshot(3, 0)
		for _, gw := range s.Gateways {
			gw.Obj.Spec.Listeners = []gwv1.Listener{
				{Name: "any", Port: 80, Protocol: gwv1.HTTPProtocolType},
				{Name: "wild", Port: 80, Protocol: gwv1.HTTPProtocolType, Hostname: ptr.To(gwv1.Hostname("*.example.com"))},
				{Name: "h1", Port: 80, Protocol: gwv1.HTTPProtocolType, Hostname: ptr.To(gwv1.Hostname("h1.example.com"))},
			}
			if extra {
				gw.Obj.Generation = 2
				gw.Obj.Spec.Listeners = append(gw.Obj.Spec.Listeners, gwv1.Listener{Name: "h2", Port: 80, Protocol: gwv1.HTTPProtocolType, Hostname: ptr.To(gwv1.Hostname("h2.example.com"))})
			}
		}
		for i, r := range routes {
			s.HTTPRoutes = append(s.HTTPRoutes, snapshot.Object[gwv1.HTTPRoute]{Cluster: fmt.Sprintf("member-%d", i%3), Obj: r})
		}
		for i := range s.HTTPRoutes {
			if s.HTTPRoutes[i].Cluster == "member-0" {
				s.HTTPRoutes[i].Cluster = "hub"
			}
		}
		return s.Sort()
	}
	c := NewMemo()
	hostByHost, replayed := 0, 0
	const steps = 120
	for step := range steps {
		if rnd.IntN(10) == 0 {
			extra = !extra
		}
		keys := slices.Sorted(maps.Keys(routes))
		for range 1 + rnd.IntN(2) {
			switch k := keys[rnd.IntN(len(keys))]; rnd.IntN(4) {
			case 0:
				routes[next] = newRoute(next, step)
				next++
			case 1:
				delete(routes, k)
			default:
				routes[k] = newRoute(k, step+1)
			}
		}
		s := snap()
		want := render(t, Translate(s), fx)
		if diff := cmp.Diff(want, render(t, c.Translate(s), fx)); diff != "" {
			t.Fatalf("step %d: cached translation differs (-Translate +Memo.Translate):\n%s", step, diff)
		}
		if c.hosts.rebuilt == 0 {
			hostByHost++
		}
		replayed += c.hosts.replayed
	}
	if hostByHost < steps/2 {
		t.Errorf("%d of %d passes built the hosts host by host, want at least half", hostByHost, steps)
	}
	// About 30 routes a pass, most of them unchanged, in passes of the same Gateways.
	if replayed < steps*10 {
		t.Errorf("%d routes attached as in the pass before over %d passes, want at least %d", replayed, steps, steps*10)
	}
}

// TestMemoKeepsUnchangedHosts: after one route is added, every other host of the pass has the
// very route list of the pass before (the config server sees it unchanged by its backing array),
// and the new host is added in its place.
func TestMemoKeepsUnchangedHosts(t *testing.T) {
	c := NewMemo()
	before := c.Translate(fleetSnapshot(300)).Configs[0].Listeners[0].VirtualHosts
	after := c.Translate(fleetSnapshot(301)).Configs[0].Listeners[0].VirtualHosts
	if c.hosts.rebuilt != 0 {
		t.Errorf("the pass after one added route built %d port groups whole", c.hosts.rebuilt)
	}
	if len(after) != len(before)+1 {
		t.Fatalf("%d hosts after one route was added to %d", len(after), len(before))
	}
	was := map[string]*ir.Route{}
	for _, vh := range before {
		was[vh.Hostname] = &vh.Routes[0]
	}
	for _, vh := range after {
		if p, ok := was[vh.Hostname]; ok != (p == &vh.Routes[0]) || !ok && vh.Hostname != "r300.example.com" {
			t.Errorf("host %s: in the pass before %v, route list shared %v", vh.Hostname, ok, p == &vh.Routes[0])
		}
	}
}

// TestMemoKnowsObjectsByPointer: a route object the last pass compiled, handed over again (as the
// caches hand out their own objects), is reused without reading it; copies of the objects are
// reused by UID and resourceVersion and are not kept, so that no snapshot stays alive.
func TestMemoKnowsObjectsByPointer(t *testing.T) {
	fx := readFixtures(t)
	s := fleetSnapshot(30)
	c := NewMemo()
	c.Translate(s)
	want := render(t, Translate(s), fx)
	copied := *s
	copied.HTTPRoutes = slices.Clone(s.HTTPRoutes)
	for i := range copied.HTTPRoutes {
		copied.HTTPRoutes[i].Obj = copied.HTTPRoutes[i].Obj.DeepCopy()
	}
	for _, step := range []struct {
		name        string
		s           *snapshot.Snapshot
		known, hits int
	}{
		{"the same objects", s, 30, 30},
		{"copies", &copied, 0, 30},
		{"the copies again", &copied, 0, 30},
	} {
		if diff := cmp.Diff(want, render(t, c.Translate(step.s), fx)); diff != "" {
			t.Fatalf("%s: cached translation differs (-Translate +Memo.Translate):\n%s", step.name, diff)
		}
		if c.known != step.known || c.hits != step.hits {
			t.Errorf("%s: %d routes reused, %d of them by their object; want %d, %d", step.name, c.hits, c.known, step.hits, step.known)
		}
	}
	held := map[metav1.Object]bool{}
	for _, snap := range []*snapshot.Snapshot{s, &copied} {
		for _, o := range snap.HTTPRoutes {
			held[o.Obj] = true
		}
	}
	for k, e := range c.routes {
		if e.src != nil {
			t.Errorf("route %v keeps an object of a snapshot of copies", k)
		}
		if held[e.r.meta] {
			t.Errorf("route %v keeps the metadata of a snapshot's object, not a copy", k)
		}
	}
}

// TestMemoSharesCachedMetadata: a route compiled from a cache's own object keeps that object's
// metadata, not a copy of it (the memo holds the object anyway while it is the cache's).
func TestMemoSharesCachedMetadata(t *testing.T) {
	s := fleetSnapshot(3)
	c := NewMemo()
	c.Translate(s)
	c.Translate(s)
	if len(c.routes) != len(s.HTTPRoutes) {
		t.Fatalf("%d routes remembered, want %d", len(c.routes), len(s.HTTPRoutes))
	}
	for k, e := range c.routes {
		if e.r.meta != e.src || e.src == nil {
			t.Errorf("route %v: metadata %p, object %p: want the object itself", k, e.r.meta, e.src)
		}
	}
}

// TestMemoPlacesNewRoutesByAge: a route new to the memo that is older than remembered ones takes its
// place before them (the memo sorts only new routes into the remembered order), so that it is the
// one whose hostnames fit within the listener's limit, as in a translation from scratch.
func TestMemoPlacesNewRoutesByAge(t *testing.T) {
	fx := readFixtures(t)
	s := loadVersioned(t, filepath.Join("testdata", "caps-hostnames-per-listener.in.yaml"), fx)
	without := *s // the same objects but the oldest route
	without.HTTPRoutes = slices.DeleteFunc(slices.Clone(s.HTTPRoutes), func(o snapshot.Object[gwv1.HTTPRoute]) bool { return o.Obj.Name == "first" })
	if len(without.HTTPRoutes) != len(s.HTTPRoutes)-1 {
		t.Fatal("no route named first in the golden input")
	}
	c := NewMemo(WithCatalog(testCatalog{}))
	c.Translate(&without)
	want := render(t, Translate(s, WithCatalog(testCatalog{})), fx)
	if diff := cmp.Diff(want, render(t, c.Translate(s), fx)); diff != "" {
		t.Errorf("memo differs from a translation from scratch (-Translate +Memo.Translate):\n%s", diff)
	}
}

// TestMemoListenersWithoutGeneration: a Gateway whose listeners change while its generation does
// not (never through the API server, which raises it on every spec change) must not make the Memo
// replay attachments to listeners that are gone; the pass equals Translate.
func TestMemoListenersWithoutGeneration(t *testing.T) {
	fx := readFixtures(t)
	withListeners := func(n int) *snapshot.Snapshot {
		s := fleetSnapshot(30)
		for _, g := range s.Gateways {
			g.Obj.Spec.Listeners = nil
			for i := range n {
				g.Obj.Spec.Listeners = append(g.Obj.Spec.Listeners, gwv1.Listener{
					Name: gwv1.SectionName(fmt.Sprintf("http-%d", i)), Port: gwv1.PortNumber(80 + i), Protocol: gwv1.HTTPProtocolType})
			}
		}
		return s
	}
	c := NewMemo()
	c.Translate(withListeners(2))
	c.Translate(withListeners(2))
	if c.hosts.replayed == 0 {
		t.Fatal("the second pass replayed no attachment: the test proves nothing")
	}
	for _, n := range []int{1, 3, 2} {
		s := withListeners(n)
		want := render(t, Translate(s), fx)
		if diff := cmp.Diff(want, render(t, c.Translate(s), fx)); diff != "" {
			t.Fatalf("%d listeners: cached translation differs (-Translate +Memo.Translate):\n%s", n, diff)
		}
	}
}
