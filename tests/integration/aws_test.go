package integration

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	"github.com/go-logr/logr/testr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1a2 "sigs.k8s.io/gateway-api/apis/v1alpha2"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/controllers"
	awsprovider "github.com/fleetgate/fleetgate/providers/aws"
	"github.com/fleetgate/fleetgate/providers/aws/mototest"
	"github.com/fleetgate/fleetgate/tests/testbed"
)

// awsEnv is a real API server, the operator with the AWS provider, and moto behind a recording shim.
type awsEnv struct {
	t     *testing.T
	c     *testbed.Cluster
	moto  *mototest.Server
	shim  *mototest.Faults
	elb   *elb.Client
	ec2   *ec2.Client
	vpc   string
	fleet string
	// operator, when set (newDNSEnvWith), starts the operator and returns its stop; stop stops
	// the one running since the env was made.
	operator func() (stop func())
	stop     func()
}

// newAWSEnv starts moto (skipping outside CI when it is not installed), makes a VPC with two
// tagged public subnets, and runs the operator with the aws provider against it.
func newAWSEnv(t *testing.T) *awsEnv {
	t.Helper()
	e := newMotoEnv(t, "it-fleet")
	ctx := t.Context()
	must(t, e.c.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "aws-creds"}}))
	must(t, e.c.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "aws-creds", Name: "keys"},
		StringData: map[string]string{"access-key-id": "testing", "secret-access-key": "testing"}}))
	p, err := awsprovider.New(awsprovider.Options{
		Fleet:       e.fleet,
		Defaults:    v1alpha1.AWSOptions{Region: mototest.Region, Endpoint: e.shim.URL()},
		Secrets:     secretsOf(e.c.Client),
		Probes:      controllers.NewPodProbes(func(string) (client.Client, error) { return e.c.Client, nil }),
		MaxAttempts: 2, MaxBackoff: 50 * time.Millisecond,
		Registerer: prometheus.NewRegistry(),
		Log:        testr.New(t),
	})
	must(t, err)
	runWithProvider(t, e.c, string(v1alpha1.ProviderAWS), p, controllers.Options{})
	return e
}

// newMotoEnv starts moto behind the fault shim and a hub API server, and makes the VPC. Classes
// name a Secret; the operator's own credentials (LoadBalancer Services, the sweep of its default
// account) come from the environment, where the SDK's default chain finds them.
func newMotoEnv(t *testing.T, fleet string) *awsEnv {
	t.Helper()
	srv := mototest.ForTest(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "operator")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "operator")
	e := &awsEnv{t: t, c: testbed.ForTest(t, "hub")[0], moto: srv, shim: mototest.NewFaults(srv.URL), fleet: fleet}
	t.Cleanup(e.shim.Close)
	cfg, err := mototest.Config(t.Context(), srv.URL)
	must(t, err)
	e.elb, e.ec2 = elb.NewFromConfig(cfg), ec2.NewFromConfig(cfg)
	e.vpc = e.network()
	return e
}

// network creates the VPC and two subnets (two zones) tagged for internet-facing load balancers.
func (e *awsEnv) network() string {
	ctx := e.t.Context()
	vpc, err := e.ec2.CreateVpc(ctx, &ec2.CreateVpcInput{CidrBlock: aws.String("10.0.0.0/16")})
	must(e.t, err)
	for i, az := range []string{"us-east-1a", "us-east-1b"} {
		_, err := e.ec2.CreateSubnet(ctx, &ec2.CreateSubnetInput{VpcId: vpc.Vpc.VpcId, AvailabilityZone: aws.String(az),
			CidrBlock: aws.String(fmt.Sprintf("10.0.%d.0/24", i+1)),
			TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeSubnet,
				Tags: []ec2types.Tag{{Key: aws.String("kubernetes.io/role/elb"), Value: aws.String("1")}}}}})
		must(e.t, err)
	}
	return *vpc.Vpc.VpcId
}

