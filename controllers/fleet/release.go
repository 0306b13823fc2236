package fleet

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
)

// Releaser tells what fleetgate still holds for a leaving member (Fleet.Leaving), which the
// pipeline reads as present but empty, so that its usual delete paths release it all.
type Releaser interface {
	// Held lists what is not released yet: in the hub and the cloud (load balancers, DNS
	// records), and, only when usable (the member answers and its caches are synced), on the
	// member's own objects (fleetgate's finalizers and statuses). It may have the release paths
	// look again at what it finds.
	Held(ctx context.Context, member string, usable bool) (hub, inMember []string, err error)
}

// DefaultReleaseTimeout is how long a leaving member must have been unreachable before its
// MemberCluster is released without its objects having been cleaned (Reconciler.ReleaseTimeout).
const DefaultReleaseTimeout = 15 * time.Minute

// releaseRequeue paces the look at a leaving member whose release is under way: the release paths
// do not tell the reconciler when they are done.
const releaseRequeue = 2 * time.Second

// verdict is what one look at a leaving member decided.
type verdict struct {
	// done: the finalizer may go; leftovers says the member's objects were not cleaned.
	done, leftovers bool
	reason, message string
	requeue         time.Duration
}

// decideRelease says whether a leaving member may be released, from what is held for it, whether
// it is usable, and how long it has been unreachable. The hub's resources (the cloud's) are always
// waited for; the member's objects only while the member may still answer, up to timeout.
func decideRelease(hub, inMember []string, usable bool, unreachableFor, timeout time.Duration) verdict {
	switch {
	case len(hub) > 0:
		msg := "releasing: " + summary(hub)
		if usable && len(inMember) > 0 {
			msg += "; in the member: " + summary(inMember)
		}
		return verdict{reason: v1alpha1.MemberReasonReleasing, message: msg, requeue: releaseRequeue}
	case usable && len(inMember) > 0:
		return verdict{reason: v1alpha1.MemberReasonReleasing, message: "releasing in the member: " + summary(inMember), requeue: releaseRequeue}
	case usable:
		return verdict{done: true, reason: v1alpha1.MemberReasonReleased,
			message: "released the load balancers, DNS records, finalizers and statuses fleetgate made for the member"}
	case unreachableFor >= timeout:
		return verdict{done: true, leftovers: true, reason: v1alpha1.MemberReasonReleasedWithLeftovers,
			message: fmt.Sprintf("released the load balancers and DNS records; the member did not answer for %v, so fleetgate's finalizers "+
				"(%s) and statuses stay on its objects: remove them by hand if the cluster lives on", unreachableFor.Round(time.Second), v1alpha1.FinalizerLoadBalancer)}
	}
	// The message names the deadline, not the time left: a status that changes on every look would
	// be written on every look.
	return verdict{reason: v1alpha1.MemberReasonWaitingForMember, requeue: min(timeout-unreachableFor, releaseRequeue*5),
		message: fmt.Sprintf("released the load balancers and DNS records; waiting for the member to answer to remove fleetgate's finalizers "+
			"and statuses from its objects, or for it to have been unreachable for %v", timeout)}
}

// summary joins the first items and counts the rest, keeping a condition message short.
func summary(items []string) string {
	const shown = 5
	if len(items) <= shown {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:shown], ", "), len(items)-shown)
}

// unreachableFor is how long the member has not been usable, by its Ready condition (as just set):
// status survives an operator restart, so the release timeout does too.
func unreachableFor(mc *v1alpha1.MemberCluster, now time.Time) time.Duration {
	c := meta.FindStatusCondition(mc.Status.Conditions, v1alpha1.MemberClusterReady)
	if c == nil || c.Status == metav1.ConditionTrue {
		return 0
	}
	return now.Sub(c.LastTransitionTime.Time)
}

