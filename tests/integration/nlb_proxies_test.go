package integration

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1a2 "sigs.k8s.io/gateway-api/apis/v1alpha2"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/providers"
	awsprovider "github.com/fleetgate/fleetgate/providers/aws"
	"github.com/fleetgate/fleetgate/providers/aws/mototest"
	"github.com/fleetgate/fleetgate/tests/testbed"
)

// nlbGateway is the Gateway of TestNLBThroughProxies; its own name keeps its proxy's loopback
// address (derived from the gateway key) apart from other tests' gateways.
const (
	nlbGateway    = "edge"
	nlbGatewayKey = "hub/default/" + nlbGateway
)

// TestNLBThroughProxies runs the operator binary in local mode with a Gateway of an AWS network
// load balancer class on moto: its HTTP and HTTPS listeners go through real fleetgate proxies
// (local processes on a loopback address), its TCP listener straight to a real backend. moto holds
// one NLB, tagged as fleetgate's, whose TCP listeners on the HTTP(S) ports target exactly the
// running proxy and whose TCP listener targets the backend; the proxy serves the routes over HTTP
// and HTTPS (the NLB cannot forward in moto, so requests go to the proxy's address); the Gateway
// is Programmed with the NLB's DNS name only once the proxy ACKed (a proxy that refuses its config
// keeps it False although the NLB is done); a route change is served without any mutating ELBv2
// call; the proxy goes with the last HTTP(S) listener; deleting the Gateway removes the NLB and
// its target groups, and nothing of the proxy is left.
func TestNLBThroughProxies(t *testing.T) {
	e := newMotoEnv(t, "nlb-proxies")
	ctx, cl := t.Context(), e.c.Client

	class := testbed.AWSClass("aws-nlb", e.shim.URL(), e.vpc)
	class[2].(*v1alpha1.GatewayClassConfig).Spec.AWS.LoadBalancerType = v1alpha1.AWSNetwork
	must(t, testbed.CreateAll(ctx, cl, class...))
	tr := &trafficEnv{t: t, c: e.c}
	tr.backend(150, "nlb-v1", 9180)
	tr.backend(151, "nlb-v2", 9180)
	tr.backend(152, "nlb-tcp", 9190)
	crt, key, pool := testbed.SelfSignedPEM(t, "www.example.com")
	must(t, cl.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "www-tls"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: crt, corev1.TLSPrivateKeyKey: key}}))
	must(t, cl.Create(ctx, nlbRoute("nlb-v1")))
	must(t, cl.Create(ctx, &gwv1a2.TCPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "edge-tcp"},
		Spec: gwv1a2.TCPRouteSpec{CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: nlbGateway, SectionName: ptr.To[gwv1.SectionName]("tcp")}}},
			Rules: []gwv1a2.TCPRouteRule{{BackendRefs: []gwv1.BackendRef{{BackendObjectReference: gwv1.BackendObjectReference{
				Name: "nlb-tcp", Port: ptr.To[gwv1.PortNumber](80)}}}}}}}))
	must(t, cl.Create(ctx, &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: nlbGateway},
		Spec: gwv1.GatewaySpec{GatewayClassName: "aws-nlb", Listeners: []gwv1.Listener{
			{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType},
			{Name: "https", Port: 443, Protocol: gwv1.HTTPSProtocolType,
				TLS: &gwv1.ListenerTLSConfig{CertificateRefs: []gwv1.SecretObjectReference{{Name: "www-tls"}}}},
			{Name: "tcp", Port: 9000, Protocol: gwv1.TCPProtocolType}}}}))

	binary, err := testbed.BuildOperator(t.TempDir())
	must(t, err)
	stateDir := t.TempDir()
	op, err := testbed.StartOperator(binary, e.c, stateDir,
		"--fleet-id", e.fleet, "--aws-region", mototest.Region, "--aws-endpoint", e.shim.URL())
	must(t, err)
	t.Cleanup(func() { must(t, op.Stop()) })
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(op.Log)
			t.Logf("operator log:\n%s", b)
		}
	})
	started := time.Now()

	// Programmed only once the proxy ACKed: the first request after it is served.
	gw := nlbProgrammed(t, cl, metav1.ConditionTrue, 90*time.Second)
	elbWrites := func(r mototest.Request) bool { return r.Service == "elasticloadbalancing" && r.Mutating() }
	t.Logf("Programmed %s after the operator started, %d mutating ELBv2 calls", time.Since(started).Round(time.Millisecond), e.shim.Count(elbWrites))
	proxy := localProxyAddress(t, cl)
	if code, body := get(net.JoinHostPort(proxy, "80"), "www.example.com", "/"); code != http.StatusOK || !strings.HasPrefix(body, "nlb-v1 ") {
		t.Fatalf("first request after Programmed=True: %d %q, want 200 from nlb-v1", code, body)
	}
	if code, _ := get(net.JoinHostPort(proxy, "80"), "other.example.com", "/"); code != http.StatusNotFound {
		t.Errorf("unknown host through the proxy: %d, want 404", code)
	}
	if code, body := getTLS(net.JoinHostPort(proxy, "443"), "www.example.com", pool); code != http.StatusOK || !strings.HasPrefix(body, "nlb-v1 ") {
		t.Errorf("HTTPS through the proxy: %d %q, want 200 from nlb-v1", code, body)
	}

	// One NLB, its address on the Gateway, its HTTP(S) ports to the running proxy, TCP to the backend.
	lbs := e.loadBalancers()
	if len(lbs) != 1 {
		t.Fatalf("%d load balancers tagged for the fleet, want 1: %v", len(lbs), lbNames(lbs))
	}
	nlb := lbs[0]
	if nlb.Type != elbtypes.LoadBalancerTypeEnumNetwork {
		t.Errorf("load balancer type %s, want network", nlb.Type)
	}
	hostname := gwv1.AddressType(gwv1.HostnameAddressType)
	if d := cmp.Diff([]gwv1.GatewayStatusAddress{{Type: &hostname, Value: *nlb.DNSName}}, gw.Status.Addresses); d != "" {
		t.Errorf("Gateway addresses (-want the NLB's DNS name +got):\n%s", d)
	}
	procs := proxyProcesses(t, stateDir)
	if len(procs) != 1 || flagValue(procs[0], "--address") != proxy {
		t.Fatalf("running proxies %q, want one on %s", procs, proxy)
	}
	want := map[string][]string{
		"TCP:80":   {net.JoinHostPort(proxy, "80")},
		"TCP:443":  {net.JoinHostPort(proxy, "443")},
		"TCP:9000": {testbed.BackendIP(152) + ":9190"},
	}
	if d := cmp.Diff(want, e.listenerTargets(nlb)); d != "" {
		t.Errorf("NLB listeners and their targets (-want +got):\n%s", d)
	}
	owner := map[string]string{awsprovider.TagManagedBy: providers.ManagedBy, awsprovider.TagFleet: e.fleet,
		awsprovider.TagGateway: providers.GatewayID(nlbGatewayKey), awsprovider.TagGatewayKey: nlbGatewayKey}
	arns := []string{*nlb.LoadBalancerArn}
	for _, tg := range e.targetGroups(nlb) {
		arns = append(arns, *tg.TargetGroupArn)
	}
	for _, arn := range arns {
		tags := e.tags(arn)
		for k, v := range owner {
			if tags[k] != v {
				t.Errorf("%s: tag %s=%q, want %q (tags %v)", arn, k, tags[k], v, tags)
			}
		}
	}

	t.Run("a route change is served by the proxy alone", func(t *testing.T) {
		reads := func(r mototest.Request) bool { return r.Service == "elasticloadbalancing" && !r.Mutating() }
		e.quiet()
		writes, before := e.shim.Count(elbWrites), e.shim.Count(reads)
		rt := nlbRoute("")
		update(t, cl, rt, func() { rt.Spec.Rules[0].BackendRefs[0].Name = "nlb-v2" })
		tr.serves(net.JoinHostPort(proxy, "80"), "www.example.com", "nlb-v2", 20*time.Second)
		// The provider looks at the new model (it reads the NLB again) and changes nothing.
		testbed.Eventually(t, 30*time.Second, func() error {
			if n := e.shim.Count(reads); n == before {
				return errors.New("the AWS provider has not looked at the NLB since the route changed")
			}
			return nil
		})
		e.quiet()
		t.Logf("the provider's look at the NLB after the route change: %d ELBv2 reads", e.shim.Count(reads)-before)
		var made []string
		e.shim.Count(func(r mototest.Request) bool {
			if elbWrites(r) {
				made = append(made, r.Action)
			}
			return false
		})
		if len(made) != writes {
			t.Errorf("the route change made %d mutating ELBv2 calls, want 0: %v", len(made)-writes, made[writes:])
		}
	})

	t.Run("a proxy that refuses its config keeps the Gateway from being Programmed", func(t *testing.T) {
		// The proxy cannot bind a port that is taken on its address: it NACKs the config that
		// adds a listener there, while the NLB's side of it is done.
		squat, err := net.Listen("tcp", net.JoinHostPort(proxy, "8081"))
		must(t, err)
		defer squat.Close()
		g := &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: nlbGateway}}
		update(t, cl, g, func() {
			g.Spec.Listeners = append(g.Spec.Listeners, gwv1.Listener{Name: "alt", Port: 8081, Protocol: gwv1.HTTPProtocolType})
		})
		testbed.Eventually(t, 60*time.Second, func() error {
			if _, ok := e.listenerTargets(nlb)["TCP:8081"]; !ok {
				return fmt.Errorf("no NLB listener on 8081 yet: %v", e.listenerTargets(nlb))
			}
			var g gwv1.Gateway
			if err := cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: nlbGateway}, &g); err != nil {
				return err
			}
			c := meta.FindStatusCondition(g.Status.Conditions, string(gwv1.GatewayConditionProgrammed))
			if c == nil || c.ObservedGeneration != g.Generation || c.Status != metav1.ConditionFalse ||
				c.Reason != string(gwv1.GatewayReasonInvalid) || !strings.Contains(c.Message, "rejected") {
				return fmt.Errorf("Programmed = %+v, want False, Invalid with the proxy's refusal at generation %d", c, g.Generation)
			}
			return nil
		})
		tr.serves(net.JoinHostPort(proxy, "80"), "www.example.com", "nlb-v2", time.Second)
		must(t, squat.Close())
		update(t, cl, g, func() { g.Spec.Listeners = g.Spec.Listeners[:3] })
		nlbProgrammed(t, cl, metav1.ConditionTrue, 60*time.Second)
		testbed.Eventually(t, 30*time.Second, func() error {
			if got := e.listenerTargets(nlb); !cmp.Equal(want, got) {
				return fmt.Errorf("NLB listeners after the listener went: %v, want %v", got, want)
			}
			return nil
		})
	})

	t.Run("the proxy goes with the last HTTP listener", func(t *testing.T) {
		g := &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: nlbGateway}}
		update(t, cl, g, func() { g.Spec.Listeners = g.Spec.Listeners[2:] })
		nlbProgrammed(t, cl, metav1.ConditionTrue, 60*time.Second)
		testbed.Eventually(t, 60*time.Second, func() error {
			tcpOnly := map[string][]string{"TCP:9000": want["TCP:9000"]}
			if got := e.listenerTargets(nlb); !cmp.Equal(tcpOnly, got) {
				return fmt.Errorf("NLB listeners without the HTTP(S) listeners: %v, want %v", got, tcpOnly)
			}
			if procs := proxyProcesses(t, stateDir); len(procs) > 0 {
				return fmt.Errorf("a proxy still runs for a gateway without HTTP listeners: %q", procs)
			}
			var svc corev1.Service
			if err := cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: nlbProxyService()}, &svc); !apierrors.IsNotFound(err) {
				return fmt.Errorf("the proxy's Service: %v, want it gone", err)
			}
			return nil
		})
	})

	// Deleting the Gateway removes the NLB, its target groups and what is left of the proxy.
	must(t, cl.Delete(ctx, &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: nlbGateway}}))
	testbed.Eventually(t, 90*time.Second, func() error {
		if left := e.owned(); len(left) > 0 {
			return fmt.Errorf("left in the account: %v", left)
		}
		if procs := proxyProcesses(t, stateDir); len(procs) > 0 {
			return fmt.Errorf("proxies still run: %q", procs)
		}
		var svc corev1.Service
		if err := cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: nlbProxyService()}, &svc); !apierrors.IsNotFound(err) {
			return fmt.Errorf("the proxy's Service: %v, want it gone", err)
		}
		// The proxy's state goes once it has exited.
		dirs, err := os.ReadDir(stateDir)
		if err != nil {
			return err
		}
		for _, d := range dirs {
			if d.IsDir() {
				return fmt.Errorf("state of a proxy left in %s", filepath.Join(stateDir, d.Name()))
			}
		}
		return nil
	})
	for _, port := range []string{"80", "443"} {
		if c, err := net.DialTimeout("tcp", net.JoinHostPort(proxy, port), time.Second); !errors.Is(err, syscall.ECONNREFUSED) {
			if c != nil {
				c.Close()
			}
			t.Errorf("dialing the deleted proxy's %s:%s: %v, want connection refused", proxy, port, err)
		}
	}
}