// TestAWSProvisioning runs Gateways of both AWS classes (HTTPRoute on an ALB, TCPRoute on an NLB), an
// Ingress of an ALB class and a LoadBalancer Service of class aws-nlb on a real API server against
// moto: the ELBv2 resources are what the objects ask for, every object gets its load balancer's
// address, a route added to a live ALB costs only its own calls, and deleting everything leaves
// nothing tagged for this fleet.
func TestAWSProvisioning(t *testing.T) {
	e := newAWSEnv(t)
	ctx, cl := t.Context(), e.c.Client
	creds := &v1alpha1.AWSCredentials{SecretRef: &v1alpha1.ObjectRef{Namespace: "aws-creds", Name: "keys"}}
	for name, typ := range map[string]v1alpha1.AWSLoadBalancerType{"aws-alb": v1alpha1.AWSApplication, "aws-nlb": v1alpha1.AWSNetwork} {
		must(t, cl.Create(ctx, &v1alpha1.GatewayClassConfig{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1alpha1.GatewayClassConfigSpec{Provider: v1alpha1.ProviderAWS,
				AWS: &v1alpha1.AWSOptions{LoadBalancerType: typ, Credentials: creds, VPC: e.vpc, Tags: map[string]string{"team": "edge"}}}}))
		must(t, cl.Create(ctx, &gwv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: gwv1.GatewayClassSpec{ControllerName: v1alpha1.ControllerName,
				ParametersRef: &gwv1.ParametersReference{Group: v1alpha1.Group, Kind: "GatewayClassConfig", Name: name}}}))
	}
	e.backend("web", corev1.ProtocolTCP, 8080, "10.0.1.10", "10.0.2.10")
	e.backend("tcp", corev1.ProtocolTCP, 9000, "10.0.1.20")
	e.backend("dnsb", corev1.ProtocolUDP, 5353, "10.0.2.20")
	e.backend("web2", corev1.ProtocolTCP, 8080, "10.0.1.11")
	// web2's pod is ready by /healthz on its serving port: its target group checks the same.
	must(t, cl.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web2-0"}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "app", Image: "web", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}}}}}}}))
	crt, key, _ := testbed.SelfSignedPEM(t, "grpc.example.com")
	tlsSecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "grpc-tls"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: crt, corev1.TLSPrivateKeyKey: key}}
	must(t, cl.Create(ctx, tlsSecret))
	must(t, cl.Create(ctx, &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "alb"},
		Spec: gwv1.GatewaySpec{GatewayClassName: "aws-alb",
			Listeners: []gwv1.Listener{{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType},
				{Name: "https", Port: 443, Protocol: gwv1.HTTPSProtocolType, Hostname: ptr.To[gwv1.Hostname]("grpc.example.com"),
					TLS: &gwv1.ListenerTLSConfig{CertificateRefs: []gwv1.SecretObjectReference{{Name: "grpc-tls"}}}}}}}))
	must(t, cl.Create(ctx, awsRoute("web", "a.example.com", "/api")))
	must(t, cl.Create(ctx, &gwv1.GRPCRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "grpc"},
		Spec: gwv1.GRPCRouteSpec{CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "alb", SectionName: ptr.To[gwv1.SectionName]("https")}}},
			Rules: []gwv1.GRPCRouteRule{{
				Matches: []gwv1.GRPCRouteMatch{{Method: &gwv1.GRPCMethodMatch{Service: ptr.To("shop.Cart")}}},
				BackendRefs: []gwv1.GRPCBackendRef{{BackendRef: gwv1.BackendRef{BackendObjectReference: gwv1.BackendObjectReference{
					Name: "web", Port: ptr.To[gwv1.PortNumber](80)}}}}}}}}))
	must(t, cl.Create(ctx, &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "nlb"},
		Spec: gwv1.GatewaySpec{GatewayClassName: "aws-nlb",
			Listeners: []gwv1.Listener{{Name: "tcp", Port: 9000, Protocol: gwv1.TCPProtocolType},
				{Name: "udp", Port: 5353, Protocol: gwv1.UDPProtocolType},
				{Name: "tls", Port: 8443, Protocol: gwv1.TLSProtocolType, TLS: &gwv1.ListenerTLSConfig{Mode: ptr.To(gwv1.TLSModePassthrough)}}}}}))
	must(t, cl.Create(ctx, &gwv1a2.UDPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "udp"},
		Spec: gwv1a2.UDPRouteSpec{CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "nlb", SectionName: ptr.To[gwv1.SectionName]("udp")}}},
			Rules: []gwv1a2.UDPRouteRule{{BackendRefs: []gwv1.BackendRef{{BackendObjectReference: gwv1.BackendObjectReference{
				Name: "dnsb", Port: ptr.To[gwv1.PortNumber](5353)}}}}}}}))
	must(t, cl.Create(ctx, &gwv1.TLSRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "tls"},
		Spec: gwv1.TLSRouteSpec{CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "nlb", SectionName: ptr.To[gwv1.SectionName]("tls")}}},
			Hostnames: []gwv1.Hostname{"secure.example.com"},
			Rules: []gwv1.TLSRouteRule{{BackendRefs: []gwv1.BackendRef{{BackendObjectReference: gwv1.BackendObjectReference{
				Name: "tcp", Port: ptr.To[gwv1.PortNumber](9000)}}}}}}}))
	must(t, cl.Create(ctx, &gwv1a2.TCPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "tcp"},
		Spec: gwv1a2.TCPRouteSpec{CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "nlb"}}},
			Rules: []gwv1a2.TCPRouteRule{{BackendRefs: []gwv1.BackendRef{{BackendObjectReference: gwv1.BackendObjectReference{
				Name: "tcp", Port: ptr.To[gwv1.PortNumber](9000)}}}}}}}))
	must(t, cl.Create(ctx, &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "aws"},
		Spec: networkingv1.IngressClassSpec{Controller: v1alpha1.IngressControllerName,
			Parameters: &networkingv1.IngressClassParametersReference{APIGroup: ptr.To(v1alpha1.Group), Kind: "GatewayClassConfig", Name: "aws-alb"}}}))
	must(t, cl.Create(ctx, &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "shop"},
		Spec: networkingv1.IngressSpec{IngressClassName: ptr.To("aws"),
			Rules: []networkingv1.IngressRule{ingressRule("shop.example.com", ingressPath(networkingv1.PathTypePrefix, "/", "web"))}}}))
	must(t, cl.Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "dns"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, LoadBalancerClass: ptr.To(v1alpha1.LoadBalancerClassAWSNLB),
			Ports: []corev1.ServicePort{{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt32(5353)}}}}))
	e.slice("dns", corev1.ProtocolUDP, 5353, "10.0.2.30")

	// Every object gets the DNS name of its own load balancer.
	albDNS := e.gatewayAddress("alb")
	nlbDNS := e.gatewayAddress("nlb")
	ingDNS := e.ingressAddress("shop")
	svcDNS := e.serviceAddress("dns")
	lbs := e.loadBalancers()
	if len(lbs) != 4 {
		t.Fatalf("%d load balancers tagged for the fleet, want 4: %v", len(lbs), lbNames(lbs))
	}
	byDNS := map[string]elbtypes.LoadBalancer{}
	for _, lb := range lbs {
		byDNS[*lb.DNSName] = lb
	}
	for dns, typ := range map[string]elbtypes.LoadBalancerTypeEnum{albDNS: elbtypes.LoadBalancerTypeEnumApplication,
		ingDNS: elbtypes.LoadBalancerTypeEnumApplication, nlbDNS: elbtypes.LoadBalancerTypeEnumNetwork, svcDNS: elbtypes.LoadBalancerTypeEnumNetwork} {
		lb, ok := byDNS[dns]
		if !ok {
			t.Fatalf("status address %s names no load balancer of the fleet", dns)
		}
		if lb.Type != typ {
			t.Errorf("%s: type %s, want %s", dns, lb.Type, typ)
		}
	}
	// The ALB routes a.example.com/api (and /api/*) to both web endpoints; user tags are on it.
	alb := byDNS[albDNS]
	rules := e.rules(alb)
	if !slices.ContainsFunc(rules, func(r string) bool {
		return strings.Contains(r, "host-header=[a.example.com]") && strings.Contains(r, "path-pattern=[/api /api/*]")
	}) {
		t.Errorf("no rule for a.example.com/api on the ALB; rules: %v", rules)
	}
	if got := e.targets(alb, 80); !slices.Equal(got, []string{"10.0.1.10:8080", "10.0.2.10:8080"}) {
		t.Errorf("ALB targets %v, want both web endpoints", got)
	}
	if tags := e.tags(*alb.LoadBalancerArn); tags["team"] != "edge" || tags[awsprovider.TagFleet] != e.fleet {
		t.Errorf("ALB tags %v: want team=edge and the fleet tag", tags)
	}
	// TLS passthrough is a TCP listener: the NLB hands the connection on unopened.
	if got := e.listeners(byDNS[nlbDNS]); !slices.Equal(got, []string{"TCP:8443", "TCP:9000", "UDP:5353"}) {
		t.Errorf("NLB listeners %v, want TCP:8443 TCP:9000 UDP:5353", got)
	}
	if got := e.listeners(alb); !slices.Equal(got, []string{"HTTP:80", "HTTPS:443"}) {
		t.Errorf("ALB listeners %v, want HTTP:80 HTTPS:443", got)
	}
	// The GRPCRoute's service match is a path prefix on the HTTPS listener, to a GRPC target group.
	if rules := e.rules(alb); !slices.ContainsFunc(rules, func(r string) bool {
		return strings.Contains(r, "host-header=[grpc.example.com]") && strings.Contains(r, "/shop.Cart/")
	}) {
		t.Errorf("no rule for grpc.example.com /shop.Cart/ on the ALB; rules: %v", rules)
	}
	if !slices.Contains(e.targetGroupVersions(alb), "GRPC") {
		t.Errorf("ALB target group protocol versions %v: want a GRPC one", e.targetGroupVersions(alb))
	}
	if got := e.listeners(byDNS[svcDNS]); !slices.Equal(got, []string{"UDP:53"}) {
		t.Errorf("Service NLB listeners %v, want UDP:53", got)
	}
	if got := e.targets(byDNS[svcDNS], 53); !slices.Equal(got, []string{"10.0.2.30:5353"}) {
		t.Errorf("Service NLB targets %v", got)
	}

	// A second route on the live ALB costs its own rule, not a rewrite of the load balancer.
	time.Sleep(2 * time.Second) // let every resync of the first pass finish
	before, _ := e.shim.Counts()
	must(t, cl.Create(ctx, awsRoute("web2", "b.example.com", "/")))
	testbed.Eventually(t, 60*time.Second, func() error {
		if rs := e.rules(alb); !slices.ContainsFunc(rs, func(r string) bool { return strings.Contains(r, "host-header=[b.example.com]") }) {
			return fmt.Errorf("no rule for b.example.com yet: %v", rs)
		}
		return nil
	})
	time.Sleep(time.Second)
	if after, _ := e.shim.Counts(); after-before > 3 || after == before {
		t.Errorf("adding a route made %d mutating calls, want 1 to 3", after-before)
	}

	// A traffic split 1:3 becomes a weighted forward, and a new split changes it in place.
	split := func(a, b int32) {
		var rt gwv1.HTTPRoute
		must(t, cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: "web"}, &rt))
		update(t, cl, &rt, func() {
			rt.Spec.Rules[0].BackendRefs = []gwv1.HTTPBackendRef{
				{BackendRef: gwv1.BackendRef{Weight: ptr.To(a), BackendObjectReference: gwv1.BackendObjectReference{Name: "web", Port: ptr.To[gwv1.PortNumber](80)}}},
				{BackendRef: gwv1.BackendRef{Weight: ptr.To(b), BackendObjectReference: gwv1.BackendObjectReference{Name: "web2", Port: ptr.To[gwv1.PortNumber](8080)}}}}
		})
	}
	for _, w := range [][2]int32{{1, 3}, {3, 1}} {
		split(w[0], w[1])
		testbed.Eventually(t, 60*time.Second, func() error {
			got := e.forwardWeights(alb, "a.example.com")
			if len(got) != 2 || got[0]*w[1] != got[1]*w[0] {
				return fmt.Errorf("forward weights of a.example.com %v, want the ratio %d:%d (web, web2)", got, w[0], w[1])
			}
			return nil
		})
	}

	// Health checks follow the pods' readiness probe where one is known (web2's).
	if got, want := e.healthCheckPaths(), map[string]string{"10.0.1.10 HTTP1": "/", "10.0.2.10 HTTP1": "/", "10.0.1.11 HTTP1": "/healthz",
		"10.0.1.10 GRPC": "/AWS.ALB/healthcheck", "10.0.2.10 GRPC": "/AWS.ALB/healthcheck"}; !maps.Equal(got, want) {
		t.Errorf("health check paths by target %v, want %v", got, want)
	}

	// A rotated certificate is re-imported into the same ACM certificate.
	imports := len(e.shim.Calls("ImportCertificate"))
	crt2, key2, _ := testbed.SelfSignedPEM(t, "grpc.example.com")
	update(t, cl, tlsSecret, func() { tlsSecret.Data = map[string][]byte{corev1.TLSCertKey: crt2, corev1.TLSPrivateKeyKey: key2} })
	testbed.Eventually(t, 60*time.Second, func() error {
		calls := e.shim.Calls("ImportCertificate")
		if len(calls) == imports {
			return fmt.Errorf("the rotated certificate was not imported")
		}
		if last := calls[len(calls)-1]; !strings.Contains(last.Body, "CertificateArn") {
			return fmt.Errorf("the rotated certificate was imported as a new one, not into the old ARN: %.200s", last.Body)
		}
		return nil
	})

	// Deleting every object deletes every resource of the fleet.
	for _, o := range []client.Object{
		&gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "alb"}},
		&gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "nlb"}},
		&networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "shop"}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "dns"}},
	} {
		must(t, cl.Delete(ctx, o))
	}
	testbed.Eventually(t, 90*time.Second, func() error {
		if left := e.owned(); len(left) > 0 {
			return fmt.Errorf("left in the account: %v", left)
		}
		return nil
	})
}

