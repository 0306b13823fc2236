package fleet

import (
	"context"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
)

// TestElectedLooksAtEveryMember: once this replica leads, every MemberCluster is queued for the
// reconciler, which writes their status and finalizer only as the leader.
func TestElectedLooksAtEveryMember(t *testing.T) {
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(
		&v1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "member-a"}},
		&v1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "member-b"}},
	).Build()
	f := New(Options{})
	if err := (elected{&Reconciler{Fleet: f, Client: c}}).Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	var got []string
	for len(f.health) > 0 {
		got = append(got, (<-f.health).Object.GetName())
	}
	slices.Sort(got)
	if diff := cmp.Diff([]string{"member-a", "member-b"}, got); diff != "" {
		t.Errorf("queued (-want +got):\n%s", diff)
	}
}
