package controllers

import (
	"github.com/fleetgate/fleetgate/controllers/translate"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
)

// statusPart is a subset of a translation's statuses that Publish records.
type statusPart int

const (
	// translated are route and policy statuses: final once translation ran, so they are
	// published before the dataplane is applied and a route's Accepted does not wait for delivery.
	translated statusPart = iota
	// applied are GatewayClass, Gateway, ListenerSet, Ingress and LoadBalancer Service statuses,
	// which carry what apply reports: the class's cloud account, addresses and Programmed.
	applied
)

// Publish records one part of the statuses of a complete translation. Objects whose desired
// status did not change are not queued; objects of the part that dropped out of the result are
// queued so that write clears them.
func (w *StatusWriter) Publish(res *translate.Result, part statusPart) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.passes[part]++
	pass := w.passes[part]
	var named uint64
	last, next := w.order[part], w.spare[part][:0]
	at := 0 // the place in last where the next object is looked for first
	// Every pass names thousands of unchanged routes, most where the last pass named them: a
	// comparison each (the map lookup hashes the ref), no allocation.
	keep := func(d *desiredEntry) {
		named++
		d.pass, d.place = pass, len(next)
		next = append(next, d)
	}
	set := func(want desiredStatus) {
		ref := want.Target()
		var d *desiredEntry
		if at < len(last) && last[at].ref == ref {
			d = last[at]
		} else if d = w.desired[ref]; d != nil && d.pass == pass-1 {
			at = d.place // the order goes on from there
		}
		if d != nil {
			// The pass's strings: those of an unchanged route are the same from pass to pass, so
			// that the next comparison is of pointers, not of bytes (it was 60% of Publish at
			// 20,000 routes while the entry kept the strings of the pass that first named it).
			d.ref = ref
		}
		at++
		if d == nil {
			d = &desiredEntry{ref: ref, want: want}
			w.desired[ref] = d
			w.count[part]++
			if w.started {
				w.queue.AddWithOpts(priorityqueue.AddOpts{Priority: w.priority(part, pass)}, ref)
			} else {
				delete(w.dropped, ref) // back: Start writes its status
			}
		} else {
			switch {
			case d.want.Same(want), !w.started:
			case w.countsOnly(ref.Kind, d.want, want):
				// A write already waiting is not postponed, and it writes the latest desired status.
				w.queue.AddAfter(ref, w.countsDelay)
			default:
				w.queue.Add(ref)
			}
			d.want = want
		}
		keep(d)
	}
	switch part {
	case translated:
		w.read = res.Clusters
		defer w.wakeSweeperLocked()
		for _, st := range res.Routes {
			// A route whose status is the very one of the last pass, where the last pass named it:
			// the same entry, told without loading the status (one object per route and pass).
			if at < len(last) && last[at].want == desiredStatus(st) {
				keep(last[at])
				at++
				continue
			}
			set(st)
		}
		for i := range res.Policies {
			set(&res.Policies[i])
		}
	case applied:
		for i := range res.GatewayClasses {
			set(&res.GatewayClasses[i])
		}
		for i := range res.Gateways {
			set(&res.Gateways[i])
		}
		for i := range res.ListenerSets {
			set(&res.ListenerSets[i])
		}
		for i := range res.Ingresses {
			set(&res.Ingresses[i])
		}
		for i := range res.Services {
			set(&res.Services[i])
		}
	}
	// The last order goes back as the next pass's spare, cleared so that it keeps no entry alive.
	clear(last)
	w.order[part], w.spare[part] = next, last
	if named == w.count[part] {
		return // refs are unique in a result: nothing of this part dropped out
	}
	for ref, d := range w.desired {
		if d.pass != pass && w.partOf(ref.Kind) == part {
			delete(w.desired, ref)
			w.count[part]--
			// write clears what fleetgate no longer has to say about it
			if w.started {
				w.queue.Add(ref)
			} else if k := w.kinds[ref.Kind]; k.status == nil || k.status.ours == nil {
				w.dropped[ref] = struct{}{}
			}
		}
	}
}

// partOf says which part a status of kind belongs to.
func (w *StatusWriter) partOf(kind string) statusPart {
	if k, ok := w.kinds[kind]; ok && k.status != nil {
		return k.status.part
	}
	return translated
}

// countsOnly tells whether two desired statuses of kind differ at most in attachedRoutes.
func (w *StatusWriter) countsOnly(kind string, a, b desiredStatus) bool {
	k := w.kinds[kind]
	return k.status != nil && k.status.countsOnly != nil && k.status.countsOnly(a, b)
}

// priority is the queue priority of an object of part first named in pass: the routes and
// policies of the first pass are the backlog; Gateways and classes, a few, never wait behind it.
func (w *StatusWriter) priority(part statusPart, pass uint64) *int {
	if part == translated && pass == 1 {
		return &backlogPriority
	}
	return nil
}

// requeueLocked queues every object the writer knows of: those it has a status for (routes and
// policies as backlog) and those that left the results since, whose statuses are to be cleared.
// It needs w.mu held.
func (w *StatusWriter) requeueLocked() {
	for ref := range w.desired {
		w.queue.AddWithOpts(priorityqueue.AddOpts{Priority: w.priority(w.partOf(ref.Kind), 1)}, ref)
	}
	for ref := range w.dropped {
		w.queue.Add(ref)
	}
	clear(w.dropped)
}
