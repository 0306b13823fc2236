package aws

import (
	"fmt"
	"strings"
	"testing"
)

// validALB and validNLB are Stacks every check accepts; each case breaks one rule.
func validALB() *Stack {
	return &Stack{
		Tags: map[string]string{"team": "web"},
		LoadBalancer: LoadBalancer{Name: "fg-web-0123456789", Type: TypeApplication, Scheme: schemeInternetFacing, IPAddressType: "ipv4",
			Subnets: []string{"subnet-a", "subnet-b"}},
		SecurityGroup: &SecurityGroup{ID: "sg", Name: "fg-web-0123456789", VPC: testVPC, Ingress: []IngressRule{{Protocol: "tcp", Port: 443, CIDR: "0.0.0.0/0"}}},
		TargetGroups: []TargetGroup{{ID: "tg/1", Name: "fg-web-1", Protocol: protocolHTTP, ProtocolVersion: versionHTTP1, Port: 80, VPC: testVPC,
			HealthCheck: HealthCheck{Protocol: protocolHTTP, Port: trafficPort, Path: "/", Matcher: "200", IntervalSeconds: 30, TimeoutSeconds: 5, HealthyThreshold: 5, UnhealthyThreshold: 2},
			Targets:     []Target{{IP: "10.0.0.1", Port: 8080}}}},
		Listeners: []Listener{{ID: "listener/443", Port: 443, Protocol: protocolHTTPS, Certificates: []string{"cert/1"}, SSLPolicy: defaultSSLPolicy, DefaultAction: fixed404()}},
		Rules: []Rule{{ID: "rule/1", Listener: "listener/443", Origin: "HTTPRoute/a/b/0/0",
			Conditions: []Condition{{Field: fieldHostHeader, Values: []string{"*.example.com"}}, {Field: fieldPathPattern, Values: []string{"/p", "/p/*"}}},
			Action:     Action{Forward: []WeightedTargetGroup{{TargetGroup: "tg/1", Weight: 1}}}}},
		Certificates: []Certificate{{ID: "cert/1", CertPEM: []byte("c"), KeyPEM: []byte("k")}},
	}
}

func validNLB() *Stack {
	return &Stack{
		LoadBalancer: LoadBalancer{Name: "fg-web-0123456789", Type: TypeNetwork, Scheme: "internal", IPAddressType: "ipv4",
			SubnetMappings: []SubnetMapping{{SubnetID: "subnet-a", AllocationID: "eipalloc-1"}}},
		TargetGroups: []TargetGroup{{ID: "tg/1", Name: "fg-dns-1", Protocol: protocolUDP, Port: 53, VPC: testVPC,
			HealthCheck: HealthCheck{Protocol: protocolTCP, Port: "53", IntervalSeconds: 30, TimeoutSeconds: 10, HealthyThreshold: 5, UnhealthyThreshold: 2}}},
		Listeners: []Listener{{ID: "listener/53", Port: 53, Protocol: protocolUDP, DefaultAction: Action{Forward: []WeightedTargetGroup{{TargetGroup: "tg/1", Weight: 1}}}}},
	}
}

