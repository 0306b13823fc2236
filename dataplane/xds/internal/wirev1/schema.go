// Code frozen from dataplane/ir/ir.go at fleetgate commit 3c9e286 (the last unversioned wire
// protocol, wire version 1). DO NOT EDIT: it is the JSON schema a proxy of that release decodes
// into, so that fields added to ir since are ignored here exactly as that proxy ignores them.
// Only the package clause, this comment and the dropped package comment and
// DefaultDeniedEndpointCIDRs (behaviour, not schema) differ from the original.

package wirev1

import "time"

// Config is the complete dataplane configuration of one gateway (a fleet gateway or a cluster gateway).
type Config struct {
	// Gateway names the gateway this config belongs to, as "cluster/namespace/name" or, for a fleet
	// gateway, "namespace/name".
	Gateway string `json:"gateway"`
	// Version increases with every change; proxies acknowledge it.
	Version uint64 `json:"version"`
	// Listeners are sorted by port; at most one per port and transport (TCP or UDP).
	Listeners []Listener `json:"listeners,omitempty"`
	// BackendClientCertificate, when set, is presented to backends the proxy dials with TLS
	// (Gateway spec.tls.backend.clientCertificateRef).
	BackendClientCertificate *Certificate `json:"backendClientCertificate,omitempty"`
	// Limits bound what the proxy does for clients and route authors; nil or a zero field means
	// the proxy's own default (its flags).
	Limits *Limits `json:"limits,omitempty"`
}

// Limits are the operator-set bounds of one gateway's proxies (GatewayClassConfig spec.proxy).
type Limits struct {
	// BackendResponseTimeout bounds the wait for response headers on routes without timeouts.
	BackendResponseTimeout time.Duration `json:"backendResponseTimeout,omitempty"`
	// RequestBodyIdleTimeout ends a request whose body stalls this long.
	RequestBodyIdleTimeout time.Duration `json:"requestBodyIdleTimeout,omitempty"`
	// ResponseWriteIdleTimeout closes a connection whose client reads nothing for this long.
	ResponseWriteIdleTimeout time.Duration `json:"responseWriteIdleTimeout,omitempty"`
	// MaxConnectionsPerListener caps concurrent client connections per listener.
	MaxConnectionsPerListener int `json:"maxConnectionsPerListener,omitempty"`
	// MaxRetryAttempts is the largest Retry.Attempts Validate accepts (default DefaultMaxRetryAttempts).
	MaxRetryAttempts int `json:"maxRetryAttempts,omitempty"`
	// RetryBudgetPercent and RetryBudgetMinConcurrent bound retries in flight per backend.
	RetryBudgetPercent       int `json:"retryBudgetPercent,omitempty"`
	RetryBudgetMinConcurrent int `json:"retryBudgetMinConcurrent,omitempty"`
	// MaxRegexInstructions bounds each compiled regex (default DefaultMaxRegexInstructions).
	MaxRegexInstructions int `json:"maxRegexInstructions,omitempty"`
	// DeniedEndpointCIDRs are never dialled; nil means the proxy's own list (its flag), empty
	// denies nothing (omitzero keeps the two apart on the wire).
	DeniedEndpointCIDRs []string `json:"deniedEndpointCIDRs,omitzero"`
	// AllowUnderscoresInHeaders forwards request header names containing "_".
	AllowUnderscoresInHeaders bool `json:"allowUnderscoresInHeaders,omitempty"`
	// AllowCBCCipherSuites offers TLS 1.2 CBC suites.
	AllowCBCCipherSuites bool `json:"allowCBCCipherSuites,omitempty"`
	// ServerHeader is what responses say in their Server header; empty means ServerHeaderSet.
	ServerHeader ServerHeaderMode `json:"serverHeader,omitempty"`
	// ServerHeaderValue is the value ServerHeaderSet writes (default DefaultServerHeader).
	ServerHeaderValue string `json:"serverHeaderValue,omitempty"`
}

// ServerHeaderMode is what the proxy does with the Server header of its responses.
type ServerHeaderMode string

const (
	// ServerHeaderSet writes the proxy's value in place of the backend's, on every response,
	// the proxy's own answers (404, 502...) included, as nginx and Envoy do by default.
	ServerHeaderSet ServerHeaderMode = "Set"
	// ServerHeaderPassThrough relays the backend's Server header, if any, and adds none.
	ServerHeaderPassThrough ServerHeaderMode = "PassThrough"
	// ServerHeaderStrip sends no Server header at all.
	ServerHeaderStrip ServerHeaderMode = "Strip"
)

