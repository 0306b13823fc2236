package providers

// LoadBalancer is the provider-neutral model of the load balancer one Gateway (or one fleet
// gateway) needs. Translation produces it from the Gateway spec alone; providers turn it into cloud
// resources and report addresses back. It holds no Kubernetes types so that providers stay free of
// the Gateway API machinery.
type LoadBalancer struct {
	// Gateway is the gateway identity, the same string as ir.Config.Gateway: "cluster/namespace/name"
	// for a cluster-scoped gateway, "namespace/name" for a fleet gateway.
	Gateway   string `json:"gateway"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Class is the GatewayClass name; Provider and Scope come from its GatewayClassConfig.
	Class    string `json:"class"`
	Provider string `json:"provider"`
	Scope    string `json:"scope"`
	// Clusters are the member clusters holding the Gateway object(s), sorted.
	Clusters []string `json:"clusters"`
	// Ports are the distinct listening ports, sorted by port then transport.
	Ports []Port `json:"ports,omitempty"`
	// Addresses are the addresses requested in spec.addresses, in spec order.
	Addresses []Address `json:"addresses,omitempty"`
	// Labels and Annotations come from spec.infrastructure and go on every resource created for
	// the gateway, where the provider supports it.
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	// GatewayUIDs are the UIDs of the Gateway objects by member cluster, so that a provider
	// creating Kubernetes objects can make the Gateway their owner (and the garbage collector
	// remove them with it). A cluster without a UID gets objects without an owner reference.
	GatewayUIDs map[string]string `json:"gatewayUIDs,omitempty"`
	// InCluster holds the in-cluster provider's parameters (GatewayClassConfig spec.inCluster);
	// nil, or zero fields, mean the defaults.
	InCluster *InClusterParams `json:"inCluster,omitempty"`
}

// InClusterParams tune the in-cluster proxy of one gateway.
type InClusterParams struct {
	// Replicas of the proxy Deployment; 0 means DefaultReplicas.
	Replicas int32 `json:"replicas,omitempty"`
	// ServiceType is LoadBalancer, NodePort or ClusterIP; empty means LoadBalancer.
	ServiceType string `json:"serviceType,omitempty"`
}

// Transport is the L4 protocol a port is opened with.
type Transport string

const (
	TransportTCP Transport = "TCP"
	TransportUDP Transport = "UDP"
)

// Port is one port the load balancer opens.
type Port struct {
	Port      int32     `json:"port"`
	Transport Transport `json:"transport"`
	// Protocol is the Gateway listener protocol (HTTP, HTTPS, TLS, TCP, UDP); an application load
	// balancer needs it, a network load balancer only needs the transport.
	Protocol string `json:"protocol"`
}

// Address is a requested address: Type is IPAddress, Hostname or an implementation-specific type.
type Address struct {
	Type  string `json:"type"`
	Value string `json:"value,omitempty"`
}
