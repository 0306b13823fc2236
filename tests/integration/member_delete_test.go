package integration

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	mcsv1a1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/controllers"
	"github.com/fleetgate/fleetgate/tests/testbed"
)

// memberWithGateway registers member as a MemberCluster of e's hub holding an ALB Gateway "alb"
// (of the hub's class) and an HTTPRoute "web" with hostname a.example.com, and waits until the
// Gateway is programmed in the member, its load balancer exists in moto and its DNSEndpoint in the
// hub. It returns the member's env.
func memberWithGateway(t *testing.T, e *awsEnv, member *testbed.Cluster) *awsEnv {
	t.Helper()
	ctx, mcl := t.Context(), member.Client
	copyClass(t, e.c, member, "aws-alb")
	me := &awsEnv{t: t, c: member, elb: e.elb, ec2: e.ec2, fleet: e.fleet}
	me.backend("web", corev1.ProtocolTCP, 8080, "10.0.2.10")
	must(t, testbed.RegisterMember(ctx, e.c, member, operatorNamespace, 100, nil))
	must(t, mcl.Create(ctx, albGateway("alb", "")))
	must(t, mcl.Create(ctx, routeTo("web", "alb", "a.example.com")))
	addr := me.gatewayAddress("alb")
	e.records(member.Name+"/default/alb", "a.example.com CNAME "+addr)
	if lbs := e.loadBalancers(); len(lbs) != 1 {
		t.Fatalf("load balancers of the fleet: %v, want the member's one", lbNames(lbs))
	}
	testbed.Eventually(t, 30*time.Second, func() error {
		var gw gwv1.Gateway
		must(t, mcl.Get(ctx, client.ObjectKey{Namespace: "default", Name: "alb"}, &gw))
		if !controllerutil.ContainsFinalizer(&gw, v1alpha1.FinalizerLoadBalancer) {
			return fmt.Errorf("the member's Gateway has finalizers %v, want %s", gw.Finalizers, v1alpha1.FinalizerLoadBalancer)
		}
		return nil
	})
	return me
}

// memberLeftovers lists what fleetgate left on the member's objects: finalizers, Gateway addresses,
// listeners and conditions other than the API's defaults (Unknown/Pending), and route parent
// statuses of fleetgate.
func memberLeftovers(t *testing.T, member *testbed.Cluster) []string {
	t.Helper()
	ctx := t.Context()
	var left []string
	var gw gwv1.Gateway
	must(t, member.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "alb"}, &gw))
	if controllerutil.ContainsFinalizer(&gw, v1alpha1.FinalizerLoadBalancer) {
		left = append(left, "gateway finalizer")
	}
	if len(gw.Status.Addresses) > 0 {
		left = append(left, fmt.Sprintf("gateway addresses %v", gw.Status.Addresses))
	}
	if len(gw.Status.Listeners) > 0 {
		left = append(left, fmt.Sprintf("gateway listeners %d", len(gw.Status.Listeners)))
	}
	for _, c := range gw.Status.Conditions {
		if c.Status != metav1.ConditionUnknown || c.Reason != string(gwv1.GatewayReasonPending) {
			left = append(left, fmt.Sprintf("gateway condition %s=%s/%s", c.Type, c.Status, c.Reason))
		}
	}
	var route gwv1.HTTPRoute
	must(t, member.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "web"}, &route))
	for _, p := range route.Status.Parents {
		if p.ControllerName == v1alpha1.ControllerName {
			left = append(left, fmt.Sprintf("route parent %s", p.ParentRef.Name))
		}
	}
	return left
}

// checkReleased reports what fleetgate left after member's MemberCluster went: cloud resources,
// the DNSEndpoint of its gateway, and fleetgate's finalizers and statuses in the member.
func checkReleased(t *testing.T, e *awsEnv, member *testbed.Cluster) {
	t.Helper()
	if left := e.owned(); len(left) > 0 {
		t.Errorf("cloud resources left after the member went: %v", left)
	}
	if obj, err := e.dnsEndpoint(member.Name + "/default/alb"); err != nil || obj != nil {
		t.Errorf("DNSEndpoint of the member's gateway after it went: %v %v", recordsOf(obj), err)
	}
	if diff := cmp.Diff([]string(nil), memberLeftovers(t, member)); diff != "" {
		t.Errorf("fleetgate's leftovers in the member (-want +got):\n%s", diff)
	}
}

// mcGone waits until the hub's MemberCluster name is gone, and returns how long that took.
func mcGone(t *testing.T, hub client.Client, name string, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	testbed.Eventually(t, within, func() error {
		var mc v1alpha1.MemberCluster
		err := hub.Get(t.Context(), client.ObjectKey{Name: name}, &mc)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("MemberCluster %s still there: finalizers %v, conditions %+v", name, mc.Finalizers, mc.Status.Conditions)
	})
	return time.Since(start)
}

