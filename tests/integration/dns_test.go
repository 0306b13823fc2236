package integration

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/go-logr/logr/testr"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	dnsv1a1 "sigs.k8s.io/external-dns/apis/v1alpha1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/controllers"
	"github.com/fleetgate/fleetgate/controllers/records"
	"github.com/fleetgate/fleetgate/providers"
	awsprovider "github.com/fleetgate/fleetgate/providers/aws"
	"github.com/fleetgate/fleetgate/providers/aws/mototest"
	"github.com/fleetgate/fleetgate/tests/testbed"
)

// dnsCRD matches the test bed's DNSEndpoint CRD file.
const dnsCRD = "dnsendpoints.externaldns.k8s.io"

// newDNSEnv is newAWSEnv with the hub as a fleet member (its MemberCluster weight counts) and DNS
// publication on, on a hub started with o; sync, when not nil, is the embedded publishers.
func newDNSEnv(t *testing.T, o testbed.Options, sync controllers.DNSSyncer) *awsEnv {
	t.Helper()
	return newDNSEnvWith(t, o, sync, controllers.FleetOptions{})
}

// newDNSEnvWith is newDNSEnv with the fleet options fo (its namespace and HubIsMember are set).
func newDNSEnvWith(t *testing.T, o testbed.Options, sync controllers.DNSSyncer, fo controllers.FleetOptions) *awsEnv {
	t.Helper()
	fo.Namespace, fo.HubIsMember = operatorNamespace, true
	srv := mototest.ForTest(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "operator")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "operator")
	e := &awsEnv{t: t, c: testbed.ForTestWith(t, "hub", o), moto: srv, shim: mototest.NewFaults(srv.URL), fleet: "dns-fleet"}
	t.Cleanup(e.shim.Close)
	cfg, err := mototest.Config(t.Context(), srv.URL)
	must(t, err)
	e.elb, e.ec2 = elb.NewFromConfig(cfg), ec2.NewFromConfig(cfg)
	e.vpc = e.network()
	ctx, cl := t.Context(), e.c.Client
	for _, ns := range []string{"aws-creds", operatorNamespace} {
		must(t, cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
	must(t, cl.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "aws-creds", Name: "keys"},
		StringData: map[string]string{"access-key-id": "testing", "secret-access-key": "testing"}}))
	e.operator = func() func() {
		p, err := awsprovider.New(awsprovider.Options{
			Fleet:       e.fleet,
			Defaults:    v1alpha1.AWSOptions{Region: mototest.Region, Endpoint: e.shim.URL()},
			Secrets:     secretsOf(cl),
			Probes:      controllers.NewPodProbes(func(string) (client.Client, error) { return cl, nil }),
			MaxAttempts: 2, MaxBackoff: 50 * time.Millisecond,
			Registerer: prometheus.NewRegistry(),
			Log:        testr.New(t),
		})
		must(t, err)
		return runWithProvider(t, e.c, string(v1alpha1.ProviderAWS), p, controllers.Options{
			Fleet:         &fo,
			MemberClients: &controllers.MemberClients{}, // as wire.go: finalizers reach the members
			DNS:           &controllers.DNSOptions{Namespace: operatorNamespace, Recheck: 500 * time.Millisecond, Sync: sync},
		})
	}
	e.stop = e.operator()
	creds := &v1alpha1.AWSCredentials{SecretRef: &v1alpha1.ObjectRef{Namespace: "aws-creds", Name: "keys"}}
	must(t, cl.Create(ctx, &v1alpha1.GatewayClassConfig{ObjectMeta: metav1.ObjectMeta{Name: "aws-alb"},
		Spec: v1alpha1.GatewayClassConfigSpec{Provider: v1alpha1.ProviderAWS,
			AWS: &v1alpha1.AWSOptions{LoadBalancerType: v1alpha1.AWSApplication, Credentials: creds, VPC: e.vpc}}}))
	must(t, cl.Create(ctx, &gwv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "aws-alb"},
		Spec: gwv1.GatewayClassSpec{ControllerName: v1alpha1.ControllerName,
			ParametersRef: &gwv1.ParametersReference{Group: v1alpha1.Group, Kind: "GatewayClassConfig", Name: "aws-alb"}}}))
	e.backend("web", corev1.ProtocolTCP, 8080, "10.0.1.10")
	return e
}

