package snapshot

import v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"

// ClusterWeight returns a member's weight.
func (s *Snapshot) ClusterWeight(cluster string) int32 {
	if w, ok := s.ClusterWeights[cluster]; ok {
		return w
	}
	return v1alpha1.DefaultClusterWeight
}
