package fleet

import (
	"errors"
	"testing"

	"github.com/go-logr/logr"
)

// TestRecord walks a member through probe results: it turns unusable only after FailureThreshold
// failures, and answering again marks it stale (to be resynced) rather than usable.
func TestRecord(t *testing.T) {
	down := errors.New("connection refused")
	steps := []struct {
		err                     error
		wantChanged, wantUsable bool
		wantHealthy, wantStale  bool
	}{
		{nil, false, true, true, false},
		{down, false, true, true, false},
		{down, true, false, false, false},
		{down, false, false, false, false},
		{nil, true, false, true, true},
	}
	var lost []string
	f := New(Options{FailureThreshold: 2, Log: logr.Discard(), Lost: func(n string) { lost = append(lost, n) }})
	m := &member{name: "m", synced: true, healthy: true}
	for i, s := range steps {
		changed := f.record(m, "v1.36.3", s.err)
		if changed != s.wantChanged || m.usable() != s.wantUsable || m.healthy != s.wantHealthy || m.stale != s.wantStale {
			t.Errorf("step %d: changed=%v usable=%v healthy=%v stale=%v, want %v %v %v %v",
				i, changed, m.usable(), m.healthy, m.stale, s.wantChanged, s.wantUsable, s.wantHealthy, s.wantStale)
		}
	}
	if len(lost) != 1 {
		t.Errorf("Lost called %d times, want once", len(lost))
	}
}

// TestMemberRateDefaults: members' clients are limited to 100 calls/s (burst 200) unless set; a
// negative QPS (no client-side limit) passes through.
func TestMemberRateDefaults(t *testing.T) {
	for _, tt := range []struct {
		in, want Options
	}{
		{in: Options{}, want: Options{QPS: 100, Burst: 200}},
		{in: Options{QPS: 500, Burst: 1000}, want: Options{QPS: 500, Burst: 1000}},
		{in: Options{QPS: -1}, want: Options{QPS: -1, Burst: 200}},
	} {
		f := New(tt.in)
		if f.o.QPS != tt.want.QPS || f.o.Burst != tt.want.Burst {
			t.Errorf("New(QPS %v, Burst %d): %v, %d; want %v, %d", tt.in.QPS, tt.in.Burst, f.o.QPS, f.o.Burst, tt.want.QPS, tt.want.Burst)
		}
	}
}