// DefaultServerHeader is the Server header of a proxy's responses unless the config says otherwise.
const DefaultServerHeader = "fleetgate"

// Defaults of the limits that translation and Validate apply when the config sets none.
const (
	DefaultMaxRetryAttempts     = 5
	DefaultMaxRegexInstructions = 1000
)

// Protocol is what a listener speaks on its port.
type Protocol string

const (
	ProtocolHTTP  Protocol = "HTTP"
	ProtocolHTTPS Protocol = "HTTPS"
	// ProtocolTLS routes TLS connections by SNI, passing them through or terminating them.
	ProtocolTLS Protocol = "TLS"
	ProtocolTCP Protocol = "TCP"
	ProtocolUDP Protocol = "UDP"
)

// Listener is one bound port. Gateway listeners that share a port are merged into one Listener: their
// hostnames become virtual hosts (HTTP, HTTPS) or SNI routes (TLS).
type Listener struct {
	// Name is unique within the config, e.g. "http-80".
	Name     string   `json:"name"`
	Port     uint32   `json:"port"`
	Protocol Protocol `json:"protocol"`
	// Certificates are served on HTTPS listeners and terminating TLS listeners, chosen by SNI
	// (most specific hostname first; the first certificate is the default when nothing matches).
	Certificates []Certificate `json:"certificates,omitempty"`
	// VirtualHosts hold the HTTP routes of HTTP and HTTPS listeners.
	VirtualHosts []VirtualHost `json:"virtualHosts,omitempty"`
	// SNIRoutes hold the routes of TLS listeners.
	SNIRoutes []SNIRoute `json:"sniRoutes,omitempty"`
	// L4 is the single route of a TCP or UDP listener.
	L4 *L4Route `json:"l4,omitempty"`
	// SourceRanges, when set, are the only client networks (CIDRs, e.g. "10.0.0.0/8") the listener
	// accepts connections and datagrams from, as a Service's loadBalancerSourceRanges ask; others
	// are dropped before any byte is read. Empty allows every client.
	SourceRanges []string `json:"sourceRanges,omitempty"`
	// ClientValidation, on HTTPS listeners, asks clients for a certificate and checks it.
	ClientValidation *ClientValidation `json:"clientValidation,omitempty"`
}

// ClientValidation is how an HTTPS listener checks client certificates (Gateway spec.tls.frontend).
type ClientValidation struct {
	// CACertPEM holds the trusted CA certificates.
	CACertPEM []byte `json:"caCertPEM"`
	// AllowInsecureFallback accepts connections whose certificate is missing or does not verify;
	// otherwise only clients with a certificate signed by one of the CAs complete the handshake.
	AllowInsecureFallback bool `json:"allowInsecureFallback,omitempty"`
}

// Certificate is a PEM certificate chain and key served for the given hostnames.
type Certificate struct {
	Name string `json:"name"`
	// Hostnames are exact names or "*.suffix" wildcards; empty means any SNI.
	Hostnames []string `json:"hostnames,omitempty"`
	CertPEM   []byte   `json:"certPEM"`
	KeyPEM    []byte   `json:"keyPEM"`
}

// VirtualHost groups the routes for one hostname: an exact name, a "*.suffix" wildcard, or "*".
type VirtualHost struct {
	Hostname string `json:"hostname"`
	// SingleLabelWildcard makes a "*.suffix" Hostname cover exactly one label, as Ingress defines
	// wildcards ("*.foo.com" matches "bar.foo.com", not "a.b.foo.com"), instead of one or more as
	// Gateway API does. A host it does not cover falls to the next less specific virtual host.
	SingleLabelWildcard bool `json:"singleLabelWildcard,omitempty"`
	// Routes are in Gateway API precedence order; the first that matches wins.
	Routes []Route `json:"routes,omitempty"`
}

// Route is one match of one HTTPRoute or GRPCRoute rule, compiled.
type Route struct {
	// Name identifies the source for logs and metrics: "kind/namespace/name/rule/match".
	Name    string  `json:"name"`
	Match   Match   `json:"match"`
	Filters Filters `json:"filters,omitzero"`
	// Backends are chosen by weight. A backend with Invalid set answers 500 for its share of requests;
	// a route with no backends answers 500 (unless a redirect filter answers first).
	Backends []Backend `json:"backends,omitempty"`
	Timeouts Timeouts  `json:"timeouts,omitzero"`
	Retry    *Retry    `json:"retry,omitempty"`
}

