package translate

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/fleetgate/fleetgate/controllers/snapshot"
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
			// Pointing into the snapshot would keep every pass's object arrays alive.
			if _, ok := e.r.meta.(*metav1.ObjectMeta); !ok {
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
		b, a := &before.Routes[i], &after.Routes[i]
		shared := &a.Parents[0] == &b.Parents[0]
		if want := a.Ref.Name != changed.Name; shared != want {
			t.Errorf("%s: parents shared with the pass before: %v, want %v", a.Ref.Name, shared, want)
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
