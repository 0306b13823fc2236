package proxy

import (
	"strings"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// Ingress wildcards cover exactly one label (ir.VirtualHost.SingleLabelWildcard), Gateway API ones
// one or more. hostMap.lookup tries wildcards longest suffix first, so the first suffix it tries
// (after the first dot) is the only one a single-label wildcard may answer; for the later, shorter
// suffixes such an entry is skipped and the lookup goes on to less specific names.

// addSingleLabel registers a "*.suffix" entry that covers exactly one label.
func (m *hostMap[T]) addSingleLabel(name string, v T) bool {
	if !m.add(name, v) {
		return false
	}
	if key, ok := strings.CutPrefix(ir.HostnameKey(name), "*"); ok {
		if m.single == nil {
			m.single = map[string]bool{}
		}
		m.single[key] = true
	}
	return true
}

// skipWildcard tells lookup to pass over the wildcard of suffix when the host has more than one
// label in front of it (firstDot is false).
func (m *hostMap[T]) skipWildcard(suffix string, firstDot bool) bool {
	return !firstDot && m.single[suffix]
}
