// Package e2e runs fleetgate across a fleet: a hub and two member API servers, the operator binary
// in local mode in the hub, and echo backends published by EndpointSlices in the members.
package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	mcsv1a1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/tests/testbed"
)

const operatorNS = "fleetgate-system"

func TestMain(m *testing.M) {
	testbed.QuietGlobalLogger()
	os.Exit(m.Run())
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// fleet is the hub (operator) and two members.
type fleet struct {
	t         *testing.T
	hub, a, b *testbed.Cluster
	all       []*testbed.Cluster
	op        *testbed.Operator
	binary    string
	stateDir  string
}

// newFleet starts the three API servers and the operator, registers member-a with its admin
// kubeconfig and member-b with a user bound only to config/member's ClusterRole.
func newFleet(t *testing.T, weightA, weightB int32) *fleet {
	return newFleetWith(t, weightA, weightB)
}

// newFleetWith is newFleet with more operator flags.
func newFleetWith(t *testing.T, weightA, weightB int32, operatorArgs ...string) *fleet {
	clusters := testbed.ForTest(t, "hub", "member-a", "member-b")
	binary, err := testbed.BuildOperator(t.TempDir())
	must(t, err)
	f := &fleet{t: t, hub: clusters[0], a: clusters[1], b: clusters[2], all: clusters, binary: binary, stateDir: t.TempDir()}
	ctx := t.Context()
	must(t, f.hub.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNS}}))
	op, err := testbed.StartOperator(binary, f.hub, f.stateDir, append([]string{"--namespace=" + operatorNS, "--log-level=info"}, operatorArgs...)...)
	must(t, err)
	f.op = op
	t.Cleanup(func() {
		if err := f.op.Stop(); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			if log, err := os.ReadFile(f.op.Log); err == nil {
				t.Logf("operator log (tail):\n%s", tail(string(log), 60))
			}
		}
	})
	must(t, testbed.RegisterMember(ctx, f.hub, f.a, operatorNS, weightA, nil))
	must(t, testbed.RegisterMember(ctx, f.hub, f.b, operatorNS, weightB, f.minimalKubeconfig(f.b)))
	for _, m := range []string{"member-a", "member-b"} {
		f.memberReady(m, metav1.ConditionTrue, 60*time.Second)
	}
	return f
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// minimalKubeconfig binds config/member/role.yaml, and nothing else, to a new user of c.
func (f *fleet) minimalKubeconfig(c *testbed.Cluster) []byte {
	t := f.t
	data, err := os.ReadFile(filepath.Join(testbed.RepoRoot(), "config", "member", "role.yaml"))
	must(t, err)
	var role rbacv1.ClusterRole
	must(t, yaml.Unmarshal(data, &role))
	ctx := t.Context()
	must(t, c.Client.Create(ctx, &role))
	must(t, c.Client.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "fleetgate-member"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "fleetgate-members"}},
	}))
	kc, err := c.KubeconfigFor("fleetgate-member", "fleetgate-members")
	must(t, err)
	return kc
}

// memberReady waits for the MemberCluster's Ready condition and returns how long it took.
func (f *fleet) memberReady(name string, status metav1.ConditionStatus, timeout time.Duration) (time.Duration, metav1.Condition) {
	start := time.Now()
	var got metav1.Condition
	testbed.Eventually(f.t, timeout, func() error {
		var mc v1alpha1.MemberCluster
		if err := f.hub.Client.Get(f.t.Context(), client.ObjectKey{Name: name}, &mc); err != nil {
			return err
		}
		c := meta.FindStatusCondition(mc.Status.Conditions, v1alpha1.MemberClusterReady)
		if c == nil || c.Status != status {
			return fmt.Errorf("MemberCluster %s Ready = %+v, want %s", name, c, status)
		}
		got = *c
		return nil
	})
	return time.Since(start), got
}

// classes creates, in c, a Fleet-scope class "fleet" and a Cluster-scope class "local".
func classes(t testing.TB, c *testbed.Cluster) {
	ctx := t.Context()
	for name, scope := range map[string]v1alpha1.Scope{"fleet": v1alpha1.ScopeFleet, "local": v1alpha1.ScopeCluster} {
		must(t, testbed.CreateClass(ctx, c.Client, name, scope))
	}
}

func gateway(name, class string) *gwv1.Gateway {
	return &gwv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: gwv1.GatewaySpec{GatewayClassName: gwv1.ObjectName(class),
			Listeners: []gwv1.Listener{{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType}}},
	}
}

