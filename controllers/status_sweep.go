package controllers

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"

	"github.com/fleetgate/fleetgate/controllers/translate"
)

// sweeper looks through each cluster a pass read, once after the writer starts leading and
// again whenever the cluster connects anew, for objects whose status holds entries of ours that no
// pass names, and queues them to be cleared. Passes only clear what leaves their results: a route
// that stopped naming fleetgate's Gateways (or moved to another implementation's) while no
// replica ran, or while this one did not lead, would keep an Accepted entry nobody clears.
func (w *StatusWriter) sweeper(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.sweep:
		}
		for _, c := range w.unswept() {
			if err := w.sweepCluster(ctx, c); err != nil && ctx.Err() == nil {
				// Looked for again at the next pass that reads the cluster.
				w.log.Error(err, "looking for statuses of ours no pass names", "cluster", c)
			}
		}
	}
}

// wakeSweeperLocked wakes the sweeper when a cluster the last pass read is not swept yet. It needs
// w.mu held.
func (w *StatusWriter) wakeSweeperLocked() {
	if !w.started || !slices.ContainsFunc(w.read, func(c string) bool { return !w.swept[c] }) {
		return
	}
	select {
	case w.sweep <- struct{}{}:
	default:
	}
}

// unswept returns the clusters the last pass read that are connected and not swept yet.
func (w *StatusWriter) unswept() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, c := range w.read {
		if _, connected := w.targets[c]; connected && !w.swept[c] {
			out = append(out, c)
		}
	}
	return out
}

// sweepCluster queues the objects of cluster whose status holds entries of ours and that no pass
// names. The cache it lists is the one the last pass read: what a pass names is in the desired
// set by now.
func (w *StatusWriter) sweepCluster(ctx context.Context, cluster string) error {
	w.mu.Lock()
	target, connected := w.targets[cluster]
	w.mu.Unlock()
	if !connected {
		return nil
	}
	var held []translate.ObjectRef
	for _, k := range w.kinds {
		if k.status == nil || k.status.ours == nil {
			continue
		}
		objs, err := k.list(ctx, ClusterReader{Cluster: cluster, Reader: target.Reader})
		if meta.IsNoMatchError(err) || isMissingKind(err) {
			continue // the cluster does not serve the kind
		}
		if err != nil {
			return fmt.Errorf("listing %s: %w", k.name, err)
		}
		for _, o := range objs {
			if k.status.ours(o) {
				held = append(held, refOf(cluster, k.name, o))
			}
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, connected := w.targets[cluster]; !connected {
		return nil // lost meanwhile: swept when it returns
	}
	stale := 0
	for _, ref := range held {
		if _, named := w.desired[ref]; !named {
			w.queue.AddWithOpts(priorityqueue.AddOpts{Priority: &backlogPriority}, ref)
			stale++
		}
	}
	w.swept[cluster] = true
	if stale > 0 {
		w.log.Info("clearing statuses of ours that no pass names, left from before this replica led", "cluster", cluster, "objects", stale)
	}
	return nil
}

// release queues objects of a leaving cluster whose status still holds what fleetgate wrote, so
// that write releases them: those that dropped out of the results were queued then, but an
// operator that started after the cluster began leaving never named them.
func (w *StatusWriter) release(refs []translate.ObjectRef) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.started {
		return
	}
	for _, ref := range refs {
		if _, named := w.desired[ref]; !named {
			w.queue.Add(ref)
		}
	}
}

// targetOf returns the clients of a cluster, when it is usable.
func (w *StatusWriter) targetOf(cluster string) (statusTarget, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	t, ok := w.targets[cluster]
	return t, ok
}

func refOf(cluster, kind string, o client.Object) translate.ObjectRef {
	return translate.ObjectRef{Cluster: cluster, Kind: kind, Namespace: o.GetNamespace(), Name: o.GetName()}
}
