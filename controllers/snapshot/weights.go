package snapshot

// DefaultClusterWeight is a member's weight when ClusterWeights does not name it (the
// MemberCluster CRD's default).
const DefaultClusterWeight int32 = 100

// ClusterWeight returns a member's weight.
func (s *Snapshot) ClusterWeight(cluster string) int32 {
	if w, ok := s.ClusterWeights[cluster]; ok {
		return w
	}
	return DefaultClusterWeight
}
