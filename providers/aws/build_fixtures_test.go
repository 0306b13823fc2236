package aws

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/dataplane/ir"
	"github.com/fleetgate/fleetgate/providers"
)

// Fixtures shared by the Build tests: a two-zone network, a gateway and its options.
const (
	testFleet   = "fleet-1"
	testGateway = "hub/infra/web"
	testVPC     = "vpc-0abc"
)

func testNetwork() Network {
	return Network{VPC: testVPC, Subnets: []Subnet{
		{ID: "subnet-b", AvailabilityZone: "us-east-1b", CIDR: "10.0.1.0/24"},
		{ID: "subnet-a", AvailabilityZone: "us-east-1a", CIDR: "10.0.0.0/24"},
	}}
}

func testModel(listeners ...ir.Listener) *providers.LoadBalancer {
	return &providers.LoadBalancer{
		Gateway: testGateway, Namespace: "infra", Name: "web", Class: "aws", Provider: "aws",
		Clusters: []string{"hub", "east"},
		Routing:  &ir.Config{Gateway: testGateway, Listeners: listeners},
	}
}

func albOptions() v1alpha1.AWSOptions {
	return v1alpha1.AWSOptions{LoadBalancerType: v1alpha1.AWSApplication, Scheme: schemeInternetFacing}
}

func nlbOptions() v1alpha1.AWSOptions {
	return v1alpha1.AWSOptions{LoadBalancerType: v1alpha1.AWSNetwork, Scheme: schemeInternetFacing}
}

func backend(name string, weight uint32, eps ...ir.Endpoint) ir.Backend {
	return ir.Backend{Name: name, Weight: weight, Endpoints: eps}
}

func ep(cluster, addr string, port, weight uint32) ir.Endpoint {
	return ir.Endpoint{Cluster: cluster, Address: addr, Port: port, Weight: weight}
}

func prefix(p string) *ir.StringMatch { return &ir.StringMatch{Type: ir.MatchPrefix, Value: p} }
func exact(p string) *ir.StringMatch  { return &ir.StringMatch{Type: ir.MatchExact, Value: p} }

func httpListener(port uint32, hosts ...ir.VirtualHost) ir.Listener {
	return ir.Listener{Name: "l", Port: port, Protocol: ir.ProtocolHTTP, VirtualHosts: hosts}
}

func pemBlock(data string) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte(data)})
}

// wantFingerprint is the fingerprint Build must give, computed independently of certificate().
func wantFingerprint(leaf, chain, key []byte) string {
	var all []byte
	for _, p := range [][]byte{leaf, chain, key} {
		all = append(all, p...)
		all = append(all, 0)
	}
	sum := sha256.Sum256(all)
	return hex.EncodeToString(sum[:])
}

// wantTG is the target group Build must make of a backend's endpoints, defaults filled in.
func wantTG(backendName, cluster string, port int32, protocol, version string, targets ...Target) TargetGroup {
	id := targetGroupID(backendName, cluster, port, protocol, version)
	tg := TargetGroup{
		ID:              id,
		Name:            targetGroupName(id, testGateway, testFleet, testVPC, targetTypeIP, version, backendService(backendName)),
		Protocol:        protocol,
		ProtocolVersion: version,
		Port:            port,
		VPC:             testVPC,
		Cluster:         cluster,
		Targets:         targets,
		Attributes:      map[string]string{attrDeregistrationDelay: "300"},
	}
	switch protocol {
	case protocolHTTP, protocolHTTPS:
		tg.HealthCheck = HealthCheck{Protocol: protocol, Port: trafficPort, Path: "/", Matcher: "200", IntervalSeconds: 30, TimeoutSeconds: 5, HealthyThreshold: 5, UnhealthyThreshold: 2}
		if version == versionGRPC {
			tg.HealthCheck.Path, tg.HealthCheck.Matcher = "/AWS.ALB/healthcheck", "0-99"
		}
	default:
		tg.HealthCheck = HealthCheck{Protocol: protocolTCP, Port: trafficPort, IntervalSeconds: 30, TimeoutSeconds: 10, HealthyThreshold: 5, UnhealthyThreshold: 2}
		tg.Attributes[attrProxyProtocolV2] = "false"
		tg.Attributes[attrStickiness] = "false"
	}
	return tg
}

func fixed404() Action {
	return Action{Fixed: &FixedResponse{StatusCode: "404", ContentType: "text/plain"}}
}
