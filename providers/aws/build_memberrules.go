package aws

import (
	"cmp"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/dataplane/ir"
	"github.com/fleetgate/fleetgate/providers"
)

// Member rules: a member cluster's pods or nodes admit only what their security groups allow, so
// for every member that names groups (MemberCluster spec.provider.aws) the load balancer gets an
// ingress rule on each of them per protocol and port range its targets (and health checks) use
// there, in the member's account. The source is the load balancer's own security group when it
// has one and the member runs in its VPC (the AWS Load Balancer Controller's "backend security
// group" case); otherwise the load balancer's subnets, whose addresses its nodes take: security
// group references do not reach across accounts and regions, and the subnets are narrower than
// the VPC.

const (
	// memberRuleResource is TagResource of every member rule.
	memberRuleResource = "member-rule"
	// sourceLoadBalancer stands for the load balancer's security group until its ID is known.
	sourceLoadBalancer = "load-balancer-security-group"
	ec2TCP             = "tcp"
	ec2UDP             = "udp"
)

// MemberAccess is what the security groups of one account must admit for one gateway.
type MemberAccess struct {
	// Members are the member clusters whose groups these are, sorted (for messages).
	Members []string
	// Account reaches them: region, endpoint and credentials.
	Account v1alpha1.AWSOptions
	// Rules are sorted; none means that the gateway's rules in the account are removed.
	Rules []MemberRule
}

// MemberRule is one ingress rule fleetgate owns on a member's security group.
type MemberRule struct {
	Group    string // sg-…
	Protocol string // tcp or udp
	FromPort int32
	ToPort   int32
	// Source is a CIDR, or sourceLoadBalancer.
	Source string
}

func (r MemberRule) String() string {
	ports := strconv.Itoa(int(r.FromPort))
	if r.ToPort != r.FromPort {
		ports += "-" + strconv.Itoa(int(r.ToPort))
	}
	return fmt.Sprintf("%s %s/%s from %s", r.Group, r.Protocol, ports, r.Source)
}

func compareMemberRules(a, b MemberRule) int {
	return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Protocol, b.Protocol),
		cmp.Compare(a.FromPort, b.FromPort), cmp.Compare(a.ToPort, b.ToPort), cmp.Compare(a.Source, b.Source))
}

// memberPort is one protocol and port the load balancer reaches a member's targets on.
type memberPort struct {
	protocol string
	port     int32
}

// buildMemberAccess is, purely, the member rules of Stack s, built from lb (whose endpoints say
// which member each target lives in) for the load balancer in net, one MemberAccess per account
// of the members that name security groups (also those without targets now, so that their rules
// go). class is the class's defaulted options: a member without credentials or region of its
// own uses the class's. namespace is the operator's, the only one a member's credentials Secret
// may live in ("" allows any). A member whose account cannot be named is an error only for a
// gateway with targets there.
func buildMemberAccess(s *Stack, lb *providers.LoadBalancer, net Network, class v1alpha1.AWSOptions,
	members map[string]v1alpha1.MemberClusterSpec, namespace string) ([]MemberAccess, error) {
	ports := memberPorts(s, lb)
	byAccount := map[string]*MemberAccess{}
	// Ports are merged into ranges per account, group and source: two members of one account may
	// share groups.
	type target struct{ group, source string }
	open := map[string]map[target][]memberPort{}
	for _, name := range slices.Sorted(maps.Keys(members)) {
		spec := members[name]
		m := spec.Provider.AWS
		if m == nil || len(m.SecurityGroups) == 0 {
			continue
		}
		account, err := memberAccount(class, spec, namespace)
		if err != nil && len(ports[name]) > 0 {
			return nil, fmt.Errorf("member %s: %w", name, err)
		}
		if err != nil {
			continue // not this gateway's concern: it has no targets there
		}
		key := accountKey(account)
		a := byAccount[key]
		if a == nil {
			a = &MemberAccess{Account: account}
			byAccount[key], open[key] = a, map[target][]memberPort{}
		}
		a.Members = append(a.Members, name)
		notePreservedClientIPs(s, lb, name)
		for _, src := range memberSources(s, net, spec.Provider.VPC) {
			for _, g := range m.SecurityGroups {
				t := target{g, src}
				open[key][t] = append(open[key][t], ports[name]...)
			}
		}
	}
	out := make([]MemberAccess, 0, len(byAccount))
	for _, key := range slices.Sorted(maps.Keys(byAccount)) {
		a := byAccount[key]
		for t, ps := range open[key] {
			for _, proto := range []string{ec2TCP, ec2UDP} {
				for _, r := range portRanges(ps, proto) {
					a.Rules = append(a.Rules, MemberRule{Group: t.group, Protocol: proto, FromPort: r[0], ToPort: r[1], Source: t.source})
				}
			}
		}
		slices.SortFunc(a.Rules, compareMemberRules)
		if err := validateMemberRules(a.Rules, s.Gateway); err != nil {
			return nil, fmt.Errorf("members %s: %w", strings.Join(a.Members, ", "), err)
		}
		out = append(out, *a)
	}
	return out, nil
}

