package main

import (
	"fmt"
	"strconv"
)

// softMemoryLimit is the garbage collector's soft limit for a container whose memory limit the
// Deployment passes in FLEETGATE_MEMORY_LIMIT (bytes, from a resourceFieldRef): 90% of it.
// Without a limit the heap grows to twice the live data before a collection, and a burst (a cold
// start at 20,000 routes peaked near 500 MiB with ~155 MiB live) meets the OOM killer at the
// container's limit; with one the collector works harder near it instead. GOMEMLIMIT, when set,
// is the runtime's own and wins. ok is false when no limit is to be set.
func softMemoryLimit(getenv func(string) string) (limit int64, ok bool, err error) {
	if getenv("GOMEMLIMIT") != "" {
		return 0, false, nil
	}
	v := getenv("FLEETGATE_MEMORY_LIMIT")
	if v == "" {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, false, fmt.Errorf("FLEETGATE_MEMORY_LIMIT %q: want the container's memory limit in bytes", v)
	}
	if n == 0 {
		return 0, false, nil
	}
	return n / 10 * 9, true, nil
}
