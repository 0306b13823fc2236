package fleet

import (
	"testing"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
)

// informerStub hands the handler Watch registers to the test, which plays the informer.
type informerStub struct {
	h toolscache.ResourceEventHandler
}

func (i *informerStub) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	i.h = h
	return nil, nil
}

// TestAWSRulesWatch: the AWS provider is asked to look at its gateways again when a member's
// security groups, their account or region, or the member's VPC appear, change or go, or the
// member starts being deleted; not for other changes, nor for members without security groups.
func TestAWSRulesWatch(t *testing.T) {
	member := func(mutate func(*v1alpha1.MemberCluster)) *v1alpha1.MemberCluster {
		m := &v1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "east"}, Spec: v1alpha1.MemberClusterSpec{
			Region: "eu-west-1", Weight: 100, Provider: v1alpha1.ProviderHints{VPC: "vpc-0e",
				AWS: &v1alpha1.MemberAWS{SecurityGroups: []string{"sg-0e"}}}}}
		if mutate != nil {
			mutate(m)
		}
		return m
	}
	plain := func(m *v1alpha1.MemberCluster) { m.Spec.Provider.AWS = nil }
	now := metav1.Now()
	tests := []struct {
		name  string
		event func(toolscache.ResourceEventHandler)
		want  int
	}{
		{"added with groups", func(h toolscache.ResourceEventHandler) { h.OnAdd(member(nil), false) }, 1},
		{"added without", func(h toolscache.ResourceEventHandler) { h.OnAdd(member(plain), false) }, 0},
		{"groups changed", func(h toolscache.ResourceEventHandler) {
			h.OnUpdate(member(nil), member(func(m *v1alpha1.MemberCluster) { m.Spec.Provider.AWS.SecurityGroups = []string{"sg-1f"} }))
		}, 1},
		{"other account", func(h toolscache.ResourceEventHandler) {
			h.OnUpdate(member(nil), member(func(m *v1alpha1.MemberCluster) {
				m.Spec.Provider.AWS.Credentials = &v1alpha1.AWSCredentials{AssumeRole: &v1alpha1.AWSAssumeRole{RoleARN: "arn:aws:iam::123456789012:role/x"}}
			}))
		}, 1},
		{"region changed", func(h toolscache.ResourceEventHandler) {
			h.OnUpdate(member(nil), member(func(m *v1alpha1.MemberCluster) { m.Spec.Region = "eu-west-2" }))
		}, 1},
		{"vpc changed", func(h toolscache.ResourceEventHandler) {
			h.OnUpdate(member(nil), member(func(m *v1alpha1.MemberCluster) { m.Spec.Provider.VPC = "vpc-1f" }))
		}, 1},
		{"aws dropped", func(h toolscache.ResourceEventHandler) { h.OnUpdate(member(nil), member(plain)) }, 1},
		{"aws added", func(h toolscache.ResourceEventHandler) { h.OnUpdate(member(plain), member(nil)) }, 1},
		{"deleting", func(h toolscache.ResourceEventHandler) {
			h.OnUpdate(member(nil), member(func(m *v1alpha1.MemberCluster) { m.DeletionTimestamp = &now }))
		}, 1},
		{"weight changed", func(h toolscache.ResourceEventHandler) {
			h.OnUpdate(member(nil), member(func(m *v1alpha1.MemberCluster) { m.Spec.Weight = 5 }))
		}, 0},
		{"status changed", func(h toolscache.ResourceEventHandler) {
			h.OnUpdate(member(nil), member(func(m *v1alpha1.MemberCluster) { m.Status.KubernetesVersion = "v1.36.3" }))
		}, 0},
		{"no change of a plain member", func(h toolscache.ResourceEventHandler) { h.OnUpdate(member(plain), member(plain)) }, 0},
		{"deleted", func(h toolscache.ResourceEventHandler) { h.OnDelete(member(nil)) }, 1},
		{"deleted, final state unknown", func(h toolscache.ResourceEventHandler) {
			h.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "east", Obj: member(nil)})
		}, 1},
		{"deleted without", func(h toolscache.ResourceEventHandler) { h.OnDelete(member(plain)) }, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var inf informerStub
			n := 0
			r := NewAWSRules(nil, logr.Discard())
			if err := r.Watch(&inf, func() { n++ }); err != nil {
				t.Fatal(err)
			}
			tt.event(inf.h)
			if n != tt.want {
				t.Errorf("rechecks: %d, want %d", n, tt.want)
			}
			if poked := len(r.wake); poked != tt.want {
				t.Errorf("sweeps poked: %d, want %d", poked, tt.want)
			}
		})
	}
}
