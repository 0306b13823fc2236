package controllers

import (
	"context"
	"maps"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgate/fleetgate/controllers/translate"
)

// Notify records an Event for every notice that was not in the previous call, so that a standing
// condition (a lost conflict, an unsupported backend) is told once, not on every reconcile. Every
// replica translates; only the leader records, and a follower that takes over does not tell again
// what its predecessor told.
func (w *StatusWriter) Notify(ctx context.Context, notices []translate.Notice) {
	w.mu.Lock()
	prev := w.notified
	w.notified = make(map[translate.Notice]bool, len(notices))
	var fresh []translate.Notice
	for _, n := range notices {
		w.notified[n] = true
		if !prev[n] {
			fresh = append(fresh, n)
		}
	}
	targets := maps.Clone(w.targets)
	w.mu.Unlock()
	if w.leader != nil && !w.leader() {
		return
	}
	for _, n := range fresh {
		target, ok := targets[n.Ref.Cluster]
		if !ok || target.Recorder == nil {
			continue
		}
		k, ok := w.kinds[n.Ref.Kind]
		if !ok {
			continue
		}
		obj := k.object()
		if err := target.Reader.Get(ctx, client.ObjectKey{Namespace: n.Ref.Namespace, Name: n.Ref.Name}, obj); err != nil {
			if !apierrors.IsNotFound(err) {
				w.log.Error(err, "reading the object of a notice", "kind", n.Ref.Kind, "namespace", n.Ref.Namespace, "name", n.Ref.Name)
				w.forget(n) // told next time
			}
			continue
		}
		target.Recorder.Eventf(obj, nil, n.Type, n.Reason, "Translate", "%s", n.Message)
	}
}

func (w *StatusWriter) forget(n translate.Notice) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.notified, n)
}
