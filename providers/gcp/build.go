package gcp

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/providers"
)

// Ownership labels, on the kinds that take labels (addresses and forwarding rules). GCE label
// keys cannot hold '/' or '.', so these are fleetgate's keys in GCE's alphabet.
const (
	labelPrefix    = "fleetgate-"
	labelManagedBy = labelPrefix + "managed-by"
	labelFleet     = labelPrefix + "fleet"
	labelGateway   = labelPrefix + "gateway"
	// labelCluster starts the key of each member cluster holding the gateway, on the anchors
	// (address and forwarding rules): setLabels changes them in place as members join and leave,
	// where a description cannot change and a new address would move the gateway's IP.
	labelCluster = labelPrefix + "cluster-"
)

// apiBase is how GCE spells resource URLs (selfLinks), whatever endpoint the calls go to.
const apiBase = "https://www.googleapis.com/compute/v1/"

// Member is what the provider knows of a member cluster's placement: the VPC network of its
// endpoints and its zones (an endpoint without a zone of its own is in the member's only zone).
type Member struct {
	Network string
	// NetworkTags are the tags of the member's nodes, which its endpoints' firewall rules target.
	NetworkTags []string
	Zones       []string
}

// errUnsupported marks a model the load balancer type cannot serve at all.
var errUnsupported = errors.New("not supported by this GCP load balancer type")

// Env is what Build knows besides the model and the class: where members run and what their
// backends' pods call ready.
type Env struct {
	// Members maps member cluster names to their placement.
	Members map[string]Member
	// Probes are backends' HTTP readiness probes by backend name (providers.BackendProbes): their
	// health checks follow them where the class names no path.
	Probes map[string]providers.HTTPProbe
}

// Build makes the Stack of lb for a class with options o. It is pure.
func Build(lb *providers.LoadBalancer, o v1alpha1.GCPOptions, env Env, fleet string) (*Stack, error) {
	if lb.Routing == nil {
		return nil, fmt.Errorf("gateway %s: no routing", lb.Gateway)
	}
	s := &Stack{Gateway: lb.Gateway, Fleet: fleet, Prefix: gatewayPrefix(fleet, lb.Gateway), Project: o.Project,
		Type: o.LoadBalancerType, Clusters: slices.Sorted(slices.Values(lb.Clusters)), DryRun: o.DryRun}
	if o.LoadBalancerType != v1alpha1.GCPGlobal {
		s.Region = o.Region
	}
	b := &builder{lb: lb, o: o, s: s, members: env.Members, probes: env.Probes, byID: map[string]*Resource{}, allow: map[string]*allowRule{}}
	s.Labels = b.labels()
	var err error
	if o.LoadBalancerType == v1alpha1.GCPNetwork {
		err = b.passthrough()
	} else {
		err = b.application()
	}
	if err != nil {
		return nil, err
	}
	b.firewalls()
	for _, r := range b.byID {
		s.Resources = append(s.Resources, *r)
		if r.Scope.Zone != "" && !slices.Contains(s.Zones, r.Scope.Zone) {
			s.Zones = append(s.Zones, r.Scope.Zone)
		}
	}
	slices.SortFunc(s.Resources, func(a, b Resource) int { return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.ID, b.ID)) })
	slices.Sort(s.Zones)
	return s, nil
}

type builder struct {
	lb      *providers.LoadBalancer
	o       v1alpha1.GCPOptions
	s       *Stack
	members map[string]Member
	probes  map[string]providers.HTTPProbe
	byID    map[string]*Resource
	// allow are the firewall rules the endpoints need, by ID (firewalls).
	allow map[string]*allowRule
}

func (b *builder) note(format string, args ...any) {
	n := fmt.Sprintf(format, args...)
	if !slices.Contains(b.s.Notes, n) {
		b.s.Notes = append(b.s.Notes, n)
	}
}

// add puts a resource into the Stack once (by ID) and returns its URL.
func (b *builder) add(k Kind, scope Scope, id string, nameParts []string, msg proto.Message) string {
	if r, ok := b.byID[id]; ok {
		return b.link(r.Kind, r.Scope, r.Name)
	}
	name := b.s.Prefix + kindAbbrev[k] + "-" + shortHash(idHashLen, append([]string{id}, nameParts...)...)
	setName(msg, name)
	b.byID[id] = &Resource{Kind: k, Scope: scope, Name: name, ID: id, Msg: msg}
	return b.link(k, scope, name)
}

