package bundle

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Bundle is a loaded registry+v1 bundle directory.
type Bundle struct {
	CSV  CSV
	CRDs []apiextensionsv1.CustomResourceDefinition
	// Others are the remaining objects in manifests/ (a Service, for instance), installed as they are.
	Others []unstructured.Unstructured
	// Annotations are metadata/annotations.yaml's.
	Annotations map[string]string
	// Files maps each manifests/ file to the kind it holds.
	Files map[string]string
}

// Load reads dir/manifests and dir/metadata. Each manifest file holds exactly one object, as OLM
// requires; the CSV is decoded strictly, so a field the types do not know is an error.
func Load(dir string) (*Bundle, error) {
	b := &Bundle{Files: map[string]string{}}
	paths, err := filepath.Glob(filepath.Join(dir, "manifests", "*"))
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	csvs := 0
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		objs, err := decodeAll(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		if len(objs) != 1 {
			return nil, fmt.Errorf("%s holds %d objects, want exactly one", p, len(objs))
		}
		o := objs[0]
		b.Files[filepath.Base(p)] = o.GetKind()
		switch o.GetKind() {
		case "ClusterServiceVersion":
			csvs++
			if err := yaml.UnmarshalStrict(data, &b.CSV); err != nil {
				return nil, fmt.Errorf("decoding %s: %w", p, err)
			}
		case "CustomResourceDefinition":
			var crd apiextensionsv1.CustomResourceDefinition
			if err := yaml.UnmarshalStrict(data, &crd); err != nil {
				return nil, fmt.Errorf("decoding %s: %w", p, err)
			}
			b.CRDs = append(b.CRDs, crd)
		default:
			b.Others = append(b.Others, o)
		}
	}
	if csvs != 1 {
		return nil, fmt.Errorf("%s/manifests holds %d ClusterServiceVersions, want one", dir, csvs)
	}
	data, err := os.ReadFile(filepath.Join(dir, "metadata", "annotations.yaml"))
	if err != nil {
		return nil, err
	}
	var annotations struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := yaml.UnmarshalStrict(data, &annotations); err != nil {
		return nil, fmt.Errorf("decoding annotations.yaml: %w", err)
	}
	b.Annotations = annotations.Annotations
	return b, nil
}

func decodeAll(data []byte) ([]unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []unstructured.Unstructured
	for {
		var o map[string]any
		if err := dec.Decode(&o); errors.Is(err, io.EOF) {
			return objs, nil
		} else if err != nil {
			return nil, err
		}
		if len(o) > 0 {
			objs = append(objs, unstructured.Unstructured{Object: o})
		}
	}
}

// Objects are what OLM creates when it installs the bundle into namespace: the CRDs, a
// ServiceAccount per permission set, a ClusterRole and binding per clusterPermissions entry, a Role
// and binding per permissions entry, the Deployments, and the other manifests in that namespace.
// Applying them, in order, to an API server installs the operator without OLM, with exactly the
// bundle's RBAC. Names are derived from the CSV's, as OLM's are (OLM adds a hash; we do not need one).
func (b *Bundle) Objects(namespace string) ([]*unstructured.Unstructured, error) {
	var typed []runtime.Object
	for i := range b.CRDs {
		crd := b.CRDs[i].DeepCopy()
		crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
		typed = append(typed, crd)
	}
	spec := b.CSV.Spec.Install.Spec
	accounts := map[string]bool{}
	var sas []runtime.Object
	account := func(name string) {
		if !accounts[name] {
			accounts[name] = true
			sas = append(sas, &corev1.ServiceAccount{
				TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
			})
		}
	}
	var rbac []runtime.Object
	for i, p := range spec.ClusterPermissions {
		account(p.ServiceAccountName)
		name := fmt.Sprintf("%s-%s-%d", b.CSV.Metadata.Name, p.ServiceAccountName, i)
		rbac = append(rbac,
			&rbacv1.ClusterRole{
				TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
				ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: p.Rules,
			},
			&rbacv1.ClusterRoleBinding{
				TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
				ObjectMeta: metav1.ObjectMeta{Name: name},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
				Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: p.ServiceAccountName, Namespace: namespace}},
			})
	}
	for i, p := range spec.Permissions {
		account(p.ServiceAccountName)
		name := fmt.Sprintf("%s-%s-%d", b.CSV.Metadata.Name, p.ServiceAccountName, i)
		rbac = append(rbac,
			&rbacv1.Role{
				TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}, Rules: p.Rules,
			},
			&rbacv1.RoleBinding{
				TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
				Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: p.ServiceAccountName, Namespace: namespace}},
			})
	}
	typed = append(typed, sas...)
	typed = append(typed, rbac...)

	var out []*unstructured.Unstructured
	for _, o := range typed {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			return nil, err
		}
		// A typed CRD carries an empty status, which a create would refuse to set.
		delete(u, "status")
		out = append(out, &unstructured.Unstructured{Object: u})
	}
	for _, d := range spec.Deployments {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&d.Spec)
		if err != nil {
			return nil, err
		}
		dep := &unstructured.Unstructured{Object: map[string]any{"spec": u}}
		dep.SetAPIVersion("apps/v1")
		dep.SetKind("Deployment")
		dep.SetName(d.Name)
		dep.SetNamespace(namespace)
		out = append(out, dep)
	}
	for _, o := range b.Others {
		o := o.DeepCopy()
		o.SetNamespace(namespace)
		out = append(out, o)
	}
	return out, nil
}