// albGateway is an ALB Gateway with one HTTP listener without hostname, and a DNS weight when weight
// is not "".
func albGateway(name, weight string) *gwv1.Gateway {
	gw := &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: gwv1.GatewaySpec{GatewayClassName: "aws-alb",
			Listeners: []gwv1.Listener{{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType}}}}
	if weight != "" {
		gw.Spec.Infrastructure = &gwv1.GatewayInfrastructure{Annotations: map[gwv1.AnnotationKey]gwv1.AnnotationValue{records.AnnotationWeight: gwv1.AnnotationValue(weight)}}
	}
	return gw
}

func routeTo(name, parent string, hosts ...string) *gwv1.HTTPRoute {
	r := awsRoute(name, hosts[0], "/")
	r.Spec.ParentRefs[0].Name = gwv1.ObjectName(parent)
	for _, h := range hosts[1:] {
		r.Spec.Hostnames = append(r.Spec.Hostnames, gwv1.Hostname(h))
	}
	return r
}

// dnsEndpoint returns the DNSEndpoint of the gateway key, or nil. These tests' owners have too few
// records to be sharded: a second DNSEndpoint of the key (a stale shard, a duplicate) is an error.
func (e *awsEnv) dnsEndpoint(key string) (*dnsv1a1.DNSEndpoint, error) {
	var list dnsv1a1.DNSEndpointList
	if err := e.c.Client.List(e.t.Context(), &list); err != nil {
		return nil, err
	}
	var found *dnsv1a1.DNSEndpoint
	for i := range list.Items {
		if list.Items[i].Annotations[providers.AnnotationGateway] != key {
			continue
		}
		if found != nil {
			return nil, fmt.Errorf("DNSEndpoints %s and %s both hold records of %s", found.Name, list.Items[i].Name, key)
		}
		found = &list.Items[i]
	}
	return found, nil
}

