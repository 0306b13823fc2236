package aws

import (
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	"github.com/fleetgate/fleetgate/dataplane/ir"
	"github.com/fleetgate/fleetgate/providers"
)

// TestBuildNetwork builds a whole NLB Stack: TCP and UDP on one port, TLS passthrough and
// termination, client IP affinity, a listener without backend, Elastic IPs, NLB attributes and dry run.
func TestBuildNetwork(t *testing.T) {
	leaf, key := pemBlock("leaf-c"), []byte("key-c")
	cert := Certificate{ID: certificateID("infra/c"), CertPEM: leaf, KeyPEM: key, Fingerprint: wantFingerprint(leaf, nil, key)}
	dns := backend("hub/infra/dns:53", 1, ep("east", "172.16.0.1", 53, 0), ep("hub", "10.0.0.20", 53, 0))
	model := testModel(
		ir.Listener{Name: "tcp-53", Port: 53, Protocol: ir.ProtocolTCP, SourceRanges: []string{"10.0.0.0/8"}, L4: &ir.L4Route{Name: "TCPRoute/infra/dns/0", Backends: []ir.Backend{dns}}},
		ir.Listener{Name: "udp-53", Port: 53, Protocol: ir.ProtocolUDP, L4: &ir.L4Route{Name: "UDPRoute/infra/dns/0", Backends: []ir.Backend{dns}, ClientIPAffinity: true}},
		ir.Listener{Name: "tls-443", Port: 443, Protocol: ir.ProtocolTLS, SNIRoutes: []ir.SNIRoute{{Name: "TLSRoute/infra/pt/0", Hostnames: []string{"pt.example.com"},
			Backends: []ir.Backend{backend("hub/infra/pt:443", 1, ep("hub", "10.0.0.21", 8443, 0))}}}},
		ir.Listener{Name: "udp-5000", Port: 5000, Protocol: ir.ProtocolUDP, L4: &ir.L4Route{Name: "UDPRoute/infra/none/0"}},
		ir.Listener{Name: "tls-8443", Port: 8443, Protocol: ir.ProtocolTLS, Certificates: []ir.Certificate{{Name: "infra/c", CertPEM: leaf, KeyPEM: key}},
			SNIRoutes: []ir.SNIRoute{{Name: "TLSRoute/infra/term/0", Terminate: true, Backends: []ir.Backend{
				{Name: "hub/infra/gone:80", Weight: 1, Invalid: true}, backend("hub/infra/app:8080", 1, ep("hub", "10.0.0.22", 8080, 0))}}}},
	)
	model.Addresses = []providers.Address{{Type: AddressTypeEIPAllocation, Value: "eipalloc-1"}, {Type: AddressTypeEIPAllocation, Value: "eipalloc-2"}}
	model.Annotations = map[string]string{AnnotationDryRun: "true"}
	opts := nlbOptions()
	opts.CrossZone = true
	opts.PreserveClientIP = ptr.To(true)
	opts.ProxyProtocolV2 = true

	nlbTG := func(tg TargetGroup) TargetGroup {
		tg.Attributes[attrProxyProtocolV2] = "true"
		tg.Attributes[attrPreserveClientIP] = "true"
		return tg
	}
	dnsTG := nlbTG(wantTG("hub/infra/dns:53", "", 53, protocolTCPUDP, "", Target{IP: "10.0.0.20", Port: 53}, Target{IP: "172.16.0.1", Port: 53, AvailabilityZone: "all"}))
	dnsTG.Attributes[attrStickiness], dnsTG.Attributes[attrStickinessType] = "true", stickinessSourceIP
	ptTG := nlbTG(wantTG("hub/infra/pt:443", "", 443, protocolTCP, "", Target{IP: "10.0.0.21", Port: 8443}))
	appTG := nlbTG(wantTG("hub/infra/app:8080", "", 8080, protocolTCP, "", Target{IP: "10.0.0.22", Port: 8080}))
	// A listener without a backend is open like a Service without endpoints: an empty target group.
	noneTG := nlbTG(wantTG("no-backend-udp:5000", "", 5000, protocolUDP, ""))
	forward := func(tg TargetGroup) Action {
		return Action{Forward: []WeightedTargetGroup{{TargetGroup: tg.ID, Weight: 1}}}
	}
	want := &Stack{
		Gateway: testGateway, GatewayID: providers.GatewayID(testGateway), Clusters: []string{"east", "hub"},
		LoadBalancer: LoadBalancer{
			Name: loadBalancerName(testGateway, testFleet, "web", TypeNetwork, schemeInternetFacing), Type: TypeNetwork,
			Scheme: schemeInternetFacing, IPAddressType: "ipv4",
			// The network lists subnet-b first: it gets the first allocation.
			SubnetMappings: []SubnetMapping{{SubnetID: "subnet-a", AllocationID: "eipalloc-2"}, {SubnetID: "subnet-b", AllocationID: "eipalloc-1"}},
			Attributes:     map[string]string{attrDeletionProtection: "false", attrAccessLogsEnabled: "false", attrCrossZone: "true"},
		},
		TargetGroups: sortTGs(dnsTG, ptTG, appTG, noneTG),
		Listeners: []Listener{
			{ID: "listener/443", Port: 443, Protocol: protocolTCP, DefaultAction: forward(ptTG)},
			{ID: "listener/5000", Port: 5000, Protocol: protocolUDP, DefaultAction: forward(noneTG)},
			{ID: "listener/53", Port: 53, Protocol: protocolTCPUDP, DefaultAction: forward(dnsTG)},
			{ID: "listener/8443", Port: 8443, Protocol: protocolTLS, Certificates: []string{cert.ID}, SSLPolicy: defaultSSLPolicy, DefaultAction: forward(appTG)},
		},
		Certificates: []Certificate{cert},
		Notes: []string{
			"listener 53: source ranges are not enforced by the network load balancer (no security group)",
			"listener 443: route TLSRoute/infra/pt/0: a network load balancer does not check SNI, so connections for any hostname reach it",
		},
		DryRun: true,
	}
	got, err := Build(model, opts, testNetwork(), testFleet)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("Build (-want +got):\n%s", diff)
	}
}
