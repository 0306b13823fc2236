package fleet

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1a1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"
)

// TestPrerequisitesCondition: a member's condition names the CRDs it lacks once its caches are
// built; a member not connected keeps the condition it had.
func TestPrerequisitesCondition(t *testing.T) {
	type cond struct {
		Status             metav1.ConditionStatus
		Reason, Message    string
		ObservedGeneration int64
	}
	previous := cond{metav1.ConditionFalse, ReasonCRDsMissing, "before", 2}
	synced := func(missing ...string) state {
		return state{known: true, synced: true, healthy: true, missing: missing}
	}
	tests := []struct {
		name string
		o    observation
		want cond
	}{
		{"all installed", observation{member: synced()},
			cond{metav1.ConditionTrue, ReasonInstalled, "every CRD fleetgate reads is installed", 3}},
		{"some missing", observation{member: synced("serviceexports.multicluster.x-k8s.io", "serviceimports.multicluster.x-k8s.io")},
			cond{metav1.ConditionFalse, ReasonCRDsMissing,
				"not installed, their kinds are read as empty until they are: serviceexports.multicluster.x-k8s.io, serviceimports.multicluster.x-k8s.io", 3}},
		{"hub missing one", observation{hub: true, member: state{known: true, synced: true, healthy: true, missing: []string{"tcproutes.gateway.networking.k8s.io"}}},
			cond{metav1.ConditionFalse, ReasonCRDsMissing, "not installed, their kinds are read as empty until they are: tcproutes.gateway.networking.k8s.io", 3}},
		{"caches syncing keeps it", observation{member: state{known: true, healthy: true, missing: []string{"x"}}}, previous},
		{"unreachable keeps it", observation{connectErr: errors.New("refused")}, previous},
		{"bad kubeconfig keeps it", observation{kubeconfigErr: errors.New("no server")}, previous},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mc := memberCluster()
			meta.SetStatusCondition(&mc.Status.Conditions, metav1.Condition{Type: PrerequisitesInstalled,
				Status: previous.Status, Reason: previous.Reason, Message: previous.Message, ObservedGeneration: previous.ObservedGeneration})
			setPrerequisitesCondition(mc, tt.o)
			c := meta.FindStatusCondition(mc.Status.Conditions, PrerequisitesInstalled)
			if diff := cmp.Diff(tt.want, cond{c.Status, c.Reason, c.Message, c.ObservedGeneration}); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestKindWatcherMissing: what a cluster lacks is named by the CRD to install, or by the kind when
// it has none, sorted, once each.
func TestKindWatcherMissing(t *testing.T) {
	scheme := kindsScheme(t)
	kinds := []Kind{
		{Object: &corev1.Service{}},
		{Object: &mcsv1a1.ServiceImport{}, CRD: "serviceimports.multicluster.x-k8s.io"},
		{Object: &mcsv1a1.ServiceExport{}, CRD: "serviceexports.multicluster.x-k8s.io"},
	}
	tests := []struct {
		name    string
		missing []client.Object
		want    []string
	}{
		{"none", nil, nil},
		{"both MCS kinds", []client.Object{&mcsv1a1.ServiceImport{}, &mcsv1a1.ServiceExport{}},
			[]string{"serviceexports.multicluster.x-k8s.io", "serviceimports.multicluster.x-k8s.io"}},
		{"a kind without a CRD", []client.Object{&corev1.Service{}}, []string{"Service"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &kindWatcher{scheme: scheme, kinds: kinds, missing: &missingKinds{}}
			for _, o := range tt.missing {
				w.missing.add(o, scheme)
			}
			if diff := cmp.Diff(tt.want, w.Missing(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
