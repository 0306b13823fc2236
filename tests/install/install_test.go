// Package install installs fleetgate from its OLM bundle on a real API server, as OLM would, and
// runs the operator with exactly the bundle's RBAC: the token of the bundle's ServiceAccount, never
// admin credentials. The API server's audit log then tells which requests the operator made, which
// were denied, and which granted permissions nothing used.
package install

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/bundle"
	"github.com/fleetgate/fleetgate/providers"
	"github.com/fleetgate/fleetgate/tests/testbed"
)

var update = flag.Bool("update", false, "rewrite rbac-usage.md from this run's audit log")

// namespace is where the bundle is installed, as an OperatorGroup's target namespace would be.
const namespace = "fleetgate-system"

func TestMain(m *testing.M) {
	testbed.QuietGlobalLogger()
	os.Exit(m.Run())
}

// TestInstallWithBundleRBAC applies the bundle's objects to a hub with an audit log, runs the
// operator binary with the Deployment's arguments and the bundle ServiceAccount's token, registers a
// member cluster (with config/member's RBAC), reconciles the samples and a conformance-style set of
// every kind fleetgate serves until they are Accepted/Programmed, deletes a Gateway, and then reads
// the audit log: no request of the operator may have been denied, and every granted permission
// nothing used is listed (and written to rbac-usage.md with -update).
func TestInstallWithBundleRBAC(t *testing.T) {
	if testing.Short() {
		t.Skip("needs real API servers; skipped in -short mode")
	}
	ctx := t.Context()
	dir := t.TempDir()
	auditLog := filepath.Join(dir, "audit.log")

	var hub, member *testbed.Cluster
	var binary string
	errs := make([]error, 3)
	var wg sync.WaitGroup
	wg.Go(func() {
		hub, errs[0] = testbed.StartWith(ctx, "hub", testbed.Options{AuditLog: auditLog, PrerequisitesOnly: true})
	})
	wg.Go(func() { member, errs[1] = testbed.Start(ctx, "member") })
	wg.Go(func() { binary, errs[2] = testbed.BuildOperator(dir) })
	wg.Wait()
	for _, c := range []*testbed.Cluster{hub, member} {
		if c != nil {
			t.Cleanup(func() {
				if err := c.Stop(); err != nil {
					t.Errorf("stopping %s: %v", c.Name, err)
				}
			})
		}
	}
	must(t, errors.Join(errs...))

	b, err := bundle.Load(filepath.Join(testbed.RepoRoot(), "bundle"))
	must(t, err)
	install(t, hub, b)
	spec := b.CSV.Spec.Install.Spec
	sa := spec.ClusterPermissions[0].ServiceAccountName
	kubeconfig := filepath.Join(dir, "operator.kubeconfig")
	must(t, os.WriteFile(kubeconfig, tokenKubeconfig(t, hub, namespace, sa), 0o600))

	memberKubeconfig := installMember(t, member)
	must(t, testbed.RegisterMember(ctx, hub, member, namespace, 100, memberKubeconfig))

	// Registered before the operator's cleanup, so it runs after the operator stopped (its Lease
	// released), also when the test failed on the way: the denials tell why.
	t.Cleanup(func() {
		report := rbacUsage(t, auditLog, "system:serviceaccount:"+namespace+":"+sa, spec)
		if *update && !t.Failed() {
			must(t, os.WriteFile("rbac-usage.md", []byte(report), 0o644))
		}
	})
	xdsAddr := freeAddr(t)
	args, env := deploymentArgs(t, b, kubeconfig, xdsAddr)
	stopOperator := startOperator(t, binary, args, env, filepath.Join(dir, "operator.log"))
	startKubelet(t, hub.Client, binary, xdsAddr, filepath.Join(dir, "proxies"))

	echoIP := startEcho(t)
	applySamples(t, hub.Client, echoIP)
	applyConformance(t, hub.Client)

	c := hub.Client
	for _, name := range []string{"fleetgate", "conformance"} {
		waitCondition(t, c, gvk("gateway.networking.k8s.io", "v1", "GatewayClass"), "", name, "Accepted")
	}
	demoAddr := waitCondition(t, c, gvk("gateway.networking.k8s.io", "v1", "Gateway"), "default", "demo", "Programmed")
	waitCondition(t, c, gvk("gateway.networking.k8s.io", "v1", "Gateway"), "infra", "gw", "Programmed")
	for _, r := range []struct {
		kind, version, ns, name string
	}{
		{"HTTPRoute", "v1", "default", "echo"},
		{"HTTPRoute", "v1", "app", "web"},
		{"HTTPRoute", "v1", "app", "secure-backend"},
		{"GRPCRoute", "v1", "app", "grpc"},
		{"TCPRoute", "v1alpha2", "app", "tcp"},
		{"TLSRoute", "v1", "app", "tls"},
		{"UDPRoute", "v1", "app", "udp"},
	} {
		waitRoute(t, c, gvk("gateway.networking.k8s.io", r.version, r.kind), r.ns, r.name)
	}
	waitCondition(t, c, gvk("gateway.networking.k8s.io", "v1", "ListenerSet"), "infra", "extra", "Programmed")
	waitAncestors(t, c, gvk("gateway.networking.k8s.io", "v1", "BackendTLSPolicy"), "backend", "secure-tls")
	waitCondition(t, c, gvk(v1alpha1.Group, "v1alpha1", "MemberCluster"), "", member.Name, v1alpha1.MemberClusterReady)
	waitLoadBalancer(t, c, gvk("networking.k8s.io", "v1", "Ingress"), "app", "web")
	waitLoadBalancer(t, c, gvk("", "v1", "Service"), "app", "lb")
	testbed.Eventually(t, 60*time.Second, func() error {
		return c.Get(ctx, client.ObjectKey{Namespace: "backend", Name: "web"}, unstructuredOf(gvk("multicluster.x-k8s.io", "v1alpha1", "ServiceImport")))
	})
	if echoIP != "" {
		testbed.Eventually(t, 30*time.Second, func() error { return getEcho(net.JoinHostPort(demoAddr, "80")) })
	}

	// A removed Gateway's proxy objects and DNSEndpoints are the operator's to delete (there is no
	// garbage collector here): that path needs the delete verbs. Waiting for the DNSEndpoint to be
	// written first makes the create and delete of dnsendpoints part of every run, not of some.
	testbed.Eventually(t, 30*time.Second, func() error {
		if n, err := dnsEndpointsOf(ctx, c, "hub/default/demo"); err != nil || n == 0 {
			return fmt.Errorf("no DNSEndpoint of gateway demo (echo.example.com) yet: %v", err)
		}
		return nil
	})
	demo := unstructuredOf(gvk("gateway.networking.k8s.io", "v1", "Gateway"))
	demo.SetNamespace("default")
	demo.SetName("demo")
	must(t, c.Delete(ctx, demo))
	testbed.Eventually(t, 30*time.Second, func() error { return proxyObjectsGone(ctx, c, "default", "hub/default/demo") })
	testbed.Eventually(t, 30*time.Second, func() error {
		if n, err := dnsEndpointsOf(ctx, c, "hub/default/demo"); err != nil || n > 0 {
			return fmt.Errorf("%d DNSEndpoints of the deleted gateway demo left (%v)", n, err)
		}
		return nil
	})

	// A ServiceImport follows its exported Service's ports (a patch), and is the operator's to
	// delete once the Service is no longer exported.
	web := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "backend", Name: "web"}}
	must(t, c.Get(ctx, client.ObjectKeyFromObject(web), web))
	web.Spec.Ports = append(web.Spec.Ports, corev1.ServicePort{Name: "admin", Port: 81, TargetPort: intstr.FromInt32(9081)})
	must(t, c.Update(ctx, web))
	testbed.Eventually(t, 30*time.Second, func() error {
		si := unstructuredOf(gvk("multicluster.x-k8s.io", "v1alpha1", "ServiceImport"))
		if err := c.Get(ctx, client.ObjectKey{Namespace: "backend", Name: "web"}, si); err != nil {
			return err
		}
		if ports, _, _ := unstructured.NestedSlice(si.Object, "spec", "ports"); len(ports) != 2 {
			return fmt.Errorf("ServiceImport backend/web has %d ports, want the Service's 2", len(ports))
		}
		return nil
	})
	export := unstructuredOf(gvk("multicluster.x-k8s.io", "v1alpha1", "ServiceExport"))
	export.SetNamespace("backend")
	export.SetName("web")
	must(t, c.Delete(ctx, export))
	testbed.Eventually(t, 30*time.Second, func() error {
		err := c.Get(ctx, client.ObjectKey{Namespace: "backend", Name: "web"}, unstructuredOf(gvk("multicluster.x-k8s.io", "v1alpha1", "ServiceImport")))
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("ServiceImport backend/web still there after its export was deleted (%v)", err)
	})

	stopOperator()
}

