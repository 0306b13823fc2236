package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
)

// AWSRules keeps, on the MemberClusters (annotation v1alpha1.AnnotationAWSRulesIn and finalizer
// v1alpha1.FinalizerMemberRules, metadata only: the Reconciler stays the one status writer), the
// accounts where the aws provider put rules on members' security groups, and runs the provider's
// sweep of those no spec names any more: at start (a change the operator was down for), when
// poked (a member changed), and every Every.
type AWSRules struct {
	// Client reads and patches MemberClusters in the hub. It must be uncached: a record is read
	// back right after it was written.
	Client client.Client
	// Sweep revokes the rules no member names any more and forgets their accounts (the aws
	// provider's SweepMembers).
	Sweep func(ctx context.Context) error
	// Swept runs after each sweep that succeeded: the provider brings every gateway's rules to
	// the specs the sweep saw.
	Swept func()
	// Every is the period of the sweep without changes (default 10 min); a failed sweep is tried
	// again sooner, with backoff.
	Every time.Duration
	Log   logr.Logger
	// Recorder, when set, tells on a MemberCluster why its rules could not be revoked (and its
	// finalizer stays).
	Recorder events.EventRecorder

	wake chan struct{}
}

// +kubebuilder:rbac:groups=fleetgate.dev,resources=memberclusters,verbs=get;list;watch;patch

// NewAWSRules returns the records on MemberClusters read and written through c; Sweep and Swept
// are set once the provider exists.
func NewAWSRules(c client.Client, log logr.Logger) *AWSRules {
	return &AWSRules{Client: c, Log: log, Every: 10 * time.Minute, wake: make(chan struct{}, 1)}
}

// Poke has the sweep run soon; it never blocks.
func (r *AWSRules) Poke() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// NeedLeaderElection: the sweep writes to AWS, like the provisioning engine it pairs with.
func (r *AWSRules) NeedLeaderElection() bool { return true }

// Start sweeps until ctx ends.
func (r *AWSRules) Start(ctx context.Context) error {
	const firstRetry = time.Second
	retryIn := firstRetry
	for {
		wait := r.Every
		if err := r.Sweep(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			r.Log.Error(err, "sweeping the member security group rules; will retry", "in", retryIn)
			r.tell(ctx, err)
			wait, retryIn = retryIn, min(2*retryIn, r.Every)
		} else {
			retryIn = firstRetry
			r.Swept()
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-r.wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// tell records a Warning Event on each MemberCluster a sweep error names (the aws provider's
// MemberError does).
func (r *AWSRules) tell(ctx context.Context, err error) {
	if r.Recorder == nil {
		return
	}
	for _, e := range leaves(err) {
		named, ok := errors.AsType[memberError](e)
		if !ok {
			continue
		}
		for _, name := range named.MemberNames() {
			var mc v1alpha1.MemberCluster
			if r.Client.Get(ctx, client.ObjectKey{Name: name}, &mc) != nil {
				continue
			}
			r.Recorder.Eventf(&mc, nil, corev1.EventTypeWarning, ReasonMemberRulesNotRevoked, "SweepMemberRules",
				"member security group rules not revoked (the MemberCluster keeps its finalizer until they are): %v", e)
		}
	}
}

// memberError names the members it concerns.
type memberError interface {
	error
	MemberNames() []string
}

// ReasonMemberRulesNotRevoked is the Event reason of a failed sweep on the members it concerns.
const ReasonMemberRulesNotRevoked = "MemberRulesNotRevoked"

// leaves are the errors joined in err (err itself when it joins none).
func leaves(err error) []error {
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var out []error
	for _, e := range j.Unwrap() {
		out = append(out, leaves(e)...)
	}
	return out
}

// Recorded returns the recorded accounts of every MemberCluster that has any. A record that does
// not parse is an error: its accounts cannot be cleaned, so its finalizer must stay.
func (r *AWSRules) Recorded(ctx context.Context) (map[string][]v1alpha1.AWSOptions, error) {
	var list v1alpha1.MemberClusterList
	if err := r.Client.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing the MemberClusters: %w", err)
	}
	out := map[string][]v1alpha1.AWSOptions{}
	for i := range list.Items {
		accounts, err := recordedAccounts(&list.Items[i])
		if err != nil {
			return nil, err
		}
		if len(accounts) > 0 {
			out[list.Items[i].Name] = accounts
		}
	}
	return out, nil
}

// Record adds account to member's record and puts the finalizer on it. A member being deleted
// takes no new record (nor the API server a new finalizer): no rule may be made for it.
func (r *AWSRules) Record(ctx context.Context, member string, account v1alpha1.AWSOptions) error {
	return r.update(ctx, member, fmt.Errorf("MemberCluster %s is gone", member), func(mc *v1alpha1.MemberCluster, accounts []v1alpha1.AWSOptions) ([]v1alpha1.AWSOptions, error) {
		if !mc.DeletionTimestamp.IsZero() {
			return nil, fmt.Errorf("MemberCluster %s is being deleted", member)
		}
		if !slices.ContainsFunc(accounts, func(a v1alpha1.AWSOptions) bool { return sameAccount(a, account) }) {
			accounts = append(accounts, account)
		}
		return accounts, nil
	})
}

// Forget drops accounts from member's record, and the finalizer with the last one.
func (r *AWSRules) Forget(ctx context.Context, member string, accounts []v1alpha1.AWSOptions) error {
	return r.update(ctx, member, nil, func(_ *v1alpha1.MemberCluster, have []v1alpha1.AWSOptions) ([]v1alpha1.AWSOptions, error) {
		return slices.DeleteFunc(have, func(a v1alpha1.AWSOptions) bool {
			return slices.ContainsFunc(accounts, func(b v1alpha1.AWSOptions) bool { return sameAccount(a, b) })
		}), nil
	})
}

// update rewrites member's record with change, holding the finalizer exactly while the record is
// not empty, in one patch that fails on a concurrent write (and is then retried on a fresh read).
// A member that is gone returns gone.
func (r *AWSRules) update(ctx context.Context, member string, gone error,
	change func(*v1alpha1.MemberCluster, []v1alpha1.AWSOptions) ([]v1alpha1.AWSOptions, error)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var mc v1alpha1.MemberCluster
		if err := r.Client.Get(ctx, client.ObjectKey{Name: member}, &mc); err != nil {
			if apierrors.IsNotFound(err) {
				return gone
			}
			return fmt.Errorf("reading MemberCluster %s: %w", member, err)
		}
		before := mc.DeepCopy()
		accounts, err := recordedAccounts(&mc)
		if err != nil {
			return err
		}
		if accounts, err = change(&mc, accounts); err != nil {
			return err
		}
		if len(accounts) == 0 {
			delete(mc.Annotations, v1alpha1.AnnotationAWSRulesIn)
			controllerutil.RemoveFinalizer(&mc, v1alpha1.FinalizerMemberRules)
		} else {
			raw, err := json.Marshal(accounts)
			if err != nil {
				return fmt.Errorf("encoding the record of MemberCluster %s: %w", member, err)
			}
			if mc.Annotations == nil {
				mc.Annotations = map[string]string{}
			}
			mc.Annotations[v1alpha1.AnnotationAWSRulesIn] = string(raw)
			controllerutil.AddFinalizer(&mc, v1alpha1.FinalizerMemberRules)
		}
		if mc.Annotations[v1alpha1.AnnotationAWSRulesIn] == before.Annotations[v1alpha1.AnnotationAWSRulesIn] &&
			slices.Equal(mc.Finalizers, before.Finalizers) {
			return nil
		}
		if err := r.Client.Patch(ctx, &mc, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			if apierrors.IsNotFound(err) {
				return gone
			}
			return fmt.Errorf("patching the record of MemberCluster %s: %w", member, err)
		}
		return nil
	})
}

