package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MemberClusterSpec says how fleetgate reaches a member cluster and where it runs.
// +kubebuilder:validation:XValidation:rule="!has(self.zones) || !has(self.region) || self.zones.all(z, z.startsWith(self.region))",message="every zone must lie in the region"
type MemberClusterSpec struct {
	// KubeconfigSecretRef names a Secret in the operator's namespace whose data holds a kubeconfig
	// for the member cluster.
	KubeconfigSecretRef SecretKeyRef `json:"kubeconfigSecretRef"`

	// Region is the cloud region the cluster runs in (e.g. eu-west-1).
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Region string `json:"region,omitempty"`

	// Zones are the availability zones of the cluster's nodes.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=63
	Zones []string `json:"zones,omitempty"`

	// Provider holds hints for cloud load balancers fronting this cluster.
	// +optional
	Provider ProviderHints `json:"provider,omitempty"`

	// Weight is this cluster's share of traffic for fleet backends, relative to other members.
	// +optional
	// +kubebuilder:default=100
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000000
	Weight int32 `json:"weight,omitempty"`
}

// SecretKeyRef points at one key of a Secret.
type SecretKeyRef struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Key in the Secret's data holding the kubeconfig.
	// +optional
	// +kubebuilder:default=kubeconfig
	// +kubebuilder:validation:MaxLength=253
	Key string `json:"key,omitempty"`
}

// ProviderHints carry the cloud network placement of a member cluster.
type ProviderHints struct {
	// VPC is the AWS VPC ID the cluster's nodes run in. The aws provider compares it with a load
	// balancer's VPC: in the same VPC, the rules it adds to aws.securityGroups admit the load
	// balancer's own security group; elsewhere (peering, transit gateway) its subnets' ranges.
	// +optional
	// +kubebuilder:validation:Pattern=`^vpc-[0-9a-f]+$`
	VPC string `json:"vpc,omitempty"`

	// Subnets are the AWS subnet IDs load balancers may use.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	Subnets []string `json:"subnets,omitempty"`

	// Network is the GCP VPC network name or self link.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Network string `json:"network,omitempty"`

	// NetworkTags are GCE network tags that the cluster's nodes carry (on GKE, the node pools'
	// gke-CLUSTER-ID-node tag). The GCP firewall rules fleetgate makes for this member's endpoints
	// target them, overriding the class's spec.gcp.targetTags. With neither, a rule admits the load
	// balancer's sources on the endpoints' ports to every VM of the network, and the Gateway's
	// Programmed message says so.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:Pattern=`^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$`
	NetworkTags []string `json:"networkTags,omitempty"`

	// AWS names the security groups of the cluster's pods or nodes that must admit the AWS load
	// balancers sending them traffic, and the account they live in when it is not the load
	// balancer's.
	// +optional
	AWS *MemberAWS `json:"aws,omitempty"`
}

// MemberAWS says where the AWS load balancers of fleetgate's gateways reach a member's endpoints:
// fleetgate adds ingress rules for the target ports (and health-check ports) to securityGroups,
// tagged as its own, and removes them when the targets, ports or gateway go.
type MemberAWS struct {
	// Credentials name the account of securityGroups; the account of the GatewayClass's config
	// when unset. A secretRef must name a Secret in the operator's namespace, as
	// kubeconfigSecretRef does; the usual shape is assumeRole with an externalID, on top of the
	// operator's own credentials.
	// +optional
	Credentials *AWSCredentials `json:"credentials,omitempty"`

	// Region of securityGroups; spec.region when unset.
	// +optional
	// +kubebuilder:validation:Pattern=`^[a-z]{2}(-[a-z]+)+-[0-9]$`
	Region string `json:"region,omitempty"`

	// SecurityGroups are the IDs of the groups on the member's pods (security groups for pods) or
	// nodes that must admit the load balancers.
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:Pattern=`^sg-[0-9a-f]+$`
	// +kubebuilder:validation:items:MaxLength=64
	SecurityGroups []string `json:"securityGroups"`
}

// MemberClusterStatus reports whether fleetgate can reach and watch the member.
type MemberClusterStatus struct {
	// Conditions: Ready tells whether the cluster's API server answers and its caches are synced.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// KubernetesVersion is what the member's API server reported.
	// +optional
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`
}

// MemberCluster condition types and reasons.
const (
	MemberClusterReady = "Ready"

	MemberReasonConnected         = "Connected"
	MemberReasonKubeconfigInvalid = "KubeconfigInvalid"
	MemberReasonUnreachable       = "Unreachable"

	// MemberClusterDeleting is True while a MemberCluster being deleted waits for fleetgate to
	// release what it made for the member (FinalizerMember); its message says what is left.
	MemberClusterDeleting = "Deleting"
	// MemberReasonReleasing: load balancers, DNS records, or finalizers and statuses in the member
	// are still being released.
	MemberReasonReleasing = "Releasing"
	// MemberReasonWaitingForMember: the hub's resources are released, but the member does not
	// answer, so its objects keep fleetgate's finalizers and statuses; the MemberCluster goes
	// anyway once the member has been unreachable for the release timeout.
	MemberReasonWaitingForMember = "WaitingForMember"
	// MemberReasonReleased and MemberReasonReleasedWithLeftovers are the reasons of the Events
	// when the finalizer goes: everything released, or the member's objects left as they were.
	MemberReasonReleased              = "Released"
	MemberReasonReleasedWithLeftovers = "ReleasedWithLeftovers"
)

// MemberCluster is a cluster of the fleet that fleetgate watches and writes status into.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=mc,categories=fleetgate
// +kubebuilder:printcolumn:name="Region",type=string,JSONPath=`.spec.region`
// +kubebuilder:printcolumn:name="Weight",type=integer,JSONPath=`.spec.weight`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.kubernetesVersion`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type MemberCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   MemberClusterSpec   `json:"spec"`
	Status MemberClusterStatus `json:"status,omitempty"`
}

// MemberClusterList is a list of MemberClusters.
// +kubebuilder:object:root=true
type MemberClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MemberCluster `json:"items"`
}
