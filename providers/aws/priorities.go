package aws

import "github.com/fleetgate/fleetgate/providers"

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
// priorities that move as few existing rules as possible (providers.PriorityRange.Assign).
func assignPriorities(order []string, existing map[string]int32) map[string]int32 {
	return providers.PriorityRange{Min: minPriority, Max: maxPriority, Step: priorityStep}.Assign(order, existing)
}