func awsRoute(name, host, path string) *gwv1.HTTPRoute {
	return &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: gwv1.HTTPRouteSpec{CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "alb"}}},
			Hostnames: []gwv1.Hostname{gwv1.Hostname(host)},
			Rules: []gwv1.HTTPRouteRule{{
				Matches: []gwv1.HTTPRouteMatch{{Path: &gwv1.HTTPPathMatch{Type: ptr.To(gwv1.PathMatchPathPrefix), Value: ptr.To(path)}}},
				BackendRefs: []gwv1.HTTPBackendRef{{BackendRef: gwv1.BackendRef{BackendObjectReference: gwv1.BackendObjectReference{
					Name: "web", Port: ptr.To[gwv1.PortNumber](80)}}}}}}}}
}

// backend creates a selectorless Service on port 80 (or port) and its EndpointSlice.
func (e *awsEnv) backend(name string, proto corev1.Protocol, port int32, ips ...string) {
	svcPort := port
	if name == "web" {
		svcPort = 80
	}
	must(e.t, e.c.Client.Create(e.t.Context(), &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "p", Port: svcPort, Protocol: proto, TargetPort: intstr.FromInt32(port)}}}}))
	e.slice(name, proto, port, ips...)
}

func (e *awsEnv) slice(svc string, proto corev1.Protocol, port int32, ips ...string) {
	eps := make([]discoveryv1.Endpoint, 0, len(ips))
	for i, ip := range ips {
		eps = append(eps, discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: fmt.Sprintf("%s-%d", svc, i)}})
	}
	name := "p"
	if svc == "dns" {
		name = "dns"
	}
	must(e.t, e.c.Client.Create(e.t.Context(), &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: svc + "-1",
			Labels: map[string]string{discoveryv1.LabelServiceName: svc, discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io"}},
		AddressType: discoveryv1.AddressTypeIPv4, Endpoints: eps,
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To(name), Port: ptr.To(port), Protocol: ptr.To(proto)}},
	}))
}