// recordsOf are an endpoint's records as "name type targets [set=… weight=…]", sorted.
func recordsOf(obj *dnsv1a1.DNSEndpoint) []string {
	if obj == nil {
		return nil
	}
	var out []string
	for _, ep := range obj.Spec.Endpoints {
		s := ep.DNSName + " " + ep.RecordType + " " + ep.Targets.String()
		if ep.SetIdentifier != "" {
			w, _ := ep.GetProviderSpecificProperty(records.WeightProperty)
			s += " set=" + ep.SetIdentifier + " weight=" + w
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// records waits until the gateway key's DNSEndpoint holds exactly want (none when want is empty)
// and returns it.
func (e *awsEnv) records(key string, want ...string) *dnsv1a1.DNSEndpoint {
	e.t.Helper()
	var got *dnsv1a1.DNSEndpoint
	testbed.Eventually(e.t, 60*time.Second, func() error {
		obj, err := e.dnsEndpoint(key)
		if err != nil {
			return err
		}
		if diff := cmp.Diff(want, recordsOf(obj)); diff != "" {
			return fmt.Errorf("DNSEndpoint of %s (-want +got):\n%s", key, diff)
		}
		got = obj
		return nil
	})
	return got
}

// dnsCondition waits until the Gateway's DNSPublished condition has the status and reason, for its
// current generation, and a message holding every one of parts.
func (e *awsEnv) dnsCondition(name string, status metav1.ConditionStatus, reason string, parts ...string) {
	e.t.Helper()
	testbed.Eventually(e.t, 60*time.Second, func() error {
		var gw gwv1.Gateway
		if err := e.c.Client.Get(e.t.Context(), client.ObjectKey{Namespace: "default", Name: name}, &gw); err != nil {
			return err
		}
		c := meta.FindStatusCondition(gw.Status.Conditions, controllers.ConditionDNSPublished)
		if c == nil || c.Status != status || c.Reason != reason || c.ObservedGeneration != gw.Generation || !containsAll(c.Message, parts) {
			return fmt.Errorf("gateway %s: DNSPublished %+v, want %s/%s with %q at generation %d", name, c, status, reason, parts, gw.Generation)
		}
		return nil
	})
}

// TestDNSEndpoints: on a real API server with the AWS provider against moto, DNSEndpoints follow
// Gateways, routes, Ingresses and LoadBalancer Services; a name claimed by two gateways goes to the
// older one and the other is told; with DNS weights both publish it as weighted records whose
// weights follow the MemberCluster's; unchanged owners are not rewritten; deleting a gateway
// removes only its own DNSEndpoint.
func TestDNSEndpoints(t *testing.T) {
	e := newDNSEnv(t, testbed.Options{}, nil)
	ctx, cl := t.Context(), e.c.Client

	must(t, cl.Create(ctx, albGateway("alb", "")))
	must(t, cl.Create(ctx, routeTo("web", "alb", "a.example.com")))
	albDNS := e.gatewayAddress("alb")
	obj := e.records("hub/default/alb", "a.example.com CNAME "+albDNS)
	if obj.Namespace != "default" || len(obj.OwnerReferences) != 1 || obj.OwnerReferences[0].Kind != "Gateway" || obj.OwnerReferences[0].Name != "alb" {
		t.Errorf("DNSEndpoint %s/%s owners %+v: want in default, owned by Gateway alb", obj.Namespace, obj.Name, obj.OwnerReferences)
	}
	e.dnsCondition("alb", metav1.ConditionTrue, controllers.ReasonDNSPublished, "a.example.com", "external-dns has not read them yet")
	// external-dns's part: its CRD source stamps the generation it read.
	obj.Status.ObservedGeneration = obj.Generation
	must(t, cl.Status().Update(ctx, obj))
	e.dnsCondition("alb", metav1.ConditionTrue, controllers.ReasonDNSPublished, "a.example.com", "external-dns has read them")

	t.Run("route hostnames change the records", func(t *testing.T) {
		route := &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}}
		update(t, cl, route, func() { route.Spec.Hostnames = []gwv1.Hostname{"a.example.com", "b.example.com"} })
		e.records("hub/default/alb", "a.example.com CNAME "+albDNS, "b.example.com CNAME "+albDNS)
	})

	t.Run("Ingress hosts and annotated LoadBalancer Services", func(t *testing.T) {
		must(t, cl.Create(ctx, &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "aws"},
			Spec: networkingv1.IngressClassSpec{Controller: v1alpha1.IngressControllerName,
				Parameters: &networkingv1.IngressClassParametersReference{APIGroup: ptr.To(v1alpha1.Group), Kind: "GatewayClassConfig", Name: "aws-alb"}}}))
		must(t, cl.Create(ctx, &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "shop"},
			Spec: networkingv1.IngressSpec{IngressClassName: ptr.To("aws"),
				Rules: []networkingv1.IngressRule{ingressRule("shop.example.com", ingressPath(networkingv1.PathTypePrefix, "/", "web"))}}}))
		must(t, cl.Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db",
			Annotations: map[string]string{records.AnnotationHostname: "db.example.com"}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, LoadBalancerClass: ptr.To(v1alpha1.LoadBalancerClassAWSNLB),
				Ports: []corev1.ServicePort{{Name: "db", Port: 5432, Protocol: corev1.ProtocolTCP}}}}))
		e.slice("db", corev1.ProtocolTCP, 5432, "10.0.2.30")
		ingDNS, svcDNS := e.ingressAddress("shop"), e.serviceAddress("db")
		e.records("hub/ingress:aws", "shop.example.com CNAME "+ingDNS)
		svc := e.records("hub/service:default/db", "db.example.com CNAME "+svcDNS)
		if len(svc.OwnerReferences) != 1 || svc.OwnerReferences[0].Kind != "Service" {
			t.Errorf("the Service's DNSEndpoint owners %+v, want the Service", svc.OwnerReferences)
		}

		must(t, cl.Delete(ctx, &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "shop"}}))
		e.records("hub/ingress:aws")
		svcObj := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db"}}
		update(t, cl, svcObj, func() { svcObj.Annotations[records.AnnotationHostname] = "db.example.com,db2.example.com" })
		e.records("hub/service:default/db", "db.example.com CNAME "+svcDNS, "db2.example.com CNAME "+svcDNS)
		must(t, cl.Delete(ctx, svcObj))
		e.records("hub/service:default/db")
	})

	t.Run("a younger gateway claiming the name is told, and the older keeps it", func(t *testing.T) {
		must(t, cl.Create(ctx, albGateway("alb2", "")))
		must(t, cl.Create(ctx, routeTo("web2", "alb2", "a.example.com", "c.example.com")))
		alb2DNS := e.gatewayAddress("alb2")
		e.records("hub/default/alb2", "c.example.com CNAME "+alb2DNS)
		e.dnsCondition("alb2", metav1.ConditionFalse, controllers.ReasonDNSConflicted, "a.example.com", "hub/default/alb", "c.example.com")
		e.records("hub/default/alb", "a.example.com CNAME "+albDNS, "b.example.com CNAME "+albDNS)
		testbed.Eventually(t, 30*time.Second, func() error {
			var evs eventsv1.EventList
			if err := cl.List(ctx, &evs, client.InNamespace("default")); err != nil {
				return err
			}
			for _, ev := range evs.Items {
				if ev.Reason == controllers.ReasonDNSConflict && ev.Regarding.Name == "alb2" && strings.Contains(ev.Note, "a.example.com") {
					return nil
				}
			}
			return fmt.Errorf("no %s Event on alb2 among %d", controllers.ReasonDNSConflict, len(evs.Items))
		})
	})

	t.Run("gateways with DNS weights share the name; weights follow the MemberCluster", func(t *testing.T) {
		alb2DNS := e.gatewayAddress("alb2")
		for name, w := range map[string]string{"alb": "3", "alb2": "1"} {
			gw := &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
			update(t, cl, gw, func() { gw.Spec.Infrastructure = albGateway(name, w).Spec.Infrastructure })
		}
		e.records("hub/default/alb", "a.example.com CNAME "+albDNS+" set=hub/default/alb weight=300", "b.example.com CNAME "+albDNS)
		e.records("hub/default/alb2", "a.example.com CNAME "+alb2DNS+" set=hub/default/alb2 weight=100", "c.example.com CNAME "+alb2DNS)
		e.dnsCondition("alb2", metav1.ConditionTrue, controllers.ReasonDNSPublished, "a.example.com", "weighted")

		must(t, cl.Create(ctx, &v1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.HubCluster},
			Spec: v1alpha1.MemberClusterSpec{KubeconfigSecretRef: v1alpha1.SecretKeyRef{Name: "unused"}, Weight: 10}}))
		e.records("hub/default/alb", "a.example.com CNAME "+albDNS+" set=hub/default/alb weight=30", "b.example.com CNAME "+albDNS)
		alb2 := e.records("hub/default/alb2", "a.example.com CNAME "+alb2DNS+" set=hub/default/alb2 weight=10", "c.example.com CNAME "+alb2DNS)

		// A change to alb's routes rewrites alb's DNSEndpoint only.
		route := &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}}
		update(t, cl, route, func() { route.Spec.Hostnames = append(route.Spec.Hostnames, "d.example.com") })
		e.records("hub/default/alb", "a.example.com CNAME "+albDNS+" set=hub/default/alb weight=30", "b.example.com CNAME "+albDNS, "d.example.com CNAME "+albDNS)
		if now, err := e.dnsEndpoint("hub/default/alb2"); err != nil || now.ResourceVersion != alb2.ResourceVersion {
			t.Errorf("alb2's unchanged DNSEndpoint was rewritten: resourceVersion %s, was %s (%v)", now.ResourceVersion, alb2.ResourceVersion, err)
		}
	})

	t.Run("a gateway whose load balancer fails keeps its last records and says so", func(t *testing.T) {
		e.shim.Fail(mototest.Rule{Service: "elasticloadbalancing", Fault: mototest.ServerError(500), Rate: 1})
		// A new generation is not programmed until the provider answers for it, which it cannot.
		gw := &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "alb"}}
		update(t, cl, gw, func() {
			gw.Spec.Listeners = append(gw.Spec.Listeners, gwv1.Listener{Name: "extra", Port: 8080, Protocol: gwv1.HTTPProtocolType,
				Hostname: ptr.To[gwv1.Hostname]("f.example.com")})
		})
		e.dnsCondition("alb", metav1.ConditionFalse, controllers.ReasonDNSNoAddress, "kept")
		e.records("hub/default/alb", "a.example.com CNAME "+albDNS+" set=hub/default/alb weight=30", "b.example.com CNAME "+albDNS, "d.example.com CNAME "+albDNS)
		e.shim.Reset()
		e.records("hub/default/alb", "a.example.com CNAME "+albDNS+" set=hub/default/alb weight=30", "b.example.com CNAME "+albDNS,
			"d.example.com CNAME "+albDNS, "f.example.com CNAME "+albDNS)
		e.dnsCondition("alb", metav1.ConditionTrue, controllers.ReasonDNSPublished, "f.example.com")
	})

	t.Run("deleting a gateway removes only its own DNSEndpoint", func(t *testing.T) {
		must(t, cl.Delete(ctx, &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "alb2"}}))
		e.records("hub/default/alb2")
		// alone on a.example.com again: a plain record
		e.records("hub/default/alb", "a.example.com CNAME "+albDNS, "b.example.com CNAME "+albDNS, "d.example.com CNAME "+albDNS,
			"f.example.com CNAME "+albDNS)
	})
}

