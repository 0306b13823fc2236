package snapshot

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

func TestSort(t *testing.T) {
	gw := func(cluster, ns, name string) Object[gwv1.Gateway] {
		return Object[gwv1.Gateway]{Cluster: cluster, Obj: &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}}
	}
	s := &Snapshot{Gateways: []Object[gwv1.Gateway]{
		gw("west", "a", "x"), gw("hub", "b", "a"), {Cluster: "hub"}, gw("hub", "a", "z"), gw("east", "z", "z"), gw("hub", "a", "b"),
	}}
	s.Sort()
	var got []string
	for _, o := range s.Gateways {
		got = append(got, o.Cluster+"/"+o.Obj.Namespace+"/"+o.Obj.Name)
	}
	want := []string{"east/z/z", "hub/a/b", "hub/a/z", "hub/b/a", "west/a/x"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"east", "hub", "west"}, s.Clusters()); diff != "" {
		t.Errorf("clusters (-want +got):\n%s", diff)
	}
}

// TestSortEveryList: Sort finds every list of the snapshot by its type.
func TestSortEveryList(t *testing.T) {
	s := &Snapshot{}
	v := reflect.ValueOf(s).Elem()
	lists := 0
	for i := range v.NumField() {
		f := v.Field(i)
		if f.Kind() != reflect.Slice {
			continue
		}
		// Two entries out of order and one without an object.
		l := reflect.MakeSlice(f.Type(), 3, 3)
		for j, name := range []string{"b", "a"} {
			obj := reflect.New(f.Type().Elem().Field(1).Type.Elem())
			obj.Interface().(metav1.Object).SetName(name)
			l.Index(j).Field(1).Set(obj)
		}
		f.Set(l)
		lists++
	}
	s.Sort()
	for i := range v.NumField() {
		f := v.Field(i)
		if f.Kind() != reflect.Slice {
			continue
		}
		var got []string
		for j := range f.Len() {
			got = append(got, f.Index(j).Field(1).Interface().(metav1.Object).GetName())
		}
		if diff := cmp.Diff([]string{"a", "b"}, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", v.Type().Field(i).Name, diff)
		}
	}
	if lists < 20 {
		t.Errorf("%d lists found, want every one", lists)
	}
}

func TestReferenceGrantFromLegacy(t *testing.T) {
	g, err := ReferenceGrantFromLegacy(map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1alpha2", "kind": "ReferencePolicy",
		"metadata": map[string]any{"name": "p", "namespace": "apps"},
		"spec": map[string]any{
			"from": []any{map[string]any{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "namespace": "web"}},
			"to":   []any{map[string]any{"group": "", "kind": "Service"}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if g.Kind != "ReferenceGrant" || g.Namespace != "apps" || len(g.Spec.From) != 1 || g.Spec.To[0].Kind != "Service" {
		t.Errorf("unexpected grant %+v", g)
	}
	if _, err := ReferenceGrantFromLegacy(map[string]any{"spec": "nope"}); err == nil {
		t.Error("malformed policy accepted")
	}
}

// TestDependencies: the lists a compiled route may depend on, in snapshot order.
func TestDependencies(t *testing.T) {
	s := &Snapshot{}
	v := reflect.ValueOf(s).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		if f.Kind() != reflect.Slice {
			continue
		}
		l := reflect.MakeSlice(f.Type(), 1, 1)
		obj := reflect.New(f.Type().Elem().Field(1).Type.Elem())
		obj.Interface().(metav1.Object).SetName(v.Type().Field(i).Name)
		l.Index(0).Field(1).Set(obj)
		l.Index(0).Field(0).SetString("hub")
		f.Set(l)
	}
	var got []string
	s.Dependencies(func(cluster string, m metav1.Object) { got = append(got, cluster+"/"+m.GetName()) })
	want := []string{"hub/ReferenceGrants", "hub/Services", "hub/EndpointSlices", "hub/ServiceImports",
		"hub/ServiceExports", "hub/ConfigMaps", "hub/BackendTLSPolicies"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("dependencies (-want +got):\n%s", diff)
	}
}

// TestSortFromMatchesSort: snapshots of the same objects (the same pointers, as informer caches
// hand them out) in a new random order each time, some added, deleted or replaced by a new
// version, sorted through one Order, come out as Sort sorts them; so do copies of every object,
// lists holding an object twice, lists leaving one out that comes back in the next, and the list
// the last call returned.
func TestSortFromMatchesSort(t *testing.T) {
	rnd := rand.New(rand.NewPCG(12, 22))
	clusters := []string{"hub", "east", "west"}
	live := map[string]Object[gwv1.HTTPRoute]{}
	add := func() {
		c, name := clusters[rnd.IntN(3)], fmt.Sprintf("r%d", rnd.IntN(400))
		live[c+"/"+name] = Object[gwv1.HTTPRoute]{Cluster: c, Obj: &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "ns" + fmt.Sprint(rnd.IntN(3)), Name: name}}}
	}
	for range 200 {
		add()
	}
	var o Order
	for step := range 400 {
		for range rnd.IntN(4) {
			add() // new, or a new version of one
		}
		for k := range live {
			if rnd.IntN(100) == 0 {
				delete(live, k)
			}
		}
		list := slices.Collect(maps.Values(live)) // map order: random, as a cache lists
		if step%7 == 3 && len(list) > 0 {
			list = append(list, list[rnd.IntN(len(list))]) // one object twice
		}
		if step%5 == 2 && len(list) > 0 {
			i := rnd.IntN(len(list)) // one object left out of this list only
			list = slices.Delete(list, i, i+1)
		}
		if step%50 == 49 {
			for i := range list {
				c := *list[i].Obj
				list[i].Obj = &c // copies, not the same objects
			}
		}
		want := (&Snapshot{HTTPRoutes: slices.Clone(list)}).Sort().HTTPRoutes
		got := (&Snapshot{HTTPRoutes: list}).SortFrom(&o).HTTPRoutes
		if !slices.Equal(want, got) {
			t.Fatalf("step %d: SortFrom's order differs from Sort's", step)
		}
		if step%9 == 4 {
			// The very list the last call returned: the array SortFrom reads the last order
			// from is the one it is given.
			if again := (&Snapshot{HTTPRoutes: got}).SortFrom(&o).HTTPRoutes; !slices.Equal(want, again) {
				t.Fatalf("step %d: SortFrom of its own last list differs from Sort's", step)
			}
		}
		// Every slot is an object's place or free, and the map holds no object that left.
		if lo := o.lists["HTTPRoutes"].(*listOrder[gwv1.HTTPRoute]); lo.at != nil &&
			(int(lo.n) != len(lo.slots)+len(lo.free) || len(lo.at) > len(lo.slots)) {
			t.Fatalf("step %d: %d slots, %d places + %d free, %d objects mapped", step, lo.n, len(lo.slots), len(lo.free), len(lo.at))
		}
	}
}

