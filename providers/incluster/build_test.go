package incluster

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/providers"
)

func testModel() *providers.LoadBalancer {
	return &providers.LoadBalancer{
		Gateway: "east/apps/web", Namespace: "apps", Name: "web", Clusters: []string{"east"},
		Ports: []providers.Port{
			{Port: 53, Transport: providers.TransportUDP, Protocol: "UDP"},
			{Port: 443, Transport: providers.TransportTCP, Protocol: "HTTPS"},
		},
		Labels:      map[string]string{"team": "edge"},
		Annotations: map[string]string{"note": "x"},
		GatewayUIDs: map[string]string{"east": "uid-1"},
	}
}

func TestObjectName(t *testing.T) {
	tests := []struct {
		name, gwName, key, wantPrefix string
	}{
		{name: "plain", gwName: "web", key: "c/ns/web", wantPrefix: "fleetgate-web-"},
		{name: "dots-and-caps", gwName: "Web.Example", key: "c/ns/Web.Example", wantPrefix: "fleetgate-web-example-"},
		{name: "long", gwName: strings.Repeat("a", 253), key: "c/ns/" + strings.Repeat("a", 253), wantPrefix: "fleetgate-aaaa"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ObjectName(&providers.LoadBalancer{Gateway: tt.key, Name: tt.gwName})
			if errs := validation.IsDNS1035Label(got); len(errs) > 0 {
				t.Errorf("ObjectName = %q: %v", got, errs)
			}
			if !strings.HasPrefix(got, tt.wantPrefix) {
				t.Errorf("ObjectName = %q, want prefix %q", got, tt.wantPrefix)
			}
		})
	}
	a := ObjectName(&providers.LoadBalancer{Gateway: "c1/ns/web", Name: "web"})
	b := ObjectName(&providers.LoadBalancer{Gateway: "c2/ns/web", Name: "web"})
	if a == b {
		t.Errorf("two gateway keys share the name %q", a)
	}
}

