package gcp

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"
)

// Where Google's load balancers reach the endpoints from (Cloud Load Balancing firewall rules
// reference): the front ends and health checkers of external Application Load Balancers, and the
// health checkers of passthrough Network Load Balancers, whose client traffic arrives itself.
var (
	proxyRanges       = []string{"35.191.0.0/16", "130.211.0.0/22"}
	passthroughChecks = []string{"35.191.0.0/16", "209.85.152.0/22", "209.85.204.0/22"}
)

// allowRule is one ingress firewall rule the endpoints of a network need.
type allowRule struct {
	network string
	// tags are the target tags of the endpoints' VMs; none targets every VM of the network.
	tags []string
	// clusters are the members whose endpoints the rule admits to.
	clusters map[string]bool
	sources  map[string]bool
	ports    map[string]map[int]bool // protocol ("tcp", "udp") → ports
}

// allowTo lets sources reach the ports of cluster's endpoints over protocol. id groups what one
// rule carries within the cluster's network and target tags.
func (b *builder) allowTo(id, cluster, protocol string, sources []string, ports ...int) {
	network, tags := b.network(cluster), b.targetTags(cluster)
	id = "fw/" + shortHash(idHashLen, network) + "/" + id
	if len(tags) > 0 {
		// Rules of members with other tags stay apart. Without tags the ID is what it always was,
		// so that existing rules keep their names.
		id += "/" + shortHash(idHashLen, tags...)
	}
	r, ok := b.allow[id]
	if !ok {
		r = &allowRule{network: network, tags: tags, clusters: map[string]bool{}, sources: map[string]bool{}, ports: map[string]map[int]bool{}}
		b.allow[id] = r
	}
	r.clusters[cluster] = true
	for _, s := range sources {
		r.sources[s] = true
	}
	if r.ports[protocol] == nil {
		r.ports[protocol] = map[int]bool{}
	}
	for _, p := range ports {
		r.ports[protocol][p] = true
	}
}

// targetTags are the network tags of cluster's nodes: the member's, else the class's.
func (b *builder) targetTags(cluster string) []string {
	tags := b.o.TargetTags
	if m, ok := b.members[cluster]; ok && len(m.NetworkTags) > 0 {
		tags = m.NetworkTags
	}
	return slices.Sorted(slices.Values(tags))
}

// firewalls are the rules allowTo collected, one resource each: ingress to the endpoints' VMs (by
// their target tags; every VM of the network when none are known) on exactly the endpoints' ports,
// from exactly the load balancer's ranges (and, for a passthrough listener, its clients).
func (b *builder) firewalls() {
	untargeted := map[string]*untargetedRules{}
	for _, id := range slices.Sorted(maps.Keys(b.allow)) {
		r := b.allow[id]
		fw := &computepb.Firewall{Network: proto.String(r.network), Direction: proto.String("INGRESS"),
			SourceRanges: slices.Sorted(maps.Keys(r.sources)), TargetTags: r.tags}
		for _, protocol := range slices.Sorted(maps.Keys(r.ports)) {
			var ports []string
			for _, p := range slices.Sorted(maps.Keys(r.ports[protocol])) {
				ports = append(ports, strconv.Itoa(p))
			}
			fw.Allowed = append(fw.Allowed, &computepb.Allowed{IPProtocol: proto.String(protocol), Ports: ports})
		}
		if project := networkProject(r.network); project != "" && project != b.s.Project {
			b.sharedVPCRule(id, project, fw)
			continue
		}
		if len(r.tags) == 0 {
			u := untargeted[r.network]
			if u == nil {
				u = &untargetedRules{clusters: map[string]bool{}}
				untargeted[r.network] = u
			}
			maps.Copy(u.clusters, r.clusters)
			for _, a := range fw.Allowed {
				u.ports = append(u.ports, a.GetIPProtocol()+":"+strings.Join(a.Ports, ","))
			}
			u.anywhere = u.anywhere || r.sources["0.0.0.0/0"]
		}
		b.add(KindFirewall, Scope{}, id, nil, fw)
	}
	// Not an error: GCE's own default, and all there was before tags could be given.
	for _, network := range slices.Sorted(maps.Keys(untargeted)) {
		u := untargeted[network]
		from := "the load balancer's ranges"
		if u.anywhere {
			from = "any address"
		}
		b.note("firewall rules admit %s on %s to every VM of network %s: set spec.provider.networkTags of member(s) %s (or the class's spec.gcp.targetTags) to confine them to the endpoints' nodes",
			from, strings.Join(slices.Compact(slices.Sorted(slices.Values(u.ports))), " "), lastSegment(network), strings.Join(slices.Sorted(maps.Keys(u.clusters)), ","))
	}
}

// untargetedRules sum up a network's firewall rules without target tags, for one note.
type untargetedRules struct {
	clusters map[string]bool
	ports    []string
	anywhere bool
}

// networkProject is the project a network link names ("" when it names none).
func networkProject(link string) string {
	rest, ok := strings.CutPrefix(relLink(link), "projects/")
	if !ok {
		return ""
	}
	project, _, _ := strings.Cut(rest, "/")
	return project
}

// sharedVPCRule notes the rule fw that a network of another project (a Shared VPC host) needs:
// firewall rules live in the network's project, which is its administrators' (and the class's
// identity usually may not write there), so fleetgate leaves it to them and says what to create.
func (b *builder) sharedVPCRule(id, project string, fw *computepb.Firewall) {
	var allow []string
	for _, a := range fw.Allowed {
		allow = append(allow, a.GetIPProtocol()+":"+strings.Join(a.Ports, ","))
	}
	cmd := fmt.Sprintf("gcloud compute firewall-rules create %s%s-%s --project %s --network %s --direction INGRESS --allow %s --source-ranges %s",
		b.s.Prefix, kindAbbrev[KindFirewall], shortHash(idHashLen, id), project, lastSegment(fw.GetNetwork()), strings.Join(allow, ","), strings.Join(fw.SourceRanges, ","))
	if len(fw.TargetTags) > 0 {
		cmd += " --target-tags " + strings.Join(fw.TargetTags, ",")
	}
	b.note("network %s is in project %s (Shared VPC), whose firewall rules are its administrators': the endpoints need `%s`", lastSegment(fw.GetNetwork()), project, cmd)
}
