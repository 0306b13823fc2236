package aws

import (
	"fmt"
	"maps"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
)

// Formats from the AWS API and IAM references.
var (
	regionPattern      = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]+$`)
	vpcPattern         = regexp.MustCompile(`^vpc-[0-9a-f]+$`)
	subnetPattern      = regexp.MustCompile(`^subnet-[0-9a-f]+$`)
	roleARNPattern     = regexp.MustCompile(`^arn:aws[a-z-]*:iam::[0-9]{12}:role/[\w+=,.@/-]+$`)
	acmARNPattern      = regexp.MustCompile(`^arn:aws[a-z-]*:acm:([a-z0-9-]+):[0-9]{12}:certificate/[0-9a-f-]+$`)
	iamCertARNPattern  = regexp.MustCompile(`^arn:aws[a-z-]*:iam::[0-9]{12}:server-certificate/[\w+=,.@/-]+$`)
	externalIDPattern  = regexp.MustCompile(`^[\w+=,.@:/-]+$`)
	sessionNamePattern = regexp.MustCompile(`^[\w+=,.@-]{2,64}$`)
	sslPolicyPattern   = regexp.MustCompile(`^ELBSecurityPolicy-[A-Za-z0-9-]+$`)
	bucketPattern      = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)
	tagCharsPattern    = regexp.MustCompile(`^[\p{L}\p{Z}\p{N}_.:/=+\-@]*$`)
	matcherPattern     = regexp.MustCompile(`^[0-9]{3}(-[0-9]{3})?(,[0-9]{3}(-[0-9]{3})?)*$`)
)

// AWS limits the options are checked against.
const (
	// maxUserTags leaves room under AWS's 50 tags per resource for our ownership tags (7).
	maxUserTags       = 40
	maxTagKeyLength   = 128
	maxTagValueLength = 256
	maxCertificates   = 25
	ownTagPrefix      = "fleetgate.dev/"
)

// validateOptions lists what is wrong with o (defaults filled in), each entry led by its field.
func validateOptions(o *v1alpha1.AWSOptions) []string {
	var p problems
	alb := o.LoadBalancerType == v1alpha1.AWSApplication
	switch o.LoadBalancerType {
	case v1alpha1.AWSApplication, v1alpha1.AWSNetwork:
	default:
		p.add("loadBalancerType", "%q is neither application nor network", o.LoadBalancerType)
	}
	p.oneOf("scheme", o.Scheme, schemeInternetFacing, schemeInternal)
	p.oneOf("ipAddressType", o.IPAddressType, ipAddressTypeIPv4, ipAddressTypeDualstack)
	switch {
	case o.Region == "":
		p.add("region", "required: set it here or give the operator a default region")
	case !regionPattern.MatchString(o.Region):
		p.add("region", "%q is not a region name such as us-east-1", o.Region)
	}
	if o.Endpoint != "" {
		if u, err := url.Parse(o.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			p.add("endpoint", "%q is not an http(s) URL with a host", o.Endpoint)
		}
	}
	p.network(o)
	p.credentials(o.Credentials)
	p.tags(o.Tags)
	if alb {
		p.onlyFor(v1alpha1.AWSNetwork, []typeOnly{
			{"crossZone", o.CrossZone, "an ALB always balances across zones"},
			{"preserveClientIP", o.PreserveClientIP != nil, "an ALB always proxies"},
			{"proxyProtocolV2", o.ProxyProtocolV2, "an ALB sends X-Forwarded-For instead"},
		})
	} else {
		p.onlyFor(v1alpha1.AWSApplication, []typeOnly{
			{"idleTimeoutSeconds", o.IdleTimeoutSeconds != nil, "an NLB's TCP idle timeout is fixed"},
			{"certificateARNs", len(o.CertificateARNs) > 0, "an NLB's TLS listeners serve their Secrets"},
		})
	}
	if v := o.IdleTimeoutSeconds; v != nil && (*v < 1 || *v > 4000) {
		p.add("idleTimeoutSeconds", "%d is outside 1-4000", *v)
	}
	if v := o.DeregistrationDelaySeconds; v != nil && (*v < 0 || *v > 3600) {
		p.add("deregistrationDelaySeconds", "%d is outside 0-3600", *v)
	}
	p.certificates(o.CertificateARNs, o.Region)
	if len(o.SSLPolicy) > 64 || !sslPolicyPattern.MatchString(o.SSLPolicy) {
		p.add("sslPolicy", "%q is not a predefined ELBSecurityPolicy-… name", o.SSLPolicy)
	}
	p.accessLogs(o.AccessLogs)
	p.healthCheck(o.HealthCheck, alb)
	return p
}

// problems collects "spec.aws.<field>: <message>" entries.
type problems []string

func (p *problems) add(field, format string, args ...any) {
	*p = append(*p, "spec.aws."+field+": "+fmt.Sprintf(format, args...))
}

func (p *problems) oneOf(field, v string, allowed ...string) {
	if !slices.Contains(allowed, v) {
		p.add(field, "%q is not one of %s", v, strings.Join(allowed, ", "))
	}
}

// typeOnly is an option that only one load balancer type has, and whether it is set.
type typeOnly struct {
	field string
	set   bool
	why   string
}

func (p *problems) onlyFor(t v1alpha1.AWSLoadBalancerType, options []typeOnly) {
	for _, o := range options {
		if o.set {
			p.add(o.field, "only for loadBalancerType %s (%s)", t, o.why)
		}
	}
}

func (p *problems) network(o *v1alpha1.AWSOptions) {
	if o.VPC != "" && !vpcPattern.MatchString(o.VPC) {
		p.add("vpc", "%q is not a VPC ID (vpc-…)", o.VPC)
	}
	if len(o.Subnets) > 16 {
		p.add("subnets", "%d subnets, at most 16", len(o.Subnets))
	}
	seen := map[string]bool{}
	for i, s := range o.Subnets {
		switch {
		case !subnetPattern.MatchString(s):
			p.add(fmt.Sprintf("subnets[%d]", i), "%q is not a subnet ID (subnet-…)", s)
		case seen[s]:
			p.add(fmt.Sprintf("subnets[%d]", i), "%s is listed twice", s)
		}
		seen[s] = true
	}
}

func (p *problems) credentials(c *v1alpha1.AWSCredentials) {
	if c == nil {
		return
	}
	if c.SecretRef != nil && c.WebIdentity != nil {
		p.add("credentials", "secretRef and webIdentity are exclusive: keep one")
	}
	if r := c.SecretRef; r != nil && (r.Namespace == "" || r.Name == "") {
		p.add("credentials.secretRef", "needs both namespace and name")
	}
	if w := c.WebIdentity; w != nil {
		if !roleARNPattern.MatchString(w.RoleARN) {
			p.add("credentials.webIdentity.roleARN", "%q is not an IAM role ARN (arn:aws:iam::<account>:role/<name>)", w.RoleARN)
		}
		if !path.IsAbs(w.TokenFile) {
			p.add("credentials.webIdentity.tokenFile", "%q is not an absolute path in the operator's pod", w.TokenFile)
		}
	}
	if a := c.AssumeRole; a != nil {
		if !roleARNPattern.MatchString(a.RoleARN) {
			p.add("credentials.assumeRole.roleARN", "%q is not an IAM role ARN (arn:aws:iam::<account>:role/<name>)", a.RoleARN)
		}
		if n := len(a.ExternalID); n > 0 && (n < 2 || n > 1224 || !externalIDPattern.MatchString(a.ExternalID)) {
			p.add("credentials.assumeRole.externalID", "needs 2-1224 characters of letters, digits and +=,.@:/-_")
		}
		if !sessionNamePattern.MatchString(a.SessionName) {
			p.add("credentials.assumeRole.sessionName", "%q needs 2-64 characters of letters, digits and +=,.@-_", a.SessionName)
		}
	}
}

// tags checks the class's user tags (tagProblems).
func (p *problems) tags(tags map[string]string) {
	*p = append(*p, tagProblems(tags, "spec.aws.tags")...)
}

// tagProblems checks user tags against AWS's tag rules, and keeps them off the keys of AWS and of
// fleetgate's ownership tags, which decide what fleetgate may delete. Each entry is led by field,
// followed by the key.
func tagProblems(tags map[string]string, field string) []string {
	var out []string
	add := func(key, format string, args ...any) {
		f := field
		if key != "" {
			f += fmt.Sprintf("[%q]", key)
		}
		out = append(out, f+": "+fmt.Sprintf(format, args...))
	}
	if len(tags) > maxUserTags {
		add("", "%d tags, at most %d (AWS allows 50 per resource and fleetgate uses the rest)", len(tags), maxUserTags)
	}
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		v := tags[k]
		switch n := utf8.RuneCountInString(k); {
		case n == 0 || n > maxTagKeyLength:
			add(k, "key has %d characters, needs 1-%d", n, maxTagKeyLength)
		case strings.HasPrefix(strings.ToLower(k), "aws:"):
			add(k, "the aws: prefix is reserved for AWS")
		case strings.HasPrefix(k, ownTagPrefix):
			add(k, "the %s prefix is reserved for fleetgate's ownership tags", ownTagPrefix)
		case !tagCharsPattern.MatchString(k):
			add(k, "key may hold letters, digits, spaces and _.:/=+-@ only")
		}
		switch n := utf8.RuneCountInString(v); {
		case n > maxTagValueLength:
			add(k, "value has %d characters, at most %d", n, maxTagValueLength)
		case !tagCharsPattern.MatchString(v):
			add(k, "value may hold letters, digits, spaces and _.:/=+-@ only")
		}
	}
	return out
}

func (p *problems) certificates(arns []string, region string) {
	if len(arns) > maxCertificates {
		p.add("certificateARNs", "%d certificates, an ALB listener takes at most %d", len(arns), maxCertificates)
	}
	seen := map[string]bool{}
	for i, arn := range arns {
		field := fmt.Sprintf("certificateARNs[%d]", i)
		m := acmARNPattern.FindStringSubmatch(arn)
		switch {
		case seen[arn]:
			p.add(field, "listed twice")
		case m == nil && !iamCertARNPattern.MatchString(arn):
			p.add(field, "%q is not an ACM certificate ARN (arn:aws:acm:<region>:<account>:certificate/<id>)", arn)
		case m != nil && region != "" && m[1] != region:
			p.add(field, "certificate is in %s, the load balancers in %s: ELB serves certificates of its own region only", m[1], region)
		}
		seen[arn] = true
	}
}

func (p *problems) accessLogs(l *v1alpha1.AWSAccessLogs) {
	if l == nil {
		return
	}
	if !bucketPattern.MatchString(l.Bucket) || strings.Contains(l.Bucket, "..") {
		p.add("accessLogs.bucket", "%q is not an S3 bucket name (3-63 lowercase letters, digits, dots, hyphens)", l.Bucket)
	}
	switch {
	case len(l.Prefix) > 200:
		p.add("accessLogs.prefix", "%d characters, at most 200", len(l.Prefix))
	case strings.Contains(l.Prefix, "AWSLogs"):
		p.add("accessLogs.prefix", "may not contain AWSLogs, which ELB adds itself")
	case strings.HasPrefix(l.Prefix, "/"):
		p.add("accessLogs.prefix", "may not start with /")
	}
}

// healthCheck checks the class's health check against the target groups it will be applied to;
// unset values are AWS's defaults, which also take part in the timeout < interval rule.
func (p *problems) healthCheck(h *v1alpha1.AWSHealthCheck, alb bool) {
	if h == nil {
		return
	}
	if h.Protocol != "" {
		p.oneOf("healthCheck.protocol", h.Protocol, "HTTP", "HTTPS", "TCP")
	}
	if alb && h.Protocol == "TCP" {
		p.add("healthCheck.protocol", "TCP checks are for network load balancers; an ALB checks over HTTP or HTTPS")
	}
	if h.Protocol == "TCP" && h.Path != "" {
		p.add("healthCheck.path", "set with protocol TCP, which has no path: use HTTP or HTTPS")
	}
	if h.Protocol == "TCP" && h.Matcher != "" {
		p.add("healthCheck.matcher", "set with protocol TCP, which has no status code: use HTTP or HTTPS")
	}
	if h.Port != "" && h.Port != "traffic-port" {
		if n, err := strconv.Atoi(h.Port); err != nil || n < 1 || n > 65535 {
			p.add("healthCheck.port", "%q is neither traffic-port nor a port 1-65535", h.Port)
		}
	}
	if h.Path != "" && (!strings.HasPrefix(h.Path, "/") || len(h.Path) > 1024) {
		p.add("healthCheck.path", "%q needs to start with / and have at most 1024 characters", h.Path)
	}
	p.healthCheckTiming(h, alb)
	if h.Matcher != "" {
		p.matcher(h.Matcher, alb)
	}
}

func (p *problems) healthCheckTiming(h *v1alpha1.AWSHealthCheck, alb bool) {
	within := func(field string, v *int32, lo, hi int32) {
		if v != nil && (*v < lo || *v > hi) {
			p.add("healthCheck."+field, "%d is outside %d-%d", *v, lo, hi)
		}
	}
	within("intervalSeconds", h.IntervalSeconds, 5, 300)
	within("timeoutSeconds", h.TimeoutSeconds, 2, 120)
	within("healthyThreshold", h.HealthyThreshold, 2, 10)
	within("unhealthyThreshold", h.UnhealthyThreshold, 2, 10)
	interval, intervalNote := int32(30), " (AWS's default)"
	if h.IntervalSeconds != nil {
		interval, intervalNote = *h.IntervalSeconds, ""
	}
	timeout, timeoutNote := defaultHealthCheckTimeout(h.Protocol, alb), " (AWS's default)"
	if h.TimeoutSeconds != nil {
		timeout, timeoutNote = *h.TimeoutSeconds, ""
	}
	if timeout >= interval {
		p.add("healthCheck.timeoutSeconds", "%d%s must be less than intervalSeconds %d%s", timeout, timeoutNote, interval, intervalNote)
	}
}

// defaultHealthCheckTimeout is AWS's timeout for a health check of protocol (the builder's choice
// when ""): 5 s on an ALB; on an NLB 6 s for HTTP and 10 s for TCP and HTTPS.
func defaultHealthCheckTimeout(protocol string, alb bool) int32 {
	switch {
	case alb:
		return 5
	case protocol == "HTTP":
		return 6
	}
	return 10
}

// matcher checks HTTP codes: an ALB accepts 200-499, an NLB 200-599.
func (p *problems) matcher(m string, alb bool) {
	hi := 599
	if alb {
		hi = 499
	}
	if !matcherPattern.MatchString(m) {
		p.add("healthCheck.matcher", "%q is not a list of codes or ranges such as 200,302 or 200-299", m)
		return
	}
	for part := range strings.SplitSeq(m, ",") {
		lo, high, _ := strings.Cut(part, "-")
		a, _ := strconv.Atoi(lo)
		b := a
		if high != "" {
			b, _ = strconv.Atoi(high)
		}
		if a < 200 || b > hi || a > b {
			p.add("healthCheck.matcher", "%q: codes must be ascending ranges within 200-%d", part, hi)
		}
	}
}
