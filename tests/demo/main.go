// Command demo is `make demo`: it starts a local kube-apiserver, runs the fleetgate operator against it
// in local mode, applies the samples, and sends a request through the proxy fleetgate started. When moto
// is installed (bin/moto), it also turns a Gateway of an AWS class into an ALB on moto; a Gateway of a
// GCP class becomes a global load balancer on the compute fake, which runs in-process, and (with BIND9
// installed) its hostname resolves through a local zone the class publishes into. It stays up for
// the user until Ctrl-C, and exits by itself after the showcase when stdin is not a terminal.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/term"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/fleetgate/fleetgate/providers/aws/mototest"
	"github.com/fleetgate/fleetgate/tests/testbed"
)

func main() {
	operator := flag.String("operator", "bin/fleetgate", "the operator binary to run")
	quick := flag.Bool("quick", false, "stop the showcase once the first Gateway serves, and stay up until a signal (the lifecycle test)")
	flag.Parse()
	// Ctrl-C, a closed terminal (SIGHUP) and kill stop the demo and what it started. A second
	// signal kills it at once; its children die with it (parent-death signals).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		<-ctx.Done()
		stop()
	}()
	if err := run(ctx, *operator, *quick); err != nil {
		fmt.Fprintln(os.Stderr, "demo failed:", err)
		os.Exit(1)
	}
}

func step(format string, args ...any) { fmt.Printf("==> "+format+"\n", args...) }

func run(ctx context.Context, operator string, quick bool) (err error) {
	step("starting a local kube-apiserver + etcd (built from source into %s)", testbed.AssetsDir())
	cluster, err := testbed.Start(ctx, "demo")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, cluster.Stop()) }()
	fmt.Printf("    API server %s, kubeconfig %s\n", cluster.Config.Host, cluster.KubeconfigPath)
	fmt.Printf("    CRDs installed: fleetgate, Gateway API v1.6.3 (experimental), MCS API, DNSEndpoint\n")

	// moto runs before the operator, which is told where it is: its orphan sweep of the default
	// account then looks at moto, not at AWS.
	var awsArgs []string
	moto := startMoto()
	if moto != nil {
		defer moto.Stop()
		awsArgs = []string{"--aws-region", mototest.Region, "--aws-endpoint", moto.URL}
		// The operator's own account (its orphan sweep looks there too) is moto, with its test keys:
		// without them the SDK would look for credentials on an EC2 instance.
		if err := errors.Join(os.Setenv("AWS_ACCESS_KEY_ID", "testing"), os.Setenv("AWS_SECRET_ACCESS_KEY", "testing")); err != nil {
			return err
		}
		fmt.Printf("    moto (the AWS API fake) serves %s\n", moto.URL)
	}

	// The GCP compute fake runs in this process, always: it needs nothing installed.
	fake, gcpArgs, err := startGCP(filepath.Dir(cluster.KubeconfigPath))
	if err != nil {
		return err
	}
	defer fake.Close()
	fmt.Printf("    the compute fake (GCP) serves %s\n", fake.URL())

	stateDir := filepath.Join(filepath.Dir(cluster.KubeconfigPath), "state")
	step("running the operator %s in local mode (each Gateway gets a proxy process on its own 127.x address)", operator)
	op, err := testbed.StartOperator(operator, cluster, stateDir, append(awsArgs, gcpArgs...)...)
	if err != nil {
		return err
	}
	fmt.Printf("    operator log: %s\n", op.Log)
	defer func() { err = errors.Join(err, op.Stop()) }()

	ip := testbed.BackendIP(10)
	step("starting an echo backend on %s:9080, published as Service default/echo through an EndpointSlice", ip)
	remove, err := testbed.AddBackendIP(ip)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, remove()) }()
	echo, err := testbed.StartEcho("echo", net.JoinHostPort(ip, "9080"))
	if err != nil {
		return err
	}
	defer echo.Close()
	if err := publishEcho(ctx, cluster.Client, ip); err != nil {
		return err
	}

	samples := filepath.Join(testbed.RepoRoot(), "config", "samples")
	for _, name := range []string{"gatewayclassconfig.yaml", "gatewayclass.yaml", "gateway.yaml", "httproute.yaml"} {
		step("applying %s", filepath.Join("config/samples", name))
		if err := apply(ctx, cluster.Client, filepath.Join(samples, name)); err != nil {
			return err
		}
	}
	step("applying GatewayClass broken, whose parametersRef names a GatewayClassConfig that does not exist")
	broken := &gwv1.GatewayClass{
		ObjectMeta: metav1.ObjectMeta{Name: "broken"},
		Spec: gwv1.GatewayClassSpec{
			ControllerName: "fleetgate.dev/gateway-controller",
			ParametersRef:  &gwv1.ParametersReference{Group: "fleetgate.dev", Kind: "GatewayClassConfig", Name: "missing"},
		},
	}
	if err := cluster.Client.Create(ctx, broken); err != nil {
		return fmt.Errorf("creating GatewayClass broken: %w", err)
	}

	step("waiting for fleetgate to report on both GatewayClasses")
	for _, name := range []string{"fleetgate", "broken"} {
		cond, err := waitAccepted(ctx, cluster.Client, name)
		if err != nil {
			return err
		}
		fmt.Printf("    GatewayClass %-10s Accepted=%s reason=%s: %s\n", name, cond.Status, cond.Reason, cond.Message)
	}
	step("waiting for Gateway default/demo to be Programmed (the proxy has acknowledged its config)")
	start := time.Now()
	addr, err := waitProgrammed(ctx, cluster.Client)
	if err != nil {
		return err
	}
	fmt.Printf("    Gateway default/demo Programmed=True at %s after %s\n", addr, time.Since(start).Round(time.Millisecond))
	if err := routeStatus(ctx, cluster.Client); err != nil {
		return err
	}

	url := "http://" + addr + "/hello"
	step("curl -si -H 'Host: echo.example.com' %s", url)
	if err := show(ctx, url, "echo.example.com"); err != nil {
		return err
	}
	if quick {
		step("serving; waiting for a signal")
		<-ctx.Done()
		step("stopping")
		return nil
	}

	step("applying IngressClass fleetgate and Ingress default/echo (host ingress.example.com → Service echo)")
	start = time.Now()
	ingAddr, err := applyIngress(ctx, cluster.Client)
	if err != nil {
		return err
	}
	fmt.Printf("    Ingress default/echo status.loadBalancer.ingress[0].ip=%s after %s (its own proxy)\n", ingAddr, time.Since(start).Round(time.Millisecond))
	ingURL := "http://" + net.JoinHostPort(ingAddr, "80") + "/from-ingress"
	step("curl -si -H 'Host: ingress.example.com' %s", ingURL)
	if err := show(ctx, ingURL, "ingress.example.com"); err != nil {
		return err
	}

	if moto != nil {
		if err := showALB(ctx, cluster.Client, moto, operator, cluster.KubeconfigPath); err != nil {
			return err
		}
	}
	if err := showGCP(ctx, cluster.Client, fake, operator, cluster.KubeconfigPath, filepath.Dir(cluster.KubeconfigPath)); err != nil {
		return err
	}

	if !term.IsTerminal(int(os.Stdin.Fd())) {
		step("done (stdin is not a terminal, so the demo stops here)")
		return nil
	}
	step("everything stays up; try it, then press Ctrl-C to stop:")
	fmt.Printf("    curl -si -H 'Host: echo.example.com' %s\n", url)
	fmt.Printf("    curl -si -H 'Host: ingress.example.com' %s\n", ingURL)
	fmt.Printf("    export KUBECONFIG=%s; kubectl get gateways,httproutes,ingresses -A\n", cluster.KubeconfigPath)
	if moto != nil {
		fmt.Printf("    %s plan --kubeconfig %s --aws-region %s --aws-endpoint %s\n", operator, cluster.KubeconfigPath, mototest.Region, moto.URL)
	}
	<-ctx.Done()
	step("stopping")
	return nil
}

