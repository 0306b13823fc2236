package main

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetgate/fleetgate/dataplane/pace"
)

// TestPacer: the pacer pauses after a slice of CPU time, as long as the CPU time used, however
// much wall time passed; before a slice of CPU time it does not pause.
func TestPacer(t *testing.T) {
	tests := []struct {
		name   string
		used   []time.Duration // CPU time used before each batch of 16 ticks
		wall   time.Duration   // wall time that passed before each batch
		pauses []time.Duration
	}{
		{name: "a slice of wall time, as much CPU", used: []time.Duration{pace.Slice, 2 * pace.Slice}, wall: pace.Slice,
			pauses: []time.Duration{pace.Slice, 2 * pace.Slice}},
		{name: "core shared: wall time passes, little CPU", used: []time.Duration{pace.Slice / 4, pace.Slice / 4, pace.Slice / 4, pace.Slice / 2}, wall: pace.Slice,
			pauses: []time.Duration{5 * pace.Slice / 4}},
		{name: "before a slice of wall time the CPU time is not read", used: []time.Duration{pace.Slice}, wall: pace.Slice / 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cpu time.Duration
			now := time.Unix(0, 0)
			var pauses []time.Duration
			p := &pacer{on: true, now: func() time.Time { return now }, cpuTimeOf: func() time.Duration { return cpu },
				sleep: func(d time.Duration) { pauses = append(pauses, d) }}
			p.reset()
			for _, u := range tt.used {
				cpu += u
				now = now.Add(tt.wall)
				for range 16 {
					p.tick()
				}
			}
			if diff := cmp.Diff(tt.pauses, pauses); diff != "" {
				t.Errorf("pauses (-want +got):\n%s", diff)
			}
		})
	}
}
