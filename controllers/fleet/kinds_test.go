package fleet

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	mcsv1a1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
)

func kindsScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, mcsv1a1.Install} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// TestMissingKindsHides: a kind the member did not serve reads as empty, as an object or a list,
// until its informer has synced (served); every other kind reads through.
func TestMissingKindsHides(t *testing.T) {
	scheme := kindsScheme(t)
	tests := []struct {
		name   string
		add    []client.Object
		served []client.Object
		obj    runtime.Object
		want   bool
	}{
		{name: "nothing missing", obj: &mcsv1a1.ServiceExportList{}, want: false},
		{name: "missing kind's list", add: []client.Object{&mcsv1a1.ServiceExport{}}, obj: &mcsv1a1.ServiceExportList{}, want: true},
		{name: "missing kind's object", add: []client.Object{&mcsv1a1.ServiceExport{}}, obj: &mcsv1a1.ServiceExport{}, want: true},
		{name: "another kind", add: []client.Object{&mcsv1a1.ServiceExport{}}, obj: &mcsv1a1.ServiceImportList{}, want: false},
		{name: "core kind", add: []client.Object{&mcsv1a1.ServiceExport{}}, obj: &corev1.ServiceList{}, want: false},
		{name: "served later", add: []client.Object{&mcsv1a1.ServiceExport{}, &mcsv1a1.ServiceImport{}},
			served: []client.Object{&mcsv1a1.ServiceExport{}}, obj: &mcsv1a1.ServiceExportList{}, want: false},
		{name: "other still missing", add: []client.Object{&mcsv1a1.ServiceExport{}, &mcsv1a1.ServiceImport{}},
			served: []client.Object{&mcsv1a1.ServiceExport{}}, obj: &mcsv1a1.ServiceImportList{}, want: true},
		{name: "kind outside the scheme", add: []client.Object{&mcsv1a1.ServiceExport{}}, obj: &v1alpha1.MemberClusterList{}, want: false},
		{name: "adding a kind outside the scheme", add: []client.Object{&v1alpha1.MemberCluster{}}, obj: &mcsv1a1.ServiceExportList{}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var k missingKinds
			for _, o := range tt.add {
				k.add(o, scheme)
			}
			for _, o := range tt.served {
				gvk, err := apiutil.GVKForObject(o, scheme)
				if err != nil {
					t.Fatal(err)
				}
				k.served(gvk)
			}
			if got := k.hides(tt.obj, scheme); got != tt.want {
				t.Errorf("hides(%T) = %v, want %v", tt.obj, got, tt.want)
			}
		})
	}
}

// TestMissingKindsDue: the kinds without an informer are offered until started, and a started
// one stays hidden until served.
func TestMissingKindsDue(t *testing.T) {
	scheme := kindsScheme(t)
	exp, imp := &mcsv1a1.ServiceExport{}, &mcsv1a1.ServiceImport{}
	var k missingKinds
	if got := k.due(); got != nil {
		t.Fatalf("due with nothing missing: %v", got)
	}
	k.add(exp, scheme)
	k.add(imp, scheme)
	names := func(objs []client.Object) []string {
		var out []string
		for _, o := range objs {
			out = append(out, fmt.Sprintf("%T", o))
		}
		return out
	}
	steps := []struct {
		name string
		do   func()
		want []string
	}{
		{"first try", func() {}, []string{"*v1alpha1.ServiceExport", "*v1alpha1.ServiceImport"}},
		{"tried again", func() {}, []string{"*v1alpha1.ServiceExport", "*v1alpha1.ServiceImport"}},
		{"one started", func() { k.started(exp) }, []string{"*v1alpha1.ServiceImport"}},
		{"both started", func() { k.started(imp) }, nil},
	}
	for _, s := range steps {
		s.do()
		if diff := cmp.Diff(s.want, names(k.due())); diff != "" {
			t.Errorf("%s (-want +got):\n%s", s.name, diff)
		}
	}
	if !k.hides(&mcsv1a1.ServiceExportList{}, scheme) {
		t.Error("a kind whose informer started but has not synced reads through")
	}
}
