package pace

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// TestPacerLetsOthersRun runs a busy job on one P beside a goroutine that wants the P every 200µs,
// once unpaced and once paced: paced, that goroutine gets the P many times more often. (Counting
// turns rather than timing them keeps the test steady on a loaded machine.)
func TestPacerLetsOthersRun(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	turns := func(p *Pacer) int64 {
		var n atomic.Int64
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				select {
				case <-stop:
					return
				default:
				}
				time.Sleep(200 * time.Microsecond)
				n.Add(1)
			}
		}()
		time.Sleep(time.Millisecond)
		n.Store(0)
		x := 0
		for deadline := time.Now().Add(200 * time.Millisecond); time.Now().Before(deadline); {
			for i := range 1000 {
				x += i * i
			}
			p.Tick()
		}
		got := n.Load()
		close(stop)
		<-done
		_ = x
		return got
	}
	p := New()
	if !p.on {
		t.Fatal("pacer off with GOMAXPROCS=1")
	}
	unpaced, paced := turns(nil), turns(p)
	t.Logf("turns: unpaced %d, paced %d", unpaced, paced)
	// Unpaced the sleeper runs about once per 10ms preemption (~20 times); paced, in every pause.
	if paced < 3*unpaced || paced < 10 {
		t.Errorf("the other goroutine ran %d times beside the paced job, %d times beside the unpaced one", paced, unpaced)
	}
}

func TestPacerOffWithSeveralPs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	p := New()
	t0 := time.Now()
	for time.Since(t0) < 5*Slice {
		p.Tick()
	}
	if p.on || time.Since(t0) > 50*Slice {
		t.Errorf("pacer paused with 2 Ps")
	}
	var nilPacer *Pacer
	nilPacer.Tick()
}
