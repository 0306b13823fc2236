package provision

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// sweepLoop runs the orphan sweep once the first desired set is known (before it, every gateway
// would look orphaned), then about every SweepEvery; a failed sweep is retried sooner, backing off.
func (e *Engine) sweepLoop(ctx context.Context) {
	select {
	case <-e.firstSet:
	case <-ctx.Done():
		return
	}
	retry := 10 * e.o.BaseDelay
	for {
		next := jitter(e.o.SweepEvery)
		if err := e.sweep(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			e.o.Log.Error(err, "orphan sweep failed", "retryIn", retry)
			next, retry = min(next, jitter(retry)), min(2*retry, e.o.SweepEvery)
		} else {
			retry = 10 * e.o.BaseDelay
			e.o.OnSweep()
		}
		select {
		case <-time.After(next):
		case <-ctx.Done():
			return
		}
	}
}

// sweep lists every provider's gateways by ownership labels and queues the deletion of those
// (and of the clusters of those) that are not desired. The deletions run through the queues, so
// they never overlap another call for the same gateway.
func (e *Engine) sweep(ctx context.Context) error {
	var errs []error
	found := map[string][]string{}
	for name, q := range e.queues {
		start := time.Now()
		listed, err := q.p.List(ctx)
		e.m.observe(name, "list", start, err)
		// What a failing List still found (another account or cluster failed) is found by tags
		// all the same: sweep it rather than let one unreachable account shelter every orphan.
		if err != nil {
			e.m.sweeps.WithLabelValues(name, "error").Inc()
			errs = append(errs, fmt.Errorf("listing the gateways of provider %s: %w", name, err))
		} else {
			e.m.sweeps.WithLabelValues(name, "success").Inc()
		}
		e.mu.Lock()
		for _, lb := range listed {
			// Only where translation read the objects can a gateway be known to be gone.
			if lb.Clusters = e.knownLocked(lb.Clusters); len(lb.Clusters) == 0 {
				continue
			}
			// A provider may run another's resources for a gateway it serves (the AWS provider
			// runs proxies for an NLB's HTTP): they are that provider's to delete.
			if e.desiredByOtherLocked(name, lb.Gateway) {
				continue
			}
			en := q.entries[lb.Gateway]
			switch {
			case en == nil:
				q.entries[lb.Gateway] = &entry{model: lb, clusters: lb.Clusters, gen: 1, l4gen: 1}
			case en.desired && len(removedClusters(lb.Clusters, en.model.Clusters)) == 0:
				continue
			default:
				en.clusters = union(en.clusters, lb.Clusters)
			}
			found[name] = append(found[name], lb.Gateway)
			q.q.Add(lb.Gateway)
		}
		e.mu.Unlock()
		e.m.swept.WithLabelValues(name).Add(float64(len(found[name])))
		if len(found[name]) > 0 {
			e.o.Log.Info("orphans found", "provider", name, "gateways", found[name])
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	e.mu.Lock()
	if !e.swept {
		e.swept, e.sweptKeys = true, found
	}
	e.mu.Unlock()
	return nil
}

// desiredByOtherLocked tells whether a provider other than name wants the gateway.
func (e *Engine) desiredByOtherLocked(name, gateway string) bool {
	for other, q := range e.queues {
		if en := q.entries[gateway]; other != name && en != nil && en.desired {
			return true
		}
	}
	return false
}