// install creates what OLM would create from the bundle in namespace, and waits until fleetgate's
// CRDs are served.
func install(t *testing.T, c *testbed.Cluster, b *bundle.Bundle) {
	t.Helper()
	ctx := t.Context()
	must(t, c.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}))
	objs, err := b.Objects(namespace)
	must(t, err)
	for _, o := range objs {
		if err := c.Client.Create(ctx, o); err != nil {
			t.Fatalf("installing %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
	testbed.Eventually(t, 30*time.Second, func() error {
		return errors.Join(
			c.Client.List(ctx, &v1alpha1.GatewayClassConfigList{}),
			c.Client.List(ctx, &v1alpha1.MemberClusterList{}),
		)
	})
}

// tokenKubeconfig returns a kubeconfig for c authenticated by a token of ServiceAccount ns/name,
// from the TokenRequest API, as the projected token of a pod would be.
func tokenKubeconfig(t *testing.T, c *testbed.Cluster, ns, name string) []byte {
	t.Helper()
	cs, err := kubernetes.NewForConfig(c.Config)
	must(t, err)
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(t.Context(), name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(3600))},
	}, metav1.CreateOptions{})
	must(t, err)
	data, err := clientcmd.Write(clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{c.Name: {Server: c.Config.Host, CertificateAuthorityData: c.Config.CAData}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{name: {Token: tr.Status.Token}},
		Contexts:       map[string]*clientcmdapi.Context{c.Name: {Cluster: c.Name, AuthInfo: name}},
		CurrentContext: c.Name,
	})
	must(t, err)
	return data
}

