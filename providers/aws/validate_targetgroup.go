package aws

import (
	"net/netip"
	"strconv"
	"strings"
)

// targetGroup checks CreateTargetGroup: name, protocol for the load balancer type, protocol
// version, port, VPC, health check and targets (RegisterTargets: IP and port).
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