var kindAbbrev = [numKinds]string{"ip", "fw", "hc", "neg", "bs", "cert", "um", "thp", "tps", "fr"}

// link is the URL of a resource of the Stack's project.
func (b *builder) link(k Kind, scope Scope, name string) string {
	return apiBase + "projects/" + b.s.Project + "/" + scope.String() + "/" + collections[k] + "/" + name
}

// scope is where the load balancer's regional resources live: the region, or global.
func (b *builder) scope() Scope { return Scope{Region: b.s.Region} }

// labels are the class's labels, the Gateway's infrastructure labels that are valid GCE labels
// (others are noted), then the ownership labels, which nothing can override.
func (b *builder) labels() map[string]string {
	l := maps.Clone(b.o.Labels)
	if l == nil {
		l = map[string]string{}
	}
	for _, k := range slices.Sorted(maps.Keys(b.lb.Labels)) {
		v := b.lb.Labels[k]
		if !labelKeyRE.MatchString(k) || !labelValueRE.MatchString(v) || strings.HasPrefix(k, labelPrefix) {
			b.note("infrastructure label %q is not a GCE label and is left out", k)
			continue
		}
		l[k] = v
	}
	l[labelManagedBy] = managedBy
	l[labelFleet] = shortHash(fleetHashLen, b.s.Fleet)
	l[labelGateway] = providers.GatewayID(b.lb.Gateway)
	for _, c := range b.s.Clusters {
		k, v, ok := clusterLabel(c)
		if !ok {
			b.note("member cluster %q is not recorded on the load balancer: its name does not fit a GCE label value", c)
			continue
		}
		l[k] = v
	}
	return l
}

// clusterLabel is the label recording member cluster c: ok is false when c's name does not fit
// a label value (at most 63 characters). Cluster names are DNS subdomains, so '.' is written '_',
// which they never hold.
func clusterLabel(c string) (key, value string, ok bool) {
	v := strings.ReplaceAll(c, ".", "_")
	return labelCluster + shortHash(idHashLen, c), v, v != "" && labelValueRE.MatchString(v)
}

// labeledClusters are the member clusters recorded in labels, sorted.
func labeledClusters(labels map[string]string) []string {
	var out []string
	for k, v := range labels {
		if strings.HasPrefix(k, labelCluster) {
			out = append(out, strings.ReplaceAll(v, "_", "."))
		}
	}
	slices.Sort(out)
	return out
}

// address is the IP the forwarding rules share: the one spec.addresses asks for (an IP, or a
// reserved address by name), else an address of the gateway's own.
func (b *builder) address() (string, error) {
	switch len(b.lb.Addresses) {
	case 0:
	case 1:
		a := b.lb.Addresses[0]
		switch a.Type {
		case providers.AddressTypeIPAddress:
			return a.Value, nil
		case "NamedAddress":
			if !nameRE.MatchString(a.Value) {
				return "", fmt.Errorf("address %q is not a GCE address name", a.Value)
			}
			return b.link(KindAddress, b.scope(), a.Value), nil
		default:
			return "", fmt.Errorf("address type %s: %w (IPAddress or NamedAddress)", a.Type, errUnsupported)
		}
	default:
		return "", fmt.Errorf("%d addresses requested: a GCP load balancer has one: %w", len(b.lb.Addresses), errUnsupported)
	}
	addr := &computepb.Address{AddressType: proto.String("EXTERNAL"), Labels: b.s.Labels}
	if b.s.Region == "" {
		addr.IpVersion = proto.String("IPV4")
	} else {
		addr.NetworkTier = proto.String("PREMIUM")
	}
	return b.add(KindAddress, b.scope(), "address", nil, addr), nil
}

// setName sets the Name field of any message the provider builds.
func setName(m proto.Message, name string) {
	switch v := m.(type) {
	case *computepb.Address:
		v.Name = &name
	case *computepb.Firewall:
		v.Name = &name
	case *computepb.HealthCheck:
		v.Name = &name
	case *computepb.NetworkEndpointGroup:
		v.Name = &name
	case *computepb.BackendService:
		v.Name = &name
	case *computepb.SslCertificate:
		v.Name = &name
	case *computepb.UrlMap:
		v.Name = &name
	case *computepb.TargetHttpProxy:
		v.Name = &name
	case *computepb.TargetHttpsProxy:
		v.Name = &name
	case *computepb.ForwardingRule:
		v.Name = &name
	}
}
