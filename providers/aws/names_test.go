package aws

import (
	"strings"
	"testing"
)

func TestLoadBalancerName(t *testing.T) {
	base := loadBalancerName("hub/infra/web", "fleet-1", "web", TypeApplication, schemeInternetFacing)
	tests := []struct {
		name      string
		got       string
		wantStart string
		sameAs    bool // equal to base
	}{
		{name: "readable part and hash", got: base, wantStart: "fg-web-", sameAs: true},
		{name: "deterministic", got: loadBalancerName("hub/infra/web", "fleet-1", "web", TypeApplication, schemeInternetFacing), wantStart: "fg-web-", sameAs: true},
		{name: "other gateway", got: loadBalancerName("east/infra/web", "fleet-1", "web", TypeApplication, schemeInternetFacing), wantStart: "fg-web-"},
		{name: "other fleet", got: loadBalancerName("hub/infra/web", "fleet-2", "web", TypeApplication, schemeInternetFacing), wantStart: "fg-web-"},
		{name: "type is immutable", got: loadBalancerName("hub/infra/web", "fleet-1", "web", TypeNetwork, schemeInternetFacing), wantStart: "fg-web-"},
		{name: "scheme is immutable", got: loadBalancerName("hub/infra/web", "fleet-1", "web", TypeApplication, "internal"), wantStart: "fg-web-"},
		{name: "long name is cut", got: loadBalancerName("k", "f", "a-very-long-gateway-name-that-goes-on", TypeApplication, "internal"), wantStart: "fg-a-very-long-gatewa-"},
		{name: "cut never ends with a dash", got: loadBalancerName("k", "f", "abcdefghijklmnopq-rst", TypeApplication, "internal"), wantStart: "fg-abcdefghijklmnopq-"},
		{name: "characters ELBv2 refuses become dashes", got: loadBalancerName("k", "f", "Web_Gateway.v2", TypeApplication, "internal"), wantStart: "fg-web-gateway-v2-"},
		{name: "nothing readable", got: loadBalancerName("k", "f", "___", TypeApplication, "internal"), wantStart: "fg-"},
		{name: "never internal-", got: loadBalancerName("k", "f", "internal-lb", TypeApplication, "internal"), wantStart: "fg-internal-lb-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !elbNameRE.MatchString(tt.got) || strings.HasPrefix(tt.got, "internal-") || len(tt.got) > maxNameLen {
				t.Errorf("name %q is not a valid ELBv2 name", tt.got)
			}
			if !strings.HasPrefix(tt.got, tt.wantStart) {
				t.Errorf("name %q does not start with %q", tt.got, tt.wantStart)
			}
			if (tt.got == base) != tt.sameAs {
				t.Errorf("name %q == %q is %t, want %t", tt.got, base, tt.got == base, tt.sameAs)
			}
		})
	}
}

func TestTargetGroupName(t *testing.T) {
	base := targetGroupName("tg/1", "gw", "f", "vpc-1", targetTypeIP, versionHTTP1, "web")
	tests := []struct {
		name   string
		got    string
		sameAs bool
	}{
		{name: "deterministic", got: targetGroupName("tg/1", "gw", "f", "vpc-1", targetTypeIP, versionHTTP1, "web"), sameAs: true},
		{name: "readable part is not identity", got: targetGroupName("tg/1", "gw", "f", "vpc-1", targetTypeIP, versionHTTP1, "other"), sameAs: false},
		{name: "ID", got: targetGroupName("tg/2", "gw", "f", "vpc-1", targetTypeIP, versionHTTP1, "web")},
		{name: "gateway", got: targetGroupName("tg/1", "gw2", "f", "vpc-1", targetTypeIP, versionHTTP1, "web")},
		{name: "fleet", got: targetGroupName("tg/1", "gw", "f2", "vpc-1", targetTypeIP, versionHTTP1, "web")},
		{name: "VPC is immutable", got: targetGroupName("tg/1", "gw", "f", "vpc-2", targetTypeIP, versionHTTP1, "web")},
		{name: "target type is immutable", got: targetGroupName("tg/1", "gw", "f", "vpc-1", "instance", versionHTTP1, "web")},
		{name: "protocol version is immutable", got: targetGroupName("tg/1", "gw", "f", "vpc-1", targetTypeIP, versionGRPC, "web")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !elbNameRE.MatchString(tt.got) || !strings.HasPrefix(tt.got, "fg-") {
				t.Errorf("name %q is not a valid ELBv2 name", tt.got)
			}
			if (tt.got == base) != tt.sameAs {
				t.Errorf("name %q == %q is %t, want %t", tt.got, base, tt.got == base, tt.sameAs)
			}
		})
	}
}