// setDeletingCondition says on a leaving member what its release waits for.
func setDeletingCondition(mc *v1alpha1.MemberCluster, v verdict) {
	meta.SetStatusCondition(&mc.Status.Conditions, metav1.Condition{Type: v1alpha1.MemberClusterDeleting, Status: metav1.ConditionTrue,
		Reason: v.reason, Message: v.message, ObservedGeneration: mc.Generation})
}

// holdMember puts FinalizerMember on a MemberCluster that is not being deleted; only the leader
// writes it.
func (r *Reconciler) holdMember(ctx context.Context, mc *v1alpha1.MemberCluster) error {
	if controllerutil.ContainsFinalizer(mc, v1alpha1.FinalizerMember) || !r.Fleet.leads() {
		return nil
	}
	before := mc.DeepCopy()
	controllerutil.AddFinalizer(mc, v1alpha1.FinalizerMember)
	// Optimistic: the finalizers are one list, which the AWS member rules write too.
	if err := r.Client.Patch(ctx, mc, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("adding finalizer to MemberCluster %s: %w", mc.Name, err)
	}
	return nil
}

// release is the one place that decides when a leaving member's MemberCluster may go: the member
// is read as present but empty from now on; once the release paths report nothing held (or the
// member stayed unreachable past the timeout, after the hub's resources went), the finalizer is
// removed. It returns whether it was, after which the MemberCluster's status is not written.
func (r *Reconciler) release(ctx context.Context, mc *v1alpha1.MemberCluster, o observation) (released bool, requeue time.Duration, err error) {
	f := r.Fleet
	f.setLeaving(mc.Name, true)
	if !f.leads() {
		// Only the leader's release paths run: a follower reads the member as leaving, no more.
		return false, releaseRequeue, nil
	}
	usable := o.member.known && o.member.synced && o.member.healthy && !o.member.stale
	hub, inMember, err := r.Releaser.Held(ctx, mc.Name, usable)
	if err != nil {
		return false, 0, fmt.Errorf("looking for what fleetgate holds for member %s: %w", mc.Name, err)
	}
	if usable {
		imports, err := f.importsLeft(ctx, mc.Name)
		if err != nil {
			return false, 0, fmt.Errorf("looking for ServiceImports fleetgate made in member %s: %w", mc.Name, err)
		}
		inMember = append(inMember, imports...)
	}
	if slices.Contains(mc.Finalizers, v1alpha1.FinalizerMemberRules) {
		hub = append(hub, "AWS security group rules (finalizer "+v1alpha1.FinalizerMemberRules+")")
	}
	timeout := r.ReleaseTimeout
	if timeout <= 0 {
		timeout = DefaultReleaseTimeout
	}
	v := decideRelease(hub, inMember, usable, unreachableFor(mc, time.Now()), timeout)
	if !v.done {
		if c := meta.FindStatusCondition(mc.Status.Conditions, v1alpha1.MemberClusterDeleting); c == nil && r.Recorder != nil {
			r.Recorder.Eventf(mc, nil, corev1.EventTypeNormal, v1alpha1.MemberReasonReleasing, "Release", "%s", v.message)
		}
		setDeletingCondition(mc, v)
		return false, v.requeue, nil
	}
	before := mc.DeepCopy()
	controllerutil.RemoveFinalizer(mc, v1alpha1.FinalizerMember)
	if err := r.Client.Patch(ctx, mc, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil && !apierrors.IsNotFound(err) {
		return false, 0, fmt.Errorf("removing finalizer from MemberCluster %s: %w", mc.Name, err)
	}
	if r.Recorder != nil {
		eventType := corev1.EventTypeNormal
		if v.leftovers {
			eventType = corev1.EventTypeWarning
		}
		r.Recorder.Eventf(mc, nil, eventType, v.reason, "Release", "%s", v.message)
	}
	log.FromContext(ctx).Info("member released", "leftovers", v.leftovers)
	f.disconnect(mc.Name)
	f.setLeaving(mc.Name, false)
	return true, 0, nil
}
