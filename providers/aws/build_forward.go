package aws

import (
	"fmt"
	"math/big"
	"slices"

	"github.com/fleetgate/fleetgate/dataplane/ir"
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

// clusterShares is one share per (backend, cluster), clusters sorted; a backend without endpoints
// is one share of no targets (ALB answers 503 for it, as the proxy does).
func (b *builder) clusterShares(backends []ir.Backend, protocol string, version func(*ir.Backend) string) []forwardShare {
	var shares []forwardShare
	for i := range backends {
		be := &backends[i]
		byCluster := map[string][]ir.Endpoint{}
		sums := map[string]int64{}
		var total int64
		for _, e := range be.Endpoints {
			w := max(int64(e.Weight), 1)
			byCluster[e.Cluster] = append(byCluster[e.Cluster], e)
			sums[e.Cluster] += w
			total += w
		}
		if total == 0 {
			shares = append(shares, forwardShare{
				spec:   tgSpec{backend: be, protocol: protocol, version: version(be)},
				weight: new(big.Rat).SetInt64(int64(be.Weight)),
			})
			continue
		}
		clusters := make([]string, 0, len(byCluster))
		for c := range byCluster {
			clusters = append(clusters, c)
		}
		slices.Sort(clusters)
		for _, c := range clusters {
			shares = append(shares, forwardShare{
				spec:   tgSpec{backend: be, cluster: c, endpoints: byCluster[c], protocol: protocol, version: version(be)},
				weight: big.NewRat(int64(be.Weight)*sums[c], total),
			})
		}
	}
	return shares
}

// integerWeights turns the exact shares into ALB weights (0-999) with the same ratios when they fit
// (smallest integers), else scaled so the largest is 999, rounding, and keeping every non-zero
// share at 1 at least so that no backend silently loses all its traffic.
func integerWeights(shares []forwardShare) []int32 {
	lcm := big.NewInt(1)
	for _, s := range shares {
		d := s.weight.Denom()
		g := new(big.Int).GCD(nil, nil, lcm, d)
		lcm.Mul(lcm, new(big.Int).Quo(d, g))
	}
	ints := make([]*big.Int, len(shares))
	gcd := new(big.Int)
	largest := new(big.Int)
	for i, s := range shares {
		n := new(big.Rat).Mul(s.weight, new(big.Rat).SetInt(lcm))
		ints[i] = new(big.Int).Set(n.Num())
		gcd.GCD(nil, nil, gcd, ints[i])
		if ints[i].Cmp(largest) > 0 {
			largest.Set(ints[i])
		}
	}
	out := make([]int32, len(shares))
	if largest.Sign() == 0 {
		return out
	}
	limit := big.NewInt(maxWeight)
	for i, n := range ints {
		n.Quo(n, gcd)
		if l := new(big.Int).Quo(largest, gcd); l.Cmp(limit) > 0 {
			// round(n × 999 / largest)
			r := new(big.Rat).SetFrac(new(big.Int).Mul(n, limit), l)
			f, _ := r.Float64()
			w := int32(f + 0.5)
			if w == 0 && n.Sign() > 0 {
				w = 1
			}
			out[i] = w
			continue
		}
		out[i] = int32(n.Int64())
	}
	return out
}
