package aws

import (
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"strings"
)

// maxRuleDescription: IpRange, Ipv6Range and UserIdGroupPair Description: "Constraints: Up to 255
// characters in length".
const maxRuleDescription = 255

var (
	// The same Descriptions: "Allowed characters are a-z, A-Z, 0-9, spaces, and
	// ._-:/()#,@[]+=&;{}!$*".
	ruleDescriptionRE = regexp.MustCompile(`^[a-zA-Z0-9 ._\-:/()#,@\[\]+=&;{}!$*]*$`)
	// AuthorizeSecurityGroupIngress GroupId: a security group ID.
	securityGroupIDRE = regexp.MustCompile(`^sg-[0-9a-f]+$`)
)

// validateMemberRules checks the rules of one account against the EC2 API reference, which moto
// does not enforce: IpPermission IpProtocol "tcp, udp, icmp, or icmpv6 … or -1" (fleetgate uses
// tcp and udp), FromPort/ToPort a port range 0-65535 with From ≤ To, sources that are CIDRs in
// canonical form (EC2 refuses host bits: InvalidParameterValue) or the load balancer's group, the
// rule description, and the inbound-rule quota per group and address family.
func validateMemberRules(rules []MemberRule, gateway string) error {
	var errs []error
	if d := memberRuleDescription(gateway); !ruleDescriptionRE.MatchString(d) {
		errs = append(errs, fmt.Errorf("rule description %q has characters EC2 refuses", d))
	}
	perFamily := map[string]int{}
	for _, r := range rules {
		if !securityGroupIDRE.MatchString(r.Group) {
			errs = append(errs, fmt.Errorf("rule %s: %q is not a security group ID", r, r.Group))
		}
		if r.Protocol != ec2TCP && r.Protocol != ec2UDP {
			errs = append(errs, fmt.Errorf("rule %s: protocol %q is neither %s nor %s", r, r.Protocol, ec2TCP, ec2UDP))
		}
		if r.FromPort < 1 || r.ToPort > 65535 || r.FromPort > r.ToPort {
			errs = append(errs, fmt.Errorf("rule %s: port range %d-%d is not within 1-65535", r, r.FromPort, r.ToPort))
		}
		family := "group"
		if r.Source != sourceLoadBalancer {
			p, err := netip.ParsePrefix(r.Source)
			switch {
			case err != nil:
				errs = append(errs, fmt.Errorf("rule %s: source %q is not a CIDR", r, r.Source))
			case p.Masked() != p:
				errs = append(errs, fmt.Errorf("rule %s: source %q has host bits set (EC2 wants %s)", r, r.Source, p.Masked()))
			case p.Addr().Is4():
				family = "IPv4"
			default:
				family = "IPv6"
			}
		}
		key := r.Group + " " + family
		if perFamily[key]++; perFamily[key] == maxSecurityGroupRules+1 {
			errs = append(errs, fmt.Errorf("security group %s: more than %d inbound rules (%s) for this gateway, the EC2 quota per group", r.Group, maxSecurityGroupRules, family))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("member security group rules: %w", errors.Join(errs...))
	}
	return nil
}

// memberRulesDetail lists rules for a Call.
func memberRulesDetail(rules []MemberRule) string {
	parts := make([]string, len(rules))
	for i, r := range rules {
		parts[i] = r.String()
	}
	return strings.Join(parts, ", ")
}
