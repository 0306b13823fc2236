package main

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// softMemoryLimit is the garbage collector's soft limit for a container whose memory limit the
// Deployment passes in FLEETGATE_MEMORY_LIMIT (bytes, from a resourceFieldRef). Without a limit the
// heap grows to twice the live data before a collection, and a burst (a cold start at 20,000
// routes peaked near 500 MiB with ~155 MiB live) meets the OOM killer at the container's limit;
// with one the collector works harder near it instead.
//
// The runtime's limit counts the memory it manages, not the pages of the binary mapped from its
// file (~60 MiB resident for this one: code, and the tables the runtime reads while it runs),
// which the container's cgroup charges all the same. So the limit is the container's less those
// pages (fileRSS, measured at start) and 5% for what else the runtime does not count, and never
// below half of the container's: a 300 MiB container gets ~225 MiB, and the process stays within
// its 300 MiB instead of making the kernel evict its own code to stay there.
// GOMEMLIMIT, when set, is the runtime's own and wins. ok is false when no limit is to be set.
func softMemoryLimit(getenv func(string) string, fileRSS int64) (limit int64, ok bool, err error) {
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
	return max(n-fileRSS-n/20, n/2), true, nil
}

// rssFile reads RssFile (the resident pages mapped from files: the binary) from a
// /proc/PID/status; 0 when it is not there.
func rssFile(status io.Reader) int64 {
	sc := bufio.NewScanner(status)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "RssFile:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			return 0
		}
		return kb << 10
	}
	return 0
}
