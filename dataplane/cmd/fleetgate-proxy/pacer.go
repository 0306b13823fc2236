package main

import (
	"runtime"
	"syscall"
	"time"

	"github.com/fleetgate/fleetgate/dataplane/pace"
)

// pacer is dataplane/pace's Pacer counted in the process's CPU time rather than in wall time: a
// reload pauses as long as it used the core after every pace.Slice of CPU it used. On a core
// shared with other processes a slice of wall time holds less than a slice of work, and pausing
// as long as the wall time then paused the reload more than it ran; counted in CPU time the reload
// still leaves the proxy's requests half of what the proxy gets of the core, and no more.
type pacer struct {
	on   bool
	n    int
	wall time.Time     // at the last pause
	cpu  time.Duration // the process's CPU time at the last pause
	// The clocks and the pause, which tests replace.
	now       func() time.Time
	cpuTimeOf func() time.Duration
	sleep     func(time.Duration)
}

func newPacer() *pacer {
	p := &pacer{on: runtime.GOMAXPROCS(0) == 1, now: time.Now, cpuTimeOf: processCPUTime, sleep: time.Sleep}
	p.reset()
	return p
}

func (p *pacer) reset() {
	p.wall, p.cpu = p.now(), p.cpuTimeOf()
}

// tick is called after every host, often (every microsecond or so when hosts are only hashed).
func (p *pacer) tick() {
	if !p.on {
		return
	}
	// Reading the wall clock costs tens of nanoseconds, the CPU time a system call (~0.4µs): the
	// latter only once a slice of wall time has passed, as no more CPU time can have.
	if p.n++; p.n%16 != 0 || p.now().Sub(p.wall) < pace.Slice {
		return
	}
	if used := p.cpuTimeOf() - p.cpu; used >= pace.Slice {
		p.sleep(used)
		p.reset()
	}
}

// processCPUTime is the CPU time the process has used, user and system. Linux counts it from the
// scheduler's clock, to the microsecond.
func processCPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0 // never pauses: a reload then runs unpaced rather than stalls
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