func (e *awsEnv) gatewayAddress(name string) string {
	var addr string
	testbed.Eventually(e.t, 90*time.Second, func() error {
		var gw gwv1.Gateway
		if err := e.c.Client.Get(e.t.Context(), client.ObjectKey{Namespace: "default", Name: name}, &gw); err != nil {
			return err
		}
		c := meta.FindStatusCondition(gw.Status.Conditions, string(gwv1.GatewayConditionProgrammed))
		if c == nil || c.Status != metav1.ConditionTrue || len(gw.Status.Addresses) == 0 {
			return fmt.Errorf("gateway %s not programmed: %+v %v", name, c, gw.Status.Addresses)
		}
		addr = gw.Status.Addresses[0].Value
		return nil
	})
	return addr
}

func (e *awsEnv) ingressAddress(name string) string {
	var addr string
	testbed.Eventually(e.t, 90*time.Second, func() error {
		var ing networkingv1.Ingress
		if err := e.c.Client.Get(e.t.Context(), client.ObjectKey{Namespace: "default", Name: name}, &ing); err != nil {
			return err
		}
		if len(ing.Status.LoadBalancer.Ingress) == 0 || ing.Status.LoadBalancer.Ingress[0].Hostname == "" {
			return fmt.Errorf("ingress %s has no hostname: %+v", name, ing.Status.LoadBalancer)
		}
		addr = ing.Status.LoadBalancer.Ingress[0].Hostname
		return nil
	})
	return addr
}

