package controllers

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestTriggerCoalesces fires rounds of calls, draining the channel after each round: every round
// with at least one Fire yields exactly one event, and Fire never blocks on an undrained channel.
func TestTriggerCoalesces(t *testing.T) {
	tests := []struct {
		name   string
		rounds []int // Fire calls per round
		want   []int // events drained after each round
	}{
		{name: "never fired", rounds: []int{0}, want: []int{0}},
		{name: "one fire", rounds: []int{1}, want: []int{1}},
		{name: "a burst is one event", rounds: []int{100}, want: []int{1}},
		{name: "fires after a drain wake again", rounds: []int{3, 0, 1, 2}, want: []int{1, 0, 1, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := NewTrigger()
			var got []int
			for _, n := range tt.rounds {
				for range n {
					tr.Fire("hub/ns/gw")
				}
				got = append(got, drain(tr))
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("events per round (-want +got):\n%s", d)
			}
		})
	}
}

func TestNilTriggerWatchesNothing(t *testing.T) {
	var tr *Trigger
	if tr.Channel() != nil {
		t.Error("a nil Trigger's Channel is not nil: the controller would watch a channel nobody fires")
	}
}

func drain(tr *Trigger) int {
	n := 0
	for {
		select {
		case <-tr.Channel():
			n++
		default:
			return n
		}
	}
}
