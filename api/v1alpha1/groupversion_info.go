// Package v1alpha1 holds fleetgate's own API: MemberCluster and GatewayClassConfig.
// +kubebuilder:object:generate=true
// +groupName=fleetgate.dev
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group is the API group of fleetgate's types.
const Group = "fleetgate.dev"

// GroupVersion is the group and version of fleetgate's API.
var GroupVersion = schema.GroupVersion{Group: Group, Version: "v1alpha1"}

// AddToScheme registers fleetgate's types with a scheme. It is explicit rather than init()-driven
// so that nothing is registered as a side effect of importing the package.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&MemberCluster{}, &MemberClusterList{},
		&GatewayClassConfig{}, &GatewayClassConfigList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
