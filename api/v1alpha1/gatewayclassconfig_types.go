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

	// IngressNamespace is the namespace of the load balancer (and, for the in-cluster provider,
	// of the proxy Deployment and Service) that serves the Ingresses of an IngressClass whose
	// parameters name this config: a class, unlike a Gateway, has no namespace of its own.
	// Default "default".
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	IngressNamespace string `json:"ingressNamespace,omitempty"`

	// Proxy bounds what the fleetgate proxies of this class accept from clients and route authors.
	// Every field has a default; set one only to change it.
	// +optional
	Proxy *ProxyOptions `json:"proxy,omitempty"`

	// DNS publishes the hostnames of this class's programmed Gateways (and Ingresses) into a DNS
	// zone directly, for platforms without external-dns: through external-dns's plan and TXT
	// registry, so that only records fleetgate owns are ever changed. DNSEndpoint objects are
	// written for external-dns whether or not this is set. Removing it removes the records
	// fleetgate published into the zone, within MaxDeletesPerPass and DeleteGracePeriod; so does
	// changing its zones (for the zones dropped), provider or owner ID. Where fleetgate published
	// is kept in the ConfigMap fleetgate-dns-published of the operator's namespace, so this holds
	// across operator restarts.
	// +optional
	DNS *DNSOptions `json:"dns,omitempty"`
}

// DNSProvider is the DNS service an embedded publisher writes to.
// +kubebuilder:validation:Enum=rfc2136;route53;google
type DNSProvider string

const (
	DNSProviderRFC2136 DNSProvider = "rfc2136"
	DNSProviderRoute53 DNSProvider = "route53"
	DNSProviderGoogle  DNSProvider = "google"
)

// DNSOptions configure the embedded DNS publisher of a class.
// +kubebuilder:validation:XValidation:rule="self.provider != 'rfc2136' || has(self.rfc2136)",message="provider rfc2136 needs the rfc2136 section"
// +kubebuilder:validation:XValidation:rule="self.provider != 'route53' || has(self.route53)",message="provider route53 needs the route53 section"
// +kubebuilder:validation:XValidation:rule="self.provider != 'google' || has(self.google)",message="provider google needs the google section"
type DNSOptions struct {
	Provider DNSProvider `json:"provider"`

	// Zones are the DNS domains fleetgate may write names under (external-dns's domain filter);
	// a hostname outside them is not published.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=253
	Zones []string `json:"zones"`

	// OwnerID marks the records this class owns in the TXT registry; default "<fleet ID>-<config
	// name>". Each class needs its own: a class deletes the records of its owner ID that none of its
	// gateways wants.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	OwnerID string `json:"ownerID,omitempty"`

	// TTL of the records, in seconds. Default 300.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=86400
	TTL *int64 `json:"ttl,omitempty"`

	// MaxDeletesPerPass bounds how many records one pass may delete while their owners still
	// exist or went less than DeleteGracePeriod ago (external-dns users have lost whole zones to
	// one bad input). Default 10.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MaxDeletesPerPass *int32 `json:"maxDeletesPerPass,omitempty"`

	// DeleteGracePeriod is how long records outlive their owners before they may be deleted above
	// MaxDeletesPerPass. Default 10m.
	// +optional
	DeleteGracePeriod *metav1.Duration `json:"deleteGracePeriod,omitempty"`

	// +optional
	RFC2136 *DNSRFC2136 `json:"rfc2136,omitempty"`
	// +optional
	Route53 *DNSRoute53 `json:"route53,omitempty"`
	// +optional
	Google *DNSGoogle `json:"google,omitempty"`
}

// DNSRFC2136 is a DNS server taking dynamic updates (RFC 2136) signed with TSIG.
type DNSRFC2136 struct {
	// Host and Port of the primary server.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Host string `json:"host"`
	// +optional
	// +kubebuilder:default=53
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port,omitempty"`
	// Zone updated (the zone's apex, e.g. example.com).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Zone string `json:"zone"`
	// TSIGKeyName is the name of the TSIG key.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	TSIGKeyName string `json:"tsigKeyName"`
	// TSIGAlgorithm, default hmac-sha256.
	// +optional
	// +kubebuilder:validation:Enum=hmac-sha256;hmac-sha512
	TSIGAlgorithm string `json:"tsigAlgorithm,omitempty"`
	// TSIGSecretRef names a Secret in the operator's namespace whose key "secret" holds the
	// base64 TSIG secret.
	TSIGSecretRef ObjectRef `json:"tsigSecretRef"`
}