// installMember applies config/member to the member cluster and returns a kubeconfig with its
// ServiceAccount's token. The long-lived token Secret of config/member is left out: no token
// controller runs here to fill it, so the token comes from the TokenRequest API.
func installMember(t *testing.T, member *testbed.Cluster) []byte {
	t.Helper()
	var sa string
	for _, f := range []string{"namespace.yaml", "service_account.yaml", "role.yaml", "role_binding.yaml"} {
		for _, o := range decodeFile(t, filepath.Join(testbed.RepoRoot(), "config", "member", f)) {
			if o.GetKind() == "Secret" {
				continue
			}
			if o.GetKind() == "ServiceAccount" {
				sa = o.GetName()
			}
			must(t, member.Client.Create(t.Context(), o))
		}
	}
	return tokenKubeconfig(t, member, namespace, sa)
}

// deploymentArgs are the CSV Deployment's container arguments and environment, adapted to a
// process outside a pod: probes and metrics on free loopback ports, the token kubeconfig, the
// Lease namespace a pod would read from its service-account mount, and an xDS address the proxies
// here can reach (the fleetgate-xds Service has no endpoints without a kubelet).
func deploymentArgs(t *testing.T, b *bundle.Bundle, kubeconfig, xdsAddr string) (args, env []string) {
	t.Helper()
	deps := b.CSV.Spec.Install.Spec.Deployments
	if len(deps) != 1 || len(deps[0].Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("bundle has %d Deployments; want one with one container", len(deps))
	}
	ctr := deps[0].Spec.Template.Spec.Containers[0]
	for _, a := range ctr.Args {
		switch {
		case strings.HasPrefix(a, "--health-probe-bind-address="), strings.HasPrefix(a, "--metrics-bind-address="):
			name, _, _ := strings.Cut(a, "=")
			args = append(args, name+"=127.0.0.1:0")
		default:
			args = append(args, a)
		}
	}
	args = append(args, "--kubeconfig="+kubeconfig, "--leader-election-namespace="+namespace,
		"--xds-address="+xdsAddr, "--xds-public-address="+xdsAddr)
	for _, e := range ctr.Env {
		switch {
		case e.Name == "POD_NAMESPACE":
			env = append(env, e.Name+"="+namespace)
		case e.Name == "POD_NAME":
			env = append(env, e.Name+"=fleetgate-install-test")
		case e.Name == "POD_UID":
			// No pod owns the replica's delivery report here: the operator then makes it without an owner.
		case e.ValueFrom == nil:
			env = append(env, e.Name+"="+e.Value)
		case e.ValueFrom.ResourceFieldRef != nil && e.ValueFrom.ResourceFieldRef.Resource == "limits.memory":
			// As the kubelet resolves it: the container's memory limit in bytes.
			env = append(env, fmt.Sprintf("%s=%d", e.Name, ctr.Resources.Limits.Memory().Value()))
		default:
			t.Fatalf("Deployment env %s comes from %v, which this test cannot provide", e.Name, e.ValueFrom)
		}
	}
	return args, env
}

