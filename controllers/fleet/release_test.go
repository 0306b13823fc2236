package fleet

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
)

// TestDecideRelease: the hub's (the cloud's) resources are always waited for; the member's
// objects while it answers, or until it has been unreachable for the timeout.
func TestDecideRelease(t *testing.T) {
	const timeout = 10 * time.Minute
	type want struct {
		Done, Leftovers bool
		Reason          string
		Requeue         time.Duration
	}
	tests := []struct {
		name           string
		hub, inMember  []string
		usable         bool
		unreachableFor time.Duration
		want           want
	}{
		{name: "load balancer left, member answers", hub: []string{"load balancer of gateway m/default/alb"}, inMember: []string{"finalizer of Gateway default/alb"}, usable: true,
			want: want{Reason: v1alpha1.MemberReasonReleasing, Requeue: releaseRequeue}},
		{name: "load balancer left, member unreachable past the timeout", hub: []string{"load balancer of gateway m/default/alb"}, unreachableFor: 2 * timeout,
			want: want{Reason: v1alpha1.MemberReasonReleasing, Requeue: releaseRequeue}},
		{name: "member objects left", inMember: []string{"status of HTTPRoute default/web"}, usable: true,
			want: want{Reason: v1alpha1.MemberReasonReleasing, Requeue: releaseRequeue}},
		{name: "all released", usable: true,
			want: want{Done: true, Reason: v1alpha1.MemberReasonReleased}},
		{name: "hub released, member unreachable", unreachableFor: time.Minute,
			want: want{Reason: v1alpha1.MemberReasonWaitingForMember, Requeue: releaseRequeue * 5}},
		{name: "hub released, member unreachable almost for the timeout", unreachableFor: timeout - time.Second,
			want: want{Reason: v1alpha1.MemberReasonWaitingForMember, Requeue: time.Second}},
		{name: "hub released, member unreachable for the timeout", unreachableFor: timeout,
			want: want{Done: true, Leftovers: true, Reason: v1alpha1.MemberReasonReleasedWithLeftovers}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := decideRelease(tt.hub, tt.inMember, tt.usable, tt.unreachableFor, timeout)
			got := want{Done: v.done, Leftovers: v.leftovers, Reason: v.reason, Requeue: v.requeue}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("verdict (-want +got):\n%s", diff)
			}
			if v.message == "" {
				t.Error("no message")
			}
		})
	}
}

// TestDecideReleaseMessage: the message names what is left, the first few of many.
func TestDecideReleaseMessage(t *testing.T) {
	hub := []string{"a", "b", "c", "d", "e", "f", "g"}
	got := decideRelease(hub, []string{"x"}, true, 0, time.Minute).message
	if want := "releasing: a, b, c, d, e and 2 more; in the member: x"; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
}

// TestUnreachableFor: measured from the Ready condition's last transition while it is not True.
func TestUnreachableFor(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	ready := func(s metav1.ConditionStatus, since time.Duration) *v1alpha1.MemberCluster {
		mc := &v1alpha1.MemberCluster{}
		mc.Status.Conditions = []metav1.Condition{{Type: v1alpha1.MemberClusterReady, Status: s, LastTransitionTime: metav1.NewTime(now.Add(-since))}}
		return mc
	}
	tests := []struct {
		name string
		mc   *v1alpha1.MemberCluster
		want time.Duration
	}{
		{"no condition", &v1alpha1.MemberCluster{}, 0},
		{"ready", ready(metav1.ConditionTrue, time.Hour), 0},
		{"not ready", ready(metav1.ConditionFalse, 3*time.Minute), 3 * time.Minute},
		{"unknown", ready(metav1.ConditionUnknown, time.Minute), time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := unreachableFor(tt.mc, now); got != tt.want {
				t.Errorf("unreachable for %v, want %v", got, tt.want)
			}
		})
	}
}
