// Package conformance runs the upstream Gateway API conformance suite against fleetgate on one
// machine: a real kube-apiserver and kube-controller-manager (Deployments, ReplicaSets,
// EndpointSlices, namespaces, garbage collection), the operator in local mode, and the suite's
// pods either on a test-only node that runs them as local echo-basic processes in their own
// network namespaces (quick), or on a real node of the test bed (kubelet, containerd, kube-proxy)
// from images built here (Options.Node).
package conformance

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	upstream "sigs.k8s.io/gateway-api/conformance"

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
	// Node is the real node the pods run on (Options.Node); nil with the stand-in.
	Node *testbed.Node
	Dir  string

	stops []func() error
}

// Options choose where the suite's pods run.
type Options struct {
	// Node runs them on a real node of the test bed (kubelet, containerd, kube-proxy; see
	// testbed.StartNode) from images built here from echo-basic's and dnsserver's source. Without
	// it the stand-in of package node runs them as local processes, which is quicker.
	Node bool
}

// Start brings the environment up; Stop tears it down, also after a failed Start.
func Start(ctx context.Context, dir string, o Options, logf func(string, ...any)) (*Env, error) {
	e := &Env{Dir: dir}
	c, err := testbed.StartWith(ctx, "conformance", testbed.Options{Node: o.Node})
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
	if o.Node {
		err = e.startNode(ctx, bins)
	} else {
		err = e.startStandIn(ctx, bins, logf)
	}
	if err != nil {
		return e, err
	}

	// Local mode on both: see README.md for why the node run does not run proxies as pods.
	op, err := testbed.StartOperator(operator, c, filepath.Join(dir, "operator"))
	if err != nil {
		return e, err
	}
	e.Operator = op
	e.stops = append(e.stops, op.Stop)
	return e, e.createClass(ctx)
}

// startStandIn runs the suite's pods on the stand-in node, with the real kube-controller-manager.
func (e *Env) startStandIn(ctx context.Context, bins string, logf func(string, ...any)) error {
	echo, dns, err := buildPodBinaries(bins)
	if err != nil {
		return err
	}
	if err := e.startControllerManager(filepath.Join(e.Dir, "kcm.log")); err != nil {
		return err
	}
	remove, err := testbed.AddBackendIP(nodeIP)
	if err != nil {
		return err
	}
	e.stops = append(e.stops, remove)
	cs, err := kubernetes.NewForConfig(e.Cluster.Config)
	if err != nil {
		return fmt.Errorf("clientset: %w", err)
	}
	n := node.New(cs, node.Options{Name: "conformance-node", IP: nodeIP, PodNet: podNet,
		EchoBinary: echo, DNSBinary: dns, Dir: filepath.Join(e.Dir, "pods"), Logf: logf})
	nctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	nodeDone := make(chan error, 1)
	go func() { nodeDone <- n.Run(nctx) }()
	e.stops = append(e.stops, func() error {
		cancel()
		return <-nodeDone
	})
	return nil
}

// startNode runs the suite's pods on a real node. echo-basic and dnsserver become images tagged
// with the references the suite's manifests name, so its pods run unchanged (imagePullPolicy
// IfNotPresent finds them in the node's containerd; nothing is pulled).
func (e *Env) startNode(ctx context.Context, bins string) error {
	refs, err := suiteImages(upstream.Manifests)
	if err != nil {
		return err
	}
	var archives []string
	for _, pkg := range []string{echoPackage, dnsPackage} {
		if len(refs[pkg]) == 0 {
			continue
		}
		archive, err := testbed.BuildPackageImage(ctx, bins, pkg, refs[pkg]...)
		if err != nil {
			return err
		}
		archives = append(archives, archive)
	}
	n, err := testbed.StartNode(ctx, e.Cluster, testbed.NodeOptions{Images: archives})
	if err != nil {
		return err
	}
	e.Node = n
	e.stops = append(e.stops, n.Stop)
	return nil
}

// suiteImages maps each package that builds a pod image to the image references the manifests
// of the gateway profiles (base/ and tests/; the mesh profiles do not run here) name for it. An
// image nothing here builds is an error: its pods could never start.
func suiteImages(manifests fs.FS) (map[string][]string, error) {
	byPkg := map[string][]string{}
	for _, dir := range []string{"base", "tests"} {
		err := fs.WalkDir(manifests, dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
				return err
			}
			b, err := fs.ReadFile(manifests, path)
			if err != nil {
				return err
			}
			for _, m := range imageLine.FindAllSubmatch(b, -1) {
				ref := string(m[1])
				pkg, err := imagePackage(ref)
				if err != nil {
					return fmt.Errorf("%s: %w", path, err)
				}
				if !slices.Contains(byPkg[pkg], ref) {
					byPkg[pkg] = append(byPkg[pkg], ref)
				}
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("images of the suite's manifests: %w", err)
		}
	}
	for _, refs := range byPkg {
		slices.Sort(refs)
	}
	return byPkg, nil
}

var imageLine = regexp.MustCompile(`(?m)^[\s-]*image:\s*["']?([^\s"']+)`)

// imagePackage is the package whose binary stands for image ref: the stand-in node decides the
// same way (node.runnable).
func imagePackage(ref string) (string, error) {
	switch {
	case strings.Contains(ref, "/echo-basic:"):
		return echoPackage, nil
	case strings.Contains(ref, "/coredns:"):
		return dnsPackage, nil
	}
	return "", fmt.Errorf("image %s: no package here builds it", ref)
}

// Stop stops everything Start started, in reverse order.
func (e *Env) Stop() error {
	var errs []error
	for i := len(e.stops) - 1; i >= 0; i-- {
		errs = append(errs, e.stops[i]())
	}
	return errors.Join(errs...)
}

// The packages the suite's pods run: the conformance module's echo server, and a stand-in for
// coredns (the suite only needs its whoami answers).
const (
	echoPackage = "sigs.k8s.io/gateway-api/conformance/echo-basic"
	dnsPackage  = "github.com/fleetgate/fleetgate/tests/conformance/dnsserver"
)

func buildPodBinaries(dir string) (echo, dns string, err error) {
	echo, dns = filepath.Join(dir, "echo-basic"), filepath.Join(dir, "dnsserver")
	for pkg, out := range map[string]string{echoPackage: echo, dnsPackage: dns} {
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
