package integration

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/tests/testbed"
)

// trafficEnv is an API server, the operator binary in local mode, and echo backends on 198.18.0.x.
type trafficEnv struct {
	t        testing.TB
	c        *testbed.Cluster
	binary   string
	stateDir string
	op       *testbed.Operator
}

func newTrafficEnv(t testing.TB) *trafficEnv {
	t.Helper()
	c := testbed.ForTest(t, "hub")[0]
	binary, err := testbed.BuildOperator(t.TempDir())
	must(t, err)
	e := &trafficEnv{t: t, c: c, binary: binary, stateDir: t.TempDir()}
	e.startOperator()
	t.Cleanup(func() {
		if e.op != nil {
			if err := e.op.Stop(); err != nil {
				t.Error(err)
			}
		}
	})
	return e
}

func (e *trafficEnv) startOperator() {
	op, err := testbed.StartOperator(e.binary, e.c, e.stateDir)
	must(e.t, err)
	e.op = op
}

// backend starts an echo server on 198.18.0.n:port and publishes it as Service default/name.
func (e *trafficEnv) backend(n byte, name string, port int32) { e.backendIn("default", n, name, port) }

// backendIn is backend in namespace ns.
func (e *trafficEnv) backendIn(ns string, n byte, name string, port int32) {
	t := e.t
	ip := testbed.BackendIP(n)
	remove, err := testbed.AddBackendIP(ip)
	if err != nil {
		t.Skipf("backends need an address on lo: %v", err)
	}
	t.Cleanup(func() { _ = remove() })
	echo, err := testbed.StartEcho(name, net.JoinHostPort(ip, fmt.Sprint(port)))
	must(t, err)
	t.Cleanup(func() { _ = echo.Close() })
	ctx := t.Context()
	must(t, e.c.Client.Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
	}))
	must(t, e.c.Client.Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-1",
			Labels: map[string]string{discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To(port)}},
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
	}))
}

func (e *trafficEnv) gateway(listeners ...gwv1.Listener) {
	ctx := e.t.Context()
	must(e.t, testbed.CreateClass(ctx, e.c.Client, "fleetgate", v1alpha1.ScopeCluster))
	must(e.t, e.c.Client.Create(ctx, &gwv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "gw"},
		Spec:       gwv1.GatewaySpec{GatewayClassName: "fleetgate", Listeners: listeners},
	}))
}

func httpRoute(name, host, backend string) *gwv1.HTTPRoute {
	return &gwv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: gwv1.HTTPRouteSpec{
			CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "gw"}}},
			Hostnames:       []gwv1.Hostname{gwv1.Hostname(host)},
			Rules: []gwv1.HTTPRouteRule{{BackendRefs: []gwv1.HTTPBackendRef{{BackendRef: gwv1.BackendRef{
				BackendObjectReference: gwv1.BackendObjectReference{Name: gwv1.ObjectName(backend), Port: ptr.To(gwv1.PortNumber(80))},
			}}}}},
		},
	}
}

// programmed waits for the Gateway's Programmed condition to have the status and returns the
// Gateway's address and the condition.
func (e *trafficEnv) programmed(status metav1.ConditionStatus, timeout time.Duration) (string, metav1.Condition) {
	var addr string
	var got metav1.Condition
	testbed.Eventually(e.t, timeout, func() error {
		var gw gwv1.Gateway
		if err := e.c.Client.Get(e.t.Context(), client.ObjectKey{Namespace: "default", Name: "gw"}, &gw); err != nil {
			return err
		}
		cond := meta.FindStatusCondition(gw.Status.Conditions, string(gwv1.GatewayConditionProgrammed))
		if cond == nil || cond.Status != status || cond.ObservedGeneration != gw.Generation {
			return fmt.Errorf("Programmed = %+v, want %s at generation %d", cond, status, gw.Generation)
		}
		got = *cond
		if status == metav1.ConditionTrue && len(gw.Status.Addresses) != 1 {
			return fmt.Errorf("addresses = %+v, want one", gw.Status.Addresses)
		}
		if len(gw.Status.Addresses) > 0 {
			addr = gw.Status.Addresses[0].Value
		}
		return nil
	})
	return addr, got
}

