package controllers

import (
	"sigs.k8s.io/controller-runtime/pkg/event"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// Trigger wakes a controller from outside the API (a proxy exiting, an ACK, a member's informer).
// Fire never blocks and coalesces: the reconcile it causes reads the whole state, so any number of
// Fire calls before the controller takes the event are one reconcile.
type Trigger struct {
	ch chan event.GenericEvent
}

// NewTrigger returns a Trigger that nothing has fired yet.
func NewTrigger() *Trigger {
	return &Trigger{ch: make(chan event.GenericEvent, 1)}
}

// Fire asks for a reconcile. Its argument (a gateway or cluster name) is ignored: it matches the
// providers' and the config server's callbacks, and the reconcile is fleet-wide anyway.
func (t *Trigger) Fire(string) {
	select {
	case t.ch <- event.GenericEvent{Object: &gwv1.Gateway{}}:
	default: // a reconcile is already due; it will see this change too
	}
}

// Channel is the source for the controller's watch; nil for a nil Trigger, which watches nothing.
func (t *Trigger) Channel() <-chan event.GenericEvent {
	if t == nil {
		return nil
	}
	return t.ch
}
