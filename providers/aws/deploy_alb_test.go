package aws

import (
	"slices"

	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetgate/fleetgate/providers"
)

// albStack is an ALB gateway: a security group, two target groups with targets, HTTP and HTTPS
// listeners (an imported certificate), three rules with every condition kind and action kind.
func (e *env) albStack(cert Certificate) *Stack {
	key := "c1/ns/" + e.prefix
	hc := HealthCheck{Protocol: "HTTP", Port: "traffic-port", Path: "/healthz", Matcher: "200", IntervalSeconds: 15, TimeoutSeconds: 5, HealthyThreshold: 2, UnhealthyThreshold: 2}
	return &Stack{
		Gateway: key, GatewayID: providers.GatewayID(key), Clusters: []string{"c1", "c2"},
		Tags: map[string]string{"team": "payments"},
		LoadBalancer: LoadBalancer{
			Name: e.prefix + "-alb", Type: TypeApplication, Scheme: "internet-facing", IPAddressType: "ipv4", Subnets: e.subnets,
			Attributes: map[string]string{"idle_timeout.timeout_seconds": "120", "deletion_protection.enabled": "false"},
		},
		SecurityGroup: &SecurityGroup{ID: "sg", Name: e.prefix + "-sg", Description: "fleetgate " + key, VPC: e.vpc,
			Ingress: []IngressRule{{"tcp", 443, "0.0.0.0/0"}, {"tcp", 80, "0.0.0.0/0"}}},
		TargetGroups: []TargetGroup{
			{ID: "tg/a", Name: e.prefix + "-a", Protocol: "HTTP", ProtocolVersion: "HTTP1", Port: 8080, VPC: e.vpc, HealthCheck: hc,
				Attributes: map[string]string{"deregistration_delay.timeout_seconds": "30"},
				Targets:    []Target{{IP: "10.0.1.10", Port: 8080}, {IP: "10.0.2.10", Port: 8080}}},
			{ID: "tg/b", Name: e.prefix + "-b", Protocol: "HTTP", ProtocolVersion: "HTTP1", Port: 9090, VPC: e.vpc, HealthCheck: hc,
				Targets: []Target{{IP: "10.0.1.20", Port: 9090}}},
		},
		Listeners: []Listener{
			{ID: "listener/80", Port: 80, Protocol: "HTTP", DefaultAction: Action{Redirect: &Redirect{Protocol: "HTTPS", Port: "443", StatusCode: "HTTP_301"}}},
			{ID: "listener/443", Port: 443, Protocol: "HTTPS", Certificates: []string{cert.ID}, SSLPolicy: "ELBSecurityPolicy-TLS13-1-2-2021-06",
				DefaultAction: Action{Fixed: &FixedResponse{StatusCode: "404", ContentType: "text/plain", Body: "no route"}}},
		},
		Rules: []Rule{
			{ID: "rule/a", Listener: "listener/443", Conditions: []Condition{
				{Field: "host-header", Values: []string{"a.example.com"}},
				{Field: "path-pattern", Values: []string{"/api/*"}},
				{Field: "http-header", HeaderName: "x-env", Values: []string{"prod"}},
			}, Action: Action{Forward: []WeightedTargetGroup{{"tg/a", 80}, {"tg/b", 20}}}},
			{ID: "rule/b", Listener: "listener/443", Conditions: []Condition{
				{Field: "query-string", Query: []KeyValue{{"version", "2"}}},
				{Field: "http-request-method", Values: []string{"GET", "HEAD"}},
			}, Action: Action{Redirect: &Redirect{Host: "v2.example.com", StatusCode: "HTTP_302"}}},
			{ID: "rule/c", Listener: "listener/443", Conditions: []Condition{{Field: "host-header", Values: []string{"c.example.com"}}},
				Action: Action{Fixed: &FixedResponse{StatusCode: "503", ContentType: "text/plain", Body: "down"}}},
		},
		Certificates: []Certificate{cert},
	}
}

