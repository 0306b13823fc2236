package integration

import (
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	mcsv1a1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/controllers"
	"github.com/fleetgate/fleetgate/controllers/fleet"
	"github.com/fleetgate/fleetgate/tests/testbed"
)

// operatorNamespace is the operator binary's default namespace, where it reports what the hub lacks.
const operatorNamespace = "fleetgate-system"

// gatewayAPICRDs matches every Gateway API CRD file of the test bed.
const gatewayAPICRDs = "gateway.networking.k8s.io_"

// newPrereqEnv is newTrafficEnv on an API server started without some of fleetgate's
// prerequisite CRDs.
func newPrereqEnv(t *testing.T, o testbed.Options) *trafficEnv {
	t.Helper()
	c := testbed.ForTestWith(t, "hub", o)
	binary, err := testbed.BuildOperator(t.TempDir())
	must(t, err)
	if err := c.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	e := &trafficEnv{t: t, c: c, binary: binary, stateDir: t.TempDir()}
	e.startOperator()
	t.Cleanup(func() {
		if err := e.op.Stop(); err != nil {
			t.Error(err)
		}
	})
	return e
}

// logged waits until the operator's log has a line holding every one of parts.
func (e *trafficEnv) logged(timeout time.Duration, parts ...string) {
	e.loggedTimes(timeout, 1, parts...)
}

// loggedTimes waits until the operator's log has n lines holding every one of parts.
func (e *trafficEnv) loggedTimes(timeout time.Duration, n int, parts ...string) {
	e.t.Helper()
	testbed.Eventually(e.t, timeout, func() error {
		b, err := os.ReadFile(e.op.Log)
		if err != nil {
			return err
		}
		got := 0
		for line := range strings.SplitSeq(string(b), "\n") {
			if containsAll(line, parts) {
				got++
			}
		}
		if got < n {
			return fmt.Errorf("%d operator log lines with all of %q, want %d", got, parts, n)
		}
		return nil
	})
}

// prereqEvent waits for an Event of the reason in the operator's namespace whose note holds every
// one of parts.
func (e *trafficEnv) prereqEvent(reason string, parts ...string) {
	e.t.Helper()
	testbed.Eventually(e.t, 30*time.Second, func() error {
		var evs eventsv1.EventList
		if err := e.c.Client.List(e.t.Context(), &evs, client.InNamespace(operatorNamespace)); err != nil {
			return err
		}
		for _, ev := range evs.Items {
			if ev.Reason == reason && ev.Regarding.Kind == "Namespace" && containsAll(ev.Note, parts) {
				return nil
			}
		}
		return fmt.Errorf("no %s Event in %s with all of %q among %d", reason, operatorNamespace, parts, len(evs.Items))
	})
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// TestPrerequisitesHubWithoutGatewayAPI: a hub without the Gateway API CRDs still serves Ingresses,
// names each missing CRD in its log and in an Event, serves Gateways and HTTPRoutes once the CRDs
// are installed without a restart, and survives a CRD removed under it.
func TestPrerequisitesHubWithoutGatewayAPI(t *testing.T) {
	e := newPrereqEnv(t, testbed.Options{Without: []string{gatewayAPICRDs}})
	e.backend(40, "app", 9080)
	ctx, c := t.Context(), e.c.Client

	must(t, c.Create(ctx, &networkingv1.IngressClass{
		ObjectMeta: metav1.ObjectMeta{Name: "fleetgate"},
		Spec:       networkingv1.IngressClassSpec{Controller: v1alpha1.IngressControllerName},
	}))
	must(t, c.Create(ctx, &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: networkingv1.IngressSpec{IngressClassName: ptr.To("fleetgate"), Rules: []networkingv1.IngressRule{
			ingressRule("ingress.example.com", ingressPath(networkingv1.PathTypePrefix, "/", "app")),
		}},
	}))
	ingAddr := net.JoinHostPort(e.ingressAddress("default", "web", 60*time.Second), "80")
	e.answers(ingAddr, "ingress.example.com", "/", 200, "app", 10*time.Second)

	for _, crd := range []string{"gatewayclasses", "gateways", "httproutes", "grpcroutes", "tcproutes", "referencegrants"} {
		e.logged(10*time.Second, "kind not served", crd+".gateway.networking.k8s.io")
	}
	e.prereqEvent(fleet.ReasonCRDsMissing, "gateways.gateway.networking.k8s.io", "httproutes.gateway.networking.k8s.io")

	t.Run("CRDs installed later are used without a restart", func(t *testing.T) {
		must(t, e.c.InstallCRDs(gatewayAPICRDs))
		must(t, c.Create(ctx, httpRoute("web", "gateway.example.com", "app")))
		e.gateway(gwv1.Listener{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType})
		addr, _ := e.programmed(metav1.ConditionTrue, 60*time.Second)
		e.serves(net.JoinHostPort(addr, "80"), "gateway.example.com", "app", 10*time.Second)
		e.prereqEvent(fleet.ReasonInstalled, "every CRD")
	})

	t.Run("a CRD removed at runtime reads as absent again", func(t *testing.T) {
		must(t, e.c.UninstallCRDs("_tcproutes"))
		e.logged(30*time.Second, "kind no longer served", "tcproutes.gateway.networking.k8s.io")
		e.prereqEvent(fleet.ReasonCRDsMissing, "tcproutes.gateway.networking.k8s.io")
		// Everything else keeps being served: a new route reaches the proxy.
		must(t, c.Create(ctx, httpRoute("more", "more.example.com", "app")))
		addr, _ := e.programmed(metav1.ConditionTrue, 30*time.Second)
		e.serves(net.JoinHostPort(addr, "80"), "more.example.com", "app", 30*time.Second)
		e.answers(ingAddr, "ingress.example.com", "/", 200, "app", 10*time.Second)
	})

	t.Run("a CRD installed again is read again", func(t *testing.T) {
		must(t, e.c.InstallCRDs("_tcproutes"))
		// The first time was when the whole Gateway API was installed.
		e.loggedTimes(30*time.Second, 2, "kind served now", "TCPRoute")
	})
}