// nlbRoute is HTTPRoute default/edge-web: www.example.com to backend port 80 on every listener of
// the Gateway that serves HTTP.
func nlbRoute(backend string) *gwv1.HTTPRoute {
	return &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "edge-web"},
		Spec: gwv1.HTTPRouteSpec{CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: nlbGateway}}},
			Hostnames: []gwv1.Hostname{"www.example.com"},
			Rules: []gwv1.HTTPRouteRule{{BackendRefs: []gwv1.HTTPBackendRef{{BackendRef: gwv1.BackendRef{BackendObjectReference: gwv1.BackendObjectReference{
				Name: gwv1.ObjectName(backend), Port: ptr.To[gwv1.PortNumber](80)}}}}}}}}
}

// nlbProgrammed waits for the Gateway's Programmed condition to have status at its generation.
func nlbProgrammed(t *testing.T, c client.Client, status metav1.ConditionStatus, timeout time.Duration) *gwv1.Gateway {
	t.Helper()
	var gw gwv1.Gateway
	testbed.Eventually(t, timeout, func() error {
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: nlbGateway}, &gw); err != nil {
			return err
		}
		cond := meta.FindStatusCondition(gw.Status.Conditions, string(gwv1.GatewayConditionProgrammed))
		if cond == nil || cond.Status != status || cond.ObservedGeneration != gw.Generation {
			return fmt.Errorf("Programmed = %+v, want %s at generation %d", cond, status, gw.Generation)
		}
		return nil
	})
	return &gw
}

