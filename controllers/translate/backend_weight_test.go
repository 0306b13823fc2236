package translate

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetgate/fleetgate/controllers/snapshot"
	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// TestWeighClusters checks that each cluster's share of a ServiceImport backend is its MemberCluster
// weight over the total, whatever its number of endpoints.
func TestWeighClusters(t *testing.T) {
	eps := func(cluster string, n int) []ir.Endpoint {
		var out []ir.Endpoint
		for i := range n {
			out = append(out, ir.Endpoint{Address: "10.0.0." + string(rune('1'+i)), Port: 80, Cluster: cluster})
		}
		return out
	}
	tests := []struct {
		name     string
		weights  map[string]int32
		override map[string]int32 // the route's ClusterWeightsAnnotation
		groups   [][]ir.Endpoint
		want     map[string]uint64 // total weight per cluster
	}{
		{"defaults split equally", nil, nil, [][]ir.Endpoint{eps("a", 1), eps("b", 3)}, map[string]uint64{"a": 3, "b": 3}},
		{"weights 80/20", map[string]int32{"a": 80, "b": 20}, nil, [][]ir.Endpoint{eps("a", 2), eps("b", 1)}, map[string]uint64{"a": 4, "b": 1}},
		{"zero weight withdraws a cluster", map[string]int32{"a": 0, "b": 5}, nil, [][]ir.Endpoint{eps("a", 2), eps("b", 1)}, map[string]uint64{"b": 1}},
		{"all zero share equally", map[string]int32{"a": 0, "b": 0}, nil, [][]ir.Endpoint{eps("a", 1), eps("b", 1)}, map[string]uint64{"a": 1, "b": 1}},
		{"large weights are rounded", map[string]int32{"a": 1000000, "b": 1}, nil, [][]ir.Endpoint{eps("a", 7), eps("b", 3)}, map[string]uint64{"a": 7 * 1048576, "b": 6}},
		{"route overrides members", map[string]int32{"a": 80, "b": 20}, map[string]int32{"a": 1, "b": 3}, [][]ir.Endpoint{eps("a", 1), eps("b", 1)}, map[string]uint64{"a": 1, "b": 3}},
		{"route names one cluster: the other gets none", nil, map[string]int32{"b": 5}, [][]ir.Endpoint{eps("a", 2), eps("b", 1)}, map[string]uint64{"b": 1}},
		{"route names none of them: equal shares", nil, map[string]int32{"c": 5}, [][]ir.Endpoint{eps("a", 1), eps("b", 1)}, map[string]uint64{"a": 1, "b": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := &translator{snap: &snapshot.Snapshot{ClusterWeights: tt.weights}}
			got := map[string]uint64{}
			for _, e := range tr.weighClusters(tt.groups, tt.override) {
				if e.Weight == 0 {
					t.Errorf("endpoint %+v has weight 0, which the proxy reads as 1", e)
				}
				got[e.Cluster] += uint64(e.Weight)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("weight per cluster (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseClusterWeights(t *testing.T) {
	tests := []struct {
		in      string
		want    map[string]int32
		wantErr string
	}{
		{in: "member-a=80,member-b=20", want: map[string]int32{"member-a": 80, "member-b": 20}},
		{in: " hub = 0 , member-a=1000000 ", want: map[string]int32{"hub": 0, "member-a": 1000000}},
		{in: "", wantErr: `"" is not cluster=weight`},
		{in: "a=1,", wantErr: `"" is not cluster=weight`},
		{in: "a:1", wantErr: `"a:1" is not cluster=weight`},
		{in: "=3", wantErr: `"=3" is not cluster=weight`},
		{in: "a=-1", wantErr: `weight "-1" of cluster a is not an integer from 0 to 1000000`},
		{in: "a=1000001", wantErr: `weight "1000001" of cluster a is not an integer from 0 to 1000000`},
		{in: "a=x", wantErr: `weight "x" of cluster a is not an integer from 0 to 1000000`},
		{in: "a=1,a=2", wantErr: "cluster a is named twice"},
	}
	for _, tt := range tests {
		got, err := parseClusterWeights(tt.in)
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		if gotErr != tt.wantErr {
			t.Errorf("parseClusterWeights(%q) error = %q, want %q", tt.in, gotErr, tt.wantErr)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("parseClusterWeights(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}