// TestMemberClusterDeletionReleases: on real API servers with the AWS provider against moto, a
// member holds a Gateway (programmed, with a route and a hostname published as a DNSEndpoint).
// Deleting its MemberCluster deletes the load balancer and the DNSEndpoint, strips fleetgate's
// finalizer and statuses from the member's objects, and only then lets the MemberCluster go.
func TestMemberClusterDeletionReleases(t *testing.T) {
	e := newDNSEnvWith(t, testbed.Options{}, nil, controllers.FleetOptions{MCSController: true})
	member := testbed.ForTest(t, "member-a")[0]
	memberWithGateway(t, e, member)
	// The member exports its backend: fleetgate's MCS controller makes the ServiceImport in it.
	must(t, member.Client.Create(t.Context(), &mcsv1a1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}}))
	testbed.Eventually(t, 30*time.Second, func() error {
		return member.Client.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: "web"}, &mcsv1a1.ServiceImport{})
	})
	if left := memberLeftovers(t, member); len(left) == 0 {
		t.Fatal("the programmed member holds nothing of fleetgate: the test would prove nothing")
	}
	var mc v1alpha1.MemberCluster
	must(t, e.c.Client.Get(t.Context(), client.ObjectKey{Name: member.Name}, &mc))
	must(t, e.c.Client.Delete(t.Context(), &mc))
	took := mcGone(t, e.c.Client, member.Name, 90*time.Second)
	t.Logf("MemberCluster released %v after its deletion", took)

	// Everything was released before the MemberCluster went: nothing is waited for any more.
	checkReleased(t, e, member)
	var imports mcsv1a1.ServiceImportList
	must(t, member.Client.List(t.Context(), &imports))
	if len(imports.Items) > 0 {
		t.Errorf("ServiceImports left in the member after it went: %s/%s and %d more", imports.Items[0].Namespace, imports.Items[0].Name, len(imports.Items)-1)
	}
	var evs corev1.EventList
	must(t, e.c.Client.List(t.Context(), &evs))
	var reasons []string
	for _, ev := range evs.Items {
		if ev.InvolvedObject.Kind == "MemberCluster" && ev.InvolvedObject.Name == member.Name {
			reasons = append(reasons, ev.Reason)
		}
	}
	for _, want := range []string{v1alpha1.MemberReasonReleasing, v1alpha1.MemberReasonReleased} {
		if !slices.Contains(reasons, want) {
			t.Errorf("Events of the MemberCluster: reasons %v, want %s", reasons, want)
		}
	}
}

// TestMemberClusterDeletionUnreachable: deleting the MemberCluster of a member that does not
// answer deletes its load balancer and DNS records all the same (they are the hub's); the
// MemberCluster then waits for the member (Deleting, WaitingForMember) no longer than the release
// timeout, and goes with a Warning Event saying that its objects keep fleetgate's finalizers.
func TestMemberClusterDeletionUnreachable(t *testing.T) {
	const timeout = 30 * time.Second
	e := newDNSEnvWith(t, testbed.Options{}, nil, controllers.FleetOptions{ReleaseTimeout: timeout})
	member := testbed.ForTest(t, "member-b")[0]
	memberWithGateway(t, e, member)
	ctx, cl := t.Context(), e.c.Client

	must(t, member.StopAPIServer())
	t.Cleanup(func() { _ = member.StartAPIServer() })
	mc := &v1alpha1.MemberCluster{}
	testbed.Eventually(t, 60*time.Second, func() error {
		must(t, cl.Get(ctx, client.ObjectKey{Name: member.Name}, mc))
		if c := meta.FindStatusCondition(mc.Status.Conditions, v1alpha1.MemberClusterReady); c == nil || c.Status != metav1.ConditionFalse {
			return fmt.Errorf("Ready %+v, want False", c)
		}
		return nil
	})
	must(t, cl.Delete(ctx, mc))
	start := time.Now()
	testbed.Eventually(t, timeout, func() error {
		if left := e.owned(); len(left) > 0 {
			return fmt.Errorf("cloud resources left: %v", left)
		}
		if obj, err := e.dnsEndpoint(member.Name + "/default/alb"); err != nil || obj != nil {
			return fmt.Errorf("DNSEndpoint of the member's gateway: %v %v", recordsOf(obj), err)
		}
		if err := cl.Get(ctx, client.ObjectKey{Name: member.Name}, mc); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(mc.Status.Conditions, v1alpha1.MemberClusterDeleting); c == nil || c.Status != metav1.ConditionTrue ||
			c.Reason != v1alpha1.MemberReasonWaitingForMember {
			return fmt.Errorf("Deleting %+v, want True/%s", c, v1alpha1.MemberReasonWaitingForMember)
		}
		return nil
	})
	t.Logf("load balancer and DNS records released %v after the deletion; the MemberCluster waits for the member", time.Since(start))
	mcGone(t, cl, member.Name, 2*timeout)
	released := time.Since(start)
	t.Logf("MemberCluster released %v after its deletion (release timeout %v, counted from the member's Ready=False)", released, timeout)
	// The timeout counts from Ready=False, which came a little before the deletion.
	if released < timeout/2 {
		t.Errorf("released %v after the deletion: the member was not waited for", released)
	}
	var evs corev1.EventList
	must(t, cl.List(ctx, &evs))
	var warned []string
	for _, ev := range evs.Items {
		if ev.InvolvedObject.Name == member.Name && ev.Reason == v1alpha1.MemberReasonReleasedWithLeftovers && ev.Type == corev1.EventTypeWarning {
			warned = append(warned, ev.Message)
		}
	}
	if len(warned) != 1 || !strings.Contains(warned[0], v1alpha1.FinalizerLoadBalancer) {
		t.Errorf("Warning Events %s: %q, want one naming the finalizer left behind", v1alpha1.MemberReasonReleasedWithLeftovers, warned)
	}

	// The member was left as it was: its objects keep what fleetgate wrote.
	must(t, member.StartAPIServer())
	if left := memberLeftovers(t, member); !slices.Contains(left, "gateway finalizer") {
		t.Errorf("the unreachable member's leftovers %v: want its Gateway's finalizer, which nobody could remove", left)
	}
}

