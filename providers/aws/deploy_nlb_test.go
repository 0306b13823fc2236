package aws

import (
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/google/go-cmp/cmp"

	"github.com/fleetgate/fleetgate/providers"
)

func (e *env) nlbStack(cert Certificate, mappings []SubnetMapping) *Stack {
	key := "c1/ns/" + e.prefix + "-nlb"
	hc := HealthCheck{Protocol: "TCP", Port: "traffic-port", IntervalSeconds: 10, TimeoutSeconds: 10, HealthyThreshold: 3, UnhealthyThreshold: 3}
	tg := func(id, proto string, port int32) TargetGroup {
		return TargetGroup{ID: id, Name: e.prefix + "-" + id[3:], Protocol: proto, Port: port, VPC: e.vpc, HealthCheck: hc,
			Attributes: map[string]string{"preserve_client_ip.enabled": "true", "proxy_protocol_v2.enabled": "false"},
			Targets:    []Target{{IP: "10.0.1.30", Port: port}, {IP: "192.168.0.7", Port: port, AvailabilityZone: "all"}}}
	}
	forward := func(id string) Action { return Action{Forward: []WeightedTargetGroup{{id, 1}}} }
	return &Stack{
		Gateway: key, GatewayID: providers.GatewayID(key), Clusters: []string{"c1"},
		LoadBalancer: LoadBalancer{Name: e.prefix + "-nlb", Type: TypeNetwork, Scheme: "internet-facing", IPAddressType: "ipv4",
			SubnetMappings: mappings, Attributes: map[string]string{"load_balancing.cross_zone.enabled": "true"}},
		TargetGroups: []TargetGroup{tg("tg/tcp", "TCP", 5432), tg("tg/tls", "TCP", 8443), tg("tg/udp", "UDP", 53)},
		Listeners: []Listener{
			{ID: "listener/53", Port: 53, Protocol: "UDP", DefaultAction: forward("tg/udp")},
			{ID: "listener/443", Port: 443, Protocol: "TLS", Certificates: []string{cert.ID}, SSLPolicy: "ELBSecurityPolicy-TLS13-1-2-2021-06", DefaultAction: forward("tg/tls")},
			{ID: "listener/5432", Port: 5432, Protocol: "TCP", DefaultAction: forward("tg/tcp")},
		},
		Certificates: []Certificate{cert},
	}
}

// TestDeployNLB: TCP, UDP and TLS listeners to IP target groups, static addresses through subnet
// mappings. moto drops the mappings' allocation IDs from its answers, so the test reads them
// from the sdkCall request, and the addresses from EC2.
func TestDeployNLB(t *testing.T) {
	e := newEnv(t)
	alloc1, ip1 := e.eip()
	alloc2, ip2 := e.eip()
	mappings := []SubnetMapping{{e.subnets[0], alloc1}, {e.subnets[1], alloc2}}
	s := e.nlbStack(selfSigned(t, "tls.example.com", 1), mappings)
	dep := e.deploy(s)

	var create *elbv2.CreateLoadBalancerInput
	for _, c := range e.rec.take() {
		if in, ok := c.Input.(*elbv2.CreateLoadBalancerInput); ok {
			create = in
		}
	}
	if create == nil {
		t.Fatal("no CreateLoadBalancer call")
	}
	var sent []SubnetMapping
	for _, m := range create.SubnetMappings {
		sent = append(sent, SubnetMapping{aws.ToString(m.SubnetId), aws.ToString(m.AllocationId)})
	}
	if diff := cmp.Diff(mappings, sent); diff != "" || len(create.Subnets) != 0 || len(create.SecurityGroups) != 0 {
		t.Errorf("CreateLoadBalancer sent mappings (-want +got):\n%s subnets %v security groups %v", diff, create.Subnets, create.SecurityGroups)
	}
	wantAddrs := []string{ip1, ip2}
	slices.Sort(wantAddrs)
	if diff := cmp.Diff(wantAddrs, dep.Addresses); diff != "" {
		t.Errorf("Deployed.Addresses (-want +got):\n%s", diff)
	}

	v := e.view(s.LoadBalancer.Name)
	if v.LB.Type != "network" || v.LB.Subnets != 2 || len(v.LB.SecurityGroups) != 0 {
		t.Errorf("load balancer %+v, want a network LB in 2 subnets without security group", v.LB)
	}
	p := e.prefix
	wantListeners := map[int32]listenerView{
		53:   {Protocol: "UDP", Default: "forward " + p + "-udp=1"},
		443:  {Protocol: "TLS", Certs: []string{"tls.example.com"}, SSLPolicy: "ELBSecurityPolicy-TLS13-1-2-2021-06", Default: "forward " + p + "-tls=1"},
		5432: {Protocol: "TCP", Default: "forward " + p + "-tcp=1"},
	}
	if diff := cmp.Diff(wantListeners, v.Listeners); diff != "" {
		t.Errorf("listeners (-want +got):\n%s", diff)
	}
	for name, tg := range v.TargetGroups {
		if len(tg.Targets) != 2 {
			t.Errorf("target group %s has targets %v, want 2", name, tg.Targets)
		}
	}
	if len(v.TargetGroups) != 3 || v.TargetGroups[p+"-udp"].Protocol != "UDP" {
		t.Errorf("target groups %v", v.TargetGroups)
	}
	e.deploy(s)
	if ops := mutating(e.rec.take()); len(ops) != 0 {
		t.Errorf("second Deploy made %v", ops)
	}

	// The UDP listener moves to another target group (its route's backend changed): one
	// ModifyListener that leaves the protocol alone.
	udp2 := s.TargetGroups[2]
	udp2.ID, udp2.Name = "tg/udp2", p+"-udp2"
	s.TargetGroups = append(s.TargetGroups, udp2)
	s.Listeners[0].DefaultAction = Action{Forward: []WeightedTargetGroup{{"tg/udp2", 1}}}
	e.deploy(s)
	for _, c := range e.rec.take() {
		if in, ok := c.Input.(*elbv2.ModifyListenerInput); ok && (in.Protocol != "" || in.Port != nil) {
			t.Errorf("ModifyListener sent protocol %q port %v for a new default action only", in.Protocol, in.Port)
		}
	}
	if got := e.view(s.LoadBalancer.Name).Listeners[53]; got.Default != "forward "+p+"-udp2=1" {
		t.Errorf("UDP listener %+v, want it forwarding to %s-udp2", got, p)
	}
}
