package aws

// Tags fleetgate puts on every AWS resource it creates. A resource is fleetgate's when it carries
// TagManagedBy and TagFleet of this operator; TagGateway says which gateway owns it and
// TagResource which resource of that gateway's Stack it is.
const (
	// TagManagedBy is providers.LabelManagedBy with value providers.ManagedBy.
	TagManagedBy = "fleetgate.dev/managed-by"
	// TagFleet is the operator's fleet ID, so that two fleets sharing an account never touch
	// each other's resources.
	TagFleet = "fleetgate.dev/fleet"
	// TagGateway is providers.GatewayID of the gateway key; TagGatewayKey the key itself.
	TagGateway    = "fleetgate.dev/gateway"
	TagGatewayKey = "fleetgate.dev/gateway-key"
	// TagClusters lists the member clusters of the gateway, comma-separated and sorted (on the
	// load balancer only).
	TagClusters = "fleetgate.dev/clusters"
	// TagResource is the resource's ID in its Stack (Stack.*.ID).
	TagResource = "fleetgate.dev/resource"
	// TagFingerprint is the hash of an imported certificate's PEM, to re-import on rotation.
	TagFingerprint = "fleetgate.dev/fingerprint"
)

// Load balancer types, as ELBv2 spells them.
const (
	TypeApplication = "application"
	TypeNetwork     = "network"
)

// Stack is every AWS resource one gateway needs, as desired. It is built purely (Build) and
// deployed by tags (deployer). Slices are sorted by ID; IDs are stable across rebuilds of an
// unchanged input and are what TagResource holds.
type Stack struct {
	// Gateway is the gateway key; GatewayID its providers.GatewayID.
	Gateway   string
	GatewayID string
	// Clusters are the member clusters of the gateway, sorted (TagClusters).
	Clusters []string
	// Tags go on every resource, on top of the ownership tags (user tags from the class and the
	// Gateway's infrastructure labels).
	Tags map[string]string

	LoadBalancer  LoadBalancer
	SecurityGroup *SecurityGroup // ALB only
	TargetGroups  []TargetGroup
	Listeners     []Listener
	// Rules are ALB listener rules, in precedence order per listener (most specific first): the
	// deployer assigns priorities from this order (see assignPriorities).
	Rules        []Rule
	Certificates []Certificate
	// Members are the rules on member clusters' security groups that admit the load balancer, per
	// account (buildMemberAccess, after Build).
	Members []MemberAccess

	// Notes are approximations the stack had to make (e.g. cluster weights by endpoint count when
	// a rule would need more than 5 target groups), for the gateway's status.
	Notes []string
	// DryRun: compute the plan, call nothing that mutates.
	DryRun bool
}

// LoadBalancer is the ELBv2 load balancer.
type LoadBalancer struct {
	// Name is deterministic, at most 32 characters of [a-zA-Z0-9-], not starting or ending with
	// '-' nor starting with "internal-".
	Name          string
	Type          string // TypeApplication or TypeNetwork
	Scheme        string // internet-facing or internal
	IPAddressType string // ipv4 or dualstack
	// Subnets are the subnet IDs, one per zone, sorted; SubnetMappings replaces them when static
	// addresses (EIP allocations) are requested (NLB only).
	Subnets        []string
	SubnetMappings []SubnetMapping
	// Attributes as ELBv2 keys (deletion_protection.enabled, load_balancing.cross_zone.enabled,
	// access_logs.s3.enabled, idle_timeout.timeout_seconds, ...) with string values.
	Attributes map[string]string
}

// SubnetMapping puts an Elastic IP allocation in a subnet.
type SubnetMapping struct {
	SubnetID     string
	AllocationID string
}

// SecurityGroup fronts an ALB: the listener ports open to the listeners' source ranges.
type SecurityGroup struct {
	ID          string // TagResource, "sg"
	Name        string
	Description string
	VPC         string
	Ingress     []IngressRule // sorted
}

// IngressRule lets CIDR reach Port over Protocol ("tcp").
type IngressRule struct {
	Protocol string
	Port     int32
	CIDR     string
}

// TargetGroup is an IP target group and its targets.
type TargetGroup struct {
	ID string // TagResource, "tg/<hash>"
	// Name is deterministic and at most 32 characters, like LoadBalancer.Name.
	Name            string
	Protocol        string // HTTP, HTTPS, TCP, UDP, TLS, TCP_UDP
	ProtocolVersion string // ALB only: HTTP1, HTTP2 or GRPC
	Port            int32
	VPC             string
	HealthCheck     HealthCheck
	Attributes      map[string]string
	// Cluster is the member cluster whose endpoints it holds; "" when it holds every cluster's.
	Cluster string
	Targets []Target // sorted by IP then port
}

// HealthCheck of a target group, with AWS's defaults filled in.
type HealthCheck struct {
	Protocol           string // HTTP, HTTPS or TCP
	Port               string // "traffic-port" or a number
	Path               string // HTTP(S) only
	Matcher            string // HTTP(S) only; gRPC codes for GRPC target groups
	IntervalSeconds    int32
	TimeoutSeconds     int32
	HealthyThreshold   int32
	UnhealthyThreshold int32
}

// Target is one IP target. AvailabilityZone is "all" for addresses outside the VPC.
type Target struct {
	IP               string
	Port             int32
	AvailabilityZone string
}

// Listener is one port of the load balancer.
type Listener struct {
	ID       string // TagResource, "listener/<port>"
	Port     int32
	Protocol string // HTTP, HTTPS (ALB); TCP, UDP, TLS, TCP_UDP (NLB)
	// Certificates are Certificate IDs of this Stack or ACM ARNs ("arn:..."); the first is the
	// default certificate.
	Certificates  []string
	SSLPolicy     string
	DefaultAction Action
}

// Rule is one ALB listener rule.
type Rule struct {
	ID       string // TagResource, "rule/<hash>"
	Listener string // Listener.ID
	// Origin is the ir.Route name it comes from, for messages.
	Origin     string
	Conditions []Condition
	Action     Action
}

// Condition is one ALB rule condition. Field is host-header, path-pattern, http-header,
// query-string or http-request-method; HeaderName is set for http-header; Query for query-string
// (its keys and values), Values for the others.
type Condition struct {
	Field      string
	HeaderName string
	Values     []string
	Query      []KeyValue
}

// KeyValue is one query-string condition pair.
type KeyValue struct {
	Key   string
	Value string
}

// Action is what a listener or rule does: Forward, Redirect or Fixed (exactly one set).
type Action struct {
	Forward  []WeightedTargetGroup
	Redirect *Redirect
	Fixed    *FixedResponse
}

// WeightedTargetGroup is a TargetGroup ID with its weight (0-999).
type WeightedTargetGroup struct {
	TargetGroup string
	Weight      int32
}

// Redirect as ELBv2 has it: unset fields keep the request's ("#{host}" etc. are filled in).
type Redirect struct {
	Protocol   string
	Host       string
	Port       string
	Path       string
	Query      string
	StatusCode string // HTTP_301 or HTTP_302
}

// FixedResponse answers without a backend.
type FixedResponse struct {
	StatusCode  string
	ContentType string
	Body        string
}

// Certificate is a listener Secret imported into ACM.
type Certificate struct {
	ID          string // TagResource, "cert/<hash>"
	CertPEM     []byte // the leaf
	ChainPEM    []byte // the rest of the chain, may be empty
	KeyPEM      []byte
	Fingerprint string // TagFingerprint: hash of the three
}
