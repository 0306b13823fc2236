package v1alpha1

// The names fleetgate answers to in other APIs' objects. They are part of fleetgate's API: users
// write them into GatewayClasses, IngressClasses, Services and MemberClusters.

// ControllerName is the GatewayClass spec.controllerName fleetgate implements.
const ControllerName = "fleetgate.dev/gateway-controller"

// IngressControllerName is the IngressClass spec.controller fleetgate implements.
const IngressControllerName = "fleetgate.dev/ingress-controller"

// Service spec.loadBalancerClass values fleetgate serves; Services of any other class (or none)
// are never touched.
const (
	LoadBalancerClassInCluster = "fleetgate.dev/incluster"
	LoadBalancerClassAWSNLB    = "fleetgate.dev/aws-nlb"
	LoadBalancerClassGCP       = "fleetgate.dev/gcp"
	// LoadBalancerClassLocal marks the Service that stands for a local-mode gateway. No
	// load-balancer controller (fleetgate's own Service pipeline included) acts on it: local mode
	// writes its status itself.
	LoadBalancerClassLocal = "fleetgate.dev/local"
)

// HubCluster is the member name of the operator's own cluster when it is also a member; a
// MemberCluster of that name sets the hub's weight.
const HubCluster = "hub"

// DefaultClusterWeight is a member's weight when its MemberCluster does not say. It must equal the
// +kubebuilder:default of MemberClusterSpec.Weight (markers cannot name a constant): see
// TestDefaultClusterWeightIsTheCRDDefault.
const DefaultClusterWeight int32 = 100
