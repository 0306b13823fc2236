package v1alpha1

import (
	"os"
	"strconv"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// TestDefaultClusterWeightIsTheCRDDefault holds the constant and the generated CRD's default of
// spec.weight together: the API server defaults a MemberCluster, code defaults the hub's weight.
func TestDefaultClusterWeightIsTheCRDDefault(t *testing.T) {
	raw, err := os.ReadFile("../../config/crd/bases/fleetgate.dev_memberclusters.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		t.Fatal(err)
	}
	for _, v := range crd.Spec.Versions {
		weight := v.Schema.OpenAPIV3Schema.Properties["spec"].Properties["weight"]
		if weight.Default == nil || string(weight.Default.Raw) != strconv.Itoa(int(DefaultClusterWeight)) {
			t.Errorf("%s: spec.weight default %v, DefaultClusterWeight %d: they must be equal", v.Name, weight.Default, DefaultClusterWeight)
		}
	}
}