// memberCondition waits until MemberCluster name has the condition of type t with the status and a
// message holding every one of parts.
func memberCondition(t *testing.T, c client.Client, name, typ string, status metav1.ConditionStatus, parts ...string) {
	t.Helper()
	testbed.Eventually(t, 60*time.Second, func() error {
		var mc v1alpha1.MemberCluster
		if err := c.Get(t.Context(), client.ObjectKey{Name: name}, &mc); err != nil {
			return err
		}
		cond := meta.FindStatusCondition(mc.Status.Conditions, typ)
		if cond == nil || cond.Status != status || cond.ObservedGeneration != mc.Generation || !containsAll(cond.Message, parts) {
			return fmt.Errorf("MemberCluster %s %s = %+v, want %s with %q", name, typ, cond, status, parts)
		}
		return nil
	})
}

// TestPrerequisitesMemberWithoutMCS: a member without the MCS CRDs is connected and read all the
// same, its MemberCluster says which CRDs it lacks (condition and Event), the MCS controller keeps
// serving the others, and once the CRDs are installed the member gets its ServiceImports without
// a restart.
func TestPrerequisitesMemberWithoutMCS(t *testing.T) {
	hub := testbed.ForTestWith(t, "hub", testbed.Options{})
	member := testbed.ForTestWith(t, "member", testbed.Options{Without: []string{"multicluster.x-k8s.io_"}})
	ctx := t.Context()
	runOperator(t, hub, testr.NewWithOptions(t, testr.Options{Verbosity: 0}), controllers.Options{
		Registry: prometheus.NewRegistry(),
		Fleet:    &controllers.FleetOptions{Namespace: operatorNamespace, HubIsMember: true, MCSController: true},
	})
	must(t, testbed.RegisterMember(ctx, hub, member, operatorNamespace, v1alpha1.DefaultClusterWeight, nil))

	memberCondition(t, hub.Client, "member", v1alpha1.MemberClusterReady, metav1.ConditionTrue)
	memberCondition(t, hub.Client, "member", fleet.PrerequisitesInstalled, metav1.ConditionFalse,
		"serviceexports.multicluster.x-k8s.io", "serviceimports.multicluster.x-k8s.io")
	testbed.Eventually(t, 30*time.Second, func() error {
		var evs eventsv1.EventList
		if err := hub.Client.List(ctx, &evs); err != nil {
			return err
		}
		for _, ev := range evs.Items {
			if ev.Regarding.Kind == "MemberCluster" && ev.Regarding.Name == "member" && ev.Reason == fleet.ReasonCRDsMissing &&
				strings.Contains(ev.Note, "serviceimports.multicluster.x-k8s.io") {
				return nil
			}
		}
		return fmt.Errorf("no %s Event for MemberCluster member among %d", fleet.ReasonCRDsMissing, len(evs.Items))
	})

	// The hub exports a Service: its own ServiceImport is made although the member cannot hold one.
	must(t, hub.Client.Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "shared"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
	}))
	must(t, hub.Client.Create(ctx, &mcsv1a1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "shared"}}))
	imported := func(c *testbed.Cluster) func() error {
		return func() error {
			return c.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "shared"}, &mcsv1a1.ServiceImport{})
		}
	}
	testbed.Eventually(t, 30*time.Second, imported(hub))

	must(t, member.InstallCRDs("multicluster.x-k8s.io_"))
	memberCondition(t, hub.Client, "member", fleet.PrerequisitesInstalled, metav1.ConditionTrue, "every CRD")
	testbed.Eventually(t, 30*time.Second, imported(member))
}