// nlbProxyService is the name of the Service that stands for the gateway's local proxy.
func nlbProxyService() string {
	return providers.ResourceName(&providers.LoadBalancer{Gateway: nlbGatewayKey, Namespace: "default", Name: nlbGateway})
}

// localProxyAddress is the loopback address of the gateway's proxy, from its Service's status.
func localProxyAddress(t *testing.T, c client.Client) string {
	t.Helper()
	var addr string
	testbed.Eventually(t, 10*time.Second, func() error {
		var svc corev1.Service
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: nlbProxyService()}, &svc); err != nil {
			return err
		}
		if ing := svc.Status.LoadBalancer.Ingress; len(ing) != 1 || ing[0].IP == "" {
			return fmt.Errorf("the proxy's Service has status %+v, want its address", svc.Status.LoadBalancer)
		}
		addr = svc.Status.LoadBalancer.Ingress[0].IP
		return nil
	})
	return addr
}

// proxyProcesses lists the arguments of every running proxy process whose credentials are under
// stateDir (the operator's own, so that other tests' proxies do not count).
func proxyProcesses(t *testing.T, stateDir string) [][]string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	must(t, err)
	var out [][]string
	for _, d := range entries {
		raw, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err != nil || len(raw) == 0 {
			continue // not a process, gone, or a zombie
		}
		args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		if slices.Contains(args, "dataplane") && strings.HasPrefix(flagValue(args, "--cert"), stateDir+string(filepath.Separator)) {
			out = append(out, args)
		}
	}
	return out
}