// backend starts an echo server named name on 198.18.0.n:9080 and publishes it in c as Service
// svc, exported to the fleet.
func backend(t testing.TB, c *testbed.Cluster, n byte, name, svc string) {
	ip := testbed.BackendIP(n)
	remove, err := testbed.AddBackendIP(ip)
	if err != nil {
		t.Skipf("backends need an address on lo: %v", err)
	}
	t.Cleanup(func() { _ = remove() })
	echo, err := testbed.StartEcho(name, net.JoinHostPort(ip, "9080"))
	must(t, err)
	t.Cleanup(func() { _ = echo.Close() })
	ctx := t.Context()
	must(t, c.Client.Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: svc},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
	}))
	must(t, c.Client.Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: svc + "-1",
			Labels: map[string]string{discoveryv1.LabelServiceName: svc, discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](9080)}},
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
	}))
	must(t, c.Client.Create(ctx, &mcsv1a1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: svc}}))
}

func route(name, gw, host string, backend gwv1.BackendObjectReference) *gwv1.HTTPRoute {
	backend.Port = ptr.To(gwv1.PortNumber(80))
	return &gwv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: gwv1.HTTPRouteSpec{
			CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: gwv1.ObjectName(gw)}}},
			Hostnames:       []gwv1.Hostname{gwv1.Hostname(host)},
			Rules:           []gwv1.HTTPRouteRule{{BackendRefs: []gwv1.HTTPBackendRef{{BackendRef: gwv1.BackendRef{BackendObjectReference: backend}}}}},
		},
	}
}

func service(name string) gwv1.BackendObjectReference {
	return gwv1.BackendObjectReference{Name: gwv1.ObjectName(name)}
}

func serviceImport(name string) gwv1.BackendObjectReference {
	return gwv1.BackendObjectReference{Name: gwv1.ObjectName(name), Group: ptr.To(gwv1.Group(mcsv1a1.GroupName)), Kind: ptr.To(gwv1.Kind("ServiceImport"))}
}

// gatewayAddress returns the Gateway's address once it is Programmed=True at its generation, or "".
func gatewayAddress(ctx context.Context, c *testbed.Cluster, name string) (string, error) {
	var gw gwv1.Gateway
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, &gw); err != nil {
		return "", err
	}
	cond := meta.FindStatusCondition(gw.Status.Conditions, string(gwv1.GatewayConditionProgrammed))
	if cond == nil || cond.Status != metav1.ConditionTrue || cond.ObservedGeneration != gw.Generation || len(gw.Status.Addresses) != 1 {
		return "", nil
	}
	return gw.Status.Addresses[0].Value, nil
}

// routeAccepted waits for the route in c to be Accepted by its parent gw.
func routeAccepted(t testing.TB, c *testbed.Cluster, name string, timeout time.Duration) {
	testbed.Eventually(t, timeout, func() error {
		var r gwv1.HTTPRoute
		if err := c.Client.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: name}, &r); err != nil {
			return err
		}
		for _, p := range r.Status.Parents {
			if p.ControllerName == v1alpha1.ControllerName && meta.IsStatusConditionTrue(p.Conditions, string(gwv1.RouteConditionAccepted)) &&
				meta.IsStatusConditionTrue(p.Conditions, string(gwv1.RouteConditionResolvedRefs)) {
				return nil
			}
		}
		return fmt.Errorf("%s: HTTPRoute %s not Accepted with ResolvedRefs: %+v", c.Name, name, r.Status.Parents)
	})
}

// prober sends requests through a gateway with keep-alive connections.
type prober struct {
	addr   string
	client *http.Client
}

func newProber(addr string) *prober {
	return &prober{addr: net.JoinHostPort(addr, "80"), client: &http.Client{Timeout: 2 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: 64, MaxConnsPerHost: 64}}}
}

// get returns the status and the backend name (the echo body's first word), or an error.
func (p *prober) get(host string) (int, string, error) {
	req, _ := http.NewRequest(http.MethodGet, "http://"+p.addr+"/", nil)
	req.Host = host
	resp, err := p.client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, "", err
	}
	name, _, _ := strings.Cut(string(body), " ")
	return resp.StatusCode, name, nil
}

func (p *prober) serves(t testing.TB, host, want string, timeout time.Duration) {
	t.Helper()
	testbed.Eventually(t, timeout, func() error {
		code, name, err := p.get(host)
		if err != nil || code != http.StatusOK || name != want {
			return fmt.Errorf("GET %s Host %s = %d %q %v, want 200 from %s", p.addr, host, code, name, err, want)
		}
		return nil
	})
}

// spread sends n requests with c concurrent clients and counts answers by backend; failures
// (transport errors and non-200s) are counted under "".
func (p *prober) spread(host string, n, c int) map[string]int {
	var mu sync.Mutex
	counts := map[string]int{}
	var wg sync.WaitGroup
	per := n / c
	for range c {
		wg.Go(func() {
			local := map[string]int{}
			for range per {
				code, name, err := p.get(host)
				if err != nil || code != http.StatusOK {
					name = ""
				}
				local[name]++
			}
			mu.Lock()
			for k, v := range local {
				counts[k] += v
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	return counts
}
