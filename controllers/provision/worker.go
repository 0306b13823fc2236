package provision

import (
	"context"
	"sync"
	"time"

	"github.com/fleetgate/fleetgate/providers"
)

// Start runs the workers of every provider and the orphan sweep until ctx is cancelled. Calls in
// flight then see ctx cancelled; Start returns once they have returned.
func (e *Engine) Start(ctx context.Context) error {
	e.mu.Lock()
	e.startLocked()
	e.mu.Unlock()
	var wg sync.WaitGroup
	for _, q := range e.queues {
		for range e.o.Workers {
			wg.Go(func() {
				for e.processNext(ctx, q) {
				}
			})
		}
	}
	wg.Go(func() { e.sweepLoop(ctx) })
	<-ctx.Done()
	for _, q := range e.queues {
		q.q.ShutDown()
	}
	wg.Wait()
	return nil
}

// processNext handles one key of q; the queue hands a key to one worker at a time, so calls for
// one gateway never overlap.
func (e *Engine) processNext(ctx context.Context, q *queue) bool {
	gw, shutdown := q.q.Get()
	if shutdown {
		return false
	}
	defer q.q.Done(gw)
	if err := e.process(ctx, q, gw); err != nil {
		if ctx.Err() != nil {
			return true // shutting down: the next start resumes from the desired set
		}
		e.o.Log.Error(err, "provisioning failed; retrying", "provider", q.name, "gateway", gw)
		q.q.AddRateLimited(gw)
	} else {
		q.q.Forget(gw)
	}
	e.o.OnResult(gw)
	return true
}

// process brings one gateway to its desired state: deleted when it is no longer desired, else
// removed from the clusters it left and then ensured.
func (e *Engine) process(ctx context.Context, q *queue, gw string) error {
	e.mu.Lock()
	en := q.entries[gw]
	if en == nil {
		e.mu.Unlock()
		return nil // deleted since it was queued (a stale resync)
	}
	model, version, desired, gen, l4gen := en.model, en.version, en.desired, en.gen, en.l4gen
	var removed []string
	if desired {
		removed = removedClusters(en.clusters, model.Clusters)
	} else {
		removed = union(en.clusters, model.Clusters)
	}
	held := len(removed)
	removed = e.knownLocked(removed)
	// Resources in clusters translation did not read stay: their objects may well live on.
	if !desired && held > 0 && len(removed) == 0 {
		en.parked = true
		e.mu.Unlock()
		e.o.Log.V(1).Info("not deleting in clusters that are not connected", "provider", q.name, "gateway", gw)
		return nil
	}
	e.mu.Unlock()

	// A gateway that is no longer desired is deleted with its last model even without clusters.
	if len(removed) > 0 || !desired {
		del := model
		del.Clusters = removed
		if err := e.call(ctx, q, "delete", gw, func(ctx context.Context) error { return q.p.Delete(ctx, &del) }); err != nil {
			if desired {
				e.record(q, gw, &result{err: err, version: version, gen: gen, l4gen: l4gen})
			}
			return err
		}
		e.mu.Lock()
		en.clusters = removedClusters(en.clusters, removed)
		switch {
		case !en.desired && en.gen == gen && len(en.clusters) == 0:
			delete(q.entries, gw)
		case !en.desired && len(en.clusters) > 0:
			en.parked = true // the rest waits for its clusters to be connected
		}
		e.mu.Unlock()
		e.o.Log.V(1).Info("deleted", "provider", q.name, "gateway", gw, "clusters", removed)
	}
	if !desired {
		return nil
	}
	// Recorded before the call: an interrupted Ensure may leave resources behind.
	e.mu.Lock()
	en.clusters = union(en.clusters, model.Clusters)
	e.mu.Unlock()
	var st providers.Status
	err := e.call(ctx, q, "ensure", gw, func(ctx context.Context) (err error) {
		st, err = q.p.Ensure(ctx, &model)
		return err
	})
	e.record(q, gw, &result{status: st, err: err, version: version, gen: gen, l4gen: l4gen})
	switch {
	case err == nil && st.Ready:
		q.q.AddAfter(gw, jitter(e.o.Resync))
	case err == nil:
		q.q.AddAfter(gw, jitter(min(e.o.NotReadyPoll, e.o.Resync)))
	}
	return err
}

func (e *Engine) record(q *queue, gw string, r *result) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if en := q.entries[gw]; en != nil {
		en.res = r
	}
}

// call runs one provider call with its metrics.
func (e *Engine) call(ctx context.Context, q *queue, op, gw string, f func(context.Context) error) error {
	start := time.Now()
	err := f(ctx)
	e.m.observe(q.name, op, start, err)
	if d := time.Since(start); d > slowCall {
		e.o.Log.Info("slow provider call", "provider", q.name, "op", op, "gateway", gw, "took", d)
	}
	return err
}

// slowCall is how long one provider call may take before it is logged.
const slowCall = 5 * time.Second

// NeedLeaderElection: only the leader translates, so only it has a desired set.
func (e *Engine) NeedLeaderElection() bool { return true }
