package dns

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/external-dns/endpoint"
)

// guard bounds the deletions of one pass (external-dns users have lost whole zones to one bad
// input, external-dns#4023, #4595). A deletion is free once its owner has been gone (absent from
// Sync's owners) for the grace period, or its owner's deletions have been held back for that
// long (the wish outlived any passing glitch). The other deletions of a pass go through only
// while they number at most maxDeletes; above that, none of them does.
type guard struct {
	maxDeletes int
	grace      time.Duration
	now        func() time.Time
	// goneSince is when each owner that still has records was first seen absent.
	goneSince map[string]time.Time
	// heldSince is when each present owner's deletions were first held back.
	heldSince map[string]time.Time
}

// observe notes which owners are present and which still have records: owners that are gone are
// timed from the first pass that saw them gone; owners without records are forgotten.
func (g *guard) observe(present map[string]bool, withRecords []string) {
	now := g.now()
	has := map[string]bool{}
	for _, k := range withRecords {
		has[k] = true
		if !present[k] {
			if _, ok := g.goneSince[k]; !ok {
				g.goneSince[k] = now
			}
		}
	}
	for k := range g.goneSince {
		if present[k] || !has[k] {
			delete(g.goneSince, k)
		}
	}
	for k := range g.heldSince {
		if !present[k] || !has[k] {
			delete(g.heldSince, k)
		}
	}
}

// filter splits a pass's deletions into those to carry out and those held back, by the owner
// ownerOf names; it starts the held owners' clocks and stops the others'.
func (g *guard) filter(deletes []*endpoint.Endpoint, ownerOf func(*endpoint.Endpoint) string) (keep, held []*endpoint.Endpoint) {
	now := g.now()
	aged := func(since map[string]time.Time, owner string) bool {
		t, ok := since[owner]
		return ok && now.Sub(t) >= g.grace
	}
	var budgeted []*endpoint.Endpoint
	for _, d := range deletes {
		o := ownerOf(d)
		if aged(g.goneSince, o) || aged(g.heldSince, o) {
			keep = append(keep, d)
		} else {
			budgeted = append(budgeted, d)
		}
	}
	heldOwners := map[string]bool{}
	if len(budgeted) > g.maxDeletes {
		held = budgeted
		for _, d := range held {
			// A gone owner is timed by goneSince already.
			if _, gone := g.goneSince[ownerOf(d)]; !gone {
				heldOwners[ownerOf(d)] = true
			}
		}
	} else {
		keep = append(keep, budgeted...)
	}
	for o := range heldOwners {
		if _, ok := g.heldSince[o]; !ok {
			g.heldSince[o] = now
		}
	}
	for o := range g.heldSince {
		if !heldOwners[o] {
			delete(g.heldSince, o)
		}
	}
	slices.SortFunc(held, func(a, b *endpoint.Endpoint) int {
		return cmp.Or(strings.Compare(a.DNSName, b.DNSName), strings.Compare(a.RecordType, b.RecordType))
	})
	return keep, held
}
