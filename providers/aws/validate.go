package aws

import (
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"strings"
)

// Limits from the ELBv2, EC2 and ACM API references and quotas pages, checked before any call
// because moto, the test server, checks almost none of them. Each check cites its source.
const (
	maxListenersPerLoadBalancer = 50  // ELBv2 quotas: "Listeners per load balancer: 50"
	maxRulesPerLoadBalancer     = 100 // ALB quotas: "Rules per Application Load Balancer (excluding default rules): 100"
	maxCertificatesPerListener  = 25  // ALB/NLB quotas: "Certificates per load balancer (excluding default certificates): 25"
	maxConditionValues          = 5   // ALB quotas: "Condition values per rule: 5"
	maxConditionValuesPerCond   = 3   // Listener rules: "up to three match evaluations per condition"
	maxConditionWildcards       = 5   // ALB quotas: "Condition wildcards per rule: 5"
	maxConditionValueLen        = 128 // CreateRule, RuleCondition: "A condition value can be up to 128 characters"
	maxHeaderNameLen            = 40  // HttpHeaderConditionConfig.HttpHeaderName: "up to 40 characters"
	maxMethodLen                = 40  // HttpRequestMethodConditionConfig: "up to 40 characters"
	maxTagsPerResource          = 50  // AddTags: "Each resource can have a maximum of 50 tags"
	maxTagKeyLen                = 128 // Tag.Key: "Length Constraints: Maximum length of 128"
	maxTagValueLen              = 256 // Tag.Value: "Length Constraints: Maximum length of 256"
	// ownershipTags is how many of a resource's tags fleetgate itself uses (TagManagedBy, TagFleet,
	// TagGateway, TagGatewayKey, TagResource, TagClusters, TagFingerprint).
	ownershipTags          = 7
	maxSecurityGroupRules  = 60      // VPC quotas: "Inbound or outbound rules per security group: 60" (per family)
	maxFixedBodyLen        = 1024    // FixedResponseActionConfig.MessageBody: "Maximum length of 1024"
	maxCertificateLen      = 32768   // ImportCertificate.Certificate: "Maximum length of 32768"
	maxChainLen            = 2097152 // ImportCertificate.CertificateChain: "Maximum length of 2097152"
	maxPrivateKeyLen       = 5124    // ImportCertificate.PrivateKey: "Maximum length of 5124"
	maxHealthCheckPathLen  = 1024    // CreateTargetGroup.HealthCheckPath: "Maximum length of 1024"
	maxSecurityGroupString = 255     // CreateSecurityGroup GroupName, Description: "Up to 255 characters"
)

var (
	// CreateLoadBalancer.Name, CreateTargetGroup.Name: "a maximum of 32 characters, must contain
	// only alphanumeric characters or hyphens, and must not begin or end with a hyphen".
	elbNameRE = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9-]{0,30}[a-zA-Z0-9])?$`)
	// RuleCondition host-header: "A-Z, a-z, 0-9, - ., * (matches 0 or more characters), ? (matches
	// exactly 1 character)".
	hostValueRE = regexp.MustCompile(`^[A-Za-z0-9.*?-]+$`)
	// path-pattern: "A-Z, a-z, 0-9, _ - . $ / ~ " ' @ : +, & (using &amp;), *, ?".
	pathValueRE = regexp.MustCompile(`^[A-Za-z0-9_\-.$/~"'@:+&*?]+$`)
	// http-request-method: "A-Z, hyphen (-), and underscore (_)".
	methodRE = regexp.MustCompile(`^[A-Z_-]+$`)
	// http-header name: a token (RFC 9110), the only names ALB can receive.
	headerNameRE = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
	// Fixed response codes: "Pattern: ^(2|4|5)\d\d$".
	fixedCodeRE = regexp.MustCompile(`^[245]\d\d$`)
	// Tag keys and values: "^([\p{L}\p{Z}\p{N}_.:/=+\-@]*)$".
	tagRE = regexp.MustCompile(`^[\p{L}\p{Z}\p{N}_.:/=+\-@]*$`)
	// Health-check matcher: HTTP codes 200-499 (ALB) / 200-599 (NLB), gRPC codes 0-99, as "200",
	// "200,202" or "200-299".
	matcherRE = regexp.MustCompile(`^\d{1,3}([-,]\d{1,3})*$`)
)