// startOperator runs the operator binary and returns a function that stops it with SIGTERM, as the
// kubelet would, and waits (also called when the test ends). Its log is shown when the test fails.
func startOperator(t *testing.T, binary string, args, env []string, logPath string) (stop func()) {
	t.Helper()
	logFile, err := os.Create(logPath)
	must(t, err)
	cmd := exec.Command(binary, args...)
	// Only the Deployment's environment: no KUBECONFIG or cloud credentials of the test's own.
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + filepath.Dir(logPath)}, env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	must(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait(); logFile.Close() }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("operator exited: %v", err)
				}
			case <-time.After(60 * time.Second):
				_ = cmd.Process.Kill()
				t.Error("operator did not stop within 60s; killed")
			}
		})
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			if data, err := os.ReadFile(logPath); err == nil {
				lines := strings.Split(strings.TrimSpace(string(data)), "\n")
				t.Logf("operator log, last lines:\n%s", strings.Join(lines[max(0, len(lines)-60):], "\n"))
			}
		}
	})
	return stop
}

// startKubelet plays the kubelet's and the cloud's part for the proxy Deployments the operator
// makes, until the test ends: it marks each Deployment available, gives its Service a load-balancer
// address of its own on loopback, and runs the proxy the pod would run with the credentials from
// the proxy's Secret. It keeps doing so, since the operator may update a Deployment later.
func startKubelet(t *testing.T, c client.Client, binary, xdsAddr, dir string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	proxies := map[string]*exec.Cmd{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			kubeletPass(ctx, c, binary, xdsAddr, dir, proxies)
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		for _, p := range proxies {
			_ = p.Process.Signal(syscall.SIGTERM)
			_ = p.Wait()
		}
	})
}

