package providers

import (
	"math/big"
	"slices"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// ClusterShare is the part of one backend's traffic that goes to one member cluster's endpoints.
type ClusterShare struct {
	Backend *ir.Backend
	// Cluster is "" (and Endpoints empty) for a backend without endpoints.
	Cluster   string
	Endpoints []ir.Endpoint
	// Weight is the exact share among the backends of one rule.
	Weight *big.Rat
}

// ClusterShares splits backends by member cluster so that cluster weights hold when a cloud
// weighs per (backend, cluster) group: the fleetgate proxy sends a backend's requests to its
// endpoints in proportion to their weights (0 counts as 1), so cluster c of backend b gets
// weight(b) × Σweights(c's endpoints) / Σweights(b's endpoints). One share per (backend,
// cluster), clusters sorted; a backend without endpoints is one share of no endpoints.
func ClusterShares(backends []ir.Backend) []ClusterShare {
	var shares []ClusterShare
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
			shares = append(shares, ClusterShare{Backend: be, Weight: new(big.Rat).SetInt64(int64(be.Weight))})
			continue
		}
		clusters := make([]string, 0, len(byCluster))
		for c := range byCluster {
			clusters = append(clusters, c)
		}
		slices.Sort(clusters)
		for _, c := range clusters {
			shares = append(shares, ClusterShare{Backend: be, Cluster: c, Endpoints: byCluster[c],
				Weight: big.NewRat(int64(be.Weight)*sums[c], total)})
		}
	}
	return shares
}

// IntegerWeights turns exact shares into a cloud's integer weights (0-limit) with the same ratios when they fit
// (smallest integers), else scaled so the largest is limit, rounding, and keeping every non-zero
// share at 1 at least so that no backend silently loses all its traffic.
func IntegerWeights(weights []*big.Rat, limit int64) []int32 {
	lcm := big.NewInt(1)
	for _, w := range weights {
		d := w.Denom()
		g := new(big.Int).GCD(nil, nil, lcm, d)
		lcm.Mul(lcm, new(big.Int).Quo(d, g))
	}
	ints := make([]*big.Int, len(weights))
	gcd := new(big.Int)
	largest := new(big.Int)
	for i, w := range weights {
		n := new(big.Rat).Mul(w, new(big.Rat).SetInt(lcm))
		ints[i] = new(big.Int).Set(n.Num())
		gcd.GCD(nil, nil, gcd, ints[i])
		if ints[i].Cmp(largest) > 0 {
			largest.Set(ints[i])
		}
	}
	out := make([]int32, len(weights))
	if largest.Sign() == 0 {
		return out
	}
	lim := big.NewInt(limit)
	for i, n := range ints {
		n.Quo(n, gcd)
		if l := new(big.Int).Quo(largest, gcd); l.Cmp(lim) > 0 {
			// round(n × limit / largest)
			r := new(big.Rat).SetFrac(new(big.Int).Mul(n, lim), l)
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