// MatchType says how a string is compared.
type MatchType string

const (
	MatchExact  MatchType = "Exact"
	MatchPrefix MatchType = "Prefix" // path prefix by segment: "/foo" matches "/foo" and "/foo/bar", not "/foobar"
	MatchRegex  MatchType = "Regex"  // RE2, anchored at both ends
)

// Match is the conjunction of every condition set in it.
type Match struct {
	Path        *StringMatch `json:"path,omitempty"`
	Method      string       `json:"method,omitempty"`
	Headers     []KeyMatch   `json:"headers,omitempty"`
	QueryParams []KeyMatch   `json:"queryParams,omitempty"`
}

// StringMatch compares one value.
type StringMatch struct {
	Type  MatchType `json:"type"`
	Value string    `json:"value"`
}

// KeyMatch compares the value of a named header (case-insensitive name) or query parameter
// (case-sensitive name). Types are Exact or Regex.
type KeyMatch struct {
	Name  string    `json:"name"`
	Type  MatchType `json:"type"`
	Value string    `json:"value"`
}

// Filters are applied in this order: CORS, redirect (ends the request), request headers, rewrite,
// mirrors, then response headers on the way back.
type Filters struct {
	RequestHeaders  *HeaderModifier `json:"requestHeaders,omitempty"`
	ResponseHeaders *HeaderModifier `json:"responseHeaders,omitempty"`
	Redirect        *Redirect       `json:"redirect,omitempty"`
	Rewrite         *Rewrite        `json:"rewrite,omitempty"`
	Mirrors         []Mirror        `json:"mirrors,omitempty"`
	CORS            *CORS           `json:"cors,omitempty"`
}

// Header is one header name and value.
type Header struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// HeaderModifier edits headers: Set replaces, Add appends, Remove deletes (names case-insensitive).
type HeaderModifier struct {
	Set    []Header `json:"set,omitempty"`
	Add    []Header `json:"add,omitempty"`
	Remove []string `json:"remove,omitempty"`
}

// PathModifierType says how a redirect or rewrite changes the path.
type PathModifierType string

const (
	ReplaceFullPath    PathModifierType = "ReplaceFullPath"
	ReplacePrefixMatch PathModifierType = "ReplacePrefixMatch"
)

// PathModifier replaces the full path, or the part matched by the route's Prefix path match.
type PathModifier struct {
	Type  PathModifierType `json:"type"`
	Value string           `json:"value"`
}

// Redirect answers with a redirect instead of forwarding. Unset fields keep the request's value.
type Redirect struct {
	Scheme     string        `json:"scheme,omitempty"`
	Hostname   string        `json:"hostname,omitempty"`
	Port       uint32        `json:"port,omitempty"`
	Path       *PathModifier `json:"path,omitempty"`
	StatusCode int           `json:"statusCode"`
}

// Rewrite changes the request before it is forwarded.
type Rewrite struct {
	Hostname string        `json:"hostname,omitempty"`
	Path     *PathModifier `json:"path,omitempty"`
}

// Mirror sends a copy of the request to a backend, ignoring the answer, for a fraction of requests.
type Mirror struct {
	Backend Backend `json:"backend"`
	// Numerator/Denominator of requests mirrored; Denominator 0 means all.
	Numerator   int32 `json:"numerator,omitempty"`
	Denominator int32 `json:"denominator,omitempty"`
}

// CORS answers preflight requests and decorates responses per the Fetch standard.
type CORS struct {
	AllowOrigins     []string `json:"allowOrigins,omitempty"` // exact origins, "*", or with one "*" wildcard
	AllowCredentials bool     `json:"allowCredentials,omitempty"`
	AllowMethods     []string `json:"allowMethods,omitempty"`
	AllowHeaders     []string `json:"allowHeaders,omitempty"`
	ExposeHeaders    []string `json:"exposeHeaders,omitempty"`
	MaxAge           int32    `json:"maxAge,omitempty"`
}

// Timeouts bound a request: Request covers the whole exchange with the client, BackendRequest one
// attempt at a backend. Zero means no limit.
type Timeouts struct {
	Request        time.Duration `json:"request,omitempty"`
	BackendRequest time.Duration `json:"backendRequest,omitempty"`
}