// kubeletPass is one look at the proxy Deployments; errors are retried on the next pass.
func kubeletPass(ctx context.Context, c client.Client, binary, xdsAddr, dir string, proxies map[string]*exec.Cmd) {
	managed := client.MatchingLabels{providers.LabelManagedBy: providers.ManagedBy}
	var deps unstructured.UnstructuredList
	deps.SetGroupVersionKind(gvk("apps", "v1", "DeploymentList"))
	if c.List(ctx, &deps, managed) != nil {
		return
	}
	for _, dep := range deps.Items {
		id := dep.GetLabels()[providers.LabelGateway]
		key := dep.GetAnnotations()[providers.AnnotationGateway]
		replicas, _, _ := unstructured.NestedInt64(dep.Object, "spec", "replicas")
		observed, _, _ := unstructured.NestedInt64(dep.Object, "status", "observedGeneration")
		if observed != dep.GetGeneration() {
			_ = unstructured.SetNestedMap(dep.Object, map[string]any{
				"observedGeneration": dep.GetGeneration(), "replicas": replicas, "updatedReplicas": replicas,
				"readyReplicas": replicas, "availableReplicas": replicas,
			}, "status")
			_ = c.Status().Update(ctx, &dep)
		}
		if _, ok := proxies[id]; ok {
			continue
		}
		ip := fmt.Sprintf("127.0.0.%d", 100+len(proxies))
		sel := client.MatchingLabels{providers.LabelGateway: id}
		var svcs corev1.ServiceList
		var secrets corev1.SecretList
		if c.List(ctx, &svcs, client.InNamespace(dep.GetNamespace()), sel) != nil ||
			c.List(ctx, &secrets, client.InNamespace(dep.GetNamespace()), sel) != nil ||
			len(svcs.Items) != 1 || len(secrets.Items) != 1 {
			continue
		}
		svc := svcs.Items[0]
		svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip}}
		if c.Status().Update(ctx, &svc) != nil {
			continue
		}
		creds := filepath.Join(dir, id)
		if os.MkdirAll(creds, 0o700) != nil {
			continue
		}
		for _, k := range []string{"tls.crt", "tls.key", "ca.crt"} {
			_ = os.WriteFile(filepath.Join(creds, k), secrets.Items[0].Data[k], 0o600)
		}
		logFile, err := os.Create(filepath.Join(creds, "proxy.log"))
		if err != nil {
			continue
		}
		p := exec.Command(binary, "dataplane", "--gateway", key, "--node", id+"-pod", "--xds-address", xdsAddr,
			"--address", ip, "--drain-timeout", "1s", "--cert", filepath.Join(creds, "tls.crt"),
			"--key", filepath.Join(creds, "tls.key"), "--ca", filepath.Join(creds, "ca.crt"))
		p.Stdout, p.Stderr = logFile, logFile
		if p.Start() == nil {
			proxies[id] = p
		}
		logFile.Close()
	}
}

// startEcho starts an HTTP echo backend on a loopback address of its own, or returns "" when the
// machine cannot add one (the install test then checks conditions but sends no request).
func startEcho(t *testing.T) string {
	t.Helper()
	ip := testbed.BackendIP(61)
	remove, err := testbed.AddBackendIP(ip)
	if err != nil {
		t.Logf("no request through the proxy: %v", err)
		return ""
	}
	t.Cleanup(func() { _ = remove() })
	echo, err := testbed.StartEcho("echo", net.JoinHostPort(ip, "9080"))
	must(t, err)
	t.Cleanup(func() { _ = echo.Close() })
	return ip
}

// getEcho sends one request for the sample's host through addr and wants the echo's answer with
// the header the sample route adds.
func getEcho(addr string) error {
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/", nil)
	if err != nil {
		return err
	}
	req.Host = "echo.example.com"
	resp, err := (&http.Client{Timeout: 2 * time.Second}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(string(body), "echo ") || resp.Header.Get("X-Served-By") != "fleetgate" {
		return fmt.Errorf("GET echo.example.com through %s: %d %q X-Served-By=%q; want 200 from echo, served by fleetgate",
			addr, resp.StatusCode, body, resp.Header.Get("X-Served-By"))
	}
	return nil
}

// applySamples creates what config/samples' kustomization lists, and the echo backend the sample
// HTTPRoute names (at ip when there is one).
func applySamples(t *testing.T, c client.Client, ip string) {
	t.Helper()
	dir := filepath.Join(testbed.RepoRoot(), "config", "samples")
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	must(t, err)
	var k struct {
		Resources []string `json:"resources"`
	}
	must(t, yaml.Unmarshal(data, &k))
	for _, f := range k.Resources {
		for _, o := range decodeFile(t, filepath.Join(dir, f)) {
			must(t, c.Create(t.Context(), o))
		}
	}
	objs := testbed.Published("default", "echo", cmp.Or(ip, testbed.BackendIP(61)), 9080)
	must(t, testbed.CreateAll(t.Context(), c, objs...))
}

// applyConformance creates testdata/conformance.yaml, its TLS Secret and the backends' endpoints.
func applyConformance(t *testing.T, c client.Client) {
	t.Helper()
	ctx := t.Context()
	for _, o := range decodeFile(t, filepath.Join("testdata", "conformance.yaml")) {
		must(t, c.Create(ctx, o))
		if o.GetKind() == "Namespace" && o.GetName() == "backend" {
			crt, _, _ := testbed.SelfSignedPEM(t, "secure.backend.svc")
			must(t, c.Create(ctx, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Namespace: "backend", Name: "backend-ca"},
				Data:       map[string]string{"ca.crt": string(crt)},
			}))
		}
		if o.GetKind() == "Namespace" && o.GetName() == "infra" {
			crt, key, _ := testbed.SelfSignedPEM(t, "secure.example.com")
			must(t, c.Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "gw-tls"},
				Type:       corev1.SecretTypeTLS,
				Data:       map[string][]byte{corev1.TLSCertKey: crt, corev1.TLSPrivateKeyKey: key},
			}))
		}
	}
	for _, s := range []struct {
		ns, name string
		port     int32
	}{{"backend", "web", 9080}, {"backend", "grpc", 9090}, {"backend", "dns", 9053}, {"backend", "secure", 9443}, {"app", "app-web", 9080}, {"app", "lb", 9080}} {
		must(t, c.Create(ctx, &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: s.name + "-1",
				Labels: map[string]string{discoveryv1.LabelServiceName: s.name, discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Port: ptr.To(s.port)}},
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{testbed.BackendIP(62)}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		}))
	}
}

