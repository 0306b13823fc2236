package controllers

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestAwaitMembers: the first translation waits while members are still connecting, at most
// memberWait, and only once; a failure to look is an error, not a wait.
func TestAwaitMembers(t *testing.T) {
	awaiting := func(names ...string) func(context.Context) ([]string, error) {
		return func(context.Context) ([]string, error) { return names, nil }
	}
	tests := []struct {
		name        string
		awaiting    func(context.Context) ([]string, error)
		waitedFor   time.Duration
		wantWait    bool
		wantErr     bool
		wantSettled bool
	}{
		{name: "no fleet: nothing to wait for"},
		{name: "every member settled", awaiting: awaiting(), wantSettled: true},
		{name: "a member still connecting", awaiting: awaiting("m1"), wantWait: true},
		{name: "still connecting after memberWait", awaiting: awaiting("m1"), waitedFor: memberWait + time.Second, wantSettled: true},
		{name: "MemberClusters cannot be listed", awaiting: func(context.Context) ([]string, error) { return nil, errors.New("cache stopped") }, wantErr: true},
	}
	for _, tc := range tests {
		r := &GatewayReconciler{Awaiting: tc.awaiting}
		if tc.waitedFor > 0 {
			r.waitingSince = time.Now().Add(-tc.waitedFor)
		}
		wait, err := r.awaitMembers(t.Context())
		if (wait > 0) != tc.wantWait || (err != nil) != tc.wantErr || r.settled != tc.wantSettled {
			t.Errorf("%s: wait %v, err %v, settled %v; want wait %v, error %v, settled %v", tc.name, wait, err, r.settled, tc.wantWait, tc.wantErr, tc.wantSettled)
		}
		if r.settled {
			// Settled once: later passes do not look again.
			r.Awaiting = awaiting("m2")
			if wait, _ := r.awaitMembers(t.Context()); wait != 0 {
				t.Errorf("%s: waited again after settling", tc.name)
			}
		}
	}
	r := &GatewayReconciler{}
	if r.Applied(nil) == nil {
		t.Error("ready before any translation was applied")
	}
	r.applied.Store(true)
	if err := r.Applied(nil); err != nil {
		t.Errorf("not ready after a translation was applied: %v", err)
	}
}
