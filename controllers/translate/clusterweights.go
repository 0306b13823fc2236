package translate

import (
	"fmt"
	"strconv"
	"strings"
)

// ClusterWeightsAnnotation on a route overrides, for its ServiceImport backends, how traffic is split
// across the member clusters that export the service: "member-a=80,member-b=20". Clusters it
// does not name get no traffic. A malformed value is reported in a Warning Event and ignored: the
// members' MemberCluster weights apply.
const ClusterWeightsAnnotation = "fleetgate.dev/cluster-weights"

// maxClusterWeight matches the MemberCluster weight's upper bound.
const maxClusterWeight = 1_000_000

// parseClusterWeights reads the value of ClusterWeightsAnnotation.
func parseClusterWeights(v string) (map[string]int32, error) {
	out := map[string]int32{}
	for part := range strings.SplitSeq(v, ",") {
		cluster, weight, ok := strings.Cut(strings.TrimSpace(part), "=")
		cluster, weight = strings.TrimSpace(cluster), strings.TrimSpace(weight)
		if !ok || cluster == "" {
			return nil, fmt.Errorf("%q is not cluster=weight", strings.TrimSpace(part))
		}
		w, err := strconv.ParseInt(weight, 10, 32)
		if err != nil || w < 0 || w > maxClusterWeight {
			return nil, fmt.Errorf("weight %q of cluster %s is not an integer from 0 to %d", weight, cluster, maxClusterWeight)
		}
		if _, dup := out[cluster]; dup {
			return nil, fmt.Errorf("cluster %s is named twice", cluster)
		}
		out[cluster] = int32(w)
	}
	return out, nil
}
