package aws

import (
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"strconv"
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

// Protocols a listener of each load balancer type takes (CreateListener.Protocol: "For
// Application Load Balancers, the supported protocols are HTTP and HTTPS. For Network Load
// Balancers, the supported protocols are TCP, TLS, UDP, and TCP_UDP.") and the target group
// protocols each listener protocol can forward to (IncompatibleProtocols otherwise).
var (
	listenerProtocols = map[string][]string{
		TypeApplication: {protocolHTTP, protocolHTTPS},
		TypeNetwork:     {protocolTCP, protocolTLS, protocolUDP, protocolTCPUDP},
	}
	forwardProtocols = map[string][]string{
		protocolHTTP:   {protocolHTTP, protocolHTTPS},
		protocolHTTPS:  {protocolHTTP, protocolHTTPS},
		protocolTCP:    {protocolTCP, protocolTCPUDP},
		protocolUDP:    {protocolUDP, protocolTCPUDP},
		protocolTCPUDP: {protocolTCPUDP},
		protocolTLS:    {protocolTCP, protocolTLS},
	}
)

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
	if _, ok := listenerProtocols[lb.Type]; !ok {
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

func (v *validator) targetGroup(tg *TargetGroup) {
	// CreateTargetGroup: DuplicateTargetGroupName; IDs are the deployer's key.
	if v.tgs[tg.ID] != nil || v.names[tg.Name] {
		v.fail("target group %s (%s): duplicate ID or name", tg.ID, tg.Name)
	}
	v.tgs[tg.ID], v.names[tg.Name] = tg, true
	if !elbNameRE.MatchString(tg.Name) {
		v.fail("target group %s: name %q: 1-32 letters, digits or '-', not starting or ending with '-'", tg.ID, tg.Name)
	}
	lbType := v.s.LoadBalancer.Type
	albTG := tg.Protocol == protocolHTTP || tg.Protocol == protocolHTTPS
	switch {
	case lbType == TypeApplication && !albTG:
		v.fail("target group %s: protocol %s behind an application load balancer: HTTP or HTTPS", tg.ID, tg.Protocol)
	case lbType == TypeNetwork && !in(tg.Protocol, protocolTCP, protocolUDP, protocolTLS, protocolTCPUDP):
		v.fail("target group %s: protocol %s behind a network load balancer: TCP, UDP, TLS or TCP_UDP", tg.ID, tg.Protocol)
	}
	// CreateTargetGroup.ProtocolVersion: "[HTTP/HTTPS protocol] The protocol version. Specify
	// GRPC ... HTTP2 ... The default is HTTP1".
	if albTG && !in(tg.ProtocolVersion, versionHTTP1, versionHTTP2, versionGRPC) || !albTG && tg.ProtocolVersion != "" {
		v.fail("target group %s: protocol version %q with protocol %s", tg.ID, tg.ProtocolVersion, tg.Protocol)
	}
	if tg.Port < 1 || tg.Port > 65535 {
		v.fail("target group %s: port %d out of 1-65535", tg.ID, tg.Port)
	}
	if !strings.HasPrefix(tg.VPC, "vpc-") {
		v.fail("target group %s: VPC %q", tg.ID, tg.VPC)
	}
	v.healthCheck(tg)
	for _, t := range tg.Targets {
		if _, err := netip.ParseAddr(t.IP); err != nil {
			v.fail("target group %s: target %q: %w", tg.ID, t.IP, err)
		}
		if t.Port < 1 || t.Port > 65535 {
			v.fail("target group %s: target %s port %d out of 1-65535", tg.ID, t.IP, t.Port)
		}
	}
}

// healthCheck checks CreateTargetGroup's health-check parameters: HealthCheckProtocol "HTTP,
// HTTPS and TCP ... The TLS, UDP, and TCP_UDP protocols are not supported for health checks"
// (and TCP not for ALB target groups); HealthCheckIntervalSeconds "5-300"; HealthCheckTimeoutSeconds
// "2-120", less than the interval; Healthy/UnhealthyThresholdCount "2-10"; HealthCheckPath only
// for HTTP(S) checks, starting with '/'; Matcher HTTP codes "200 to 499" (ALB), "200 to 599"
// (NLB), gRPC "0 to 99".
func (v *validator) healthCheck(tg *TargetGroup) {
	hc := tg.HealthCheck
	albTG := tg.Protocol == protocolHTTP || tg.Protocol == protocolHTTPS
	switch {
	case !in(hc.Protocol, protocolHTTP, protocolHTTPS, protocolTCP):
		v.fail("target group %s: health check protocol %q: HTTP, HTTPS or TCP (a %s target group cannot be checked over %s)", tg.ID, hc.Protocol, tg.Protocol, hc.Protocol)
	case albTG && hc.Protocol == protocolTCP:
		v.fail("target group %s: an application load balancer checks health over HTTP or HTTPS, not TCP", tg.ID)
	}
	if hc.Port != trafficPort {
		if p, err := strconv.Atoi(hc.Port); err != nil || p < 1 || p > 65535 {
			v.fail("target group %s: health check port %q: traffic-port or 1-65535", tg.ID, hc.Port)
		}
	}
	if hc.IntervalSeconds < 5 || hc.IntervalSeconds > 300 {
		v.fail("target group %s: health check interval %ds out of 5-300", tg.ID, hc.IntervalSeconds)
	}
	if hc.TimeoutSeconds < 2 || hc.TimeoutSeconds > 120 || hc.TimeoutSeconds >= hc.IntervalSeconds {
		v.fail("target group %s: health check timeout %ds: 2-120 and less than the interval (%ds)", tg.ID, hc.TimeoutSeconds, hc.IntervalSeconds)
	}
	for _, n := range []int32{hc.HealthyThreshold, hc.UnhealthyThreshold} {
		if n < 2 || n > 10 {
			v.fail("target group %s: health check threshold %d out of 2-10", tg.ID, n)
		}
	}
	if hc.Protocol == protocolTCP {
		if hc.Path != "" || hc.Matcher != "" {
			v.fail("target group %s: a TCP health check takes no path or matcher", tg.ID)
		}
		return
	}
	if !strings.HasPrefix(hc.Path, "/") || len(hc.Path) > maxHealthCheckPathLen {
		v.fail("target group %s: health check path %q: starting with '/', at most %d characters", tg.ID, hc.Path, maxHealthCheckPathLen)
	}
	lo, hi := 200, 499
	switch {
	case tg.ProtocolVersion == versionGRPC:
		lo, hi = 0, 99
	case !albTG:
		hi = 599
	}
	if !matcherIn(hc.Matcher, lo, hi) {
		v.fail("target group %s: health check matcher %q: codes %d-%d as \"200\", \"200,202\" or \"200-299\"", tg.ID, hc.Matcher, lo, hi)
	}
}

func matcherIn(m string, lo, hi int) bool {
	if !matcherRE.MatchString(m) {
		return false
	}
	for _, part := range strings.FieldsFunc(m, func(r rune) bool { return r == ',' || r == '-' }) {
		if n, _ := strconv.Atoi(part); n < lo || n > hi {
			return false
		}
	}
	return true
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

func (v *validator) listener(l *Listener) {
	// CreateListener: DuplicateListener, one listener per port.
	if v.listeners[l.ID] != nil || v.ports[l.Port] {
		v.fail("listener %s: duplicate ID or port %d", l.ID, l.Port)
	}
	v.listeners[l.ID], v.ports[l.Port] = l, true
	lbType := v.s.LoadBalancer.Type
	if len(v.listeners) == maxListenersPerLoadBalancer+1 {
		v.fail("more than %d listeners", maxListenersPerLoadBalancer)
	}
	if l.Port < 1 || l.Port > 65535 {
		v.fail("listener %s: port %d out of 1-65535", l.ID, l.Port)
	}
	if !in(l.Protocol, listenerProtocols[lbType]...) {
		v.fail("listener %s: protocol %s on a %s load balancer: %s", l.ID, l.Protocol, lbType, strings.Join(listenerProtocols[lbType], ", "))
	}
	// CreateListener.Certificates: "[HTTPS and TLS listeners] The default certificate for the
	// listener. You must provide exactly one certificate" — and none for other protocols.
	secure := l.Protocol == protocolHTTPS || l.Protocol == protocolTLS
	switch {
	case secure && len(l.Certificates) == 0:
		v.fail("listener %s: %s needs a certificate", l.ID, l.Protocol)
	case secure && len(l.Certificates) > maxCertificatesPerListener+1:
		v.fail("listener %s: %d certificates, at most %d besides the default", l.ID, len(l.Certificates), maxCertificatesPerListener)
	case !secure && (len(l.Certificates) > 0 || l.SSLPolicy != ""):
		v.fail("listener %s: %s takes no certificate or SSL policy", l.ID, l.Protocol)
	}
	for _, c := range l.Certificates {
		if !strings.HasPrefix(c, "arn:") && !v.certs[c] {
			v.fail("listener %s: certificate %q is neither an ARN nor a certificate of the stack", l.ID, c)
		}
	}
	// A network load balancer's listener can only forward.
	if lbType == TypeNetwork && l.DefaultAction.Forward == nil {
		v.fail("listener %s: a network load balancer listener must forward", l.ID)
	}
	v.action("listener "+l.ID, l, l.DefaultAction)
}

// action checks an action: exactly one kind; forward to 1-5 target groups of the stack with
// weights 0-999 and a protocol the listener can forward to (ForwardActionConfig: "up to 5 target
// groups", TargetGroupTuple.Weight "0-999"); fixed-response codes 2XX/4XX/5XX; redirect codes
// HTTP_301/HTTP_302 (RedirectActionConfig.StatusCode).
func (v *validator) action(where string, l *Listener, a Action) {
	kinds := 0
	for _, set := range []bool{a.Forward != nil, a.Redirect != nil, a.Fixed != nil} {
		if set {
			kinds++
		}
	}
	if kinds != 1 {
		v.fail("%s: an action is exactly one of forward, redirect or fixed-response", where)
		return
	}
	switch {
	case a.Forward != nil:
		v.forward(where, l, a.Forward)
	case a.Fixed != nil:
		if !fixedCodeRE.MatchString(a.Fixed.StatusCode) {
			v.fail("%s: fixed-response code %q: 2XX, 4XX or 5XX", where, a.Fixed.StatusCode)
		}
		if len(a.Fixed.Body) > maxFixedBodyLen {
			v.fail("%s: fixed-response body of %d bytes, at most %d", where, len(a.Fixed.Body), maxFixedBodyLen)
		}
	default:
		v.redirect(where, a.Redirect)
	}
}

func (v *validator) forward(where string, l *Listener, fwd []WeightedTargetGroup) {
	if len(fwd) == 0 || len(fwd) > maxTargetGroupsPerForward {
		v.fail("%s: forward to %d target groups: 1-%d", where, len(fwd), maxTargetGroupsPerForward)
	}
	seen := map[string]bool{}
	for _, w := range fwd {
		if w.Weight < 0 || w.Weight > maxWeight {
			v.fail("%s: weight %d of %s out of 0-%d", where, w.Weight, w.TargetGroup, maxWeight)
		}
		if seen[w.TargetGroup] {
			v.fail("%s: target group %s twice in one forward", where, w.TargetGroup)
		}
		seen[w.TargetGroup] = true
		tg, ok := v.tgs[w.TargetGroup]
		if !ok {
			v.fail("%s: target group %s is not in the stack", where, w.TargetGroup)
			continue
		}
		if !in(tg.Protocol, forwardProtocols[l.Protocol]...) {
			v.fail("%s: a %s listener cannot forward to %s target group %s (IncompatibleProtocols)", where, l.Protocol, tg.Protocol, tg.ID)
		}
		// Target groups: "HTTP2 and gRPC ... supported only with HTTPS listeners".
		if tg.ProtocolVersion == versionGRPC || tg.ProtocolVersion == versionHTTP2 {
			if l.Protocol != protocolHTTPS {
				v.fail("%s: %s target group %s needs an HTTPS listener", where, tg.ProtocolVersion, tg.ID)
			}
		}
	}
}

// redirect checks RedirectActionConfig: Protocol "HTTP, HTTPS, or #{protocol}", Port "1 to 65535
// or #{port}", Path starting with '/' (up to 128 characters), Query not starting with '?'.
func (v *validator) redirect(where string, r *Redirect) {
	if r.StatusCode != "HTTP_301" && r.StatusCode != "HTTP_302" {
		v.fail("%s: redirect code %q: HTTP_301 or HTTP_302", where, r.StatusCode)
	}
	if !in(r.Protocol, protocolHTTP, protocolHTTPS, "#{protocol}") {
		v.fail("%s: redirect protocol %q: HTTP, HTTPS or #{protocol}", where, r.Protocol)
	}
	if r.Port != "#{port}" {
		if p, err := strconv.Atoi(r.Port); err != nil || p < 1 || p > 65535 {
			v.fail("%s: redirect port %q: 1-65535 or #{port}", where, r.Port)
		}
	}
	if !strings.HasPrefix(r.Path, "/") || len(r.Path) > maxConditionValueLen {
		v.fail("%s: redirect path %q: starting with '/', at most %d characters", where, r.Path, maxConditionValueLen)
	}
	if r.Host == "" || len(r.Host) > maxConditionValueLen {
		v.fail("%s: redirect host %q: 1-%d characters", where, r.Host, maxConditionValueLen)
	}
	if strings.HasPrefix(r.Query, "?") || len(r.Query) > maxConditionValueLen {
		v.fail("%s: redirect query %q: no leading '?', at most %d characters", where, r.Query, maxConditionValueLen)
	}
}

func (v *validator) rules() {
	if len(v.s.Rules) > maxRulesPerLoadBalancer {
		v.fail("%d rules, an application load balancer takes %d", len(v.s.Rules), maxRulesPerLoadBalancer)
	}
	seen := map[string]bool{}
	for i := range v.s.Rules {
		r := &v.s.Rules[i]
		where := "rule " + r.ID + " (" + r.Origin + ")"
		if seen[r.ID] {
			v.fail("%s: duplicate rule ID", where)
		}
		seen[r.ID] = true
		l, ok := v.listeners[r.Listener]
		switch {
		case !ok:
			v.fail("%s: listener %s is not in the stack", where, r.Listener)
			continue
		case v.s.LoadBalancer.Type != TypeApplication:
			v.fail("%s: only application load balancers have listener rules", where)
		}
		v.conditions(where, r.Conditions)
		v.action(where, l, r.Action)
	}
}

// conditions checks CreateRule.Conditions: at least one; "zero or one of each of: host-header,
// http-request-method, path-pattern"; at most 3 values per condition, 5 per rule and 5 wildcards
// per rule (a query-string pair counts as one value); each value at most 128 characters of the
// field's alphabet.
func (v *validator) conditions(where string, cs []Condition) {
	if len(cs) == 0 {
		v.fail("%s: a rule needs a condition", where)
	}
	once := map[string]bool{}
	values, wildcards := 0, 0
	for _, c := range cs {
		switch c.Field {
		case fieldHostHeader, fieldPathPattern, fieldMethod:
			if once[c.Field] {
				v.fail("%s: %s twice", where, c.Field)
			}
			once[c.Field] = true
		case fieldHeader:
			if len(c.HeaderName) > maxHeaderNameLen || !headerNameRE.MatchString(c.HeaderName) {
				v.fail("%s: header name %q: a token of at most %d characters", where, c.HeaderName, maxHeaderNameLen)
			}
		case fieldQuery:
		default:
			v.fail("%s: condition field %q", where, c.Field)
		}
		if n := len(c.Values) + len(c.Query); n > maxConditionValuesPerCond {
			v.fail("%s: %s condition with %d values, ALB allows %d per condition", where, c.Field, n, maxConditionValuesPerCond)
		}
		if c.Field == fieldQuery {
			values += len(c.Query)
			if len(c.Query) == 0 {
				v.fail("%s: query-string condition without pairs", where)
			}
			for _, q := range c.Query {
				wildcards += strings.Count(q.Key+q.Value, "*") + strings.Count(q.Key+q.Value, "?")
				if len(q.Key) > maxConditionValueLen || q.Value == "" || len(q.Value) > maxConditionValueLen {
					v.fail("%s: query-string %q=%q: key up to %d characters, value 1-%d", where, q.Key, q.Value, maxConditionValueLen, maxConditionValueLen)
				}
			}
			continue
		}
		values += len(c.Values)
		if len(c.Values) == 0 {
			v.fail("%s: %s condition without values", where, c.Field)
		}
		for _, val := range c.Values {
			wildcards += strings.Count(val, "*") + strings.Count(val, "?")
			v.conditionValue(where, c.Field, val)
		}
	}
	if values > maxConditionValues {
		v.fail("%s: %d condition values, ALB allows %d per rule", where, values, maxConditionValues)
	}
	if wildcards > maxConditionWildcards {
		v.fail("%s: %d condition wildcards, ALB allows %d per rule", where, wildcards, maxConditionWildcards)
	}
}

func (v *validator) conditionValue(where, field, val string) {
	if val == "" || len(val) > maxConditionValueLen {
		v.fail("%s: %s value %q: 1-%d characters", where, field, val, maxConditionValueLen)
		return
	}
	var re *regexp.Regexp
	switch field {
	case fieldHostHeader:
		re = hostValueRE
	case fieldPathPattern:
		re = pathValueRE
	case fieldMethod:
		if len(val) > maxMethodLen {
			v.fail("%s: method %q: at most %d characters", where, val, maxMethodLen)
		}
		re = methodRE
	default:
		return
	}
	if !re.MatchString(val) {
		v.fail("%s: %s value %q has characters ALB does not accept", where, field, val)
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