// Retry repeats a failed attempt at a backend.
type Retry struct {
	Attempts int           `json:"attempts"`
	Codes    []int         `json:"codes,omitempty"`
	Backoff  time.Duration `json:"backoff,omitempty"`
}

// AppProtocol is how the proxy speaks to a backend.
type AppProtocol string

const (
	AppHTTP1 AppProtocol = ""    // HTTP/1.1
	AppH2C   AppProtocol = "h2c" // HTTP/2 in cleartext (also gRPC)
	AppWS    AppProtocol = "ws"  // HTTP/1.1, WebSocket expected
	AppTLS   AppProtocol = "tls" // HTTP/1.1 or HTTP/2 over TLS
)

// Backend is one weighted backendRef resolved to endpoints.
type Backend struct {
	// Name identifies the backend for logs and metrics: "cluster/namespace/service:port".
	Name   string `json:"name"`
	Weight uint32 `json:"weight"`
	// Invalid marks a backendRef that could not be resolved; its share of requests gets a 500.
	Invalid     bool        `json:"invalid,omitempty"`
	AppProtocol AppProtocol `json:"appProtocol,omitempty"`
	Endpoints   []Endpoint  `json:"endpoints,omitempty"`
	// Filters set on the backendRef itself (header modifiers only).
	Filters Filters `json:"filters,omitzero"`
	// TLS, with AppProtocol AppTLS, says how to verify the backend (a BackendTLSPolicy). Without
	// it a TLS backend is encrypted to but not verified.
	TLS *BackendTLS `json:"tls,omitempty"`
}

// BackendTLS verifies a backend's certificate.
type BackendTLS struct {
	// Hostname is sent as SNI and, without SubjectAltNames, must match the certificate.
	Hostname string `json:"hostname"`
	// CACertPEM holds the trusted CAs; empty with SystemRoots unset trusts nothing.
	CACertPEM   []byte `json:"caCertPEM,omitempty"`
	SystemRoots bool   `json:"systemRoots,omitempty"`
	// SubjectAltNames, when set, replace Hostname for verification: one must be in the certificate.
	SubjectAltNames []SubjectAltName `json:"subjectAltNames,omitempty"`
}

// SubjectAltNameType is the kind of a subject alternative name.
type SubjectAltNameType string

const (
	SANHostname SubjectAltNameType = "Hostname"
	SANURI      SubjectAltNameType = "URI"
)

// SubjectAltName is one name a backend certificate may carry.
type SubjectAltName struct {
	Type  SubjectAltNameType `json:"type"`
	Value string             `json:"value"`
}

// Endpoint is one ready address of a backend.
type Endpoint struct {
	Address string `json:"address"`
	Port    uint32 `json:"port"`
	// Cluster is the member cluster the endpoint lives in.
	Cluster string `json:"cluster,omitempty"`
	// Weight spreads traffic across clusters; 0 means 1.
	Weight uint32 `json:"weight,omitempty"`
	// Zone and Node are where the endpoint runs (its EndpointSlice's zone and nodeName), when
	// known: a cloud load balancer that targets endpoints per zone and VM needs them (GCP NEGs);
	// the proxy ignores them.
	Zone string `json:"zone,omitempty"`
	Node string `json:"node,omitempty"`
}

// SNIRoute routes TLS connections whose SNI matches one of Hostnames.
type SNIRoute struct {
	Name string `json:"name"`
	// Hostnames are exact names or "*.suffix" wildcards; empty matches any SNI.
	Hostnames []string  `json:"hostnames,omitempty"`
	Backends  []Backend `json:"backends,omitempty"`
	// Terminate, when set, ends TLS at the proxy with the listener's certificates and forwards plain TCP.
	Terminate bool `json:"terminate,omitempty"`
}

// L4Route forwards TCP connections or UDP datagrams to weighted backends.
type L4Route struct {
	Name     string    `json:"name"`
	Backends []Backend `json:"backends,omitempty"`
	// ClientIPAffinity keeps each client address on one backend endpoint (a Service's
	// sessionAffinity ClientIP). The endpoint is chosen by weighted rendezvous hashing of the
	// client IP, so a client moves only when its endpoint goes away.
	ClientIPAffinity bool `json:"clientIPAffinity,omitempty"`
}
