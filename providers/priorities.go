package providers

// PriorityRange is the range of rule priorities a cloud takes (lower first) and the spacing of
// new rules, so that later insertions find a gap: ELBv2 listener rules 1-50000, GCP URL map
// route rules 0-2147483647.
type PriorityRange struct {
	Min, Max, Step int32
}

// Assign gives the rules in order (rule IDs, most specific first) strictly increasing
// priorities, keeping as many of the existing (live) priorities as the order allows: the longest
// run of existing priorities already increasing in order is kept, every other rule gets a
// priority in the gap between its kept neighbours (spread evenly there), or after the last kept
// one Step apart. Only when a gap is too small is everything renumbered. So adding or
// removing a route moves no other rule, and a reordering moves as few rules as possible.
func (r PriorityRange) Assign(order []string, existing map[string]int32) map[string]int32 {
	kept := r.kept(order, existing)
	out := make(map[string]int32, len(order))
	lo := r.Min - 1
	start := 0
	for i := 0; i <= len(order); i++ {
		if i < len(order) && !kept[i] {
			continue
		}
		hi, last := r.Max+1, i == len(order)
		if !last {
			hi = existing[order[i]]
		}
		if !r.fillGap(out, order[start:i], lo, hi, last) {
			return r.renumber(order)
		}
		if !last {
			out[order[i]] = hi
			lo = hi
		}
		start = i + 1
	}
	return out
}

// kept marks the rules of order whose existing priority is kept: a longest strictly
// increasing subsequence of the existing priorities, in order (quadratic: ≤ 100 rules).
func (r PriorityRange) kept(order []string, existing map[string]int32) []bool {
	n := len(order)
	length := make([]int, n) // length of the best increasing run ending at i
	prev := make([]int, n)
	best := -1
	for i, id := range order {
		p, ok := existing[id]
		if !ok || p < r.Min || p > r.Max {
			continue
		}
		length[i], prev[i] = 1, -1
		for j := range i {
			if length[j] > 0 && existing[order[j]] < p && length[j]+1 > length[i] {
				length[i], prev[i] = length[j]+1, j
			}
		}
		if best < 0 || length[i] > length[best] {
			best = i
		}
	}
	kept := make([]bool, n)
	for i := best; i >= 0; i = prev[i] {
		kept[i] = true
	}
	return kept
}

// fillGap gives ids priorities strictly between lo and hi: evenly spread, or Step apart
// after lo when the gap is open-ended (tail). It reports false when they do not fit.
func (r PriorityRange) fillGap(out map[string]int32, ids []string, lo, hi int32, tail bool) bool {
	k := int32(len(ids))
	if k == 0 {
		return true
	}
	if hi-lo-1 < k {
		return false
	}
	step := (hi - lo) / (k + 1)
	if tail {
		step = min(step, r.Step)
	}
	for i, id := range ids {
		out[id] = lo + step*int32(i+1)
	}
	return true
}

// renumber spreads every rule afresh, Step apart when they fit.
func (r PriorityRange) renumber(order []string) map[string]int32 {
	out := make(map[string]int32, len(order))
	step := min(r.Step, (r.Max-r.Min+1)/int32(max(len(order), 1)))
	for i, id := range order {
		out[id] = r.Min - 1 + step*int32(i+1)
	}
	return out
}