// get sends one request through the proxy and returns status and body ("" on a transport error).
func get(addr, host, path string) (int, string) {
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
	req.Host = host
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Do(req)
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func (e *trafficEnv) serves(addr, host, want string, timeout time.Duration) {
	e.t.Helper()
	testbed.Eventually(e.t, timeout, func() error {
		code, body := get(addr, host, "/")
		if code != http.StatusOK || !strings.HasPrefix(body, want+" ") {
			return fmt.Errorf("GET http://%s/ Host %s = %d %q, want 200 from %s", addr, host, code, body, want)
		}
		return nil
	})
}

// TestLocalModeServesTraffic drives the whole pipeline with real traffic: the operator binary in
// local mode starts a proxy process for the Gateway, feeds it over the config stream, and reports
// Programmed only once the proxy acknowledged; route changes, a refused config, a killed proxy and a
// killed operator all converge back to serving.
func TestLocalModeServesTraffic(t *testing.T) {
	e := newTrafficEnv(t)
	e.backend(10, "v1", 9080)
	e.backend(11, "v2", 9080)
	ctx := t.Context()
	// The route exists before the Gateway, so the config that first carries the Gateway serves it.
	must(t, e.c.Client.Create(ctx, httpRoute("web", "www.example.com", "v1")))
	e.gateway(gwv1.Listener{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType})

	addr, _ := e.programmed(metav1.ConditionTrue, 30*time.Second)
	gwAddr := net.JoinHostPort(addr, "80")
	// Programmed=True is written only after the proxy ACKed, so the very first request must succeed.
	if code, body := get(gwAddr, "www.example.com", "/"); code != http.StatusOK || !strings.HasPrefix(body, "v1 ") {
		t.Fatalf("first request after Programmed=True: %d %q, want 200 from v1", code, body)
	}
	if code, _ := get(gwAddr, "other.example.com", "/"); code != http.StatusNotFound {
		t.Errorf("unknown host: %d, want 404", code)
	}

	t.Run("route change is served", func(t *testing.T) {
		r := &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}}
		update(t, e.c.Client, r, func() { r.Spec.Rules[0].BackendRefs[0].Name = "v2" })
		e.serves(gwAddr, "www.example.com", "v2", 10*time.Second)
	})

	t.Run("a refused config is reported and the old one keeps serving", func(t *testing.T) {
		// Occupy the port a new listener wants on the proxy's address: the proxy cannot bind it, so
		// it NACKs, and Programmed turns False with its reason.
		squat, err := net.Listen("tcp", net.JoinHostPort(addr, "8081"))
		must(t, err)
		gw := &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "gw"}}
		update(t, e.c.Client, gw, func() {
			gw.Spec.Listeners = append(gw.Spec.Listeners, gwv1.Listener{Name: "alt", Port: 8081, Protocol: gwv1.HTTPProtocolType})
		})
		// Programmed is Pending while the new version is on its way, then Invalid once the NACK is in.
		testbed.Eventually(t, 15*time.Second, func() error {
			_, cond := e.programmed(metav1.ConditionFalse, 15*time.Second)
			if cond.Reason != string(gwv1.GatewayReasonInvalid) || !strings.Contains(cond.Message, "rejected") {
				return fmt.Errorf("Programmed after a NACK = %s: %s, want Invalid with the proxy's reason", cond.Reason, cond.Message)
			}
			return nil
		})
		e.serves(gwAddr, "www.example.com", "v2", time.Second)
		// Freeing the port does not by itself resend; removing the listener converges.
		must(t, squat.Close())
		update(t, e.c.Client, gw, func() { gw.Spec.Listeners = gw.Spec.Listeners[:1] })
		e.programmed(metav1.ConditionTrue, 15*time.Second)
	})

	t.Run("a killed proxy is restarted", func(t *testing.T) {
		if n, err := e.op.KillChildren("dataplane --gateway hub/default/gw"); err != nil || n == 0 {
			t.Fatalf("killing the gateway's proxy: %d killed, %v", n, err)
		}
		e.serves(gwAddr, "www.example.com", "v2", 20*time.Second)
		e.programmed(metav1.ConditionTrue, 10*time.Second)
	})

	t.Run("a killed operator converges after restart", func(t *testing.T) {
		e.op.Kill()
		e.startOperator()
		// The route changes while the new operator starts; it must serve the change.
		r := &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}}
		update(t, e.c.Client, r, func() { r.Spec.Rules[0].BackendRefs[0].Name = "v1" })
		e.serves(gwAddr, "www.example.com", "v1", 30*time.Second)
		e.programmed(metav1.ConditionTrue, 10*time.Second)
	})
}
