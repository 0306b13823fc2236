package aws

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAssignPriorities(t *testing.T) {
	tests := []struct {
		name     string
		order    []string
		existing map[string]int32
		want     map[string]int32
	}{
		{
			name:  "new stack is spread by the step",
			order: []string{"a", "b", "c"},
			want:  map[string]int32{"a": 100, "b": 200, "c": 300},
		},
		{
			name:     "unchanged keeps every priority",
			order:    []string{"a", "b", "c"},
			existing: map[string]int32{"a": 7, "b": 9, "c": 4000},
			want:     map[string]int32{"a": 7, "b": 9, "c": 4000},
		},
		{
			name:     "insert between takes the midpoint",
			order:    []string{"a", "new", "b"},
			existing: map[string]int32{"a": 100, "b": 200},
			want:     map[string]int32{"a": 100, "new": 150, "b": 200},
		},
		{
			name:     "two inserted between are spread evenly",
			order:    []string{"a", "x", "y", "b"},
			existing: map[string]int32{"a": 100, "b": 400},
			want:     map[string]int32{"a": 100, "x": 200, "y": 300, "b": 400},
		},
		{
			name:     "insert before the first",
			order:    []string{"new", "a"},
			existing: map[string]int32{"a": 100},
			want:     map[string]int32{"new": 50, "a": 100},
		},
		{
			name:     "append after the last leaves a step",
			order:    []string{"a", "new"},
			existing: map[string]int32{"a": 49000},
			want:     map[string]int32{"a": 49000, "new": 49100},
		},
		{
			name:     "append near the end takes what is left",
			order:    []string{"a", "new"},
			existing: map[string]int32{"a": 49990},
			want:     map[string]int32{"a": 49990, "new": 49995},
		},
		{
			name:     "a moved rule alone changes",
			order:    []string{"b", "c", "a", "d"},
			existing: map[string]int32{"a": 100, "b": 200, "c": 300, "d": 400},
			want:     map[string]int32{"b": 200, "c": 300, "a": 350, "d": 400},
		},
		{
			name:     "removed rules free their priorities and are not returned",
			order:    []string{"a", "c"},
			existing: map[string]int32{"a": 100, "b": 200, "c": 300},
			want:     map[string]int32{"a": 100, "c": 300},
		},
		{
			name:     "no gap left renumbers everything",
			order:    []string{"a", "new", "b"},
			existing: map[string]int32{"a": 1, "b": 2},
			want:     map[string]int32{"a": 100, "new": 200, "b": 300},
		},
		{
			name:     "out of range existing priorities are not kept",
			order:    []string{"a", "b"},
			existing: map[string]int32{"a": 0, "b": 50001},
			want:     map[string]int32{"a": 100, "b": 200},
		},
		{
			name:     "duplicate existing priorities keep one",
			order:    []string{"a", "b"},
			existing: map[string]int32{"a": 300, "b": 300},
			want:     map[string]int32{"a": 300, "b": 400},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := assignPriorities(tt.order, tt.existing)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("assignPriorities (-want +got):\n%s", diff)
			}
			checkPriorityOrder(t, tt.order, got)
		})
	}
}

// TestAssignPrioritiesStable: adding (or removing) one route among 50 changes no other rule's
// priority, wherever it goes, and the order always holds.
func TestAssignPrioritiesStable(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		n := 1 + rng.IntN(60)
		order := make([]string, n)
		for i := range order {
			order[i] = fmt.Sprintf("rule/%d-%d", round, i)
		}
		existing := assignPriorities(order, nil)
		// Some history: up to 5 insertions first, so gaps are uneven (halving a step of 100 five
		// times still leaves room for one more).
		for range rng.IntN(6) {
			order = slices.Insert(order, rng.IntN(len(order)+1), fmt.Sprintf("rule/%d-h%d", round, len(order)))
			existing = assignPriorities(order, existing)
		}
		var next []string
		if rng.IntN(3) == 0 && len(order) > 1 {
			i := rng.IntN(len(order))
			next = slices.Delete(slices.Clone(order), i, i+1)
		} else {
			next = slices.Insert(slices.Clone(order), rng.IntN(len(order)+1), "added")
		}
		got := assignPriorities(next, existing)
		checkPriorityOrder(t, next, got)
		changed := 0
		for _, id := range next {
			if p, ok := existing[id]; ok && p != got[id] {
				changed++
			}
		}
		if changed > 0 {
			t.Fatalf("round %d: %d existing rules changed priority after one insertion or removal (order %v)", round, changed, next)
		}
	}
}

// TestAssignPrioritiesShuffled: any reordering still gives strictly increasing priorities in 1..50000.
func TestAssignPrioritiesShuffled(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		order := make([]string, 1+rng.IntN(100))
		for i := range order {
			order[i] = fmt.Sprintf("r%d", i)
		}
		existing := map[string]int32{}
		for _, id := range order {
			if rng.IntN(4) > 0 {
				existing[id] = int32(1 + rng.IntN(50000))
			}
		}
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		checkPriorityOrder(t, order, assignPriorities(order, existing))
	}
}

func checkPriorityOrder(t *testing.T, order []string, got map[string]int32) {
	t.Helper()
	if len(got) != len(order) {
		t.Fatalf("%d priorities for %d rules", len(got), len(order))
	}
	prev := int32(0)
	for _, id := range order {
		p, ok := got[id]
		if !ok || p <= prev || p > maxPriority {
			t.Fatalf("rule %s: priority %d after %d (order %v, got %v)", id, p, prev, order, got)
		}
		prev = p
	}
}
