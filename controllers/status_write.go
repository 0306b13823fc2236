package controllers

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgate/fleetgate/controllers/translate"
)

// write brings one object's status to its latest desired status, or clears what fleetgate said
// about an object it no longer has anything to say about.
func (w *StatusWriter) write(ctx context.Context, ref translate.ObjectRef) error {
	k, ok := w.kinds[ref.Kind]
	if !ok || k.status == nil {
		return fmt.Errorf("status of kind %q is not written by fleetgate", ref.Kind)
	}
	w.mu.Lock()
	d, known := w.desired[ref]
	var want desiredStatus
	if known {
		want = d.want // Publish replaces it under the lock
	}
	target, connected := w.targets[ref.Cluster]
	w.mu.Unlock()
	if !connected {
		w.log.V(1).Info("dropping status of a cluster that is not connected", "cluster", ref.Cluster, "kind", ref.Kind, "namespace", ref.Namespace, "name", ref.Name)
		return nil
	}
	switch {
	case known:
	case k.status.cleared != nil:
		want = k.status.cleared(ref)
	case k.status.released != nil && w.leaving != nil && w.leaving(ref.Cluster):
		want = k.status.released(ref)
	default:
		return nil
	}
	start := time.Now()
	obj, transitions, err := w.merged(ctx, k, ref, target, want)
	if err != nil || obj == nil {
		return err
	}
	if err := target.Writer.Status().Update(ctx, obj); err != nil {
		switch {
		case apierrors.IsNotFound(err):
			w.metrics.statusWrites.WithLabelValues(ref.Kind, "error").Inc()
			return nil // deleted since it was read
		case apierrors.IsConflict(err):
			// Someone else wrote the object, or the cache is behind: the retry reads it again.
			w.metrics.statusWrites.WithLabelValues(ref.Kind, "conflict").Inc()
			return fmt.Errorf("writing %s %s/%s status: %w", ref.Kind, ref.Namespace, ref.Name, err)
		}
		w.metrics.statusWrites.WithLabelValues(ref.Kind, "error").Inc()
		return fmt.Errorf("writing %s %s/%s status: %w", ref.Kind, ref.Namespace, ref.Name, err)
	}
	w.mu.Lock()
	w.written[ref] = obj.GetResourceVersion()
	w.mu.Unlock()
	w.metrics.statusWrites.WithLabelValues(ref.Kind, "written").Inc()
	w.metrics.statusWriteSeconds.Observe(time.Since(start).Seconds())
	if target.Recorder != nil {
		for _, c := range transitions {
			eventType := "Normal"
			if c.Status != metav1.ConditionTrue {
				eventType = "Warning"
			}
			target.Recorder.Eventf(obj, nil, eventType, c.Reason, "StatusChanged", "%s=%s: %s", c.Type, c.Status, c.Message)
		}
	}
	return nil
}

// merged reads the object and merges want into it. It returns nil when the object is gone or
// already has the status wanted, and the top-level conditions whose status or reason changed.
func (w *StatusWriter) merged(ctx context.Context, k kind, ref translate.ObjectRef, target statusTarget, want desiredStatus) (client.Object, []metav1.Condition, error) {
	key := client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}
	obj := k.object()
	if err := target.Reader.Get(ctx, key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			w.mu.Lock()
			delete(w.written, ref)
			w.mu.Unlock()
			return nil, nil, nil
		}
		return nil, nil, fmt.Errorf("reading %s %s: %w", ref.Kind, key, err)
	}
	before := obj.DeepCopyObject().(client.Object)
	transitions := k.status.apply(obj, want, w.features)
	if !equality.Semantic.DeepEqual(before, obj) {
		return obj, transitions, nil
	}
	w.mu.Lock()
	rv, wrote := w.written[ref]
	w.mu.Unlock()
	if !wrote || rv == before.GetResourceVersion() || target.Live == nil {
		w.metrics.statusWrites.WithLabelValues(ref.Kind, "unchanged").Inc()
		return nil, nil, nil
	}
	// The cache may predate our last write, which changed the status: look at the object itself.
	obj = k.object()
	if err := target.Live.Get(ctx, key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil, nil
		}
		return nil, nil, fmt.Errorf("reading %s %s: %w", ref.Kind, key, err)
	}
	before = obj.DeepCopyObject().(client.Object)
	transitions = k.status.apply(obj, want, w.features)
	if equality.Semantic.DeepEqual(before, obj) {
		w.mu.Lock()
		w.written[ref] = before.GetResourceVersion()
		w.mu.Unlock()
		w.metrics.statusWrites.WithLabelValues(ref.Kind, "unchanged").Inc()
		return nil, nil, nil
	}
	return obj, transitions, nil
}
