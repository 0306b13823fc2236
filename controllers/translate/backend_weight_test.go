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
		name    string
		weights map[string]int32
		groups  [][]ir.Endpoint
		want    map[string]uint64 // total weight per cluster
	}{
		{"defaults split equally", nil, [][]ir.Endpoint{eps("a", 1), eps("b", 3)}, map[string]uint64{"a": 3, "b": 3}},
		{"weights 80/20", map[string]int32{"a": 80, "b": 20}, [][]ir.Endpoint{eps("a", 2), eps("b", 1)}, map[string]uint64{"a": 4, "b": 1}},
		{"zero weight withdraws a cluster", map[string]int32{"a": 0, "b": 5}, [][]ir.Endpoint{eps("a", 2), eps("b", 1)}, map[string]uint64{"b": 1}},
		{"all zero share equally", map[string]int32{"a": 0, "b": 0}, [][]ir.Endpoint{eps("a", 1), eps("b", 1)}, map[string]uint64{"a": 1, "b": 1}},
		{"large weights are rounded", map[string]int32{"a": 1000000, "b": 1}, [][]ir.Endpoint{eps("a", 7), eps("b", 3)}, map[string]uint64{"a": 7 * 1048576, "b": 6}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := &translator{snap: &snapshot.Snapshot{ClusterWeights: tt.weights}}
			got := map[string]uint64{}
			for _, e := range tr.weighClusters(tt.groups) {
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
