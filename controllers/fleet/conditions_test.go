package fleet

import (
	"errors"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
)

// ready is the part of the Ready condition the state machine decides.
type ready struct {
	Status             metav1.ConditionStatus
	Reason, Message    string
	ObservedGeneration int64
	Version            string
	Requeue            time.Duration
}

// look sets mc's conditions from o as Reconcile does and returns what it decided.
func look(t *testing.T, mc *v1alpha1.MemberCluster, o observation) ready {
	t.Helper()
	setReadyCondition(mc, o)
	setKubernetesVersion(mc, o)
	var got ready
	for _, c := range mc.Status.Conditions {
		if c.Type == v1alpha1.MemberClusterReady {
			got = ready{Status: c.Status, Reason: c.Reason, Message: c.Message, ObservedGeneration: c.ObservedGeneration}
		}
	}
	got.Version, got.Requeue = mc.Status.KubernetesVersion, requeueAfter(o, 2*time.Second)
	return got
}

// TestMemberStateMachine: each situation a look at a member can find gives one Ready condition,
// version and requeue, for the MemberCluster's current generation.
func TestMemberStateMachine(t *testing.T) {
	connected := state{known: true, synced: true, healthy: true, version: "v1.36.3"}
	tests := []struct {
		name string
		o    observation
		want ready
	}{
		{"hub", observation{hub: true, member: state{known: true, synced: true, healthy: true, version: "v1.36.0"}},
			ready{metav1.ConditionTrue, v1alpha1.MemberReasonConnected, "the operator's own cluster", 3, "v1.36.0", 0}},
		{"Secret missing", observation{kubeconfigErr: errors.New(`reading kubeconfig Secret fleetgate-system/m: secrets "m" not found`)},
			ready{metav1.ConditionFalse, v1alpha1.MemberReasonKubeconfigInvalid, `reading kubeconfig Secret fleetgate-system/m: secrets "m" not found`, 3, "v1.30.0", 0}},
		{"kubeconfig invalid", observation{kubeconfigErr: errors.New("kubeconfig in Secret fleetgate-system/m: no server")},
			ready{metav1.ConditionFalse, v1alpha1.MemberReasonKubeconfigInvalid, "kubeconfig in Secret fleetgate-system/m: no server", 3, "v1.30.0", 0}},
		{"connect fails", observation{connectErr: errors.New("creating client for member m: dial tcp: refused")},
			ready{metav1.ConditionFalse, v1alpha1.MemberReasonUnreachable, "creating client for member m: dial tcp: refused", 3, "v1.30.0", 2 * time.Second}},
		{"probe fails", observation{member: state{known: true, synced: true, probeErr: "probing /version: timeout", version: "v1.36.3"}},
			ready{metav1.ConditionFalse, v1alpha1.MemberReasonUnreachable, "API server does not answer: probing /version: timeout", 3, "v1.36.3", 0}},
		{"never answered", observation{member: state{known: true, probeErr: "probing /version: refused"}},
			ready{metav1.ConditionFalse, v1alpha1.MemberReasonUnreachable, "API server does not answer: probing /version: refused", 3, "v1.30.0", 0}},
		{"caches syncing", observation{member: state{known: true, healthy: true, version: "v1.36.3"}},
			ready{metav1.ConditionFalse, reasonConnecting, "connected; waiting for informer caches to sync", 3, "v1.36.3", syncRequeue}},
		{"connected", observation{member: connected},
			ready{metav1.ConditionTrue, v1alpha1.MemberReasonConnected, "API server answers and informer caches are synced", 3, "v1.36.3", 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mc := memberCluster()
			if diff := cmp.Diff(tt.want, look(t, mc, tt.o)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if len(mc.Status.Conditions) != 2 || mc.Status.Conditions[0].Type != "Other" {
				t.Errorf("conditions of other types changed: %+v", mc.Status.Conditions)
			}
		})
	}
}

// TestMemberLifecycle walks one member through its probe results as the fleet records them
// (record) and the reconciler reads them (state): Connecting until its caches sync, Connected,
// Unreachable only after FailureThreshold failures, then stale — which the reconciler answers by
// reconnecting — and Connected again. Ready's transition time moves only when its status does.
func TestMemberLifecycle(t *testing.T) {
	down := errors.New("probing /version: refused")
	f := New(Options{FailureThreshold: 2, Log: logr.Discard()})
	m := &member{name: "m", hash: "h", healthy: true, kinds: &kindWatcher{missing: &missingKinds{}}}
	f.members["m"] = m
	steps := []struct {
		name      string
		do        func()
		want      ready
		wantEvent bool
	}{
		{"connected, syncing", func() {}, ready{metav1.ConditionFalse, reasonConnecting, "connected; waiting for informer caches to sync", 3, "v1.30.0", syncRequeue}, true},
		{"synced", func() { m.synced = true; f.record(m, "v1.36.3", nil) },
			ready{metav1.ConditionTrue, v1alpha1.MemberReasonConnected, "API server answers and informer caches are synced", 3, "v1.36.3", 0}, true},
		{"one failure", func() { f.record(m, "", down) },
			ready{metav1.ConditionTrue, v1alpha1.MemberReasonConnected, "API server answers and informer caches are synced", 3, "v1.36.3", 0}, false},
		{"threshold", func() { f.record(m, "", down) },
			ready{metav1.ConditionFalse, v1alpha1.MemberReasonUnreachable, "API server does not answer: " + down.Error(), 3, "v1.36.3", 0}, true},
		{"answers again", func() {
			f.record(m, "v1.36.4", nil)
			if st := f.state("m"); !st.stale {
				t.Fatal("a member back from unreachable is not stale")
			}
			// The reconciler rebuilds a stale member: a new connection syncs again.
			f.members["m"] = &member{name: "m", hash: "h", healthy: true, synced: true, version: "v1.36.4", kinds: &kindWatcher{missing: &missingKinds{}}}
		}, ready{metav1.ConditionTrue, v1alpha1.MemberReasonConnected, "API server answers and informer caches are synced", 3, "v1.36.4", 0}, true},
	}
	mc := memberCluster()
	for _, s := range steps {
		s.do()
		before := mc.DeepCopy()
		got := look(t, mc, observation{member: f.state("m")})
		if diff := cmp.Diff(s.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", s.name, diff)
		}
		if ev := readyTransition(before, mc); ev != s.wantEvent {
			t.Errorf("%s: event %v, want %v", s.name, ev, s.wantEvent)
		}
		if s.wantEvent == equalStatus(before.Status, mc.Status) {
			t.Errorf("%s: status written %v, want it written with the event", s.name, !equalStatus(before.Status, mc.Status))
		}
	}
}

// memberCluster is at generation 3 with a version from an earlier connection and a condition of
// another type that the state machine must leave alone.
func memberCluster() *v1alpha1.MemberCluster {
	mc := &v1alpha1.MemberCluster{}
	mc.Name, mc.Generation = "m", 3
	mc.Status.KubernetesVersion = "v1.30.0"
	mc.Status.Conditions = []metav1.Condition{{Type: "Other", Status: metav1.ConditionTrue, Reason: "Set", ObservedGeneration: 1}}
	return mc
}

func TestEqualStatus(t *testing.T) {
	base := v1alpha1.MemberClusterStatus{KubernetesVersion: "v1", Conditions: []metav1.Condition{
		{Type: "Ready", Status: metav1.ConditionTrue, Reason: "R", Message: "m", ObservedGeneration: 1, LastTransitionTime: metav1.Unix(1, 0)}}}
	change := func(f func(*v1alpha1.MemberClusterStatus)) v1alpha1.MemberClusterStatus {
		s := *base.DeepCopy()
		f(&s)
		return s
	}
	tests := []struct {
		name string
		b    v1alpha1.MemberClusterStatus
		want bool
	}{
		{"same", change(func(*v1alpha1.MemberClusterStatus) {}), true},
		{"transition time only", change(func(s *v1alpha1.MemberClusterStatus) { s.Conditions[0].LastTransitionTime = metav1.Unix(2, 0) }), true},
		{"version", change(func(s *v1alpha1.MemberClusterStatus) { s.KubernetesVersion = "v2" }), false},
		{"status", change(func(s *v1alpha1.MemberClusterStatus) { s.Conditions[0].Status = metav1.ConditionFalse }), false},
		{"reason", change(func(s *v1alpha1.MemberClusterStatus) { s.Conditions[0].Reason = "X" }), false},
		{"message", change(func(s *v1alpha1.MemberClusterStatus) { s.Conditions[0].Message = "x" }), false},
		{"generation", change(func(s *v1alpha1.MemberClusterStatus) { s.Conditions[0].ObservedGeneration = 2 }), false},
		{"type", change(func(s *v1alpha1.MemberClusterStatus) { s.Conditions[0].Type = "Other" }), false},
		{"one more", change(func(s *v1alpha1.MemberClusterStatus) {
			s.Conditions = append(s.Conditions, metav1.Condition{Type: "X"})
		}), false},
	}
	for _, tt := range tests {
		if got := equalStatus(base, tt.b); got != tt.want {
			t.Errorf("%s: equalStatus = %v, want %v (%s)", tt.name, got, tt.want, cmp.Diff(base, tt.b, cmpopts.EquateEmpty()))
		}
	}
}