// DNSRoute53 is an AWS Route53 hosted zone. Its calls are made with the operator's own AWS
// environment (region, credentials: its web identity or keys): external-dns v0.22.0's aws
// provider builds its clients from the process environment and takes no account of ours.
type DNSRoute53 struct {
	// HostedZoneID; found from Zones when unset.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	HostedZoneID string `json:"hostedZoneID,omitempty"`
}

// DNSGoogle is Google Cloud DNS: the project's public or private managed zones whose DNS names
// are under Zones. Its calls are made with the operator's own Google environment: Application
// Default Credentials (GOOGLE_APPLICATION_CREDENTIALS, workload identity or the metadata server),
// and the universe domain of GOOGLE_CLOUD_UNIVERSE_DOMAIN (default googleapis.com), since
// external-dns v0.22.0's google provider builds its client from the process environment and
// takes no credentials or endpoint of ours. Cloud DNS records have no set identifiers there, so
// weighted records are refused (WeightsUnsupported).
type DNSGoogle struct {
	// Project is the ID of the Google Cloud project that holds the managed zones.
	// +kubebuilder:validation:MinLength=6
	// +kubebuilder:validation:MaxLength=30
	// +kubebuilder:validation:Pattern=`^[a-z][-a-z0-9]{4,28}[a-z0-9]$`
	Project string `json:"project"`
	// ManagedZone narrows the zones to the one with this name or numeric ID (for example the
	// public one of a split-horizon pair); found from Zones when unset.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	ManagedZone string `json:"managedZone,omitempty"`
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

	// ServerHeader is what the Server header of responses says: Set (the default) writes
	// ServerHeaderValue in place of the backend's, on the proxies' own answers too; PassThrough
	// relays the backend's; Strip sends none.
	// +optional
	// +kubebuilder:validation:Enum=Set;PassThrough;Strip
	ServerHeader ServerHeaderMode `json:"serverHeader,omitempty"`

	// ServerHeaderValue is the Server header Set writes. Default "fleetgate".
	// +optional
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^[ -~]*$`
	ServerHeaderValue string `json:"serverHeaderValue,omitempty"`
}

// ServerHeaderMode is what the proxies do with the Server header of responses.
type ServerHeaderMode string

const (
	ServerHeaderSet         ServerHeaderMode = "Set"
	ServerHeaderPassThrough ServerHeaderMode = "PassThrough"
	ServerHeaderStrip       ServerHeaderMode = "Strip"
)

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

// AWSLoadBalancerType is the kind of ELBv2 load balancer a class gets.
// +kubebuilder:validation:Enum=application;network
type AWSLoadBalancerType string

const (
	// AWSApplication is an ALB: HTTP and HTTPS listeners, HTTPRoute/GRPCRoute rules as listener rules.
	AWSApplication AWSLoadBalancerType = "application"
	// AWSNetwork is an NLB: TCP, UDP and TLS listeners straight to the backends' endpoints.
	AWSNetwork AWSLoadBalancerType = "network"
)

// AWSOptions tune the ELBv2 load balancers of a class and name the AWS account they live in.
// Unset fields take the operator's defaults (its --aws-* flags), then AWS's.
// +kubebuilder:validation:XValidation:rule="!has(self.certificateARNs) || self.loadBalancerType != 'network'",message="certificateARNs need an application load balancer"
type AWSOptions struct {
	// LoadBalancerType is application (ALB) or network (NLB).
	// +optional
	// +kubebuilder:default=application
	LoadBalancerType AWSLoadBalancerType `json:"loadBalancerType,omitempty"`

	// Scheme is internet-facing or internal.
	// +optional
	// +kubebuilder:default=internet-facing
	// +kubebuilder:validation:Enum=internet-facing;internal
	Scheme string `json:"scheme,omitempty"`

	// IPAddressType is ipv4 or dualstack.
	// +optional
	// +kubebuilder:validation:Enum=ipv4;dualstack
	IPAddressType string `json:"ipAddressType,omitempty"`

	// Region of the load balancers; the operator's default region when unset.
	// +optional
	// +kubebuilder:validation:Pattern=`^[a-z]{2}(-[a-z]+)+-[0-9]$`
	Region string `json:"region,omitempty"`

	// Endpoint overrides the AWS API endpoint (a VPC interface endpoint, or a test server), for every
	// service the provider calls.
	// +optional
	// +kubebuilder:validation:Pattern=`^https?://`
	// +kubebuilder:validation:MaxLength=256
	Endpoint string `json:"endpoint,omitempty"`

	// Credentials name the account; the operator's own credentials (environment, web identity of
	// its service account, instance role) when unset.
	// +optional
	Credentials *AWSCredentials `json:"credentials,omitempty"`

	// VPC is the VPC ID of the load balancers and target groups; discovered from the subnets when unset.
	// +optional
	// +kubebuilder:validation:Pattern=`^vpc-[0-9a-f]+$`
	VPC string `json:"vpc,omitempty"`

	// Subnets are the subnet IDs of the load balancers. When unset, subnets are discovered by the
	// tags kubernetes.io/role/elb (internet-facing) or kubernetes.io/role/internal-elb (internal).
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:Pattern=`^subnet-[0-9a-f]+$`
	Subnets []string `json:"subnets,omitempty"`

	// Tags are added to every AWS resource fleetgate creates for this class, and re-applied when they
	// change. A Gateway's spec.infrastructure.labels are added on top.
	// +optional
	// +kubebuilder:validation:MaxProperties=40
	Tags map[string]string `json:"tags,omitempty"`

	// CrossZone load balancing (NLB; ALBs always balance across zones). Default off.
	// +optional
	CrossZone bool `json:"crossZone,omitempty"`

	// DeletionProtection is set on the load balancer. fleetgate never turns it off: a change that
	// needs the load balancer replaced is refused while it is on, and deleting the Gateway leaves
	// the load balancer in place (reported) until protection is removed by hand.
	// +optional
	DeletionProtection bool `json:"deletionProtection,omitempty"`

	// AccessLogs go to an S3 bucket when set.
	// +optional
	AccessLogs *AWSAccessLogs `json:"accessLogs,omitempty"`

	// PreserveClientIP on NLB target groups. Default AWS's (on for TCP/TLS to IP targets: off).
	// +optional
	PreserveClientIP *bool `json:"preserveClientIP,omitempty"`

	// ProxyProtocolV2 is sent to NLB targets.
	// +optional
	ProxyProtocolV2 bool `json:"proxyProtocolV2,omitempty"`

	// IdleTimeoutSeconds of an ALB's connections. Default 60.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=4000
	IdleTimeoutSeconds *int32 `json:"idleTimeoutSeconds,omitempty"`

	// DeregistrationDelaySeconds is how long a removed target keeps draining. Default 300.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=3600
	DeregistrationDelaySeconds *int32 `json:"deregistrationDelaySeconds,omitempty"`

	// HealthCheck of the target groups.
	// +optional
	HealthCheck *AWSHealthCheck `json:"healthCheck,omitempty"`

	// CertificateARNs are ACM certificates served by HTTPS listeners instead of importing the
	// listeners' Secrets into ACM.
	// +optional
	// +kubebuilder:validation:MaxItems=25
	CertificateARNs []string `json:"certificateARNs,omitempty"`

	// SSLPolicy of HTTPS and TLS listeners. Default ELBSecurityPolicy-TLS13-1-2-2021-06.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	SSLPolicy string `json:"sslPolicy,omitempty"`

	// DryRun computes the calls the provider would make and shows them (a condition message, an
	// Event, `fleetgate plan`), making no mutating call. A Gateway can ask for it alone with the
	// infrastructure annotation fleetgate.dev/dry-run: "true".
	// +optional
	DryRun bool `json:"dryRun,omitempty"`
}

