package gcfloor

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	for _, tc := range []struct {
		live, floor uint64
		base, want  int
	}{
		// Goal max(live×(1+p/100), 4MiB×p/100): 2 MiB live → p 1650 → goal 66 MiB.
		{live: 2 << 20, floor: 64 << 20, base: 100, want: 1650},
		{live: 8 << 20, floor: 64 << 20, base: 100, want: 800},
		{live: 64 << 20, floor: 64 << 20, base: 100, want: 100},
		{live: 256 << 20, floor: 64 << 20, base: 100, want: 100},
		{live: 256 << 20, floor: 64 << 20, base: 50, want: 50},
		// Before the first cycle: the heap minimum alone puts the goal at the floor.
		{live: 0, floor: 64 << 20, base: 100, want: 1600},
	} {
		if got := percent(tc.live, tc.floor, tc.base); got != tc.want {
			t.Errorf("percent(%d, %d, %d) = %d, want %d", tc.live, tc.floor, tc.base, got, tc.want)
		}
	}
}

// TestStart runs real GC cycles: after one the goal sits the floor above the live heap, and stop
// puts GOGC back.
func TestStart(t *testing.T) {
	orig := debug.SetGCPercent(100)
	defer debug.SetGCPercent(orig)
	const floor = 32 << 20
	stop := Start(floor)
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		p := debug.SetGCPercent(-1)
		debug.SetGCPercent(p)
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		// NextGC is the goal; live is at most HeapAlloc right after a forced cycle.
		if p > 100 && ms.NextGC >= ms.HeapAlloc+floor*9/10 {
			// Nor far above it: a runaway GOGC would let the heap grow to GBs.
			if ms.NextGC > ms.HeapAlloc+2*floor {
				t.Fatalf("GOGC %d: heap goal %d for %d allocated, more than twice the floor of %d above", p, ms.NextGC, ms.HeapAlloc, floor)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GOGC %d, heap goal %d for %d allocated: the floor of %d was not applied", p, ms.NextGC, ms.HeapAlloc, floor)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Once the live heap outgrows the floor, a later cycle brings GOGC back to the proportional 100.
	big := make([]byte, 2*floor)
	for {
		runtime.GC()
		p := debug.SetGCPercent(-1)
		debug.SetGCPercent(p)
		if p == 100 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GOGC still %d with %d bytes live", p, len(big))
		}
		time.Sleep(10 * time.Millisecond)
	}
	runtime.KeepAlive(big)
	stop()
	if p := debug.SetGCPercent(100); p != 100 {
		t.Errorf("after stop GOGC = %d, want 100", p)
	}
}

func TestStartOff(t *testing.T) {
	orig := debug.SetGCPercent(-1)
	defer debug.SetGCPercent(orig)
	stop := Start(64 << 20)
	runtime.GC()
	if p := debug.SetGCPercent(-1); p != -1 {
		t.Errorf("with GC off Start changed GOGC to %d", p)
	}
	stop()
}
