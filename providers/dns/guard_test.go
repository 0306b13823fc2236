package dns

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"sigs.k8s.io/external-dns/endpoint"
	"sigs.k8s.io/external-dns/plan"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// ownedBy is n records of owner, named owner-i.
func ownedBy(owner string, n int) []*endpoint.Endpoint {
	var out []*endpoint.Endpoint
	for i := range n {
		e := a(fmt.Sprintf("%s-%d", owner, i), "192.0.2.1")
		e.Labels = endpoint.Labels{endpoint.ResourceLabelKey: owner}
		out = append(out, e)
	}
	return out
}

// TestGuard: which deletions one pass carries out, and the owners' clocks afterwards.
func TestGuard(t *testing.T) {
	grace := 10 * time.Minute
	type counts map[string]int // owner → records
	tests := []struct {
		name       string
		goneSince  map[string]time.Time
		heldSince  map[string]time.Time
		present    []string
		deletes    counts
		wantKept   counts
		wantHeld   counts
		wantGone   map[string]time.Time
		wantHeldAt map[string]time.Time
	}{{
		name:     "within the budget",
		present:  []string{"a"},
		deletes:  counts{"a": 2, "b": 1},
		wantKept: counts{"a": 2, "b": 1},
		wantGone: map[string]time.Time{"b": t0},
	}, {
		name:       "above it: none of them",
		present:    []string{"a"},
		deletes:    counts{"a": 3, "b": 1},
		wantHeld:   counts{"a": 3, "b": 1},
		wantGone:   map[string]time.Time{"b": t0},
		wantHeldAt: map[string]time.Time{"a": t0},
	}, {
		name:       "an owner gone for the grace period is free, the rest fit the budget",
		goneSince:  map[string]time.Time{"b": t0.Add(-grace)},
		present:    []string{"a"},
		deletes:    counts{"a": 3, "b": 20},
		wantKept:   counts{"a": 3, "b": 20},
		wantGone:   map[string]time.Time{"b": t0.Add(-grace)},
		wantHeldAt: map[string]time.Time{},
	}, {
		name:       "an owner gone for less is budgeted",
		goneSince:  map[string]time.Time{"b": t0.Add(-grace + time.Second)},
		present:    []string{"a"},
		deletes:    counts{"a": 1, "b": 3},
		wantHeld:   counts{"a": 1, "b": 3},
		wantGone:   map[string]time.Time{"b": t0.Add(-grace + time.Second)},
		wantHeldAt: map[string]time.Time{"a": t0},
	}, {
		name:       "deletions held for the grace period are free",
		heldSince:  map[string]time.Time{"a": t0.Add(-grace), "c": t0.Add(-time.Minute)},
		present:    []string{"a", "c"},
		deletes:    counts{"a": 30, "c": 2},
		wantKept:   counts{"a": 30, "c": 2},
		wantHeldAt: map[string]time.Time{},
	}, {
		name:       "an owner back, or without records, is forgotten",
		goneSince:  map[string]time.Time{"a": t0.Add(-time.Hour), "z": t0.Add(-time.Hour)},
		heldSince:  map[string]time.Time{"y": t0.Add(-time.Hour)},
		present:    []string{"a"},
		wantHeldAt: map[string]time.Time{},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := guard{maxDeletes: 3, grace: grace, now: func() time.Time { return t0 },
				goneSince: map[string]time.Time{}, heldSince: map[string]time.Time{}}
			for k, v := range tt.goneSince {
				g.goneSince[k] = v
			}
			for k, v := range tt.heldSince {
				g.heldSince[k] = v
			}
			present := map[string]bool{}
			for _, p := range tt.present {
				present[p] = true
			}
			var deletes []*endpoint.Endpoint
			var withRecords []string
			for owner, n := range tt.deletes {
				deletes = append(deletes, ownedBy(owner, n)...)
				withRecords = append(withRecords, owner)
			}
			g.observe(present, withRecords)
			kept, held := g.filter(deletes, resourceOf)
			count := func(eps []*endpoint.Endpoint) counts {
				c := counts{}
				for _, e := range eps {
					c[resourceOf(e)]++
				}
				return c
			}
			empty := cmpopts.EquateEmpty()
			if d := cmp.Diff(tt.wantKept, count(kept), empty); d != "" {
				t.Errorf("kept (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.wantHeld, count(held), empty); d != "" {
				t.Errorf("held (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.wantGone, g.goneSince, empty); d != "" {
				t.Errorf("goneSince (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.wantHeldAt, g.heldSince, empty); d != "" {
				t.Errorf("heldSince (-want +got):\n%s", d)
			}
		})
	}
}

// TestChunkChanges: pieces of at most n of each kind, updates kept in pairs, every change once,
// and pieces that do not share arrays (the registry appends to them).
func TestChunkChanges(t *testing.T) {
	c := &plan.Changes{Create: ownedBy("c", 5), UpdateOld: ownedBy("o", 2), UpdateNew: ownedBy("n", 2), Delete: ownedBy("d", 3)}
	names := func(eps []*endpoint.Endpoint) []string {
		var out []string
		for _, e := range eps {
			out = append(out, e.DNSName)
		}
		return out
	}
	var got [][4][]string
	pieces := chunkChanges(c, 2)
	for _, p := range pieces {
		got = append(got, [4][]string{names(p.Create), names(p.UpdateOld), names(p.UpdateNew), names(p.Delete)})
	}
	want := [][4][]string{
		{{"c-0", "c-1"}, {"o-0", "o-1"}, {"n-0", "n-1"}, {"d-0", "d-1"}},
		{{"c-2", "c-3"}, nil, nil, {"d-2"}},
		{{"c-4"}, nil, nil, nil},
	}
	if d := cmp.Diff(want, got, cmpopts.EquateEmpty()); d != "" {
		t.Errorf("pieces (-want +got):\n%s", d)
	}
	pieces[0].Create = append(pieces[0].Create, a("txt", "x"))
	if pieces[1].Create[0].DNSName != "c-2" || c.Create[2].DNSName != "c-2" {
		t.Error("appending to a piece overwrote the next piece")
	}
}

// TestWeightedNames: a name wanted both plain and weighted goes to the side holding it, else to
// the side of the first gateway by key; names wanted one way only are not listed.
func TestWeightedNames(t *testing.T) {
	plain := func(name string) planKey { return planKey{name: name} }
	w := func(name, set string) planKey { return planKey{name: name, setID: set} }
	tests := []struct {
		name           string
		holder, winner map[planKey]string
		want           map[string]bool
	}{{
		name:   "one way only",
		winner: map[planKey]string{plain("a"): "gw/1", w("b", "s1"): "gw/1", w("b", "s2"): "gw/2"},
	}, {
		name:   "first by key: weighted",
		winner: map[planKey]string{plain("a"): "gw/2", w("a", "s1"): "gw/3", w("a", "s2"): "gw/1"},
		want:   map[string]bool{"a": true},
	}, {
		name:   "first by key: plain",
		winner: map[planKey]string{plain("a"): "gw/1", w("a", "s1"): "gw/2"},
		want:   map[string]bool{"a": false},
	}, {
		name:   "the side holding it",
		holder: map[planKey]string{w("a", "s1"): "gw/2"},
		winner: map[planKey]string{plain("a"): "gw/1", w("a", "s1"): "gw/2"},
		want:   map[string]bool{"a": true},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if d := cmp.Diff(tt.want, weightedNames(tt.holder, tt.winner), cmpopts.EquateEmpty()); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}
