package providers

import (
	"encoding/json"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

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
	// Parameters is the provider's own section of the class's GatewayClassConfig (spec.inCluster,
	// spec.aws, spec.gcp) as JSON, null or empty when the section is unset. The provider decodes and
	// validates it itself (Provider.Capabilities rejects what it cannot use), so that no provider's
	// options live in this neutral model.
	Parameters json.RawMessage `json:"parameters,omitempty"`
	// Routing is the gateway's routing as the fleetgate proxies get it, set by translation for
	// every model (Gateways, Ingress classes, LoadBalancer Services). Providers read the
	// dataplane IR directly rather than a provider-facing copy of it: it is already the
	// validated, provider-neutral contract (ir.Validate), has no Kubernetes types, and a second
	// view would have to follow every change of it. An L7 cloud load balancer finds there:
	//   - ir.Listener: port, protocol, certificates with their hostnames, source ranges;
	//   - ir.VirtualHost: the hostname (exact, "*.suffix" or "*") and its routes in precedence
	//     order;
	//   - ir.Route: one per match of a rule, named "Kind/namespace/name/rule/match" (the origin
	//     route and rule, for naming and tagging cloud rules; Ingress paths are
	//     "Ingress/namespace/name/rule/path" or ".../default"); Match (path Exact/Prefix/Regex,
	//     method, headers, query parameters); Filters (redirect, which is the fixed response, rewrite, header
	//     modifiers, mirrors, CORS); Timeouts and Retry;
	//   - ir.Backend: weight, and endpoints with their member cluster and per-cluster weight; an
	//     Invalid backend (or a route without backends) answers 500;
	//   - SNIRoutes and L4 for TLS, TCP and UDP listeners.
	// Translation kept out every rule the provider's Capabilities cannot express, so a provider
	// may refuse what it still meets (an error from Ensure) instead of approximating it. It is
	// the same value as Result.Configs' entry for the gateway and must not be modified.
	Routing *ir.Config `json:"-"`
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
