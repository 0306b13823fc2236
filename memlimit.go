package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
)

// containerMemoryLimit is the container's memory limit, which the Deployment passes in
// FLEETGATE_MEMORY_LIMIT (bytes, from a resourceFieldRef). Without a limit the heap grows to twice
// the live data before a collection, and a burst (a cold start at 20,000 routes peaked near
// 500 MiB with ~155 MiB live) meets the OOM killer at the container's limit; with one the
// collector works harder near it instead (softMemoryLimit). GOMEMLIMIT, when set, is the
// runtime's own and wins. ok is false when no limit is to be set.
func containerMemoryLimit(getenv func(string) string) (limit int64, ok bool, err error) {
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
	return n, n > 0, nil
}

// softMemoryLimit is the garbage collector's soft limit in a container of limit bytes. The
// runtime's limit counts the memory it manages, not the pages of the binary mapped from its file
// (60-85 MiB resident for this one: code, and the tables the runtime reads while it runs), which
// the container's cgroup charges all the same. So the limit is the container's less those pages
// (fileRSS) and 5% for what else the runtime does not count, and never below half of the
// container's: a 300 MiB container gets ~220 MiB, and the process stays within its 300 MiB
// instead of making the kernel evict its own code to stay there.
func softMemoryLimit(limit, fileRSS int64) int64 {
	return max(limit-fileRSS-limit/20, limit/2)
}

// followBinaryPages keeps the soft limit (set) below a container of limit bytes as the binary's
// resident pages (readFileRSS) grow: at start they are ~46 MiB, and they reach 60-80 MiB once
// the controllers, the collector and the API clients have run their code: a limit computed at
// start alone was ~23 MiB too high for a 300 MiB container at 20,000 routes × 10 members.
// The largest figure seen counts, so that pages the kernel reclaims under pressure (and faults
// back in) do not make the limit flap. It returns when ctx ends.
func followBinaryPages(ctx context.Context, limit int64, every time.Duration, readFileRSS func() int64, set func(int64) int64, log logr.Logger) {
	seen, current := int64(-1), int64(math.MaxInt64)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if f := readFileRSS(); f > seen {
			seen = f
			// The limit only goes down; moves of less than a MiB are not worth a log line.
			if soft := softMemoryLimit(limit, seen); current-soft >= 1<<20 {
				set(soft)
				log.Info("soft memory limit set below the container's", "bytes", soft, "containerBytes", limit, "binaryResidentBytes", seen)
				current = soft
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// selfFileRSS is rssFile of this process; 0 when it cannot be read.
func selfFileRSS() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	return rssFile(f)
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
