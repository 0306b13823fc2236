// Package pace lets a long CPU-bound job — decoding and compiling a config of 100k hostnames takes
// seconds of CPU — share a proxy's only core with request serving. Go preempts a running goroutine
// every 10ms, and with one P goroutines woken by the network wait behind it, so a swap would
// otherwise starve serving down to a burst every 10ms. A Pacer has the job sleep as long as it ran
// after every slice of work, which lets the waiting requests through and keeps each stall short.
package pace

import (
	"runtime"
	"time"
)

// Slice is the work a paced job does between pauses; it bounds what a request waits behind it.
const Slice = time.Millisecond

// Pacer is called often (every few microseconds of work) by the job it paces. Not safe for
// concurrent use; the zero value does not pace.
type Pacer struct {
	on    bool
	start time.Time
	n     int
}

// New returns a Pacer that pauses only when the process runs on one P: with more, the scheduler
// already serves requests beside the job.
func New() *Pacer {
	return &Pacer{on: runtime.GOMAXPROCS(0) == 1, start: time.Now()}
}

// Tick pauses the job when it has run for a Slice since the last pause.
func (p *Pacer) Tick() {
	if p == nil || !p.on {
		return
	}
	// Reading the clock costs tens of nanoseconds: do it every 16 ticks.
	if p.n++; p.n%16 != 0 {
		return
	}
	if ran := time.Since(p.start); ran >= Slice {
		time.Sleep(ran)
		p.start = time.Now()
	}
}