func (e *awsEnv) serviceAddress(name string) string {
	var addr string
	testbed.Eventually(e.t, 90*time.Second, func() error {
		var svc corev1.Service
		if err := e.c.Client.Get(e.t.Context(), client.ObjectKey{Namespace: "default", Name: name}, &svc); err != nil {
			return err
		}
		if len(svc.Status.LoadBalancer.Ingress) == 0 || svc.Status.LoadBalancer.Ingress[0].Hostname == "" {
			return fmt.Errorf("service %s has no hostname: %+v", name, svc.Status.LoadBalancer)
		}
		addr = svc.Status.LoadBalancer.Ingress[0].Hostname
		return nil
	})
	return addr
}

// loadBalancers are the load balancers tagged for this fleet.
func (e *awsEnv) loadBalancers() []elbtypes.LoadBalancer {
	out, err := e.elb.DescribeLoadBalancers(e.t.Context(), &elb.DescribeLoadBalancersInput{})
	must(e.t, err)
	var mine []elbtypes.LoadBalancer
	for _, lb := range out.LoadBalancers {
		if e.tags(*lb.LoadBalancerArn)[awsprovider.TagFleet] == e.fleet {
			mine = append(mine, lb)
		}
	}
	return mine
}

func lbNames(lbs []elbtypes.LoadBalancer) []string {
	var out []string
	for _, lb := range lbs {
		out = append(out, *lb.LoadBalancerName)
	}
	return out
}

