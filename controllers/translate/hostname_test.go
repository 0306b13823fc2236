package translate

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestHostMatches(t *testing.T) {
	for _, tc := range []struct {
		pattern, host string
		want          bool
	}{
		{"", "a.example.com", true},
		{"", "", true},
		{"a.example.com", "a.example.com", true},
		{"a.example.com", "b.example.com", false},
		{"*.example.com", "a.example.com", true},
		{"*.example.com", "a.b.example.com", true},
		{"*.example.com", "example.com", false},
		{"*.example.com", "aexample.com", false},
		{"*.example.com", "*.example.com", true},
		{"*.example.com", "*.a.example.com", true},
		{"*.a.example.com", "*.example.com", false},
		{"*.example.com", "", false},
		{"a.example.com", "*.example.com", false},
	} {
		if got := hostMatches(tc.pattern, tc.host); got != tc.want {
			t.Errorf("hostMatches(%q, %q) = %v, want %v", tc.pattern, tc.host, got, tc.want)
		}
	}
}

func TestIntersectHostnames(t *testing.T) {
	for _, tc := range []struct {
		name     string
		listener string
		route    []string
		want     []string
	}{
		{"both empty", "", nil, []string{""}},
		{"listener empty", "", []string{"b.com", "a.com"}, []string{"a.com", "b.com"}},
		{"route empty", "a.example.com", nil, []string{"a.example.com"}},
		{"exact equal", "a.example.com", []string{"a.example.com"}, []string{"a.example.com"}},
		{"route wildcard covers listener", "a.example.com", []string{"*.example.com"}, []string{"a.example.com"}},
		{"listener wildcard covers route", "*.example.com", []string{"a.example.com", "a.example.net"}, []string{"a.example.com"}},
		{"deeper route wildcard", "*.example.com", []string{"*.a.example.com"}, []string{"*.a.example.com"}},
		{"deeper listener wildcard", "*.a.example.com", []string{"*.example.com"}, []string{"*.a.example.com"}},
		{"no intersection", "a.example.com", []string{"b.example.com", "example.com"}, nil},
		{"wildcard excludes apex", "*.example.com", []string{"example.com"}, nil},
		{"dedup", "a.example.com", []string{"*.example.com", "a.example.com"}, []string{"a.example.com"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := intersectHostnames(tc.listener, tc.route)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("intersectHostnames(%q, %q) (-want +got):\n%s", tc.listener, tc.route, diff)
			}
		})
	}
}

func TestCompareSpecificity(t *testing.T) {
	in := []string{"", "*.example.com", "b.example.com", "*.a.example.com", "a.example.com", "*.com", "x.a.example.com"}
	want := []string{"x.a.example.com", "a.example.com", "b.example.com", "*.a.example.com", "*.example.com", "*.com", ""}
	got := slices.Clone(in)
	slices.SortFunc(got, compareSpecificity)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sorted (-want +got):\n%s", diff)
	}
	got = slices.Clone(in)
	sortBySpecificity(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sortBySpecificity (-want +got):\n%s", diff)
	}
}

func TestValidHostname(t *testing.T) {
	for h, want := range map[string]bool{
		"example.com": true, "*.example.com": true, "a-b.c": true,
		"": false, "*": false, "-a.com": false, "A.com": false, "a..com": false, "a.*.com": false, "*.": false,
	} {
		if got := validHostname(h); got != want {
			t.Errorf("validHostname(%q) = %v, want %v", h, got, want)
		}
	}
}
