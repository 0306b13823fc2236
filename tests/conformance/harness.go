// Package conformance runs the upstream Gateway API conformance suite against fleetgate on one
// machine: a real kube-apiserver and kube-controller-manager (Deployments, ReplicaSets,
// EndpointSlices, namespaces, garbage collection), a test-only node that runs pods as local
// echo-basic processes in their own network namespaces, and the operator in local mode.
package conformance

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/tests/conformance/node"
	"github.com/fleetgate/fleetgate/tests/testbed"
)

const (
	// GatewayClass is the class the suite runs against.
	GatewayClass = "fleetgate"
	// nodeIP is the test node's address on lo; pods get 198.19.x.y in their own namespaces. Both lie
	// in 198.18.0.0/15 but apart from the 198.18.0.x other tests add and remove.
	nodeIP = "198.19.0.1"
	podNet = "198.19"
)

// Env is everything the suite runs against.
type Env struct {
	Cluster  *testbed.Cluster
	Operator *testbed.Operator
	Dir      string

	stops []func() error
}

// Start brings the environment up; Stop tears it down, also after a failed Start.
func Start(ctx context.Context, dir string, logf func(string, ...any)) (*Env, error) {
	e := &Env{Dir: dir}
	c, err := testbed.Start(ctx, "conformance")
	if err != nil {
		return e, err
	}
	e.Cluster = c
	e.stops = append(e.stops, c.Stop)

	bins := filepath.Join(dir, "bin")
	operator, err := testbed.BuildOperator(bins)
	if err != nil {
		return e, err
	}
	echo, dns, err := buildPodBinaries(bins)
	if err != nil {
		return e, err
	}
	if err := e.startControllerManager(filepath.Join(dir, "kcm.log")); err != nil {
		return e, err
	}
	remove, err := testbed.AddBackendIP(nodeIP)
	if err != nil {
		return e, err
	}
	e.stops = append(e.stops, remove)
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return e, fmt.Errorf("clientset: %w", err)
	}
	n := node.New(cs, node.Options{Name: "conformance-node", IP: nodeIP, PodNet: podNet,
		EchoBinary: echo, DNSBinary: dns, Dir: filepath.Join(dir, "pods"), Logf: logf})
	nctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	nodeDone := make(chan error, 1)
	go func() { nodeDone <- n.Run(nctx) }()
	e.stops = append(e.stops, func() error {
		cancel()
		return <-nodeDone
	})

	op, err := testbed.StartOperator(operator, c, filepath.Join(dir, "operator"))
	if err != nil {
		return e, err
	}
	e.Operator = op
	e.stops = append(e.stops, op.Stop)
	return e, e.createClass(ctx)
}

// Stop stops everything Start started, in reverse order.
func (e *Env) Stop() error {
	var errs []error
	for i := len(e.stops) - 1; i >= 0; i-- {
		errs = append(errs, e.stops[i]())
	}
	return errors.Join(errs...)
}

func buildPodBinaries(dir string) (echo, dns string, err error) {
	echo, dns = filepath.Join(dir, "echo-basic"), filepath.Join(dir, "dnsserver")
	for pkg, out := range map[string]string{
		"sigs.k8s.io/gateway-api/conformance/echo-basic":             echo,
		"github.com/fleetgate/fleetgate/tests/conformance/dnsserver": dns,
	} {
		cmd := exec.Command("go", "build", "-o", out, pkg)
		cmd.Dir = testbed.RepoRoot()
		if b, err := cmd.CombinedOutput(); err != nil {
			return "", "", fmt.Errorf("building %s: %w: %s", pkg, err, b)
		}
	}
	return echo, dns, nil
}

// startControllerManager runs the real kube-controller-manager with the controllers pods need.
func (e *Env) startControllerManager(logPath string) error {
	bin := filepath.Join(testbed.AssetsDir(), "kube-controller-manager")
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("kube-controller-manager missing (run `make testbed`): %w", err)
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	cmd := exec.Command(bin,
		"--kubeconfig", e.Cluster.KubeconfigPath,
		"--controllers", strings.Join([]string{"deployment", "replicaset", "endpointslice", "namespace",
			"garbagecollector", "serviceaccount"}, ","),
		"--use-service-account-credentials=false",
		"--leader-elect=false",
		// envtest's API server range.
		"--service-cluster-ip-range=10.0.0.0/24",
		"--secure-port=0",
		// The conformance manifests churn Deployments; the defaults would queue them behind 1s syncs.
		"--concurrent-deployment-syncs=10", "--concurrent-replicaset-syncs=10",
		"--concurrent-service-endpoint-syncs=10", "--endpointslice-updates-batch-period=0s",
	)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	waited, err := testbed.StartTied(cmd, syscall.SIGTERM)
	if err != nil {
		logFile.Close()
		return fmt.Errorf("starting kube-controller-manager: %w", err)
	}
	done := make(chan struct{})
	go func() {
		if err := <-waited; err != nil {
			fmt.Fprintf(logFile, "kube-controller-manager exited: %v\n", err)
		}
		logFile.Close()
		close(done)
	}()
	e.stops = append(e.stops, func() error {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		return nil
	})
	select {
	case <-done:
		b, _ := os.ReadFile(logPath)
		return fmt.Errorf("kube-controller-manager exited: %s", b)
	case <-time.After(2 * time.Second):
		return nil
	}
}

func (e *Env) createClass(ctx context.Context) error {
	cl := e.Cluster.Client
	if err := cl.Create(ctx, &v1alpha1.GatewayClassConfig{
		ObjectMeta: metav1.ObjectMeta{Name: GatewayClass},
		Spec:       v1alpha1.GatewayClassConfigSpec{Provider: v1alpha1.ProviderInCluster},
	}); err != nil {
		return fmt.Errorf("GatewayClassConfig: %w", err)
	}
	if err := cl.Create(ctx, &gwv1.GatewayClass{
		ObjectMeta: metav1.ObjectMeta{Name: GatewayClass},
		Spec: gwv1.GatewayClassSpec{ControllerName: v1alpha1.ControllerName,
			ParametersRef: &gwv1.ParametersReference{Group: v1alpha1.Group, Kind: "GatewayClassConfig", Name: GatewayClass}},
	}); err != nil {
		return fmt.Errorf("GatewayClass: %w", err)
	}
	return nil
}

// SupportedFeatures waits until the GatewayClass publishes its supported features and returns them.
func (e *Env) SupportedFeatures(ctx context.Context) ([]gwv1.FeatureName, error) {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var gc gwv1.GatewayClass
		err := e.Cluster.Client.Get(ctx, client.ObjectKey{Name: GatewayClass}, &gc)
		if err == nil && len(gc.Status.SupportedFeatures) > 0 {
			var out []gwv1.FeatureName
			for _, f := range gc.Status.SupportedFeatures {
				out = append(out, f.Name)
			}
			return out, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("GatewayClass %s publishes no supported features (last error: %v)", GatewayClass, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