// TestMemberClusterDeletedWhileOperatorDown: a MemberCluster deleted while no operator runs is
// released when one starts: its finalizer held it, the first translation reads the member as
// leaving, and the orphan sweep finds the load balancer that no process knew of.
func TestMemberClusterDeletedWhileOperatorDown(t *testing.T) {
	e := newDNSEnv(t, testbed.Options{}, nil)
	member := testbed.ForTest(t, "member-c")[0]
	me := memberWithGateway(t, e, member)
	ctx, cl := t.Context(), e.c.Client
	// An Ingress and a LoadBalancer Service beside the Gateway. Their statuses name no controller:
	// the operator started after the member began leaving must find them by their classes.
	mcl := member.Client
	must(t, mcl.Create(ctx, &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "aws"},
		Spec: networkingv1.IngressClassSpec{Controller: v1alpha1.IngressControllerName,
			Parameters: &networkingv1.IngressClassParametersReference{APIGroup: ptr.To(v1alpha1.Group), Kind: "GatewayClassConfig", Name: "aws-alb"}}}))
	must(t, mcl.Create(ctx, &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "shop"},
		Spec: networkingv1.IngressSpec{IngressClassName: ptr.To("aws"),
			Rules: []networkingv1.IngressRule{ingressRule("shop.example.com", ingressPath(networkingv1.PathTypePrefix, "/", "web"))}}}))
	must(t, mcl.Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "dns"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, LoadBalancerClass: ptr.To(v1alpha1.LoadBalancerClassAWSNLB),
			Ports: []corev1.ServicePort{{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt32(5353)}}}}))
	me.slice("dns", corev1.ProtocolUDP, 5353, "10.0.2.30")
	me.ingressAddress("shop")
	me.serviceAddress("dns")
	var mc v1alpha1.MemberCluster
	must(t, cl.Get(ctx, client.ObjectKey{Name: member.Name}, &mc))
	if !controllerutil.ContainsFinalizer(&mc, v1alpha1.FinalizerMember) {
		t.Fatalf("MemberCluster finalizers %v, want %s", mc.Finalizers, v1alpha1.FinalizerMember)
	}

	e.stop()
	must(t, cl.Delete(ctx, &mc))
	must(t, cl.Get(ctx, client.ObjectKey{Name: member.Name}, &mc)) // still there: held
	if left := e.owned(); len(left) == 0 {
		t.Fatal("nothing in moto before the restart: the test would prove nothing")
	}
	e.operator()
	took := mcGone(t, cl, member.Name, 90*time.Second)
	t.Logf("MemberCluster released %v after the operator started again", took)
	checkReleased(t, e, member)
	var ing networkingv1.Ingress
	must(t, mcl.Get(ctx, client.ObjectKey{Namespace: "default", Name: "shop"}, &ing))
	var svc corev1.Service
	must(t, mcl.Get(ctx, client.ObjectKey{Namespace: "default", Name: "dns"}, &svc))
	if len(ing.Status.LoadBalancer.Ingress) > 0 || len(svc.Status.LoadBalancer.Ingress) > 0 {
		t.Errorf("addresses left in the member: Ingress %+v, Service %+v", ing.Status.LoadBalancer, svc.Status.LoadBalancer)
	}
}
