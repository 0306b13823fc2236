// Command demo is `make demo`: it starts a local kube-apiserver, runs the fleetgate operator against it,
// applies the samples and shows what fleetgate did with them. It stays up for the user until Ctrl-C,
// and exits by itself after the showcase when stdin is not a terminal.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/term"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/fleetgate/fleetgate/tests/testbed"
)

func main() {
	operator := flag.String("operator", "bin/fleetgate", "the operator binary to run")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *operator); err != nil {
		fmt.Fprintln(os.Stderr, "demo failed:", err)
		os.Exit(1)
	}
}

func step(format string, args ...any) { fmt.Printf("==> "+format+"\n", args...) }

func run(ctx context.Context, operator string) (err error) {
	testbed.QuietGlobalLogger()
	step("starting a local kube-apiserver + etcd (built from source into %s)", testbed.AssetsDir())
	cluster, err := testbed.Start(ctx, "demo")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, cluster.Stop()) }()
	fmt.Printf("    API server %s, kubeconfig %s\n", cluster.Config.Host, cluster.KubeconfigPath)
	fmt.Printf("    CRDs installed: fleetgate, Gateway API v1.6.3 (experimental), MCS API, DNSEndpoint\n")

	logPath := filepath.Join(filepath.Dir(cluster.KubeconfigPath), "operator.log")
	step("running the operator %s (logs: %s)", operator, logPath)
	logFile, err := os.Create(logPath)
	if err != nil {
		return fmt.Errorf("creating operator log: %w", err)
	}
	defer logFile.Close()
	cmd := exec.Command(operator,
		"--kubeconfig", cluster.KubeconfigPath,
		"--leader-elect=false",
		"--metrics-bind-address=127.0.0.1:0",
		"--health-probe-bind-address=127.0.0.1:0",
		"--log-format=console")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting operator: %w", err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		if werr := cmd.Wait(); werr != nil && !isSignalExit(werr) {
			err = errors.Join(err, fmt.Errorf("operator: %w", werr))
		}
	}()

	samples := filepath.Join(testbed.RepoRoot(), "config", "samples")
	for _, name := range []string{"gatewayclassconfig.yaml", "gatewayclass.yaml"} {
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

	if !term.IsTerminal(int(os.Stdin.Fd())) {
		step("done (stdin is not a terminal, so the demo stops here)")
		return nil
	}
	step("the control plane stays up; try it, then press Ctrl-C to stop:")
	fmt.Printf("    export KUBECONFIG=%s\n    kubectl get gatewayclasses\n", cluster.KubeconfigPath)
	<-ctx.Done()
	step("stopping")
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

func isSignalExit(err error) bool {
	var exit *exec.ExitError
	return errors.As(err, &exit) && !exit.Exited()
}