func TestPlanAddresses(t *testing.T) {
	ip := func(v string) providers.Address {
		return providers.Address{Type: providers.AddressTypeIPAddress, Value: v}
	}
	tests := []struct {
		name  string
		addrs []providers.Address
		typ   corev1.ServiceType
		want  addressPlan
	}{
		{name: "none", typ: corev1.ServiceTypeLoadBalancer},
		{name: "one-ip-loadbalancer", addrs: []providers.Address{ip("10.0.0.1")}, typ: corev1.ServiceTypeLoadBalancer,
			want: addressPlan{loadBalancerIP: "10.0.0.1"}},
		{name: "ip-without-value-is-any", addrs: []providers.Address{ip("")}, typ: corev1.ServiceTypeLoadBalancer},
		{name: "two-ips-loadbalancer", addrs: []providers.Address{ip("10.0.0.1"), ip("10.0.0.2")}, typ: corev1.ServiceTypeLoadBalancer,
			want: addressPlan{loadBalancerIP: "10.0.0.1", reason: providers.ReasonUnsupportedAddress,
				message: "a LoadBalancer Service takes one requested IP, got a second one (10.0.0.2)"}},
		{name: "ips-clusterip-become-external", addrs: []providers.Address{ip("10.0.0.1"), ip("fd00::1")}, typ: corev1.ServiceTypeClusterIP,
			want: addressPlan{externalIPs: []string{"10.0.0.1", "fd00::1"}}},
		{name: "bad-ip", addrs: []providers.Address{ip("10.0.0.300")}, typ: corev1.ServiceTypeNodePort,
			want: addressPlan{reason: providers.ReasonAddressNotUsable, message: `requested address "10.0.0.300" is not an IP address`}},
		{name: "hostname", addrs: []providers.Address{{Type: providers.AddressTypeHostname, Value: "a.example"}}, typ: corev1.ServiceTypeLoadBalancer,
			want: addressPlan{reason: providers.ReasonUnsupportedAddress,
				message: `the in-cluster provider cannot request Hostname addresses ("a.example"); a Service only takes IPs`}},
		{name: "custom-type", addrs: []providers.Address{{Type: "example.com/pool", Value: "p"}}, typ: corev1.ServiceTypeLoadBalancer,
			want: addressPlan{reason: providers.ReasonUnsupportedAddress,
				message: `address type "example.com/pool" is not supported by the in-cluster provider`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := planAddresses(&providers.LoadBalancer{Addresses: tt.addrs}, tt.typ)
			if d := cmp.Diff(tt.want, got, cmp.AllowUnexported(addressPlan{})); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestNewNeedsClientAndImage(t *testing.T) {
	client := func(string) (client.Client, error) { return nil, nil }
	tests := []struct {
		name    string
		opts    Options
		wantErr bool
	}{
		{name: "ok", opts: Options{Client: client, Image: "img"}},
		{name: "no-client", opts: Options{Image: "img"}, wantErr: true},
		{name: "no-image", opts: Options{Client: client}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.opts); (err != nil) != tt.wantErr {
				t.Errorf("New: error %v, want error %v", err, tt.wantErr)
			}
		})
	}
}

func wantMeta(lb *providers.LoadBalancer) (map[string]string, map[string]string, *metav1ac.OwnerReferenceApplyConfiguration) {
	labels := map[string]string{
		"team": "edge", labelComponent: componentProxy,
		providers.LabelManagedBy: providers.ManagedBy, providers.LabelGateway: providers.GatewayID(lb.Gateway),
		providers.LabelGatewayNamespace: "apps", providers.LabelGatewayName: "web", providers.LabelGatewayAPIName: "web",
	}
	annotations := map[string]string{"note": "x", providers.AnnotationGateway: lb.Gateway}
	owner := metav1ac.OwnerReference().WithAPIVersion("gateway.networking.k8s.io/v1").WithKind("Gateway").
		WithName("web").WithUID("uid-1").WithController(true)
	return labels, annotations, owner
}

func TestBuildService(t *testing.T) {
	base := testModel()
	name := ObjectName(base)
	labels, annotations, owner := wantMeta(base)
	sel := map[string]string{
		providers.LabelManagedBy: providers.ManagedBy, providers.LabelGateway: providers.GatewayID(base.Gateway),
		labelComponent: componentProxy,
	}
	ports := []*corev1ac.ServicePortApplyConfiguration{
		corev1ac.ServicePort().WithName("udp-53").WithProtocol(corev1.ProtocolUDP).WithPort(53).WithTargetPort(intstr.FromInt32(53)),
		corev1ac.ServicePort().WithName("tcp-443").WithProtocol(corev1.ProtocolTCP).WithPort(443).WithTargetPort(intstr.FromInt32(443)),
	}
	svc := func(spec *corev1ac.ServiceSpecApplyConfiguration) *corev1ac.ServiceApplyConfiguration {
		return corev1ac.Service(name, "apps").WithLabels(labels).WithAnnotations(annotations).
			WithOwnerReferences(owner).WithSpec(spec.WithSelector(sel).WithPorts(ports...))
	}
	tests := []struct {
		name    string
		params  json.RawMessage
		cluster string
		plan    addressPlan
		want    *corev1ac.ServiceApplyConfiguration
	}{{
		name: "default-loadbalancer", cluster: "east",
		want: svc(corev1ac.ServiceSpec().WithType(corev1.ServiceTypeLoadBalancer)),
	}, {
		name: "requested-ip", cluster: "east", plan: addressPlan{loadBalancerIP: "10.0.0.1"},
		want: svc(corev1ac.ServiceSpec().WithType(corev1.ServiceTypeLoadBalancer).WithLoadBalancerIP("10.0.0.1")),
	}, {
		name: "nodeport-external-ips", cluster: "east", params: inClusterParams(0, "NodePort"),
		plan: addressPlan{externalIPs: []string{"10.0.0.1"}},
		want: svc(corev1ac.ServiceSpec().WithType(corev1.ServiceTypeNodePort).WithExternalIPs("10.0.0.1")),
	}, {
		name: "no-uid-no-owner", cluster: "west", params: inClusterParams(0, "ClusterIP"),
		want: corev1ac.Service(name, "apps").WithLabels(labels).WithAnnotations(annotations).
			WithSpec(corev1ac.ServiceSpec().WithType(corev1.ServiceTypeClusterIP).WithSelector(sel).WithPorts(ports...)),
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lb := testModel()
			lb.Parameters = tt.params
			if d := cmp.Diff(tt.want, buildService(lb, tt.cluster, tt.plan)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestBuildDeployment(t *testing.T) {
	p := &Provider{opts: Options{Image: "img:1", XDSAddress: "xds:1", Args: DefaultArgs}}
	lb := testModel()
	lb.Parameters = inClusterParams(3, "")
	name := ObjectName(lb)
	labels, annotations, owner := wantMeta(lb)
	sel := map[string]string{
		providers.LabelManagedBy: providers.ManagedBy, providers.LabelGateway: providers.GatewayID(lb.Gateway),
		labelComponent: componentProxy,
	}
	// The pods carry the infrastructure labels and the ownership labels, like every other object.
	podLabels := labels
	want := appsv1ac.Deployment(name, "apps").WithLabels(labels).WithAnnotations(annotations).
		WithOwnerReferences(owner).
		WithSpec(appsv1ac.DeploymentSpec().WithReplicas(3).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(sel)).
			WithTemplate(corev1ac.PodTemplateSpec().WithLabels(podLabels).WithAnnotations(map[string]string{"note": "x"}).
				WithSpec(corev1ac.PodSpec().WithServiceAccountName(name).WithAutomountServiceAccountToken(false).
					WithSecurityContext(corev1ac.PodSecurityContext().WithRunAsNonRoot(true).WithRunAsUser(65532).WithRunAsGroup(65532).WithFSGroup(65532).
						WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault)).
						WithSysctls(corev1ac.Sysctl().WithName("net.ipv4.ip_unprivileged_port_start").WithValue("0"))).
					WithContainers(corev1ac.Container().WithName("proxy").WithImage("img:1").
						WithArgs("dataplane", "--gateway", "east/apps/web", "--xds-address", "xds:1").
						WithSecurityContext(corev1ac.SecurityContext().WithAllowPrivilegeEscalation(false).
							WithReadOnlyRootFilesystem(true).WithCapabilities(corev1ac.Capabilities().WithDrop("ALL"))).
						WithPorts(
							corev1ac.ContainerPort().WithName("udp-53").WithContainerPort(53).WithProtocol(corev1.ProtocolUDP),
							corev1ac.ContainerPort().WithName("tcp-443").WithContainerPort(443).WithProtocol(corev1.ProtocolTCP),
						)))))
	if d := cmp.Diff(want, p.buildDeployment(lb, "east")); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}

	// Defaults: two replicas; Customize sees the pod spec.
	lb.Parameters = nil
	p.opts.Customize = func(_ *providers.LoadBalancer, cluster string, pod *corev1ac.PodSpecApplyConfiguration) {
		pod.WithNodeSelector(map[string]string{"cluster": cluster})
	}
	got := p.buildDeployment(lb, "east")
	if *got.Spec.Replicas != DefaultReplicas {
		t.Errorf("replicas %d, want %d", *got.Spec.Replicas, DefaultReplicas)
	}
	if d := cmp.Diff(map[string]string{"cluster": "east"}, got.Spec.Template.Spec.NodeSelector); d != "" {
		t.Errorf("Customize (-want +got):\n%s", d)
	}
}

// inClusterParams is a GatewayClassConfig spec.inCluster as the model carries it; 0 and "" leave a
// field unset.
func inClusterParams(replicas int32, serviceType string) json.RawMessage {
	in := v1alpha1.InClusterOptions{ServiceType: v1alpha1.ServiceType(serviceType)}
	if replicas > 0 {
		in.Replicas = &replicas
	}
	b, err := json.Marshal(in)
	if err != nil {
		panic(err)
	}
	return b
}

func TestDecodeParams(t *testing.T) {
	tests := []struct {
		name    string
		raw     string
		want    *v1alpha1.InClusterOptions
		wantErr string // a part of the error; empty: no error
	}{
		{name: "unset", raw: ""},
		{name: "null", raw: "null"},
		{name: "empty", raw: "{}", want: &v1alpha1.InClusterOptions{}},
		{name: "valid", raw: `{"replicas":3,"serviceType":"NodePort"}`,
			want: &v1alpha1.InClusterOptions{Replicas: ptr.To(int32(3)), ServiceType: "NodePort"}},
		{name: "bounds", raw: `{"replicas":100,"serviceType":"ClusterIP"}`,
			want: &v1alpha1.InClusterOptions{Replicas: ptr.To(int32(100)), ServiceType: "ClusterIP"}},
		{name: "unknown-field", raw: `{"replica":3}`, wantErr: `unknown field "replica"`},
		{name: "replicas-zero", raw: `{"replicas":0}`, wantErr: "within 1..100, not 0"},
		{name: "replicas-too-many", raw: `{"replicas":101}`, wantErr: "within 1..100, not 101"},
		{name: "replicas-not-a-number", raw: `{"replicas":"3"}`, wantErr: "inCluster parameters"},
		{name: "bad-service-type", raw: `{"serviceType":"ExternalName"}`, wantErr: `not "ExternalName"`},
		{name: "not-an-object", raw: `[1]`, wantErr: "inCluster parameters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decodeParams(json.RawMessage(tt.raw))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("decodeParams(%s) error = %v, want one containing %q", tt.raw, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("decodeParams(%s): %v", tt.raw, err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("decodeParams(%s) (-want +got):\n%s", tt.raw, d)
			}
		})
	}
}