// AWSCredentials say how to reach an AWS account. At most one of SecretRef and WebIdentity;
// AssumeRole may be added on top of either (or of the operator's own credentials).
// +kubebuilder:validation:XValidation:rule="!(has(self.secretRef) && has(self.webIdentity))",message="secretRef and webIdentity are exclusive"
type AWSCredentials struct {
	// SecretRef names a Secret with static keys: access-key-id, secret-access-key and optionally
	// session-token.
	// +optional
	SecretRef *ObjectRef `json:"secretRef,omitempty"`

	// WebIdentity exchanges a projected service-account token for a role (as IRSA and EKS pod
	// identity do).
	// +optional
	WebIdentity *AWSWebIdentity `json:"webIdentity,omitempty"`

	// AssumeRole assumes a role (in another account) with the credentials above.
	// +optional
	AssumeRole *AWSAssumeRole `json:"assumeRole,omitempty"`
}

// ObjectRef names a namespaced object.
type ObjectRef struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace"`
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// AWSWebIdentity is a role assumed with a web identity token file.
type AWSWebIdentity struct {
	// +kubebuilder:validation:Pattern=`^arn:aws[a-z-]*:iam::[0-9]{12}:role/.+$`
	RoleARN string `json:"roleARN"`
	// TokenFile is the path of the projected token in the operator's pod.
	// +kubebuilder:validation:MinLength=1
	TokenFile string `json:"tokenFile"`
}

