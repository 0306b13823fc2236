package aws

import (
	"fmt"
	"math/big"

	"github.com/fleetgate/fleetgate/dataplane/ir"
	"github.com/fleetgate/fleetgate/providers"
)

// ELBv2 limits of a forward action (CreateRule, Actions.ForwardConfig): "You can specify up to 5
// target groups", weights "0-999".
const (
	maxTargetGroupsPerForward = 5
	maxWeight                 = 999
)

// forwardShare is one target group of a forward action before its weight is made an integer.
type forwardShare struct {
	spec   tgSpec
	weight *big.Rat
}

// forward builds the forward action of an ALB route to its valid backends, splitting each backend
// by member cluster so that cluster weights hold: the fleetgate proxy sends a backend's requests to
// its endpoints in proportion to their weights (0 counts as 1), so cluster c of backend b gets
// weight(b) × Σweights(c's endpoints) / Σweights(b's endpoints). When that needs more target
// groups than a forward takes, each backend gets one target group of all its endpoints and ALB's
// round robin weighs clusters by endpoint count; the Note says so.
func (b *builder) forward(route string, backends []ir.Backend, protocol string, version func(*ir.Backend) string) (Action, error) {
	if len(backends) > maxTargetGroupsPerForward {
		return Action{}, fmt.Errorf("route %s: %d backends, ALB forwards to at most %d target groups: %w", route, len(backends), maxTargetGroupsPerForward, errUnsupported)
	}
	shares := b.clusterShares(backends, protocol, version)
	if len(shares) > maxTargetGroupsPerForward {
		b.note("cluster weights of %s approximated by endpoint count: %d target groups needed, ALB allows %d", route, len(shares), maxTargetGroupsPerForward)
		shares = shares[:0]
		for i := range backends {
			be := &backends[i]
			shares = append(shares, forwardShare{
				spec:   tgSpec{backend: be, endpoints: be.Endpoints, protocol: protocol, version: version(be)},
				weight: new(big.Rat).SetInt64(int64(be.Weight)),
			})
		}
	}
	weights := integerWeights(shares)
	var a Action
	for i, s := range shares {
		a.Forward = append(a.Forward, WeightedTargetGroup{TargetGroup: b.targetGroup(s.spec), Weight: weights[i]})
	}
	return a, nil
}

// clusterShares is providers.ClusterShares as target groups of protocol.
func (b *builder) clusterShares(backends []ir.Backend, protocol string, version func(*ir.Backend) string) []forwardShare {
	var shares []forwardShare
	for _, s := range providers.ClusterShares(backends) {
		shares = append(shares, forwardShare{
			spec:   tgSpec{backend: s.Backend, cluster: s.Cluster, endpoints: s.Endpoints, protocol: protocol, version: version(s.Backend)},
			weight: s.Weight,
		})
	}
	return shares
}

// integerWeights turns the exact shares into ALB weights (0-999).
func integerWeights(shares []forwardShare) []int32 {
	ws := make([]*big.Rat, len(shares))
	for i, s := range shares {
		ws[i] = s.weight
	}
	return providers.IntegerWeights(ws, maxWeight)
}