func (e *awsEnv) tags(arn string) map[string]string {
	out, err := e.elb.DescribeTags(e.t.Context(), &elb.DescribeTagsInput{ResourceArns: []string{arn}})
	must(e.t, err)
	m := map[string]string{}
	for _, d := range out.TagDescriptions {
		for _, tag := range d.Tags {
			m[*tag.Key] = *tag.Value
		}
	}
	return m
}

func (e *awsEnv) listeners(lb elbtypes.LoadBalancer) []string {
	out, err := e.elb.DescribeListeners(e.t.Context(), &elb.DescribeListenersInput{LoadBalancerArn: lb.LoadBalancerArn})
	must(e.t, err)
	var ls []string
	for _, l := range out.Listeners {
		ls = append(ls, fmt.Sprintf("%s:%d", l.Protocol, *l.Port))
	}
	slices.Sort(ls)
	return ls
}

// rules describes the rules of every listener of lb as "field=[values] ..." strings.
func (e *awsEnv) rules(lb elbtypes.LoadBalancer) []string {
	ls, err := e.elb.DescribeListeners(e.t.Context(), &elb.DescribeListenersInput{LoadBalancerArn: lb.LoadBalancerArn})
	must(e.t, err)
	var out []string
	for _, l := range ls.Listeners {
		rs, err := e.elb.DescribeRules(e.t.Context(), &elb.DescribeRulesInput{ListenerArn: l.ListenerArn})
		must(e.t, err)
		for _, r := range rs.Rules {
			var parts []string
			for _, c := range r.Conditions {
				parts = append(parts, fmt.Sprintf("%s=%v", *c.Field, conditionValues(c)))
			}
			out = append(out, strings.Join(parts, " "))
		}
	}
	return out
}

