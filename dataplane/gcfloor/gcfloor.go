// Package gcfloor keeps the Go heap goal a fixed amount above the live heap. A proxy keeps little
// live data (a few MB for a small route table) but allocates steadily per request; with the default
// GOGC=100 its heap goal is then a few MB and it collects many times a second, each cycle taking a
// share of the one core it is given and adding to tail latency. A floor of some tens of MB makes
// those cycles rare, while a large table (hundreds of MB live) keeps the usual proportional goal.
package gcfloor

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// liveMetric is the heap the last GC cycle marked live.
const liveMetric = "/gc/heap/live:bytes"

// Start raises GOGC after every GC cycle so that the next goal is at least floor bytes above the
// live heap, never lowering it below the GOGC in effect when Start is called. It does nothing when
// GC is off (GOGC=off) or floor is 0. A memory limit (GOMEMLIMIT) still bounds the heap. stop
// restores the original GOGC.
func Start(floor uint64) (stop func()) {
	base := debug.SetGCPercent(100)
	debug.SetGCPercent(base)
	if floor == 0 || base < 0 {
		return func() {}
	}
	t := &tuner{floor: floor, base: base, sample: []metrics.Sample{{Name: liveMetric}}}
	t.adjust()
	t.arm()
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		t.stopped = true
		debug.SetGCPercent(base)
	}
}

type tuner struct {
	floor uint64
	base  int

	mu      sync.Mutex
	stopped bool
	sample  []metrics.Sample
}

// sentinel becomes garbage right away; its cleanup runs after the GC cycle that finds it and arms
// the next one. It holds a pointer so it is not batched with other tiny allocations.
type sentinel struct{ _ *tuner }

func (t *tuner) arm() {
	runtime.AddCleanup(&sentinel{}, func(t *tuner) {
		t.mu.Lock()
		stopped := t.stopped
		t.mu.Unlock()
		if stopped {
			return
		}
		t.adjust()
		t.arm()
	}, t)
}

func (t *tuner) adjust() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return
	}
	metrics.Read(t.sample)
	var live uint64
	if t.sample[0].Value.Kind() == metrics.KindUint64 {
		live = t.sample[0].Value.Uint64()
	}
	debug.SetGCPercent(percent(live, t.floor, t.base))
}

// heapMinimum is the runtime's smallest heap goal at GOGC=100; it scales with GOGC.
const heapMinimum = 4 << 20

// percent is the GOGC that puts the goal about floor above live. The goal is the larger of
// live×(1+GOGC/100) and heapMinimum×GOGC/100, so for a small live heap (or none yet, before the
// first cycle) the second bounds GOGC: otherwise the goal would grow far past live+floor.
func percent(live, floor uint64, base int) int {
	p := min(float64(floor)*100/float64(max(live, 1)), float64(live+floor)*100/heapMinimum)
	return max(base, int(math.Ceil(p)))
}
