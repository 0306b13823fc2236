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

	// Proxy bounds what the fleetgate proxies of this class accept from clients and route authors.
	// Every field has a default; set one only to change it.
	// +optional
	Proxy *ProxyOptions `json:"proxy,omitempty"`
}

// ProxyOptions are the limits of the fleetgate proxies that serve a class's Gateways. They are
// shipped to the proxies with their config, so a change applies without restarting them.
type ProxyOptions struct {
	// BackendResponseTimeout bounds the wait for a backend's response headers on routes that set
	// no timeout of their own (504 after it). Default 30s.
	// +optional
	BackendResponseTimeout *metav1.Duration `json:"backendResponseTimeout,omitempty"`

	// RequestBodyIdleTimeout ends a request whose client sends no body byte for this long (408).
	// Default 30s.
	// +optional
	RequestBodyIdleTimeout *metav1.Duration `json:"requestBodyIdleTimeout,omitempty"`

	// ResponseWriteIdleTimeout closes a connection whose client accepts no response byte for this
	// long. Default 60s.
	// +optional
	ResponseWriteIdleTimeout *metav1.Duration `json:"responseWriteIdleTimeout,omitempty"`

	// MaxConnectionsPerListener caps concurrent client connections on each listener (port); new
	// connections beyond it are closed at once. Default 10000.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000
	MaxConnectionsPerListener *int32 `json:"maxConnectionsPerListener,omitempty"`

	// MaxRetryAttempts caps a route's retry attempts; a route asking for more is served with this
	// many and its status says so. Default 5.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10
	MaxRetryAttempts *int32 `json:"maxRetryAttempts,omitempty"`

	// RetryBudgetPercent caps the retries in flight to one backend at this percentage of the
	// requests in flight to it (with at least RetryBudgetMinConcurrent allowed). Default 20.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	RetryBudgetPercent *int32 `json:"retryBudgetPercent,omitempty"`

	// RetryBudgetMinConcurrent is the number of concurrent retries to one backend always allowed.
	// Default 3.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	RetryBudgetMinConcurrent *int32 `json:"retryBudgetMinConcurrent,omitempty"`

	// MaxRegexInstructions bounds the compiled size (RE2 program instructions) of each regular
	// expression in a route match; a route with a larger one is not accepted. Default 1000.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000
	MaxRegexInstructions *int32 `json:"maxRegexInstructions,omitempty"`

	// DeniedEndpointCIDRs are networks the proxies never connect to, whatever an EndpointSlice
	// says; a denied endpoint is reported on its route. Default: loopback, link-local and the
	// cloud metadata addresses (127.0.0.0/8, ::1/128, 169.254.0.0/16, fe80::/10,
	// 100.100.100.200/32, fd00:ec2::254/128). An empty list denies nothing.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	DeniedEndpointCIDRs []string `json:"deniedEndpointCIDRs,omitempty"`

	// TrustAllEndpointSlices uses every EndpointSlice labelled with a Service's name; by default
	// only slices managed by the EndpointSlice controller are used (for a ServiceImport, those of
	// each exporting member), so that nobody who can write an EndpointSlice steers traffic.
	// +optional
	TrustAllEndpointSlices bool `json:"trustAllEndpointSlices,omitempty"`

	// AllowUnderscoresInHeaders forwards request header names that contain "_"; by default they
	// are dropped, as nginx does, since "Content_Length" may mean Content-Length to a backend.
	// +optional
	AllowUnderscoresInHeaders bool `json:"allowUnderscoresInHeaders,omitempty"`

	// AllowCBCCipherSuites offers TLS 1.2 CBC cipher suites to clients; by default only AEAD
	// suites are offered.
	// +optional
	AllowCBCCipherSuites bool `json:"allowCBCCipherSuites,omitempty"`
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
