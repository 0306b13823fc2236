package aws

import (
	"cmp"

	"github.com/fleetgate/fleetgate/providers"
)

// AWS's health-check defaults (CreateTargetGroup), per target group protocol.
const (
	trafficPort                = "traffic-port"
	defaultHealthCheckPath     = "/"
	defaultGRPCHealthCheckPath = "/AWS.ALB/healthcheck"
	defaultALBMatcher          = "200"
	defaultNLBMatcher          = "200-399"
	// grpcAnyCode: any gRPC status means the server answers, which is what a target group of
	// Services without a health service can check.
	grpcAnyCode           = "0-99"
	defaultInterval       = 30
	defaultALBTimeout     = 5
	defaultNLBHTTPTimeout = 6
	defaultNLBTCPTimeout  = 10
	defaultHealthyCount   = 5
	defaultUnhealthyCount = 2
)

// healthCheck is the class's health check over AWS's defaults for the target group's protocol.
// ALB target groups check with their own protocol; NLB ones with TCP, since a UDP target group
// cannot be checked over UDP. An HTTP check without a path from the class takes the backend's
// readiness probe path (probe, when known and of the check's scheme): the kubelet's idea of ready.
func (b *builder) healthCheck(protocol, version string, probe providers.HTTPProbe) HealthCheck {
	o := b.o.HealthCheck
	hc := HealthCheck{Port: trafficPort, IntervalSeconds: defaultInterval, HealthyThreshold: defaultHealthyCount, UnhealthyThreshold: defaultUnhealthyCount}
	alb := protocol == protocolHTTP || protocol == protocolHTTPS
	if alb {
		hc.Protocol = protocol
	} else {
		hc.Protocol = protocolTCP
	}
	if o != nil && o.Protocol != "" {
		hc.Protocol = o.Protocol
	}
	switch {
	case alb:
		hc.TimeoutSeconds = defaultALBTimeout
	case hc.Protocol == protocolTCP:
		hc.TimeoutSeconds = defaultNLBTCPTimeout
	default:
		hc.TimeoutSeconds = defaultNLBHTTPTimeout
	}
	if hc.Protocol != protocolTCP {
		hc.Path, hc.Matcher = defaultHealthCheckPath, defaultALBMatcher
		if !alb {
			hc.Matcher = defaultNLBMatcher
		}
		if probe.Path != "" && probe.Scheme == hc.Protocol {
			hc.Path = probe.Path
		}
		if version == versionGRPC {
			hc.Path, hc.Matcher = defaultGRPCHealthCheckPath, grpcAnyCode
		}
	}
	if o == nil {
		return hc
	}
	if o.Port != "" {
		hc.Port = o.Port
	}
	// The class's path and matcher are an HTTP check's: gRPC target groups keep theirs.
	if hc.Protocol != protocolTCP && version != versionGRPC {
		hc.Path = cmp.Or(o.Path, hc.Path)
		hc.Matcher = cmp.Or(o.Matcher, hc.Matcher)
	}
	hc.IntervalSeconds = int32OrDefault(o.IntervalSeconds, hc.IntervalSeconds)
	hc.TimeoutSeconds = int32OrDefault(o.TimeoutSeconds, hc.TimeoutSeconds)
	hc.HealthyThreshold = int32OrDefault(o.HealthyThreshold, hc.HealthyThreshold)
	hc.UnhealthyThreshold = int32OrDefault(o.UnhealthyThreshold, hc.UnhealthyThreshold)
	return hc
}