// listenerProtocols are the protocols a listener of each load balancer type takes
// (CreateListener.Protocol: "For Application Load Balancers, the supported protocols are HTTP and
// HTTPS. For Network Load Balancers, the supported protocols are TCP, TLS, UDP, and TCP_UDP.").
func listenerProtocols(lbType string) []string {
	switch lbType {
	case TypeApplication:
		return []string{protocolHTTP, protocolHTTPS}
	case TypeNetwork:
		return []string{protocolTCP, protocolTLS, protocolUDP, protocolTCPUDP}
	}
	return nil
}

// forwardProtocols are the target group protocols a listener protocol can forward to
// (IncompatibleProtocols otherwise).
func forwardProtocols(listener string) []string {
	switch listener {
	case protocolHTTP, protocolHTTPS:
		return []string{protocolHTTP, protocolHTTPS}
	case protocolTCP:
		return []string{protocolTCP, protocolTCPUDP}
	case protocolUDP:
		return []string{protocolUDP, protocolTCPUDP}
	case protocolTLS:
		return []string{protocolTCP, protocolTLS}
	case protocolTCPUDP:
		return []string{protocolTCPUDP}
	}
	return nil
}

// validateStack checks every value of s against the AWS API reference and default quotas, so that
// what AWS would refuse is an error naming the resource before any call. It reports every problem.
func validateStack(s *Stack) error {
	v := &validator{s: s, tgs: map[string]*TargetGroup{}, listeners: map[string]*Listener{}, certs: map[string]bool{}, names: map[string]bool{}, ports: map[int32]bool{}}
	v.tags()
	v.loadBalancer()
	if s.SecurityGroup != nil {
		v.securityGroup(s.SecurityGroup)
	}
	for i := range s.TargetGroups {
		v.targetGroup(&s.TargetGroups[i])
	}
	for i := range s.Certificates {
		v.certificate(&s.Certificates[i])
	}
	for i := range s.Listeners {
		v.listener(&s.Listeners[i])
	}
	v.rules()
	return errors.Join(v.errs...)
}

type validator struct {
	s         *Stack
	tgs       map[string]*TargetGroup
	listeners map[string]*Listener
	certs     map[string]bool
	names     map[string]bool // target group names
	ports     map[int32]bool  // listener ports
	errs      []error
}

func (v *validator) fail(format string, args ...any) {
	v.errs = append(v.errs, fmt.Errorf(format, args...))
}

func (v *validator) tags() {
	if n := len(v.s.Tags) + ownershipTags; n > maxTagsPerResource {
		v.fail("%d user tags: with fleetgate's %d a resource would have %d, AWS allows %d", len(v.s.Tags), ownershipTags, n, maxTagsPerResource)
	}
	for k, val := range v.s.Tags {
		switch {
		case k == "" || len(k) > maxTagKeyLen || !tagRE.MatchString(k):
			v.fail("tag key %q: 1-%d letters, digits, spaces or _.:/=+-@", k, maxTagKeyLen)
		case strings.HasPrefix(strings.ToLower(k), "aws:"):
			v.fail("tag key %q: the aws: prefix is reserved", k)
		case strings.HasPrefix(k, "fleetgate.dev/"):
			v.fail("tag key %q: the fleetgate.dev/ prefix is fleetgate's ownership", k)
		case len(val) > maxTagValueLen || !tagRE.MatchString(val):
			v.fail("tag %s: value %q: up to %d letters, digits, spaces or _.:/=+-@", k, val, maxTagValueLen)
		}
	}
}