// TestPrerequisitesStandardChannel: a hub with the Gateway API standard channel only (no TCPRoute,
// UDPRoute or TLSRoute CRDs, a very common install) serves HTTPRoutes, does not offer the missing
// kinds on its listeners, and names the missing CRDs.
func TestPrerequisitesStandardChannel(t *testing.T) {
	e := newPrereqEnv(t, testbed.Options{Without: []string{"_tcproutes", "_udproutes", "_tlsroutes"}})
	e.backend(41, "app", 9080)
	must(t, e.c.Client.Create(t.Context(), httpRoute("web", "www.example.com", "app")))
	e.gateway(gwv1.Listener{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType},
		gwv1.Listener{Name: "tcp", Port: 9000, Protocol: gwv1.TCPProtocolType})
	addr, _ := e.programmed(metav1.ConditionTrue, 60*time.Second)
	e.serves(net.JoinHostPort(addr, "80"), "www.example.com", "app", 10*time.Second)

	// The listeners offer only what the cluster serves: a TCP listener without the TCPRoute CRD
	// has no kind to offer, which the spec calls InvalidRouteKinds.
	type listener struct{ Kinds, ResolvedRefs string }
	want := map[string]listener{"http": {"HTTPRoute,GRPCRoute", "True/ResolvedRefs"}, "tcp": {"", "False/InvalidRouteKinds"}}
	testbed.Eventually(t, 30*time.Second, func() error {
		var gw gwv1.Gateway
		if err := e.c.Client.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: "gw"}, &gw); err != nil {
			return err
		}
		got := map[string]listener{}
		for _, ls := range gw.Status.Listeners {
			var kinds []string
			for _, k := range ls.SupportedKinds {
				kinds = append(kinds, string(k.Kind))
			}
			l := listener{Kinds: strings.Join(kinds, ",")}
			if c := meta.FindStatusCondition(ls.Conditions, string(gwv1.ListenerConditionResolvedRefs)); c != nil {
				l.ResolvedRefs = string(c.Status) + "/" + c.Reason
			}
			got[string(ls.Name)] = l
		}
		if diff := cmp.Diff(want, got); diff != "" {
			return fmt.Errorf("listener status (-want +got):\n%s", diff)
		}
		return nil
	})
	for _, crd := range []string{"tcproutes", "udproutes", "tlsroutes"} {
		e.logged(10*time.Second, "kind not served", crd+".gateway.networking.k8s.io")
	}
	e.prereqEvent(fleet.ReasonCRDsMissing, "tcproutes.gateway.networking.k8s.io", "tlsroutes.gateway.networking.k8s.io", "udproutes.gateway.networking.k8s.io")
}