// flagValue is the value following name in args, "" when it is not there.
func flagValue(args []string, name string) string {
	if i := slices.Index(args, name); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}

// getTLS sends one HTTPS request for host to addr, trusting pool, and returns status and body.
func getTLS(addr, host string, pool *x509.CertPool) (int, string) {
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		DisableKeepAlives: true,
		TLSClientConfig:   &tls.Config{ServerName: host, RootCAs: pool, MinVersion: tls.VersionTLS12},
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		},
	}}
	resp, err := c.Get("https://" + host + "/")
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// listenerTargets maps each listener of lb ("TCP:80") to the sorted "ip:port" targets of the
// target groups its default action forwards to.
func (e *awsEnv) listenerTargets(lb elbtypes.LoadBalancer) map[string][]string {
	ctx := e.t.Context()
	ls, err := e.elb.DescribeListeners(ctx, &elb.DescribeListenersInput{LoadBalancerArn: lb.LoadBalancerArn})
	must(e.t, err)
	out := map[string][]string{}
	for _, l := range ls.Listeners {
		var arns []string
		for _, a := range l.DefaultActions {
			if a.TargetGroupArn != nil {
				arns = append(arns, *a.TargetGroupArn)
			}
			if a.ForwardConfig != nil {
				for _, tg := range a.ForwardConfig.TargetGroups {
					arns = append(arns, *tg.TargetGroupArn)
				}
			}
		}
		targets := []string{}
		for _, arn := range slices.Compact(slices.Sorted(slices.Values(arns))) {
			h, err := e.elb.DescribeTargetHealth(ctx, &elb.DescribeTargetHealthInput{TargetGroupArn: &arn})
			must(e.t, err)
			for _, d := range h.TargetHealthDescriptions {
				targets = append(targets, fmt.Sprintf("%s:%d", *d.Target.Id, *d.Target.Port))
			}
		}
		slices.Sort(targets)
		out[fmt.Sprintf("%s:%d", l.Protocol, *l.Port)] = targets
	}
	return out
}