// recordedAccounts parses mc's record.
func recordedAccounts(mc *v1alpha1.MemberCluster) ([]v1alpha1.AWSOptions, error) {
	raw, ok := mc.Annotations[v1alpha1.AnnotationAWSRulesIn]
	if !ok {
		return nil, nil
	}
	var accounts []v1alpha1.AWSOptions
	if err := json.Unmarshal([]byte(raw), &accounts); err != nil {
		return nil, fmt.Errorf("MemberCluster %s: annotation %s: %w", mc.Name, v1alpha1.AnnotationAWSRulesIn, err)
	}
	return accounts, nil
}

// sameAccount compares accounts as they are recorded.
func sameAccount(a, b v1alpha1.AWSOptions) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}

// EventSource is the part of an informer Watch uses.
type EventSource interface {
	AddEventHandler(toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error)
}

// Watch has recheck called, and the sweep poked, when a MemberCluster's part in the AWS member
// rules (its spec.provider.aws and vpc, its region) appears, changes or goes, or the member starts
// being deleted: no gateway's model holds member specs, so no translation would have the provider
// bring the rules to them before its resync. informer is the hub's MemberCluster informer.
func (r *AWSRules) Watch(informer EventSource, recheck func()) error {
	inputs := func(obj any) *memberInputs {
		if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if m, ok := obj.(*v1alpha1.MemberCluster); ok {
			return memberRuleInputs(m)
		}
		return nil
	}
	changed := func(before, after *memberInputs) {
		if !reflect.DeepEqual(before, after) {
			recheck()
			r.Poke()
		}
	}
	_, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { changed(nil, inputs(obj)) },
		UpdateFunc: func(old, obj any) { changed(inputs(old), inputs(obj)) },
		DeleteFunc: func(obj any) { changed(inputs(obj), nil) },
	})
	if err != nil {
		return fmt.Errorf("watching the MemberClusters for their security groups: %w", err)
	}
	return nil
}

// memberRuleInputs is what of a MemberCluster the AWS member rules depend on; nil when it names
// no security groups.
func memberRuleInputs(m *v1alpha1.MemberCluster) *memberInputs {
	if m.Spec.Provider.AWS == nil {
		return nil
	}
	return &memberInputs{*m.Spec.Provider.AWS, m.Spec.Provider.VPC, m.Spec.Region, !m.DeletionTimestamp.IsZero()}
}

type memberInputs struct {
	AWS      v1alpha1.MemberAWS
	VPC      string
	Region   string
	Deleting bool
}
