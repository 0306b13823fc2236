package aws

// assignPriorities gives each rule ID of order (precedence order, most specific first) a
// strictly increasing priority, keeping a rule's existing priority whenever it still fits
// after the previous one, so that an unrelated change moves as few rules as possible.
//
// The smallest version the deployer needs; part B's replaces it.
func assignPriorities(order []string, existing map[string]int32) map[string]int32 {
	out := make(map[string]int32, len(order))
	prev := int32(0)
	for _, id := range order {
		p, ok := existing[id]
		if !ok || p <= prev {
			p = prev + 1
		}
		out[id] = p
		prev = p
	}
	return out
}