// waitCondition waits until condition typ of the object is True at its generation, and returns
// the object's first status address (Gateways), if any.
func waitCondition(t *testing.T, c client.Client, kind schema.GroupVersionKind, ns, name, typ string) string {
	t.Helper()
	var addr string
	testbed.Eventually(t, 60*time.Second, func() error {
		o := unstructuredOf(kind)
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, o); err != nil {
			return err
		}
		conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
		if err := conditionTrue(conds, typ, o.GetGeneration()); err != nil {
			return fmt.Errorf("%s %s/%s: %w", kind.Kind, ns, name, err)
		}
		addrs, _, _ := unstructured.NestedSlice(o.Object, "status", "addresses")
		if len(addrs) > 0 {
			addr, _, _ = unstructured.NestedString(addrs[0].(map[string]any), "value")
		}
		return nil
	})
	return addr
}

// waitRoute waits until every parent of the route has Accepted and ResolvedRefs True.
func waitRoute(t *testing.T, c client.Client, kind schema.GroupVersionKind, ns, name string) {
	t.Helper()
	testbed.Eventually(t, 60*time.Second, func() error {
		o := unstructuredOf(kind)
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, o); err != nil {
			return err
		}
		refs, _, _ := unstructured.NestedSlice(o.Object, "spec", "parentRefs")
		parents, _, _ := unstructured.NestedSlice(o.Object, "status", "parents")
		if len(parents) != len(refs) {
			return fmt.Errorf("%s %s/%s: %d parents in status, want %d", kind.Kind, ns, name, len(parents), len(refs))
		}
		for _, p := range parents {
			conds, _, _ := unstructured.NestedSlice(p.(map[string]any), "conditions")
			for _, typ := range []string{"Accepted", "ResolvedRefs"} {
				if err := conditionTrue(conds, typ, o.GetGeneration()); err != nil {
					return fmt.Errorf("%s %s/%s parent %v: %w", kind.Kind, ns, name, p.(map[string]any)["parentRef"], err)
				}
			}
		}
		return nil
	})
}

func conditionTrue(conds []any, typ string, generation int64) error {
	for _, c := range conds {
		m := c.(map[string]any)
		if m["type"] != typ {
			continue
		}
		g, _, _ := unstructured.NestedInt64(m, "observedGeneration")
		if m["status"] != "True" || g != generation {
			return fmt.Errorf("%s=%v at generation %d (%v: %v), want True at %d", typ, m["status"], g, m["reason"], m["message"], generation)
		}
		return nil
	}
	return fmt.Errorf("no %s condition", typ)
}