// publishEcho creates Service default/echo and an EndpointSlice pointing at the echo backend.
func publishEcho(ctx context.Context, c client.Client, ip string) error {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "echo"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(9080)}}},
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "echo-1",
			Labels: map[string]string{discoveryv1.LabelServiceName: "echo", discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To(int32(9080))}},
		// The zone and node are where a pod would run: a cloud's NEG needs them.
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
			Zone: ptr.To("europe-west1-b"), NodeName: ptr.To("demo-node")}},
	}
	for _, obj := range []client.Object{svc, slice} {
		if err := c.Create(ctx, obj); err != nil {
			return fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err)
		}
	}
	return nil
}

func waitProgrammed(ctx context.Context, c client.Client) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		var gw gwv1.Gateway
		if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "demo"}, &gw); err == nil {
			if meta.IsStatusConditionTrue(gw.Status.Conditions, string(gwv1.GatewayConditionProgrammed)) && len(gw.Status.Addresses) > 0 {
				return gw.Status.Addresses[0].Value, nil
			}
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("the Gateway default/demo was not Programmed: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func routeStatus(ctx context.Context, c client.Client) error {
	var r gwv1.HTTPRoute
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "echo"}, &r); err != nil {
		return err
	}
	for _, p := range r.Status.Parents {
		for _, cond := range p.Conditions {
			fmt.Printf("    HTTPRoute default/echo parent %s: %s=%s (%s)\n", p.ParentRef.Name, cond.Type, cond.Status, cond.Reason)
		}
	}
	return nil
}

// show sends one request and prints the status line, a few headers and the body.
func show(ctx context.Context, url, host string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Host = host
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		return fmt.Errorf("request through the proxy: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	fmt.Printf("    %s %s\n", resp.Proto, resp.Status)
	if v := resp.Header.Get("X-Served-By"); v != "" { // added by the sample HTTPRoute's filter
		fmt.Printf("    X-Served-By: %s\n", v)
	}
	fmt.Printf("    %s", body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("the proxy answered %s, want 200 OK", resp.Status)
	}
	return nil
}

func waitAccepted(ctx context.Context, c client.Client, name string) (*metav1.Condition, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		var gc gwv1.GatewayClass
		if err := c.Get(ctx, client.ObjectKey{Name: name}, &gc); err == nil {
			if cond := meta.FindStatusCondition(gc.Status.Conditions, string(gwv1.GatewayClassConditionStatusAccepted)); cond != nil && cond.Reason != string(gwv1.GatewayClassReasonPending) {
				return cond, nil
			}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("GatewayClass %s got no Accepted condition from fleetgate: %w", name, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// apply creates every object of a multi-document YAML file.
func apply(ctx context.Context, c client.Client, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var obj unstructured.Unstructured
		if err := dec.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("decoding %s: %w", path, err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		if err := c.Create(ctx, &obj); err != nil {
			return fmt.Errorf("creating %s %s from %s: %w", obj.GetKind(), obj.GetName(), path, err)
		}
	}
}
