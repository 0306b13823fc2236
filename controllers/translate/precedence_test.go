package translate

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

func TestComparePrecedence(t *testing.T) {
	old := metav1.NewTime(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC))
	young := metav1.NewTime(time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC))
	ps := map[string]precedence{
		"exact-short":     {path: rankExact, pathLen: 2, created: young, name: "a/a"},
		"regex":           {path: rankRegex, pathLen: 5, created: young, name: "a/a"},
		"prefix-long":     {path: rankPrefix, pathLen: 10, created: young, name: "a/a"},
		"prefix-method":   {path: rankPrefix, pathLen: 4, method: true, created: young, name: "a/a"},
		"prefix-2headers": {path: rankPrefix, pathLen: 4, headers: 2, created: young, name: "a/a"},
		"prefix-1header":  {path: rankPrefix, pathLen: 4, headers: 1, queries: 3, created: young, name: "a/a"},
		"prefix-query":    {path: rankPrefix, pathLen: 4, queries: 1, created: young, name: "a/a"},
		"prefix-old":      {path: rankPrefix, pathLen: 4, created: old, name: "z/z"},
		"prefix-young-a":  {path: rankPrefix, pathLen: 4, created: young, name: "a/a"},
		"prefix-young-b":  {path: rankPrefix, pathLen: 4, created: young, name: "a/b"},
		"prefix-rule1":    {path: rankPrefix, pathLen: 4, created: young, name: "a/b", rule: 1},
		"grpc-svc-method": {grpc: true, serviceLen: 5, methodLen: 3, created: young},
		"grpc-svc":        {grpc: true, serviceLen: 5, created: old},
		"grpc-header":     {grpc: true, headers: 1, created: old},
		"grpc-any":        {grpc: true, created: old},
	}
	want := []string{
		"exact-short", "regex", "prefix-long", "prefix-method", "prefix-2headers", "prefix-1header",
		"prefix-query", "prefix-old", "prefix-young-a", "prefix-young-b", "prefix-rule1",
		"grpc-svc-method", "grpc-svc", "grpc-header", "grpc-any",
	}
	var got []string
	for k := range ps {
		got = append(got, k)
	}
	slices.SortFunc(got, func(a, b string) int { return comparePrecedence(ps[a], ps[b]) })
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

func TestHTTPMatchPrecedence(t *testing.T) {
	ptr := func(s string) *string { return &s }
	exact, prefix := gwv1.PathMatchExact, gwv1.PathMatchPathPrefix
	_, p, _, err := httpMatch(gwv1.HTTPRouteMatch{Path: &gwv1.HTTPPathMatch{Type: &prefix, Value: ptr("/foo/")}}, "m")
	if err != nil {
		t.Fatal(err)
	}
	if p.path != rankPrefix || p.pathLen != 4 {
		t.Errorf("prefix /foo/: got rank %d len %d, want prefix 4 (trailing slash ignored)", p.path, p.pathLen)
	}
	_, p, _, err = httpMatch(gwv1.HTTPRouteMatch{Path: &gwv1.HTTPPathMatch{Type: &exact, Value: ptr("/")}}, "m")
	if err != nil || p.path != rankExact {
		t.Errorf("exact /: got %+v, %v", p, err)
	}
	if _, _, _, err := httpMatch(gwv1.HTTPRouteMatch{Path: &gwv1.HTTPPathMatch{Type: &prefix, Value: ptr("foo")}}, "m"); err == nil {
		t.Error("relative prefix accepted")
	}
}