// AWSAssumeRole is a role assumed through STS.
type AWSAssumeRole struct {
	// +kubebuilder:validation:Pattern=`^arn:aws[a-z-]*:iam::[0-9]{12}:role/.+$`
	RoleARN string `json:"roleARN"`
	// ExternalID the role's trust policy asks for.
	// +optional
	// +kubebuilder:validation:MaxLength=1224
	ExternalID string `json:"externalID,omitempty"`
	// SessionName; "fleetgate" when unset.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	SessionName string `json:"sessionName,omitempty"`
}

// AWSAccessLogs name the S3 bucket of a load balancer's access logs.
type AWSAccessLogs struct {
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=63
	Bucket string `json:"bucket"`
	// +optional
	// +kubebuilder:validation:MaxLength=200
	Prefix string `json:"prefix,omitempty"`
}

// AWSHealthCheck tunes target group health checks. Unset fields take AWS's defaults for the
// target group's protocol; the path defaults to "/" for HTTP(S).
type AWSHealthCheck struct {
	// +optional
	// +kubebuilder:validation:Enum=HTTP;HTTPS;TCP
	Protocol string `json:"protocol,omitempty"`
	// Port is a port number or "traffic-port".
	// +optional
	// +kubebuilder:validation:Pattern=`^(traffic-port|[0-9]{1,5})$`
	Port string `json:"port,omitempty"`
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^/`
	Path string `json:"path,omitempty"`
	// +optional
	// +kubebuilder:validation:Minimum=5
	// +kubebuilder:validation:Maximum=300
	IntervalSeconds *int32 `json:"intervalSeconds,omitempty"`
	// +optional
	// +kubebuilder:validation:Minimum=2
	// +kubebuilder:validation:Maximum=120
	TimeoutSeconds *int32 `json:"timeoutSeconds,omitempty"`
	// +optional
	// +kubebuilder:validation:Minimum=2
	// +kubebuilder:validation:Maximum=10
	HealthyThreshold *int32 `json:"healthyThreshold,omitempty"`
	// +optional
	// +kubebuilder:validation:Minimum=2
	// +kubebuilder:validation:Maximum=10
	UnhealthyThreshold *int32 `json:"unhealthyThreshold,omitempty"`
	// Matcher is the HTTP codes of a healthy answer ("200", "200-299", "200,302").
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9]{3}([-,][0-9]{3})*$`
	Matcher string `json:"matcher,omitempty"`
}

// GCPLoadBalancerType is the kind of Cloud Load Balancing load balancer a class gets.
// +kubebuilder:validation:Enum=global;regional;network
type GCPLoadBalancerType string

const (
	// GCPGlobal is a global external Application Load Balancer (EXTERNAL_MANAGED): HTTP and HTTPS
	// listeners, HTTPRoute rules as URL map route rules, one anycast address.
	GCPGlobal GCPLoadBalancerType = "global"
	// GCPRegional is a regional external Application Load Balancer in the class's region.
	GCPRegional GCPLoadBalancerType = "regional"
	// GCPNetwork is a regional external passthrough Network Load Balancer: TCP and UDP listeners
	// (TCPRoute, UDPRoute, LoadBalancer Services) straight to the endpoints' VMs.
	GCPNetwork GCPLoadBalancerType = "network"
)