func conditionValues(c elbtypes.RuleCondition) []string {
	switch {
	case c.HostHeaderConfig != nil:
		return c.HostHeaderConfig.Values
	case c.PathPatternConfig != nil:
		return c.PathPatternConfig.Values
	}
	return c.Values
}

// targets lists "ip:port" of the target groups the listener on port forwards to.
func (e *awsEnv) targets(lb elbtypes.LoadBalancer, port int32) []string {
	ctx := e.t.Context()
	ls, err := e.elb.DescribeListeners(ctx, &elb.DescribeListenersInput{LoadBalancerArn: lb.LoadBalancerArn})
	must(e.t, err)
	var tgs []string
	forwards := func(actions []elbtypes.Action) {
		for _, a := range actions {
			if a.TargetGroupArn != nil {
				tgs = append(tgs, *a.TargetGroupArn)
			}
			if a.ForwardConfig != nil {
				for _, t := range a.ForwardConfig.TargetGroups {
					tgs = append(tgs, aws.ToString(t.TargetGroupArn))
				}
			}
		}
	}
	for _, l := range ls.Listeners {
		if aws.ToInt32(l.Port) != port {
			continue
		}
		rs, err := e.elb.DescribeRules(ctx, &elb.DescribeRulesInput{ListenerArn: l.ListenerArn})
		must(e.t, err)
		for _, r := range rs.Rules {
			forwards(r.Actions) // the default rule holds the listener's default actions
		}
	}
	var out []string
	for _, tg := range tgs {
		h, err := e.elb.DescribeTargetHealth(ctx, &elb.DescribeTargetHealthInput{TargetGroupArn: aws.String(tg)})
		must(e.t, err)
		for _, d := range h.TargetHealthDescriptions {
			out = append(out, fmt.Sprintf("%s:%d", *d.Target.Id, *d.Target.Port))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// healthCheckPaths are the health check paths of the ALB target groups in the account, by target
// address and protocol version (all of them: moto does not link a target group that only a rule
// uses to its load balancer).
func (e *awsEnv) healthCheckPaths() map[string]string {
	tgs, err := e.elb.DescribeTargetGroups(e.t.Context(), &elb.DescribeTargetGroupsInput{})
	must(e.t, err)
	out := map[string]string{}
	for _, tg := range tgs.TargetGroups {
		if tg.ProtocolVersion == nil {
			continue // an NLB's
		}
		h, err := e.elb.DescribeTargetHealth(e.t.Context(), &elb.DescribeTargetHealthInput{TargetGroupArn: tg.TargetGroupArn})
		must(e.t, err)
		for _, d := range h.TargetHealthDescriptions {
			out[*d.Target.Id+" "+aws.ToString(tg.ProtocolVersion)] = aws.ToString(tg.HealthCheckPath)
		}
	}
	return out
}

// targetGroupVersions are the protocol versions of lb's target groups.
func (e *awsEnv) targetGroupVersions(lb elbtypes.LoadBalancer) []string {
	tgs, err := e.elb.DescribeTargetGroups(e.t.Context(), &elb.DescribeTargetGroupsInput{LoadBalancerArn: lb.LoadBalancerArn})
	must(e.t, err)
	var out []string
	for _, tg := range tgs.TargetGroups {
		out = append(out, aws.ToString(tg.ProtocolVersion))
	}
	return out
}

// forwardWeights are the weights of the forward of lb's rule for host, ordered by the target
// groups' first target address (web's endpoints come before web2's).
func (e *awsEnv) forwardWeights(lb elbtypes.LoadBalancer, host string) []int32 {
	ctx := e.t.Context()
	ls, err := e.elb.DescribeListeners(ctx, &elb.DescribeListenersInput{LoadBalancerArn: lb.LoadBalancerArn})
	must(e.t, err)
	for _, l := range ls.Listeners {
		rs, err := e.elb.DescribeRules(ctx, &elb.DescribeRulesInput{ListenerArn: l.ListenerArn})
		must(e.t, err)
		for _, r := range rs.Rules {
			if !slices.ContainsFunc(r.Conditions, func(c elbtypes.RuleCondition) bool {
				return c.HostHeaderConfig != nil && slices.Contains(c.HostHeaderConfig.Values, host)
			}) || len(r.Actions) == 0 || r.Actions[0].ForwardConfig == nil {
				continue
			}
			type weighted struct {
				first  string
				weight int32
			}
			var ws []weighted
			for _, tg := range r.Actions[0].ForwardConfig.TargetGroups {
				h, err := e.elb.DescribeTargetHealth(ctx, &elb.DescribeTargetHealthInput{TargetGroupArn: tg.TargetGroupArn})
				must(e.t, err)
				first := ""
				for _, d := range h.TargetHealthDescriptions {
					if id := aws.ToString(d.Target.Id); first == "" || id < first {
						first = id
					}
				}
				ws = append(ws, weighted{first, aws.ToInt32(tg.Weight)})
			}
			slices.SortFunc(ws, func(a, b weighted) int { return strings.Compare(a.first, b.first) })
			out := make([]int32, len(ws))
			for i, w := range ws {
				out[i] = w.weight
			}
			return out
		}
	}
	return nil
}

// owned lists every ELBv2 resource and security group still tagged for this fleet.
func (e *awsEnv) owned() []string {
	ctx := e.t.Context()
	var left []string
	for _, lb := range e.loadBalancers() {
		left = append(left, "lb "+*lb.LoadBalancerName)
	}
	tgs, err := e.elb.DescribeTargetGroups(ctx, &elb.DescribeTargetGroupsInput{})
	must(e.t, err)
	for _, tg := range tgs.TargetGroups {
		if e.tags(*tg.TargetGroupArn)[awsprovider.TagFleet] == e.fleet {
			left = append(left, "tg "+*tg.TargetGroupName)
		}
	}
	sgs, err := e.ec2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag:" + awsprovider.TagFleet), Values: []string{e.fleet}}}})
	must(e.t, err)
	for _, sg := range sgs.SecurityGroups {
		left = append(left, "sg "+*sg.GroupId)
	}
	return left
}