func (v *validator) loadBalancer() {
	lb := &v.s.LoadBalancer
	if !elbNameRE.MatchString(lb.Name) || strings.HasPrefix(lb.Name, "internal-") {
		v.fail("load balancer name %q: 1-32 letters, digits or '-', not starting or ending with '-' nor starting with internal-", lb.Name)
	}
	if listenerProtocols(lb.Type) == nil {
		v.fail("load balancer type %q: %s or %s", lb.Type, TypeApplication, TypeNetwork)
	}
	if lb.Scheme != schemeInternetFacing && lb.Scheme != "internal" {
		v.fail("load balancer scheme %q: internet-facing or internal", lb.Scheme)
	}
	if lb.IPAddressType != ipAddressTypeIPv4 && lb.IPAddressType != ipAddressTypeDualstack {
		v.fail("load balancer IP address type %q: ipv4 or dualstack", lb.IPAddressType)
	}
	// CreateLoadBalancer: "You must specify either subnets or subnet mappings"; "[Application Load
	// Balancers] You must specify subnets from at least two Availability Zones"; "[Network Load
	// Balancers] You can specify one Elastic IP address per subnet".
	n := len(lb.Subnets) + len(lb.SubnetMappings)
	switch {
	case len(lb.Subnets) > 0 && len(lb.SubnetMappings) > 0:
		v.fail("load balancer: subnets and subnet mappings are exclusive")
	case lb.Type == TypeApplication && n < 2:
		v.fail("application load balancer: %d subnets, at least 2 (in distinct zones) needed", n)
	case n == 0:
		v.fail("load balancer: no subnets")
	case len(lb.SubnetMappings) > 0 && lb.Type != TypeNetwork:
		v.fail("load balancer: Elastic IP subnet mappings need a network load balancer")
	}
	for _, m := range lb.SubnetMappings {
		if m.SubnetID == "" || !strings.HasPrefix(m.AllocationID, eipAllocationPrefix) {
			v.fail("subnet mapping %s → %q: a subnet and an Elastic IP allocation ID (eipalloc-…)", m.SubnetID, m.AllocationID)
		}
	}
}

func (v *validator) securityGroup(sg *SecurityGroup) {
	// CreateSecurityGroup.GroupName: "Constraints: Up to 255 characters in length. Cannot start with
	// sg-."
	if sg.Name == "" || len(sg.Name) > maxSecurityGroupString || strings.HasPrefix(sg.Name, "sg-") {
		v.fail("security group name %q: 1-255 characters, not starting with sg-", sg.Name)
	}
	if len(sg.Description) > maxSecurityGroupString {
		v.fail("security group description: %d characters, at most %d", len(sg.Description), maxSecurityGroupString)
	}
	perFamily := map[bool]int{}
	for _, r := range sg.Ingress {
		p, err := netip.ParsePrefix(r.CIDR)
		if err != nil {
			v.fail("security group rule: CIDR %q: %w", r.CIDR, err)
			continue
		}
		perFamily[p.Addr().Is4()]++
		if r.Port < 1 || r.Port > 65535 {
			v.fail("security group rule: port %d out of 1-65535", r.Port)
		}
	}
	for v4, n := range perFamily {
		if n > maxSecurityGroupRules {
			v.fail("security group: %d inbound rules for IPv4=%t, AWS allows %d", n, v4, maxSecurityGroupRules)
		}
	}
}

func (v *validator) certificate(c *Certificate) {
	v.certs[c.ID] = true
	switch {
	case len(c.CertPEM) == 0 || len(c.CertPEM) > maxCertificateLen:
		v.fail("certificate %s: %d bytes, 1-%d", c.ID, len(c.CertPEM), maxCertificateLen)
	case len(c.ChainPEM) > maxChainLen:
		v.fail("certificate %s: chain of %d bytes, at most %d", c.ID, len(c.ChainPEM), maxChainLen)
	case len(c.KeyPEM) == 0 || len(c.KeyPEM) > maxPrivateKeyLen:
		v.fail("certificate %s: private key of %d bytes, 1-%d", c.ID, len(c.KeyPEM), maxPrivateKeyLen)
	}
}

func in(s string, set ...string) bool {
	for _, x := range set {
		if s == x {
			return true
		}
	}
	return false
}
