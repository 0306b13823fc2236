package fleet

import (
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
)

// reasonConnecting: the member's kubeconfig works but its caches have not synced yet.
const reasonConnecting = "Connecting"

// PrerequisitesInstalled is the MemberCluster condition that tells whether the cluster serves every
// CRD fleetgate reads but does not install (Gateway API, MCS): the kinds of a missing one read as
// empty, and are read as soon as it is installed.
const (
	PrerequisitesInstalled = "fleetgate.dev/PrerequisitesInstalled"

	ReasonInstalled   = "Installed"
	ReasonCRDsMissing = "CRDsMissing"
)

// syncRequeue is when a member whose caches are syncing is looked at again; the sync goroutine
// pokes the reconciler when done, so this is a safety net.
const syncRequeue = 10 * time.Second

// observation is what one reconcile found of a member, in the order it looks: its kubeconfig
// (Secret and parse), the connection built from it, then the fleet's record of its probe and
// caches. The first failure ends the look, so at most one error is set.
type observation struct {
	// hub: the operator's own cluster, read through the manager's cache.
	hub           bool
	kubeconfigErr error
	connectErr    error
	member        state
}

// setPrerequisitesCondition says which prerequisite CRDs the member lacks, once its caches are
// built; a member that is not connected keeps what it had, since nothing new is known of it.
func setPrerequisitesCondition(mc *v1alpha1.MemberCluster, o observation) {
	if !o.hub && (o.kubeconfigErr != nil || o.connectErr != nil || !o.member.synced) {
		return
	}
	status, reason := metav1.ConditionTrue, ReasonInstalled
	msg := "every CRD fleetgate reads is installed"
	if len(o.member.missing) > 0 {
		status, reason = metav1.ConditionFalse, ReasonCRDsMissing
		msg = "not installed, their kinds are read as empty until they are: " + strings.Join(o.member.missing, ", ")
	}
	meta.SetStatusCondition(&mc.Status.Conditions, metav1.Condition{
		Type: PrerequisitesInstalled, Status: status, Reason: reason, Message: msg, ObservedGeneration: mc.Generation,
	})
}

// setReadyCondition sets mc's Ready condition from what was observed, for mc's generation.
func setReadyCondition(mc *v1alpha1.MemberCluster, o observation) {
	status, reason, msg := metav1.ConditionFalse, "", ""
	switch {
	case o.hub:
		status, reason, msg = metav1.ConditionTrue, v1alpha1.MemberReasonConnected, "the operator's own cluster"
	case o.kubeconfigErr != nil:
		reason, msg = v1alpha1.MemberReasonKubeconfigInvalid, o.kubeconfigErr.Error()
	case o.connectErr != nil:
		reason, msg = v1alpha1.MemberReasonUnreachable, o.connectErr.Error()
	case !o.member.healthy:
		reason, msg = v1alpha1.MemberReasonUnreachable, "API server does not answer: "+o.member.probeErr
	case !o.member.synced:
		reason, msg = reasonConnecting, "connected; waiting for informer caches to sync"
	default:
		status, reason, msg = metav1.ConditionTrue, v1alpha1.MemberReasonConnected, "API server answers and informer caches are synced"
	}
	meta.SetStatusCondition(&mc.Status.Conditions, metav1.Condition{
		Type: v1alpha1.MemberClusterReady, Status: status, Reason: reason, Message: msg, ObservedGeneration: mc.Generation,
	})
}

// setKubernetesVersion records the version the member's probe last read; a member not connected
// keeps the one it had.
func setKubernetesVersion(mc *v1alpha1.MemberCluster, o observation) {
	if o.kubeconfigErr == nil && o.connectErr == nil && o.member.version != "" {
		mc.Status.KubernetesVersion = o.member.version
	}
}

// requeueAfter is when a member is looked at again without an event: a member that could not be
// connected at the probe's pace ("Unreachable within the probe interval" holds for members that
// were never reachable too), one whose caches are syncing after syncRequeue.
func requeueAfter(o observation, probeInterval time.Duration) time.Duration {
	switch {
	case o.hub, o.kubeconfigErr != nil:
		return 0
	case o.connectErr != nil:
		return probeInterval
	case o.member.healthy && !o.member.synced:
		return syncRequeue
	}
	return 0
}

// transition tells whether the condition of type t changed status or message from before to after,
// which is worth an Event, and returns it.
func transition(before, after *v1alpha1.MemberCluster, t string) (*metav1.Condition, bool) {
	old := meta.FindStatusCondition(before.Status.Conditions, t)
	cur := meta.FindStatusCondition(after.Status.Conditions, t)
	if cur == nil {
		return nil, false
	}
	return cur, old == nil || old.Status != cur.Status || old.Message != cur.Message
}

// readyTransition tells whether Ready changed status or reason from before to after, which is
// worth an Event.
func readyTransition(before, after *v1alpha1.MemberCluster) bool {
	old := meta.FindStatusCondition(before.Status.Conditions, v1alpha1.MemberClusterReady)
	cur := meta.FindStatusCondition(after.Status.Conditions, v1alpha1.MemberClusterReady)
	if cur == nil {
		return false
	}
	return old == nil || old.Status != cur.Status || old.Reason != cur.Reason
}

func equalStatus(a, b v1alpha1.MemberClusterStatus) bool {
	if a.KubernetesVersion != b.KubernetesVersion || len(a.Conditions) != len(b.Conditions) {
		return false
	}
	for i := range a.Conditions {
		x, y := a.Conditions[i], b.Conditions[i]
		if x.Type != y.Type || x.Status != y.Status || x.Reason != y.Reason || x.Message != y.Message || x.ObservedGeneration != y.ObservedGeneration {
			return false
		}
	}
	return true
}