// memberAccount is where a member's security groups are: its credentials and region, else the
// class's; always the class's endpoint.
func memberAccount(class v1alpha1.AWSOptions, spec v1alpha1.MemberClusterSpec, namespace string) (v1alpha1.AWSOptions, error) {
	m := spec.Provider.AWS
	a := v1alpha1.AWSOptions{Region: cmp.Or(m.Region, spec.Region, class.Region), Endpoint: class.Endpoint, Credentials: class.Credentials}
	if m.Credentials != nil {
		a.Credentials = m.Credentials
		if ref := m.Credentials.SecretRef; ref != nil && namespace != "" && ref.Namespace != namespace {
			return v1alpha1.AWSOptions{}, fmt.Errorf("credentials Secret %s/%s: a member's Secret must be in the operator's namespace %s", ref.Namespace, ref.Name, namespace)
		}
	}
	if a.Region == "" {
		return v1alpha1.AWSOptions{}, fmt.Errorf("no region for the security groups: set spec.provider.aws.region or spec.region")
	}
	return a, nil
}

// notePreservedClientIPs tells, on s's Notes, of the target groups with targets in member that
// keep the clients' addresses (NLB: UDP and TCP_UDP target groups of IP targets by default,
// others when the class asks): their traffic comes from the clients, whom the member's rules do
// not admit.
func notePreservedClientIPs(s *Stack, lb *providers.LoadBalancer, member string) {
	clusters := endpointClusters(lb)
	for _, tg := range s.TargetGroups {
		preserved, set := tg.Attributes[attrPreserveClientIP]
		if preserved != "true" && (set || (tg.Protocol != protocolUDP && tg.Protocol != protocolTCPUDP)) {
			continue
		}
		if slices.ContainsFunc(tg.Targets, func(t Target) bool {
			return slices.Contains(clusters[netip.AddrPortFrom(targetAddr(t.IP), uint16(t.Port))], member)
		}) {
			s.Notes = append(s.Notes, fmt.Sprintf("target group %s keeps client IPs: the security groups of member %s admit the load balancer's subnets, not the clients", tg.Name, member))
		}
	}
}

// memberSources are where the load balancer's traffic comes from, as a member in vpc sees it.
func memberSources(s *Stack, net Network, vpc string) []string {
	if s.SecurityGroup != nil && vpc != "" && vpc == net.VPC {
		return []string{sourceLoadBalancer}
	}
	var cidrs []string
	for _, sn := range net.Subnets {
		cidrs = append(cidrs, sn.CIDR)
	}
	slices.Sort(cidrs)
	return slices.Compact(cidrs)
}

// memberPorts are, per member cluster, the protocols and ports the Stack's target groups reach its
// targets on: the traffic protocol (both for TCP_UDP) and the health check, always over TCP, on
// the target's port or the one the health check names.
func memberPorts(s *Stack, lb *providers.LoadBalancer) map[string][]memberPort {
	clusters := endpointClusters(lb)
	out := map[string][]memberPort{}
	for _, tg := range s.TargetGroups {
		var protos []string
		switch tg.Protocol {
		case protocolUDP:
			protos = []string{ec2UDP}
		case protocolTCPUDP:
			protos = []string{ec2TCP, ec2UDP}
		default:
			protos = []string{ec2TCP}
		}
		for _, t := range tg.Targets {
			hc := t.Port
			if p, err := strconv.ParseUint(tg.HealthCheck.Port, 10, 16); err == nil {
				hc = int32(p)
			}
			for _, c := range clusters[netip.AddrPortFrom(targetAddr(t.IP), uint16(t.Port))] {
				for _, proto := range protos {
					out[c] = append(out[c], memberPort{proto, t.Port})
				}
				out[c] = append(out[c], memberPort{ec2TCP, hc})
			}
		}
	}
	return out
}

// endpointClusters maps every endpoint of lb's routing to the clusters it is in (one address may
// be in two clusters whose pod networks overlap).
func endpointClusters(lb *providers.LoadBalancer) map[netip.AddrPort][]string {
	out := map[netip.AddrPort][]string{}
	add := func(backends []ir.Backend) {
		for _, be := range backends {
			for _, e := range be.Endpoints {
				ip, err := netip.ParseAddr(e.Address)
				if err != nil || e.Port > 65535 {
					continue // not a target either
				}
				k := netip.AddrPortFrom(ip.Unmap(), uint16(e.Port))
				if !slices.Contains(out[k], e.Cluster) {
					out[k] = append(out[k], e.Cluster)
				}
			}
		}
	}
	if lb.Routing == nil {
		return out
	}
	for _, l := range lb.Routing.Listeners {
		for _, vh := range l.VirtualHosts {
			for _, r := range vh.Routes {
				add(r.Backends)
			}
		}
		for _, r := range l.SNIRoutes {
			add(r.Backends)
		}
		if l.L4 != nil {
			add(l.L4.Backends)
		}
	}
	return out
}

// targetAddr parses a target's IP, which Build wrote from a parsed address.
func targetAddr(s string) netip.Addr {
	ip, _ := netip.ParseAddr(s)
	return ip
}

// portRanges merges the ports of proto into ranges of consecutive ports.
func portRanges(ports []memberPort, proto string) [][2]int32 {
	var ps []int32
	for _, p := range ports {
		if p.protocol == proto {
			ps = append(ps, p.port)
		}
	}
	slices.Sort(ps)
	ps = slices.Compact(ps)
	var out [][2]int32
	for _, p := range ps {
		if n := len(out); n > 0 && out[n-1][1] == p-1 {
			out[n-1][1] = p
			continue
		}
		out = append(out, [2]int32{p, p})
	}
	return out
}

// memberRuleDescription names the gateway on each rule, for whoever reads the group.
func memberRuleDescription(gateway string) string {
	d := "fleetgate load balancer of gateway " + gateway
	if len(d) > maxRuleDescription {
		d = d[:maxRuleDescription]
	}
	return d
}