// TestValidateStack: one case per rule of the AWS API reference that validateStack enforces.
func TestValidateStack(t *testing.T) {
	tests := []struct {
		name    string
		base    func() *Stack
		mutate  func(s *Stack)
		wantErr string // "" = valid
	}{
		{name: "valid ALB", base: validALB, mutate: func(*Stack) {}},
		{name: "valid NLB", base: validNLB, mutate: func(*Stack) {}},

		// CreateLoadBalancer Name: "maximum of 32 characters ... only alphanumeric characters or
		// hyphens, must not begin or end with a hyphen, and must not begin with "internal-"".
		{name: "LB name too long", base: validALB, mutate: func(s *Stack) { s.LoadBalancer.Name = strings.Repeat("a", 33) }, wantErr: "load balancer name"},
		{name: "LB name ends with a hyphen", base: validALB, mutate: func(s *Stack) { s.LoadBalancer.Name = "fg-web-" }, wantErr: "load balancer name"},
		{name: "LB name starts internal-", base: validALB, mutate: func(s *Stack) { s.LoadBalancer.Name = "internal-web" }, wantErr: "load balancer name"},
		// CreateTargetGroup Name: same rules.
		{name: "TG name with underscore", base: validALB, mutate: func(s *Stack) { s.TargetGroups[0].Name = "fg_web" }, wantErr: "target group tg/1: name"},
		// CreateLoadBalancer Type, Scheme, IpAddressType enums.
		{name: "LB type", base: validALB, mutate: func(s *Stack) { s.LoadBalancer.Type = "gateway" }, wantErr: "load balancer type"},
		{name: "LB scheme", base: validALB, mutate: func(s *Stack) { s.LoadBalancer.Scheme = "public" }, wantErr: "load balancer scheme"},
		{name: "LB IP address type", base: validALB, mutate: func(s *Stack) { s.LoadBalancer.IPAddressType = "ipv6" }, wantErr: "IP address type"},
		// CreateLoadBalancer Subnets: "[Application Load Balancers] You must specify subnets from
		// at least two Availability Zones."
		{name: "ALB in one subnet", base: validALB, mutate: func(s *Stack) { s.LoadBalancer.Subnets = s.LoadBalancer.Subnets[:1] }, wantErr: "at least 2"},
		{name: "subnets and mappings", base: validNLB, mutate: func(s *Stack) { s.LoadBalancer.Subnets = []string{"subnet-a"} }, wantErr: "exclusive"},
		{name: "no subnets", base: validNLB, mutate: func(s *Stack) { s.LoadBalancer.SubnetMappings = nil }, wantErr: "no subnets"},
		// SubnetMapping.AllocationId: "[Network Load Balancers] The allocation ID of the Elastic IP".
		{name: "EIP on an ALB", base: validALB, mutate: func(s *Stack) {
			s.LoadBalancer.Subnets, s.LoadBalancer.SubnetMappings = nil, []SubnetMapping{{"subnet-a", "eipalloc-1"}, {"subnet-b", "eipalloc-2"}}
		}, wantErr: "need a network load balancer"},
		{name: "bad allocation ID", base: validNLB, mutate: func(s *Stack) { s.LoadBalancer.SubnetMappings[0].AllocationID = "1.2.3.4" }, wantErr: "Elastic IP allocation ID"},
		// AddTags: "maximum of 50 tags"; Tag.Key "Maximum length of 128"; Tag.Value "Maximum
		// length of 256"; "aws:" is reserved.
		{name: "too many tags", base: validALB, mutate: func(s *Stack) {
			for i := range 44 {
				s.Tags[fmt.Sprint("k", i)] = "v"
			}
		}, wantErr: "45 user tags"},
		{name: "tag key too long", base: validALB, mutate: func(s *Stack) { s.Tags[strings.Repeat("k", 129)] = "v" }, wantErr: "tag key"},
		{name: "tag value too long", base: validALB, mutate: func(s *Stack) { s.Tags["k"] = strings.Repeat("v", 257) }, wantErr: "tag k: value"},
		{name: "tag key aws:", base: validALB, mutate: func(s *Stack) { s.Tags["aws:x"] = "v" }, wantErr: "reserved"},
		{name: "tag key character", base: validALB, mutate: func(s *Stack) { s.Tags["a*b"] = "v" }, wantErr: "tag key"},
		{name: "tag key takes ownership", base: validALB, mutate: func(s *Stack) { s.Tags[TagGateway] = "v" }, wantErr: "ownership"},
		// CreateSecurityGroup GroupName: "Cannot start with sg-"; AuthorizeSecurityGroupIngress
		// ports and CIDRs; VPC quota of 60 inbound rules per family.
		{name: "SG name sg-", base: validALB, mutate: func(s *Stack) { s.SecurityGroup.Name = "sg-web" }, wantErr: "security group name"},
		{name: "SG CIDR", base: validALB, mutate: func(s *Stack) { s.SecurityGroup.Ingress[0].CIDR = "10.0.0.0/33" }, wantErr: "CIDR"},
		{name: "SG rules", base: validALB, mutate: func(s *Stack) {
			for i := range 60 {
				s.SecurityGroup.Ingress = append(s.SecurityGroup.Ingress, IngressRule{Protocol: "tcp", Port: 443, CIDR: fmt.Sprintf("10.%d.0.0/16", i)})
			}
		}, wantErr: "61 inbound rules"},
		// CreateListener Protocol: ALB HTTP/HTTPS, NLB TCP/TLS/UDP/TCP_UDP.
		{name: "TCP listener on an ALB", base: validALB, mutate: func(s *Stack) { s.Listeners[0].Protocol = protocolTCP }, wantErr: "protocol TCP on a application"},
		{name: "HTTP listener on an NLB", base: validNLB, mutate: func(s *Stack) { s.Listeners[0].Protocol = protocolHTTP }, wantErr: "protocol HTTP on a network"},
		// CreateListener Port: "1-65535".
		{name: "listener port", base: validALB, mutate: func(s *Stack) { s.Listeners[0].Port = 0 }, wantErr: "port 0 out of 1-65535"},
		// CreateListener Certificates: HTTPS and TLS need one; quota of 25 per load balancer
		// besides the default.
		{name: "HTTPS without certificate", base: validALB, mutate: func(s *Stack) { s.Listeners[0].Certificates = nil }, wantErr: "needs a certificate"},
		{name: "27 certificates", base: validALB, mutate: func(s *Stack) {
			for i := range 26 {
				s.Listeners[0].Certificates = append(s.Listeners[0].Certificates, fmt.Sprint("arn:aws:acm:x:1:certificate/", i))
			}
		}, wantErr: "27 certificates"},
		{name: "certificate on UDP", base: validNLB, mutate: func(s *Stack) { s.Listeners[0].Certificates = []string{"arn:x"} }, wantErr: "takes no certificate"},
		{name: "unknown certificate", base: validALB, mutate: func(s *Stack) { s.Listeners[0].Certificates = []string{"cert/2"} }, wantErr: "neither an ARN"},
		// ELBv2 quotas: 50 listeners per load balancer.
		{name: "51 listeners", base: validNLB, mutate: func(s *Stack) {
			for i := range 50 {
				l := s.Listeners[0]
				l.ID, l.Port = fmt.Sprint("listener/", 1000+i), int32(1000+i)
				s.Listeners = append(s.Listeners, l)
			}
		}, wantErr: "more than 50 listeners"},
		// IncompatibleProtocols: NLB UDP → UDP/TCP_UDP; TLS → TCP/TLS; ALB → HTTP/HTTPS.
		{name: "UDP listener to TCP target group", base: validNLB, mutate: func(s *Stack) {
			s.TargetGroups[0].Protocol = protocolTCP
		}, wantErr: "a UDP listener cannot forward to TCP target group"},
		{name: "TCP listener to UDP target group", base: validNLB, mutate: func(s *Stack) { s.Listeners[0].Protocol = protocolTCP }, wantErr: "a TCP listener cannot forward to UDP"},
		{name: "NLB listener must forward", base: validNLB, mutate: func(s *Stack) { s.Listeners[0].DefaultAction = fixed404() }, wantErr: "must forward"},
		// CreateTargetGroup Protocol per load balancer type; ProtocolVersion for HTTP(S) only;
		// "HTTP2 and gRPC ... supported only with HTTPS listeners".
		{name: "UDP target group behind an ALB", base: validALB, mutate: func(s *Stack) { s.TargetGroups[0].Protocol = protocolUDP }, wantErr: "behind an application load balancer"},
		{name: "protocol version on UDP", base: validNLB, mutate: func(s *Stack) { s.TargetGroups[0].ProtocolVersion = versionHTTP2 }, wantErr: "protocol version"},
		{name: "gRPC behind HTTP", base: validALB, mutate: func(s *Stack) {
			s.TargetGroups[0].ProtocolVersion = versionGRPC
			s.TargetGroups[0].HealthCheck.Matcher = "12"
			s.Listeners[0].Protocol, s.Listeners[0].Certificates, s.Listeners[0].SSLPolicy = protocolHTTP, nil, ""
		}, wantErr: "needs an HTTPS listener"},
		{name: "duplicate TG name", base: validALB, mutate: func(s *Stack) {
			tg := s.TargetGroups[0]
			tg.ID = "tg/2"
			s.TargetGroups = append(s.TargetGroups, tg)
		}, wantErr: "duplicate ID or name"},
		{name: "duplicate listener port", base: validNLB, mutate: func(s *Stack) {
			l := s.Listeners[0]
			l.ID = "listener/x"
			s.Listeners = append(s.Listeners, l)
		}, wantErr: "duplicate ID or port 53"},
		{name: "TG port", base: validALB, mutate: func(s *Stack) { s.TargetGroups[0].Port = 70000 }, wantErr: "port 70000"},
		{name: "TG VPC", base: validALB, mutate: func(s *Stack) { s.TargetGroups[0].VPC = "" }, wantErr: "VPC"},
		{name: "target IP", base: validALB, mutate: func(s *Stack) { s.TargetGroups[0].Targets[0].IP = "pod-1" }, wantErr: "target \"pod-1\""},
		// CreateTargetGroup health checks: protocol HTTP/HTTPS/TCP ("UDP ... not supported for
		// health checks"), TCP not for ALB, interval 5-300, timeout 2-120 and below the
		// interval, thresholds 2-10, path and matcher only for HTTP(S), matcher codes.
		{name: "UDP health check", base: validNLB, mutate: func(s *Stack) { s.TargetGroups[0].HealthCheck.Protocol = protocolUDP }, wantErr: "cannot be checked over UDP"},
		{name: "TCP health check on ALB", base: validALB, mutate: func(s *Stack) {
			hc := &s.TargetGroups[0].HealthCheck
			hc.Protocol, hc.Path, hc.Matcher = protocolTCP, "", ""
		}, wantErr: "not TCP"},
		{name: "interval", base: validALB, mutate: func(s *Stack) { s.TargetGroups[0].HealthCheck.IntervalSeconds = 301 }, wantErr: "interval 301s"},
		{name: "timeout", base: validALB, mutate: func(s *Stack) { s.TargetGroups[0].HealthCheck.TimeoutSeconds = 1 }, wantErr: "timeout 1s"},
		{name: "timeout not below interval", base: validALB, mutate: func(s *Stack) { s.TargetGroups[0].HealthCheck.TimeoutSeconds = 30 }, wantErr: "less than the interval"},
		{name: "threshold", base: validALB, mutate: func(s *Stack) { s.TargetGroups[0].HealthCheck.UnhealthyThreshold = 11 }, wantErr: "threshold 11"},
		{name: "health check port", base: validALB, mutate: func(s *Stack) { s.TargetGroups[0].HealthCheck.Port = "http" }, wantErr: "health check port"},
		{name: "path on TCP check", base: validNLB, mutate: func(s *Stack) { s.TargetGroups[0].HealthCheck.Path = "/" }, wantErr: "no path"},
		{name: "path without slash", base: validALB, mutate: func(s *Stack) { s.TargetGroups[0].HealthCheck.Path = "healthz" }, wantErr: "health check path"},
		{name: "ALB matcher 500", base: validALB, mutate: func(s *Stack) { s.TargetGroups[0].HealthCheck.Matcher = "200-500" }, wantErr: "codes 200-499"},
		{name: "gRPC matcher 100", base: validALB, mutate: func(s *Stack) {
			s.TargetGroups[0].ProtocolVersion, s.TargetGroups[0].HealthCheck.Matcher = versionGRPC, "0-100"
		}, wantErr: "codes 0-99"},
		// ImportCertificate lengths.
		{name: "certificate too long", base: validALB, mutate: func(s *Stack) { s.Certificates[0].CertPEM = make([]byte, 32769) }, wantErr: "32769 bytes"},
		{name: "certificate without key", base: validALB, mutate: func(s *Stack) { s.Certificates[0].KeyPEM = nil }, wantErr: "private key"},
		// ALB quotas: 100 rules per load balancer.
		{name: "101 rules", base: validALB, mutate: func(s *Stack) {
			for i := range 100 {
				r := s.Rules[0]
				r.ID = fmt.Sprint("rule/x", i)
				s.Rules = append(s.Rules, r)
			}
		}, wantErr: "101 rules"},
		{name: "rule on an NLB", base: validNLB, mutate: func(s *Stack) {
			s.Rules = []Rule{{ID: "rule/1", Listener: "listener/53", Conditions: []Condition{{Field: fieldPathPattern, Values: []string{"/"}}}, Action: fixed404()}}
		}, wantErr: "only application load balancers"},
		{name: "rule of a missing listener", base: validALB, mutate: func(s *Stack) { s.Rules[0].Listener = "listener/80" }, wantErr: "not in the stack"},
		// CreateRule Conditions: at least one; at most one host-header, path-pattern and
		// http-request-method; 5 values and 5 wildcards per rule; values of 128 characters.
		{name: "no condition", base: validALB, mutate: func(s *Stack) { s.Rules[0].Conditions = nil }, wantErr: "needs a condition"},
		{name: "two host-header conditions", base: validALB, mutate: func(s *Stack) {
			s.Rules[0].Conditions = append(s.Rules[0].Conditions, Condition{Field: fieldHostHeader, Values: []string{"a.example.com"}})
		}, wantErr: "host-header twice"},
		{name: "six values", base: validALB, mutate: func(s *Stack) {
			s.Rules[0].Conditions = append(s.Rules[0].Conditions, Condition{Field: fieldMethod, Values: []string{"GET"}},
				Condition{Field: fieldQuery, Query: []KeyValue{{"a", "1"}, {"b", "2"}}})
		}, wantErr: "6 condition values"},
		{name: "four query pairs in one condition", base: validALB, mutate: func(s *Stack) {
			s.Rules[0].Conditions = []Condition{{Field: fieldQuery, Query: []KeyValue{{"a", "1"}, {"b", "2"}, {"c", "3"}, {"d", "4"}}}}
		}, wantErr: "query-string condition with 4 values"},
		{name: "four values in one condition", base: validALB, mutate: func(s *Stack) {
			s.Rules[0].Conditions[1].Values = []string{"/a", "/b", "/c", "/d"}
		}, wantErr: "path-pattern condition with 4 values"},
		{name: "six wildcards", base: validALB, mutate: func(s *Stack) {
			s.Rules[0].Conditions[0].Values = []string{"*.*.*.*.*.example.com"}
		}, wantErr: "6 condition wildcards"},
		{name: "value of 129 characters", base: validALB, mutate: func(s *Stack) {
			s.Rules[0].Conditions[1].Values = []string{"/" + strings.Repeat("p", 128)}
		}, wantErr: "1-128 characters"},
		{name: "host-header character", base: validALB, mutate: func(s *Stack) { s.Rules[0].Conditions[0].Values = []string{"a_b.example.com"} }, wantErr: "characters ALB does not accept"},
		{name: "path-pattern character", base: validALB, mutate: func(s *Stack) { s.Rules[0].Conditions[1].Values = []string{"/a b"} }, wantErr: "characters ALB does not accept"},
		{name: "lower-case method", base: validALB, mutate: func(s *Stack) {
			s.Rules[0].Conditions = append(s.Rules[0].Conditions[:1], Condition{Field: fieldMethod, Values: []string{"get"}})
		}, wantErr: "characters ALB does not accept"},
		{name: "header name of 41 characters", base: validALB, mutate: func(s *Stack) {
			s.Rules[0].Conditions = append(s.Rules[0].Conditions[:1], Condition{Field: fieldHeader, HeaderName: strings.Repeat("h", 41), Values: []string{"v"}})
		}, wantErr: "header name"},
		{name: "empty query value", base: validALB, mutate: func(s *Stack) {
			s.Rules[0].Conditions = append(s.Rules[0].Conditions[:1], Condition{Field: fieldQuery, Query: []KeyValue{{"a", ""}}})
		}, wantErr: "query-string"},
		{name: "unknown field", base: validALB, mutate: func(s *Stack) { s.Rules[0].Conditions[0].Field = "source-port" }, wantErr: "condition field"},
		// Actions: exactly one type; forward to 1-5 target groups with weights 0-999.
		{name: "two action types", base: validALB, mutate: func(s *Stack) { s.Rules[0].Action.Fixed = fixed404().Fixed }, wantErr: "exactly one"},
		{name: "six target groups", base: validALB, mutate: func(s *Stack) {
			for i := range 5 {
				tg := s.TargetGroups[0]
				tg.ID = fmt.Sprint("tg/x", i)
				s.TargetGroups = append(s.TargetGroups, tg)
				s.Rules[0].Action.Forward = append(s.Rules[0].Action.Forward, WeightedTargetGroup{TargetGroup: tg.ID, Weight: 1})
			}
		}, wantErr: "forward to 6 target groups"},
		{name: "weight 1000", base: validALB, mutate: func(s *Stack) { s.Rules[0].Action.Forward[0].Weight = 1000 }, wantErr: "weight 1000"},
		{name: "unknown target group", base: validALB, mutate: func(s *Stack) { s.Rules[0].Action.Forward[0].TargetGroup = "tg/9" }, wantErr: "tg/9 is not in the stack"},
		{name: "target group twice", base: validALB, mutate: func(s *Stack) {
			s.Rules[0].Action.Forward = append(s.Rules[0].Action.Forward, s.Rules[0].Action.Forward[0])
		}, wantErr: "twice"},
		// FixedResponseActionConfig.StatusCode "^(2|4|5)\d\d$"; MessageBody up to 1024.
		{name: "fixed 302", base: validALB, mutate: func(s *Stack) { s.Listeners[0].DefaultAction.Fixed.StatusCode = "302" }, wantErr: "fixed-response code"},
		{name: "fixed body", base: validALB, mutate: func(s *Stack) { s.Listeners[0].DefaultAction.Fixed.Body = strings.Repeat("b", 1025) }, wantErr: "fixed-response body"},
		// RedirectActionConfig: StatusCode HTTP_301/HTTP_302, Protocol, Port, Path, Query.
		{name: "redirect 307", base: validALB, mutate: func(s *Stack) {
			s.Rules[0].Action = Action{Redirect: &Redirect{Protocol: "#{protocol}", Host: "#{host}", Port: "#{port}", Path: "/#{path}", Query: "#{query}", StatusCode: "HTTP_307"}}
		}, wantErr: "redirect code"},
		{name: "redirect protocol", base: validALB, mutate: func(s *Stack) {
			s.Rules[0].Action = Action{Redirect: &Redirect{Protocol: "ftp", Host: "#{host}", Port: "#{port}", Path: "/#{path}", StatusCode: "HTTP_301"}}
		}, wantErr: "redirect protocol"},
		{name: "redirect port", base: validALB, mutate: func(s *Stack) {
			s.Rules[0].Action = Action{Redirect: &Redirect{Protocol: "HTTPS", Host: "#{host}", Port: "0", Path: "/#{path}", StatusCode: "HTTP_301"}}
		}, wantErr: "redirect port"},
		{name: "redirect path", base: validALB, mutate: func(s *Stack) {
			s.Rules[0].Action = Action{Redirect: &Redirect{Protocol: "HTTPS", Host: "#{host}", Port: "443", Path: "new", StatusCode: "HTTP_301"}}
		}, wantErr: "redirect path"},
		{name: "redirect query", base: validALB, mutate: func(s *Stack) {
			s.Rules[0].Action = Action{Redirect: &Redirect{Protocol: "HTTPS", Host: "#{host}", Port: "443", Path: "/", Query: "?a=1", StatusCode: "HTTP_301"}}
		}, wantErr: "redirect query"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.base()
			tt.mutate(s)
			err := validateStack(s)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("validateStack: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("validateStack error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}