// albView is what moto must hold for albStack.
func (e *env) albView() view {
	p := e.prefix
	tags := map[string]string{
		"team": "payments", TagManagedBy: providers.ManagedBy, TagFleet: e.fleet, TagGateway: providers.GatewayID("c1/ns/" + p),
		TagGatewayKey: "c1/ns/" + p, TagResource: "lb", TagClusters: "c1,c2",
	}
	return view{
		LB: lbView{Name: p + "-alb", Type: "application", Scheme: "internet-facing", Subnets: 2, SecurityGroups: []string{p + "-sg"},
			Attrs: map[string]string{"idle_timeout.timeout_seconds": "120", "deletion_protection.enabled": "false"}, Tags: tags},
		Ingress: []string{"tcp/443 0.0.0.0/0", "tcp/80 0.0.0.0/0"},
		TargetGroups: map[string]tgView{
			p + "-a": {Protocol: "HTTP", Version: "HTTP1", Port: 8080, HealthPath: "/healthz", Matcher: "200",
				Attrs: map[string]string{"deregistration_delay.timeout_seconds": "30"}, Targets: []string{"10.0.1.10:8080", "10.0.2.10:8080"}},
			p + "-b": {Protocol: "HTTP", Version: "HTTP1", Port: 9090, HealthPath: "/healthz", Matcher: "200",
				Attrs: map[string]string{"deregistration_delay.timeout_seconds": "300"}, Targets: []string{"10.0.1.20:9090"}},
		},
		Listeners: map[int32]listenerView{
			80:  {Protocol: "HTTP", Default: "redirect HTTP_301 HTTPS://#{host}:443"},
			443: {Protocol: "HTTPS", Certs: []string{"www.example.com"}, SSLPolicy: "ELBSecurityPolicy-TLS13-1-2-2021-06", Default: `fixed 404 "no route"`},
		},
		Rules: []string{
			"443#1 host=a.example.com path=/api/* x-env=prod → forward " + p + "-a=80," + p + "-b=20",
			"443#2 method=GET,HEAD query=version:2 → redirect HTTP_302 #{protocol}://v2.example.com:#{port}",
			`443#3 host=c.example.com → fixed 503 "down"`,
		},
	}
}

func TestDeployALB(t *testing.T) {
	e := newEnv(t)
	s := e.albStack(selfSigned(t, "www.example.com", 1))
	dep := e.deploy(s)
	if dep.ARN == "" || dep.DNSName == "" || dep.CanonicalHostedZoneID == "" {
		t.Errorf("Deployed = %+v, want ARN, DNS name and zone", dep)
	}
	if diff := cmp.Diff(e.albView(), e.view(s.LoadBalancer.Name)); diff != "" {
		t.Errorf("moto after Deploy (-want +got):\n%s", diff)
	}
	wantOps := []string{
		"CreateSecurityGroup", "AuthorizeSecurityGroupIngress", "ImportCertificate",
		"CreateTargetGroup", "ModifyTargetGroupAttributes", "CreateTargetGroup",
		"CreateLoadBalancer", "ModifyLoadBalancerAttributes",
		"CreateListener", "CreateListener", "CreateRule", "CreateRule", "CreateRule",
		"RegisterTargets", "RegisterTargets",
	}
	if diff := cmp.Diff(wantOps, mutating(e.rec.take())); diff != "" {
		t.Errorf("mutating calls of the first Deploy (-want +got):\n%s", diff)
	}

	again := e.deploy(s)
	if ops := mutating(e.rec.take()); len(ops) != 0 || len(again.Calls) != 0 {
		t.Errorf("second Deploy of the same Stack made mutating calls %v (reported %v), want none", ops, again.Calls)
	}
	if !again.Ready || again.State != "active" || again.ARN != dep.ARN {
		t.Errorf("second Deploy = %+v, want the same load balancer, active and ready", again)
	}
}

