package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Provider names what makes a Gateway's load balancer real.
// +kubebuilder:validation:Enum=incluster;aws;gcp
type Provider string

const (
	ProviderInCluster Provider = "incluster"
	ProviderAWS       Provider = "aws"
	ProviderGCP       Provider = "gcp"
)

// Scope says whether same-named Gateways in several member clusters form one load balancer.
// +kubebuilder:validation:Enum=Cluster;Fleet
type Scope string

const (
	// ScopeCluster gives each Gateway its own load balancer in its own cluster.
	ScopeCluster Scope = "Cluster"
	// ScopeFleet merges Gateways of the same namespace and name across members into one load balancer.
	ScopeFleet Scope = "Fleet"
)

// ServiceType is how the in-cluster proxy is exposed.
// +kubebuilder:validation:Enum=LoadBalancer;NodePort;ClusterIP
type ServiceType string

// GatewayClassConfigSpec is what a GatewayClass's parametersRef points at.
// +kubebuilder:validation:XValidation:rule="self.provider == 'incluster' || !has(self.inCluster)",message="inCluster options need provider incluster"
// +kubebuilder:validation:XValidation:rule="self.provider == 'aws' || !has(self.aws)",message="aws options need provider aws"
// +kubebuilder:validation:XValidation:rule="self.provider == 'gcp' || !has(self.gcp)",message="gcp options need provider gcp"
type GatewayClassConfigSpec struct {
	// Provider builds the load balancers of this class's Gateways.
	// +kubebuilder:default=incluster
	Provider Provider `json:"provider"`

	// Scope is Cluster (one load balancer per Gateway) or Fleet (one per namespace/name across members).
	// +kubebuilder:default=Cluster
	// +optional
	Scope Scope `json:"scope,omitempty"`

	// InCluster holds options of the in-cluster proxy provider.
	// +optional
	InCluster *InClusterOptions `json:"inCluster,omitempty"`

	// AWS holds options of the AWS ELBv2 provider.
	// +optional
	AWS *AWSOptions `json:"aws,omitempty"`

	// GCP holds options of the GCP load-balancing provider.
	// +optional
	GCP *GCPOptions `json:"gcp,omitempty"`
}

// InClusterOptions tune the fleetgate proxy deployed next to each Gateway.
type InClusterOptions struct {
	// Replicas of the proxy Deployment.
	// +optional
	// +kubebuilder:default=2
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	Replicas *int32 `json:"replicas,omitempty"`

	// ServiceType exposes the proxy.
	// +optional
	// +kubebuilder:default=LoadBalancer
	ServiceType ServiceType `json:"serviceType,omitempty"`
}

// AWSOptions tune the ELBv2 load balancers.
type AWSOptions struct {
	// Scheme is internet-facing or internal.
	// +optional
	// +kubebuilder:default=internet-facing
	// +kubebuilder:validation:Enum=internet-facing;internal
	Scheme string `json:"scheme,omitempty"`

	// Tags are added to every AWS resource fleetgate creates for this class.
	// +optional
	// +kubebuilder:validation:MaxProperties=40
	Tags map[string]string `json:"tags,omitempty"`
}

// GCPOptions tune the GCP load balancers.
type GCPOptions struct {
	// Project is the GCP project that owns the load balancers.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Project string `json:"project"`

	// Global selects a global load balancer; otherwise a regional one in each member's region.
	// +optional
	Global bool `json:"global,omitempty"`
}

// GatewayClassConfigStatus reports which GatewayClasses use this config.
type GatewayClassConfigStatus struct {
	// Conditions: Accepted tells whether the config is valid for its provider.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// GatewayClassConfig holds the provider and scope of one or more GatewayClasses.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=gcc,categories=fleetgate
// +kubebuilder:printcolumn:name="Provider",type=string,JSONPath=`.spec.provider`
// +kubebuilder:printcolumn:name="Scope",type=string,JSONPath=`.spec.scope`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type GatewayClassConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   GatewayClassConfigSpec   `json:"spec"`
	Status GatewayClassConfigStatus `json:"status,omitempty"`
}

// GatewayClassConfigList is a list of GatewayClassConfigs.
// +kubebuilder:object:root=true
type GatewayClassConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GatewayClassConfig `json:"items"`
}
