package aws

import (
	"math/big"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// TestConditions: each route match becomes ALB conditions with the same meaning — values within a
// condition are alternatives, conditions are all required.
func TestConditions(t *testing.T) {
	tests := []struct {
		name  string
		host  string
		match ir.Match
		want  []Condition
	}{
		{name: "any host, prefix / matches everything", host: "*", match: ir.Match{Path: prefix("/")},
			want: []Condition{{Field: fieldPathPattern, Values: []string{"/*"}}}},
		{name: "no path at all", host: "*",
			want: []Condition{{Field: fieldPathPattern, Values: []string{"/*"}}}},
		{name: "host and prefix / need no path condition", host: "a.example.com", match: ir.Match{Path: prefix("/")},
			want: []Condition{{Field: fieldHostHeader, Values: []string{"a.example.com"}}}},
		{name: "prefix with a trailing slash matches by segment", host: "*", match: ir.Match{Path: prefix("/api/")},
			want: []Condition{{Field: fieldPathPattern, Values: []string{"/api", "/api/*"}}}},
		{name: "wildcard host as ALB spells it", host: "*.example.com", match: ir.Match{Path: exact("/x")},
			want: []Condition{{Field: fieldHostHeader, Values: []string{"*.example.com"}}, {Field: fieldPathPattern, Values: []string{"/x"}}}},
		{name: "every header and query parameter is its own condition", host: "*", match: ir.Match{
			Headers:     []ir.KeyMatch{{Name: "a", Type: ir.MatchExact, Value: "1"}, {Name: "b", Type: ir.MatchExact, Value: "2"}},
			QueryParams: []ir.KeyMatch{{Name: "c", Type: ir.MatchExact, Value: "3"}, {Name: "d", Type: ir.MatchExact, Value: "4"}},
		}, want: []Condition{
			{Field: fieldHeader, HeaderName: "a", Values: []string{"1"}},
			{Field: fieldHeader, HeaderName: "b", Values: []string{"2"}},
			{Field: fieldQuery, Query: []KeyValue{{Key: "c", Value: "3"}}},
			{Field: fieldQuery, Query: []KeyValue{{Key: "d", Value: "4"}}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := conditions(tt.host, tt.match)
			if err != nil {
				t.Fatalf("conditions: %v", err)
			}
			if diff := gocmp.Diff(tt.want, got); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRedirectAction: unset parts keep the request's; a prefix replacement of "/" keeps the path.
func TestRedirectAction(t *testing.T) {
	tests := []struct {
		name string
		rd   ir.Redirect
		path *ir.StringMatch
		want Redirect
	}{
		{name: "scheme only", rd: ir.Redirect{Scheme: "https", Port: 443, StatusCode: 302},
			want: Redirect{Protocol: "HTTPS", Host: "#{host}", Port: "443", Path: "/#{path}", Query: "#{query}", StatusCode: "HTTP_302"}},
		{name: "host", rd: ir.Redirect{Hostname: "b.example.com", StatusCode: 301},
			want: Redirect{Protocol: "#{protocol}", Host: "b.example.com", Port: "#{port}", Path: "/#{path}", Query: "#{query}", StatusCode: "HTTP_301"}},
		{name: "prefix / replaced", rd: ir.Redirect{StatusCode: 301, Path: &ir.PathModifier{Type: ir.ReplacePrefixMatch, Value: "/v2/"}}, path: prefix("/"),
			want: Redirect{Protocol: "#{protocol}", Host: "#{host}", Port: "#{port}", Path: "/v2/#{path}", Query: "#{query}", StatusCode: "HTTP_301"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := redirectAction(&tt.rd, tt.path)
			if err != nil {
				t.Fatalf("redirectAction: %v", err)
			}
			if diff := gocmp.Diff(&tt.want, got.Redirect); diff != "" {
				t.Errorf("redirectAction (-want +got):\n%s", diff)
			}
		})
	}
}

// TestIntegerWeights: exact ratios when they fit in 0-999, else scaled with every non-zero share
// kept at 1 at least.
func TestIntegerWeights(t *testing.T) {
	tests := []struct {
		name    string
		weights [][2]int64 // numerator, denominator
		want    []int32
	}{
		{name: "equal", weights: [][2]int64{{1, 1}, {1, 1}}, want: []int32{1, 1}},
		{name: "reduced", weights: [][2]int64{{10, 1}, {30, 1}}, want: []int32{1, 3}},
		{name: "fractions", weights: [][2]int64{{1, 3}, {2, 3}, {1, 2}}, want: []int32{2, 4, 3}},
		{name: "zero stays zero", weights: [][2]int64{{0, 1}, {5, 1}}, want: []int32{0, 1}},
		{name: "scaled", weights: [][2]int64{{2000, 1}, {1000, 1}, {1, 1}}, want: []int32{999, 500, 1}},
		{name: "all zero", weights: [][2]int64{{0, 1}, {0, 1}}, want: []int32{0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			shares := make([]forwardShare, len(tt.weights))
			for i, w := range tt.weights {
				shares[i].weight = big.NewRat(w[0], w[1])
			}
			if diff := gocmp.Diff(tt.want, integerWeights(shares)); diff != "" {
				t.Errorf("integerWeights (-want +got):\n%s", diff)
			}
		})
	}
}