func TestDeployChangeOneRule(t *testing.T) {
	e := newEnv(t)
	s := e.albStack(selfSigned(t, "www.example.com", 1))
	e.deploy(s)
	tests := []struct {
		name   string
		change func(s *Stack)
		want   []string
		rule   string // the rule of the view that must show the change
	}{
		{"weights", func(s *Stack) { s.Rules[0].Action.Forward = []WeightedTargetGroup{{"tg/a", 50}, {"tg/b", 50}} },
			[]string{"ModifyRule"}, "443#1 host=a.example.com path=/api/* x-env=prod → forward " + e.prefix + "-a=50," + e.prefix + "-b=50"},
		{"host", func(s *Stack) { s.Rules[2].Conditions[0].Values = []string{"c2.example.com"} },
			[]string{"ModifyRule"}, `443#3 host=c2.example.com → fixed 503 "down"`},
		{"new rule last", func(s *Stack) {
			s.Rules = append(s.Rules, Rule{ID: "rule/new", Listener: "listener/443",
				Conditions: []Condition{{Field: "path-pattern", Values: []string{"/new"}}}, Action: Action{Forward: []WeightedTargetGroup{{"tg/b", 1}}}})
		}, []string{"CreateRule"}, "443#4 path=/new → forward " + e.prefix + "-b=1"},
		{"tag of a rule", func(s *Stack) { s.Tags["cost-center"] = "42" },
			// every resource carries Stack.Tags
			append([]string{"CreateTags", "AddTagsToCertificate"}, slices.Repeat([]string{"AddTags"}, 2+1+2+4)...),
			`443#3 host=c2.example.com → fixed 503 "down"`},
	}
	for _, tt := range tests {
		tt.change(s)
		e.rec.take()
		dep := e.deploy(s)
		if diff := cmp.Diff(tt.want, mutating(e.rec.take())); diff != "" {
			t.Errorf("%s: mutating calls (-want +got):\n%s", tt.name, diff)
		}
		if diff := cmp.Diff(tt.want, operations(dep.Calls)); diff != "" {
			t.Errorf("%s: reported calls (-want +got):\n%s", tt.name, diff)
		}
		if rules := e.view(s.LoadBalancer.Name).Rules; !slices.Contains(rules, tt.rule) {
			t.Errorf("%s: rules %q, want one %q", tt.name, rules, tt.rule)
		}
	}
}

// TestDeployRuleOrder moves rules when the precedence order changes (a rule inserted first, two
// rules swapped: a cycle) without ever colliding on a priority, and ends in the Stack's order.
func TestDeployRuleOrder(t *testing.T) {
	e := newEnv(t)
	s := e.albStack(selfSigned(t, "www.example.com", 1))
	e.deploy(s)
	rule := func(id, path string) Rule {
		return Rule{ID: id, Listener: "listener/443", Conditions: []Condition{{Field: "path-pattern", Values: []string{path}}},
			Action: Action{Fixed: &FixedResponse{StatusCode: "200", ContentType: "text/plain", Body: id}}}
	}
	tests := []struct {
		name  string
		rules []Rule
	}{
		{"insert first", []Rule{rule("rule/n", "/n"), s.Rules[0], s.Rules[1], s.Rules[2]}},
		{"swap", []Rule{rule("rule/n", "/n"), s.Rules[2], s.Rules[1], s.Rules[0]}},
		{"remove and reverse", []Rule{s.Rules[0], rule("rule/n", "/n")}},
	}
	for _, tt := range tests {
		s.Rules = tt.rules
		e.deploy(s)
		// the order of priorities is the Stack's
		live, err := e.d.observeListeners(e.ctx, e.lbARN(s.LoadBalancer.Name))
		if err != nil {
			t.Fatal(err)
		}
		var got, want []string
		for _, l := range live {
			if aws.ToInt32(l.l.Port) != 443 {
				continue
			}
			slices.SortFunc(l.rules, func(a, b liveRule) int { return int(a.priority - b.priority) })
			for _, r := range l.rules {
				got = append(got, r.tags[TagResource])
			}
		}
		for _, r := range tt.rules {
			want = append(want, r.ID)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: rules by priority (-want +got):\n%s", tt.name, diff)
		}
		if ops := mutating(e.rec.take()); len(ops) == 0 {
			t.Errorf("%s: no mutating call", tt.name)
		}
		e.deploy(s)
		if ops := mutating(e.rec.take()); len(ops) != 0 {
			t.Errorf("%s: Deploy again made %v", tt.name, ops)
		}
	}
}