// TestDNSEndpointsCRDInstalledLater: a hub without the DNSEndpoint CRD serves its Gateways and
// says on them that nothing is published; once the CRD is installed, without a restart, the records
// appear.
func TestDNSEndpointsCRDInstalledLater(t *testing.T) {
	e := newDNSEnv(t, testbed.Options{Without: []string{dnsCRD}}, nil)
	ctx, cl := t.Context(), e.c.Client
	must(t, cl.Create(ctx, albGateway("alb", "")))
	must(t, cl.Create(ctx, routeTo("web", "alb", "a.example.com")))
	albDNS := e.gatewayAddress("alb")
	e.dnsCondition("alb", metav1.ConditionFalse, controllers.ReasonDNSCRDNotInstalled, dnsCRD, "a.example.com")

	must(t, e.c.InstallCRDs(dnsCRD))
	e.records("hub/default/alb", "a.example.com CNAME "+albDNS)
	e.dnsCondition("alb", metav1.ConditionTrue, controllers.ReasonDNSPublished, "a.example.com")
}

// TestDNSEndpointsAcrossMembers: copies of one Gateway in the hub and a member publish one name as
// weighted records, weighted by their MemberClusters; while the member is unreachable its records
// stay, the hub's stays weighted beside them, and the hub's other changes are still published.
func TestDNSEndpointsAcrossMembers(t *testing.T) {
	e := newDNSEnv(t, testbed.Options{}, nil)
	member := testbed.ForTest(t, "member-a")[0]
	ctx, cl, mcl := t.Context(), e.c.Client, member.Client
	copyClass(t, e.c, member, "aws-alb")
	hubEnv, memberEnv := e, &awsEnv{t: t, c: member}
	memberEnv.backend("web", corev1.ProtocolTCP, 8080, "10.0.2.10")
	must(t, testbed.RegisterMember(ctx, e.c, member, operatorNamespace, 50, nil))
	for _, c := range []client.Client{cl, mcl} {
		must(t, c.Create(ctx, albGateway("alb", "")))
		must(t, c.Create(ctx, routeTo("web", "alb", "a.example.com")))
	}
	hubDNS, memberDNS := hubEnv.gatewayAddress("alb"), memberEnv.gatewayAddress("alb")
	e.records("hub/default/alb", "a.example.com CNAME "+hubDNS+" set=hub/default/alb weight=100")
	e.records("member-a/default/alb", "a.example.com CNAME "+memberDNS+" set=member-a/default/alb weight=50")

	mc := &v1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "member-a"}}
	update(t, cl, mc, func() { mc.Spec.Weight = 20 })
	kept := e.records("member-a/default/alb", "a.example.com CNAME "+memberDNS+" set=member-a/default/alb weight=20")

	must(t, member.StopAPIServer())
	t.Cleanup(func() { _ = member.StartAPIServer() })
	testbed.Eventually(t, 60*time.Second, func() error {
		must(t, cl.Get(ctx, client.ObjectKeyFromObject(mc), mc))
		if c := meta.FindStatusCondition(mc.Status.Conditions, "Ready"); c == nil || c.Status != metav1.ConditionFalse {
			return fmt.Errorf("member-a Ready %+v, want False", c)
		}
		return nil
	})
	// A pass without the member publishes the hub's change, and a.example.com stays weighted.
	route := &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}}
	update(t, cl, route, func() { route.Spec.Hostnames = append(route.Spec.Hostnames, "b.example.com") })
	e.records("hub/default/alb", "a.example.com CNAME "+hubDNS+" set=hub/default/alb weight=100", "b.example.com CNAME "+hubDNS)
	now, err := e.dnsEndpoint("member-a/default/alb")
	must(t, err)
	if now == nil || now.ResourceVersion != kept.ResourceVersion {
		t.Errorf("the unreachable member's DNSEndpoint changed or went: %+v", now)
	}
}

// copyClass creates in member the GatewayClass name of hub and its GatewayClassConfig, with the
// same specs.
func copyClass(t *testing.T, hub, member *testbed.Cluster, name string) {
	t.Helper()
	ctx := t.Context()
	var class gwv1.GatewayClass
	var config v1alpha1.GatewayClassConfig
	must(t, hub.Client.Get(ctx, client.ObjectKey{Name: name}, &class))
	must(t, hub.Client.Get(ctx, client.ObjectKey{Name: name}, &config))
	must(t, member.Client.Create(ctx, &v1alpha1.GatewayClassConfig{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: config.Spec}))
	must(t, member.Client.Create(ctx, &gwv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: class.Spec}))
}
