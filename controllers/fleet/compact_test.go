package fleet

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// decodeRoute decodes a route as an informer does: every string its own allocation.
func decodeRoute(t *testing.T, name string) *gwv1.HTTPRoute {
	t.Helper()
	r := &gwv1.HTTPRoute{}
	doc := fmt.Sprintf(`{"metadata":{"namespace":"default","name":%q,"managedFields":[{"manager":"kubectl"}]},
		"spec":{"parentRefs":[{"group":"gateway.networking.k8s.io","kind":"Gateway","name":"gw","sectionName":"http"}]},
		"status":{"parents":[{"controllerName":"fleetgate.dev/gateway-controller",
			"parentRef":{"group":"gateway.networking.k8s.io","kind":"Gateway","name":"gw","namespace":"infra"},
			"conditions":[{"type":"Accepted","status":"True","reason":"Accepted","message":"Route is accepted","lastTransitionTime":"2026-11-28T00:00:00Z"}]}]}}`, name)
	if err := json.Unmarshal([]byte(doc), r); err != nil {
		t.Fatal(err)
	}
	return r
}

// strs lists the strings of a route that CacheTransform shares.
func strs(r *gwv1.HTTPRoute) []string {
	p := r.Status.Parents[0]
	c := p.Conditions[0]
	sr := r.Spec.ParentRefs[0]
	return []string{r.Namespace, string(*sr.Group), string(*sr.Kind), string(sr.Name), string(*sr.SectionName),
		string(p.ControllerName), string(*p.ParentRef.Group), string(*p.ParentRef.Kind), string(p.ParentRef.Name),
		string(*p.ParentRef.Namespace), c.Type, c.Reason, c.Message}
}

func TestCacheTransformSharesStrings(t *testing.T) {
	transform := CacheTransform()
	a, b := decodeRoute(t, "a"), decodeRoute(t, "b")
	want := strs(decodeRoute(t, "c"))
	for _, r := range []*gwv1.HTTPRoute{a, b} {
		if _, err := transform(r); err != nil {
			t.Fatal(err)
		}
		if r.ManagedFields != nil {
			t.Errorf("route %s keeps its managedFields", r.Name)
		}
		if diff := cmp.Diff(want, strs(r)); diff != "" {
			t.Errorf("route %s changed (-want +got):\n%s", r.Name, diff)
		}
	}
	if a.Name == b.Name {
		t.Fatal("the routes' names were made one")
	}
	for i, s := range strs(a) {
		if unsafe.StringData(s) != unsafe.StringData(strs(b)[i]) {
			t.Errorf("string %q: two copies after the transform", s)
		}
	}
}

// Other kinds keep their fields and share their namespace.
func TestCacheTransformOtherKinds(t *testing.T) {
	transform := CacheTransform()
	var got []string
	for _, name := range []string{"a", "b"} {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: strings.Clone("team-a"), Name: name,
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}}}
		o, err := transform(svc)
		if err != nil {
			t.Fatal(err)
		}
		svc = o.(*corev1.Service)
		if svc.ManagedFields != nil || svc.Name != name || svc.Namespace != "team-a" {
			t.Errorf("service %s after the transform: %+v", name, svc.ObjectMeta)
		}
		got = append(got, svc.Namespace)
	}
	if unsafe.StringData(got[0]) != unsafe.StringData(got[1]) {
		t.Error("two copies of the namespace after the transform")
	}
}

// A tenant writing unique strings fills the table once: it stops growing at its bound, and
// strings over the length bound are not kept.
func TestInternerBounded(t *testing.T) {
	in := &interner{strings: map[string]string{}}
	for i := range internMaxStrings + 100 {
		in.intern(fmt.Sprintf("message %d", i))
	}
	if got := len(in.strings); got != internMaxStrings {
		t.Errorf("%d strings kept, want the bound %d", got, internMaxStrings)
	}
	in = &interner{strings: map[string]string{}}
	long := strings.Repeat("x", internMaxLen+1)
	if in.intern(long) != long || len(in.strings) != 0 {
		t.Errorf("a string over %d bytes was kept", internMaxLen)
	}
}