// TestLists: Lists names every list with its objects, in snapshot order.
func TestLists(t *testing.T) {
	gw := func(cluster, ns, name string) Object[gwv1.Gateway] {
		return Object[gwv1.Gateway]{Cluster: cluster, Obj: &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}}
	}
	s := (&Snapshot{
		Gateways:   []Object[gwv1.Gateway]{gw("hub", "b", "x"), gw("hub", "a", "y")},
		HTTPRoutes: []Object[gwv1.HTTPRoute]{{Cluster: "east", Obj: &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "n", Name: "r"}}}},
	}).Sort()
	var got []string
	s.Lists(func(list, cluster string, m metav1.Object) {
		got = append(got, list+" "+cluster+"/"+m.GetNamespace()+"/"+m.GetName())
	})
	want := []string{"Gateways hub/a/y", "Gateways hub/b/x", "HTTPRoutes east/n/r"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("lists (-want +got):\n%s", diff)
	}
}

// BenchmarkSort20k sorts 20,000 routes in cache order (random), as every pass did.
func BenchmarkSort20k(b *testing.B) {
	lists := routeLists(20000)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		(&Snapshot{HTTPRoutes: slices.Clone(lists[i%2])}).Sort()
	}
}

// BenchmarkSortFrom20k is BenchmarkSort20k through an Order, each pass seeing one route added or
// removed.
func BenchmarkSortFrom20k(b *testing.B) {
	lists := routeLists(20000)
	var o Order
	(&Snapshot{HTTPRoutes: slices.Clone(lists[0])}).SortFrom(&o)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		(&Snapshot{HTTPRoutes: slices.Clone(lists[i%2])}).SortFrom(&o)
	}
}

// routeLists returns n and n+1 routes, the same objects, each list in its own random order.
func routeLists(n int) [2][]Object[gwv1.HTTPRoute] {
	rnd := rand.New(rand.NewPCG(1, 2))
	var all []Object[gwv1.HTTPRoute]
	for i := range n + 1 {
		all = append(all, Object[gwv1.HTTPRoute]{Cluster: "hub", Obj: &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("r%d", i)}}})
	}
	rnd.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	short := slices.Clone(all[:n])
	rnd.Shuffle(len(short), func(i, j int) { short[i], short[j] = short[j], short[i] })
	return [2][]Object[gwv1.HTTPRoute]{short, all}
}
