package snapshot

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	gwv1b1 "sigs.k8s.io/gateway-api/apis/v1beta1"
)

// ReferenceGrantFromLegacy converts an unstructured ReferenceGrant or legacy v1alpha2
// ReferencePolicy into a v1beta1 ReferenceGrant. Both kinds share the same spec shape (from/to
// lists), so a ReferencePolicy is simply read as the grant it always meant.
func ReferenceGrantFromLegacy(obj map[string]any) (*gwv1b1.ReferenceGrant, error) {
	var g gwv1b1.ReferenceGrant
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, &g); err != nil {
		return nil, fmt.Errorf("convert reference policy: %w", err)
	}
	g.APIVersion = gwv1b1.GroupVersion.String()
	g.Kind = "ReferenceGrant"
	return &g, nil
}