// waitAncestors waits until every ancestor in a policy's status has Accepted True.
func waitAncestors(t *testing.T, c client.Client, kind schema.GroupVersionKind, ns, name string) {
	t.Helper()
	testbed.Eventually(t, 60*time.Second, func() error {
		o := unstructuredOf(kind)
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, o); err != nil {
			return err
		}
		ancestors, _, _ := unstructured.NestedSlice(o.Object, "status", "ancestors")
		if len(ancestors) == 0 {
			return fmt.Errorf("%s %s/%s has no ancestors in status", kind.Kind, ns, name)
		}
		for _, a := range ancestors {
			conds, _, _ := unstructured.NestedSlice(a.(map[string]any), "conditions")
			if err := conditionTrue(conds, "Accepted", o.GetGeneration()); err != nil {
				return fmt.Errorf("%s %s/%s ancestor %v: %w", kind.Kind, ns, name, a.(map[string]any)["ancestorRef"], err)
			}
		}
		return nil
	})
}

// waitLoadBalancer waits until the object has an address in status.loadBalancer.ingress.
func waitLoadBalancer(t *testing.T, c client.Client, kind schema.GroupVersionKind, ns, name string) {
	t.Helper()
	testbed.Eventually(t, 60*time.Second, func() error {
		o := unstructuredOf(kind)
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, o); err != nil {
			return err
		}
		if lb, _, _ := unstructured.NestedSlice(o.Object, "status", "loadBalancer", "ingress"); len(lb) == 0 {
			return fmt.Errorf("%s %s/%s has no load-balancer address yet", kind.Kind, ns, name)
		}
		return nil
	})
}

// dnsEndpointsOf counts the DNSEndpoints of gateway key, in every namespace.
func dnsEndpointsOf(ctx context.Context, c client.Client, key string) (int, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk("externaldns.k8s.io", "v1alpha1", "DNSEndpointList"))
	if err := c.List(ctx, list); err != nil {
		return 0, err
	}
	n := 0
	for _, ep := range list.Items {
		if ep.GetAnnotations()[providers.AnnotationGateway] == key {
			n++
		}
	}
	return n, nil
}

// proxyObjectsGone says whether the operator removed every proxy object of gateway key in ns.
func proxyObjectsGone(ctx context.Context, c client.Client, ns, key string) error {
	managed := client.MatchingLabels{providers.LabelGateway: providers.GatewayID(key)}
	var left []string
	for _, l := range []client.ObjectList{&corev1.ServiceList{}, &corev1.SecretList{}, &corev1.ServiceAccountList{}} {
		if err := c.List(ctx, l, client.InNamespace(ns), managed); err != nil {
			return err
		}
		n := 0
		switch l := l.(type) {
		case *corev1.ServiceList:
			n = len(l.Items)
		case *corev1.SecretList:
			n = len(l.Items)
		case *corev1.ServiceAccountList:
			n = len(l.Items)
		}
		if n > 0 {
			left = append(left, fmt.Sprintf("%d %T", n, l))
		}
	}
	deps := unstructuredList(gvk("apps", "v1", "DeploymentList"))
	if err := c.List(ctx, deps, client.InNamespace(ns), managed); err != nil {
		return err
	}
	if len(deps.Items) > 0 {
		left = append(left, fmt.Sprintf("%d Deployments", len(deps.Items)))
	}
	if len(left) > 0 {
		return fmt.Errorf("proxy objects left in %s after the Gateway was deleted: %s", ns, strings.Join(left, ", "))
	}
	return nil
}

func decodeFile(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	must(t, err)
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for {
		var o map[string]any
		if err := dec.Decode(&o); errors.Is(err, io.EOF) {
			return objs
		} else if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(o) > 0 {
			objs = append(objs, &unstructured.Unstructured{Object: o})
		}
	}
}

func gvk(group, version, kind string) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: group, Version: version, Kind: kind}
}

func unstructuredOf(kind schema.GroupVersionKind) *unstructured.Unstructured {
	o := &unstructured.Unstructured{}
	o.SetGroupVersionKind(kind)
	return o
}

func unstructuredList(kind schema.GroupVersionKind) *unstructured.UnstructuredList {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(kind)
	return l
}

// freeAddr returns a loopback address with a port nothing listens on right now.
func freeAddr(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	defer lis.Close()
	return lis.Addr().String()
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