// targetGroups are the target groups of lb.
func (e *awsEnv) targetGroups(lb elbtypes.LoadBalancer) []elbtypes.TargetGroup {
	tgs, err := e.elb.DescribeTargetGroups(e.t.Context(), &elb.DescribeTargetGroupsInput{LoadBalancerArn: lb.LoadBalancerArn})
	must(e.t, err)
	return tgs.TargetGroups
}

// quiet waits until the shim has recorded no call for a second: every provider call under way
// has finished.
func (e *awsEnv) quiet() {
	e.t.Helper()
	last, since := e.shim.Count(nil), time.Now()
	testbed.Eventually(e.t, 60*time.Second, func() error {
		if n := e.shim.Count(nil); n != last {
			last, since = n, time.Now()
		}
		if time.Since(since) < time.Second {
			return errors.New("AWS calls still under way")
		}
		return nil
	})
}

// TestNLBFollowsProxyPods runs the operator binary as it runs in a cluster, with a Gateway of an
// NLB class on moto: its HTTP listener goes to the in-cluster provider's proxy Deployment behind a
// ClusterIP Service. The test plays the kubelet and the EndpointSlice controller: it marks the
// Deployment available, publishes the pod in the Service's EndpointSlice and runs the proxy with
// the credentials from its Secret. Once the provider is done with the gateway, a replaced pod
// moves the NLB's target to the new pod, without waiting for a resync.
func TestNLBFollowsProxyPods(t *testing.T) {
	e := newMotoEnv(t, "nlb-pods")
	ctx, cl := t.Context(), e.c.Client

	objs := testbed.AWSClass("aws-nlb", e.shim.URL(), e.vpc)
	objs[2].(*v1alpha1.GatewayClassConfig).Spec.AWS.LoadBalancerType = v1alpha1.AWSNetwork
	objs = append(objs, testbed.Published("default", "web", "10.0.1.10", 8080)...)
	objs = append(objs, testbed.HTTPGateway("default", "pods", "aws-nlb", "pods.example.com", "web")...)
	must(t, testbed.CreateAll(ctx, cl, objs...))
	binary, err := testbed.BuildOperator(t.TempDir())
	must(t, err)
	xdsAddr, stateDir := freeAddr(t), t.TempDir()
	start := func() *testbed.Operator {
		op, err := testbed.StartOperator(binary, e.c, stateDir, "--local-mode=false", "--namespace=fleetgate-system",
			"--xds-address="+xdsAddr, "--xds-public-address="+xdsAddr, "--proxy-image=fleetgate:test",
			"--fleet-id", e.fleet, "--aws-region", mototest.Region, "--aws-endpoint", e.shim.URL())
		must(t, err)
		return op
	}
	op := start()
	t.Cleanup(func() { must(t, op.Stop()) })
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(op.Log)
			t.Logf("operator log:\n%s", b)
		}
	})

	const key = "hub/default/pods"
	svcName := providers.ResourceName(&providers.LoadBalancer{Gateway: key, Namespace: "default", Name: "pods"})
	sel := client.MatchingLabels{providers.LabelGateway: providers.GatewayID(key)}
	var dep appsv1.Deployment
	var creds corev1.Secret
	testbed.Eventually(t, 60*time.Second, func() error {
		var deps appsv1.DeploymentList
		var secrets corev1.SecretList
		for _, l := range []client.ObjectList{&deps, &secrets} {
			if err := cl.List(ctx, l, client.InNamespace("default"), sel); err != nil {
				return err
			}
		}
		var svc corev1.Service
		if err := cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: svcName}, &svc); err != nil {
			return err
		}
		if len(deps.Items) != 1 || len(secrets.Items) != 1 || svc.Spec.Type != corev1.ServiceTypeClusterIP {
			return fmt.Errorf("proxy objects: %d Deployments, %d Secrets, a %s Service; want one each, ClusterIP", len(deps.Items), len(secrets.Items), svc.Spec.Type)
		}
		dep, creds = deps.Items[0], secrets.Items[0]
		return nil
	})

	// The kubelet's part and the EndpointSlice controller's.
	dep.Status = appsv1.DeploymentStatus{ObservedGeneration: dep.Generation, Replicas: *dep.Spec.Replicas,
		UpdatedReplicas: *dep.Spec.Replicas, ReadyReplicas: *dep.Spec.Replicas, AvailableReplicas: *dep.Spec.Replicas}
	must(t, cl.Status().Update(ctx, &dep))
	pods := proxySlice("default", "pods", svcName+"-abcde", "endpointslice-controller.k8s.io", "10.0.1.50")
	must(t, cl.Create(ctx, pods))
	dir := t.TempDir()
	for _, k := range []string{"tls.crt", "tls.key", "ca.crt"} {
		must(t, os.WriteFile(filepath.Join(dir, k), creds.Data[k], 0o600))
	}
	proxyCtx, stopProxy := context.WithCancel(context.Background())
	proxy := exec.CommandContext(proxyCtx, binary, "dataplane", "--gateway", key, "--node", "pod-1",
		"--xds-address", xdsAddr, "--address", "127.0.0.78", "--drain-timeout", "1s",
		"--cert", filepath.Join(dir, "tls.crt"), "--key", filepath.Join(dir, "tls.key"), "--ca", filepath.Join(dir, "ca.crt"))
	must(t, proxy.Start())
	t.Cleanup(func() { stopProxy(); _ = proxy.Wait() })

	targets := func(want ...string) func() error {
		return func() error {
			lbs := e.loadBalancers()
			if len(lbs) != 1 {
				return fmt.Errorf("%d load balancers tagged for the fleet, want 1", len(lbs))
			}
			if got := e.listenerTargets(lbs[0]); !cmp.Equal(map[string][]string{"TCP:80": want}, got) {
				return fmt.Errorf("NLB listeners and targets %v, want TCP:80 to %v", got, want)
			}
			return nil
		}
	}
	testbed.Eventually(t, 60*time.Second, targets("10.0.1.50:80"))
	testbed.Eventually(t, 60*time.Second, func() error {
		var gw gwv1.Gateway
		if err := cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: "pods"}, &gw); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(gw.Status.Conditions, string(gwv1.GatewayConditionProgrammed)) {
			return fmt.Errorf("Gateway default/pods is not Programmed: %v", gw.Status.Conditions)
		}
		return nil
	})

	// A restarted operator finds everything ready at its first look (while the first one may
	// still look again at a gateway that was not ready a moment ago), and then has nothing left
	// to do for the gateway before its resync.
	must(t, op.Stop())
	reads := e.shim.Count(nil)
	op = start()
	testbed.Eventually(t, 60*time.Second, func() error {
		if e.shim.Count(nil) == reads {
			return errors.New("the restarted operator has not looked at the account yet")
		}
		return nil
	})
	e.quiet()

	// The pod is replaced: a new one, at another address, is ready; the old one is gone.
	replaced := time.Now()
	update(t, cl, pods, func() { pods.Endpoints[0].Addresses = []string{"10.0.2.60"} })
	testbed.Eventually(t, 30*time.Second, targets("10.0.2.60:80"))
	t.Logf("the NLB targets the new pod %s after it replaced the old one", time.Since(replaced).Round(time.Millisecond))

	must(t, cl.Delete(ctx, &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "pods"}}))
	testbed.Eventually(t, 90*time.Second, func() error {
		if left := e.owned(); len(left) > 0 {
			return fmt.Errorf("left in the account: %v", left)
		}
		return nil
	})
}
