package gcp

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
)

// Kind is a GCE resource kind the provider manages. The order of the constants is the order
// of creation (what a resource references is created before it); deletion goes in reverse.
type Kind int

const (
	KindAddress Kind = iota
	KindFirewall
	KindHealthCheck
	KindNEG
	KindBackendService
	KindSSLCertificate
	KindURLMap
	KindTargetHTTPProxy
	KindTargetHTTPSProxy
	KindForwardingRule
	numKinds
)

var kindNames = [numKinds]string{"address", "firewall", "healthCheck", "networkEndpointGroup", "backendService",
	"sslCertificate", "urlMap", "targetHttpProxy", "targetHttpsProxy", "forwardingRule"}

// collections are the REST collection names, for links.
var collections = [numKinds]string{"addresses", "firewalls", "healthChecks", "networkEndpointGroups", "backendServices",
	"sslCertificates", "urlMaps", "targetHttpProxies", "targetHttpsProxies", "forwardingRules"}

func (k Kind) String() string { return kindNames[k] }

// anchor tells the kinds that record the gateway's member clusters in labels, which every Ensure
// keeps current: addresses and forwarding rules.
func (k Kind) anchor() bool { return k == KindAddress || k == KindForwardingRule }

// Scope is where a resource lives: global (both empty), a region, or a zone (NEGs).
type Scope struct {
	Region string `json:"region,omitempty"`
	Zone   string `json:"zone,omitempty"`
}

func (s Scope) String() string {
	switch {
	case s.Zone != "":
		return "zones/" + s.Zone
	case s.Region != "":
		return "regions/" + s.Region
	}
	return "global"
}

// Resource is one desired GCE resource.
type Resource struct {
	Kind  Kind
	Scope Scope
	// Name is the GCE name (see names.go).
	Name string
	// ID says which part of the gateway it is ("urlmap/443", "bs/<backend>/<cluster>"), for the
	// ownership record and for humans.
	ID string
	// Msg is the desired resource with Name set and Description unset: the deployer writes the
	// ownership record there.
	Msg proto.Message
	// Endpoints are a NEG's network endpoints, sorted: attached and detached, not part of Msg.
	Endpoints []*computepb.NetworkEndpoint
}

// Stack is every GCE resource one gateway needs, as desired: built purely (Build) and deployed
// by ownership (deployer).
type Stack struct {
	// Gateway is the gateway key; Fleet the operator's fleet ID; Prefix starts every name.
	Gateway string
	Fleet   string
	Prefix  string
	Project string
	// Type is the class's load balancer type; Region its region (regional and network types).
	Type   v1alpha1.GCPLoadBalancerType
	Region string
	// Clusters are the member clusters of the gateway, sorted: recorded in the anchors' labels
	// (address, forwarding rules) so that List and Delete can tell which clusters hold it.
	Clusters []string
	// Labels go on the resources that take labels, with the ownership labels.
	Labels map[string]string
	// Resources in creation order (by Kind, then ID).
	Resources []Resource
	// Zones are the zones of the Stack's NEGs, sorted.
	Zones []string
	// Notes are what the Stack could not express exactly (a dropped endpoint, an approximated
	// retry condition), for the gateway's status.
	Notes []string
	// DryRun: compute the plan, call nothing that mutates.
	DryRun bool
}

// owner is the ownership record in every resource's description, as JSON. GCE has labels on
// few of the kinds used here, so the description (which every kind has) carries it; names
// carry the fleet and gateway too, for list filters.
type owner struct {
	ManagedBy string `json:"managedBy"`
	Fleet     string `json:"fleet"`
	Gateway   string `json:"gateway"`
	Resource  string `json:"resource"`
	// Clusters, on the kinds without labels, are the member clusters that held the gateway when
	// the resource was written: what List and Delete go by when no anchor is left (see holders).
	Clusters []string `json:"clusters,omitempty"`
	// Spec is the hash of the desired resource it was written from (specHash): an unchanged hash
	// means nothing to update, whatever defaults GCE filled in.
	Spec string `json:"spec"`
}

const managedBy = "fleetgate"

// description is the ownership record of r in s.
func (s *Stack) description(r *Resource) (string, error) {
	o := owner{ManagedBy: managedBy, Fleet: s.Fleet, Gateway: s.Gateway, Resource: r.ID, Spec: specHash(r.Kind, r.Msg)}
	if !r.Kind.anchor() {
		o.Clusters = s.Clusters
	}
	b, err := json.Marshal(o)
	if err != nil {
		return "", fmt.Errorf("encoding the ownership record of %s: %w", r.Name, err)
	}
	return string(b), nil
}

// parseOwner reads an ownership record; ok is false for anything that is not fleetgate's.
func parseOwner(description string) (owner, bool) {
	var o owner
	if err := json.Unmarshal([]byte(description), &o); err != nil || o.ManagedBy != managedBy || o.Gateway == "" {
		return owner{}, false
	}
	return o, true
}

// specHash hashes what the deployer compares for kind k: the whole desired message, except the
// fields a kind changes with its own calls (a proxy's URL map and certificates, a forwarding
// rule's target), which are compared directly, and the labels, set with setLabels.
func specHash(k Kind, m proto.Message) string {
	m = proto.Clone(m)
	switch v := m.(type) {
	case *computepb.TargetHttpProxy:
		v.UrlMap = nil
	case *computepb.TargetHttpsProxy:
		v.UrlMap, v.SslCertificates = nil, nil
	case *computepb.ForwardingRule:
		v.Target, v.Labels = nil, nil
	case *computepb.Address:
		v.Labels = nil
	case *computepb.UrlMap:
		// Priorities are the deployer's to keep stable (stablePriorities): the order of the rules
		// is in the message already.
		for _, pm := range v.GetPathMatchers() {
			for _, r := range pm.GetRouteRules() {
				r.Priority = nil
			}
		}
	}
	// Deterministic wire encoding: stable within a release of the protobuf module; a new release
	// that encodes differently costs one update of each resource.
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return "unencodable " + k.String() // never equal to a real hash: the resource is rewritten
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12])
}