// GCPOptions tune the GCP load balancers of a class and name the project they live in. Unset
// fields take the operator's defaults (its --gcp-* flags).
type GCPOptions struct {
	// Project is the GCP project that owns the load balancers; the operator's --gcp-project when unset.
	// +optional
	// +kubebuilder:validation:Pattern=`^[a-z][-a-z0-9]{4,28}[a-z0-9]$`
	Project string `json:"project,omitempty"`

	// LoadBalancerType is global, regional (Application Load Balancers) or network (passthrough).
	// +optional
	// +kubebuilder:default=global
	LoadBalancerType GCPLoadBalancerType `json:"loadBalancerType,omitempty"`

	// Region of regional and network load balancers; the operator's --gcp-region when unset.
	// +optional
	// +kubebuilder:validation:Pattern=`^[a-z]+-[a-z]+[0-9]+$`
	Region string `json:"region,omitempty"`

	// Network is the VPC network of the endpoints' network endpoint groups (a name or a self
	// link); a member's spec.provider.network overrides it for that member's endpoints. Default "default".
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Network string `json:"network,omitempty"`

	// TargetTags are GCE network tags of the VMs the endpoints run on: the firewall rules fleetgate
	// makes to let the load balancer reach the endpoints target them (a member's
	// spec.provider.networkTags override them for its endpoints). Unset, a rule applies to every VM
	// of the network, and the Gateway's Programmed message says so.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:Pattern=`^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$`
	TargetTags []string `json:"targetTags,omitempty"`

	// Endpoint overrides the Compute Engine API endpoint (Private Service Connect, or a test
	// server): scheme and host, no path.
	// +optional
	// +kubebuilder:validation:Pattern=`^https?://[^/]+$`
	// +kubebuilder:validation:MaxLength=256
	Endpoint string `json:"endpoint,omitempty"`

	// Credentials name the identity the calls are made as; the operator's Application Default
	// Credentials (GKE workload identity through the metadata server, GOOGLE_APPLICATION_CREDENTIALS)
	// when unset.
	// +optional
	Credentials *GCPCredentials `json:"credentials,omitempty"`

	// Labels are put on every resource fleetgate creates for this class that takes labels
	// (forwarding rules and addresses), next to fleetgate's ownership labels.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	Labels map[string]string `json:"labels,omitempty"`

	// HealthCheck of the backend services; unset fields follow the backends' readiness probes,
	// then GCP's defaults.
	// +optional
	HealthCheck *GCPHealthCheck `json:"healthCheck,omitempty"`

	// DryRun computes the calls the provider would make and shows them, making no mutating call.
	// A Gateway can ask for it alone with the infrastructure annotation fleetgate.dev/dry-run: "true".
	// +optional
	DryRun bool `json:"dryRun,omitempty"`
}

// GCPCredentials say which identity the compute calls run as. At most one of secretRef and
// workloadIdentity; impersonate may be added on top of either (or of the operator's own).
// +kubebuilder:validation:XValidation:rule="!(has(self.secretRef) && has(self.workloadIdentity))",message="secretRef and workloadIdentity are exclusive"
type GCPCredentials struct {
	// SecretRef names a Secret whose key "key.json" holds a service account key.
	// +optional
	SecretRef *ObjectRef `json:"secretRef,omitempty"`

	// WorkloadIdentity exchanges a projected token file for Google credentials through workload
	// identity federation (an external_account configuration).
	// +optional
	WorkloadIdentity *GCPWorkloadIdentity `json:"workloadIdentity,omitempty"`

	// Impersonate is the email of a service account the identity above acts as.
	// +optional
	// +kubebuilder:validation:Pattern=`^[a-z][-a-z0-9]{4,28}[a-z0-9]@[-a-z0-9.]+\.iam\.gserviceaccount\.com$`
	Impersonate string `json:"impersonate,omitempty"`
}

// GCPWorkloadIdentity is a workload identity federation pool provider and the token file the
// operator's pod has for it.
type GCPWorkloadIdentity struct {
	// Audience is the pool provider's full resource name
	// (//iam.googleapis.com/projects/N/locations/global/workloadIdentityPools/P/providers/Q).
	// +kubebuilder:validation:Pattern=`^//iam\.googleapis\.com/projects/[0-9]+/locations/global/workloadIdentityPools/[^/]+/providers/[^/]+$`
	Audience string `json:"audience"`
	// TokenFile is the path of the projected token in the operator's pod.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	TokenFile string `json:"tokenFile"`
}

// GCPHealthCheck tunes backend service health checks.
type GCPHealthCheck struct {
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^/`
	Path string `json:"path,omitempty"`
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=300
	IntervalSeconds *int32 `json:"intervalSeconds,omitempty"`
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=300
	TimeoutSeconds *int32 `json:"timeoutSeconds,omitempty"`
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10
	HealthyThreshold *int32 `json:"healthyThreshold,omitempty"`
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10
	UnhealthyThreshold *int32 `json:"unhealthyThreshold,omitempty"`
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
