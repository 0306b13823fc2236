package aws

// ELBv2 rule priorities (CreateRule, Priority): "Valid Range: Minimum value of 1. Maximum value
// of 50000."
const (
	minPriority = 1
	maxPriority = 50000
	// priorityStep spaces the rules of a new stack (and rules appended after the last), so that
	// later insertions find a gap.
	priorityStep = 100
)

// assignPriorities gives the rules in order (rule IDs, most specific first) strictly increasing
// priorities, keeping as many of the existing (live) priorities as the order allows: the longest
// run of existing priorities already increasing in order is kept, every other rule gets a
// priority in the gap between its kept neighbours (spread evenly there), or after the last kept
// one priorityStep apart. Only when a gap is too small is everything renumbered. So adding or
// removing a route moves no other rule, and a reordering moves as few rules as possible.
func assignPriorities(order []string, existing map[string]int32) map[string]int32 {
	kept := keptPriorities(order, existing)
	out := make(map[string]int32, len(order))
	lo := int32(minPriority - 1)
	start := 0
	for i := 0; i <= len(order); i++ {
		if i < len(order) && !kept[i] {
			continue
		}
		hi, last := int32(maxPriority+1), i == len(order)
		if !last {
			hi = existing[order[i]]
		}
		if !fillGap(out, order[start:i], lo, hi, last) {
			return renumber(order)
		}
		if !last {
			out[order[i]] = hi
			lo = hi
		}
		start = i + 1
	}
	return out
}

// keptPriorities marks the rules of order whose existing priority is kept: a longest strictly
// increasing subsequence of the existing priorities, in order (quadratic: ≤ 100 rules).
func keptPriorities(order []string, existing map[string]int32) []bool {
	n := len(order)
	length := make([]int, n) // length of the best increasing run ending at i
	prev := make([]int, n)
	best := -1
	for i, id := range order {
		p, ok := existing[id]
		if !ok || p < minPriority || p > maxPriority {
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

// fillGap gives ids priorities strictly between lo and hi: evenly spread, or priorityStep apart
// after lo when the gap is open-ended (tail). It reports false when they do not fit.
func fillGap(out map[string]int32, ids []string, lo, hi int32, tail bool) bool {
	k := int32(len(ids))
	if k == 0 {
		return true
	}
	if hi-lo-1 < k {
		return false
	}
	step := (hi - lo) / (k + 1)
	if tail {
		step = min(step, priorityStep)
	}
	for i, id := range ids {
		out[id] = lo + step*int32(i+1)
	}
	return true
}

// renumber spreads every rule afresh, priorityStep apart when they fit.
func renumber(order []string) map[string]int32 {
	out := make(map[string]int32, len(order))
	step := min(int32(priorityStep), int32(maxPriority/max(len(order), 1)))
	for i, id := range order {
		out[id] = step * int32(i+1)
	}
	return out
}
