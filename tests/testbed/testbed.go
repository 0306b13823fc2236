// Package testbed starts real kube-apiservers (with etcd), built from source into bin/, with every CRD
// fleetgate reads installed: ours, the Gateway API experimental channel, the MCS API and external-dns's
// DNSEndpoint. One server is a cluster; several make a fleet.
package testbed

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/fleetgate/fleetgate/controllers"
)

// Cluster is one running API server.
type Cluster struct {
	Name   string
	Config *rest.Config
	Client client.Client
	// Kubeconfig is an admin kubeconfig for the server.
	Kubeconfig []byte
	// KubeconfigPath is Kubeconfig written to a file, for processes started by tests.
	KubeconfigPath string

	env *envtest.Environment
	dir string
	// apiServerArgs and restarted belong to StopAPIServer and StartAPIServer.
	apiServerArgs []string
	restarted     *exec.Cmd
}

// RepoRoot is the root of the fleetgate checkout this package was built from.
func RepoRoot() string {
	_, file, _, _ := goruntime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// AssetsDir is where kube-apiserver and etcd are: $KUBEBUILDER_ASSETS, else bin/ in the checkout.
func AssetsDir() string {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir
	}
	return filepath.Join(RepoRoot(), "bin")
}

// CRDDirs are the directories of every CRD the test bed installs.
func CRDDirs() []string {
	root := RepoRoot()
	return []string{
		filepath.Join(root, "config", "crd", "bases"),
		filepath.Join(root, "tests", "testbed", "crds"),
	}
}

// Options change how StartWith starts a server; the zero value is Start's.
type Options struct {
	// AuditLog, when set, is the file the server writes its audit log to: every request, at the
	// Metadata level (user, verb, resource, response code), as JSON lines.
	AuditLog string
	// PrerequisitesOnly installs only the third-party CRDs, so that a test installs fleetgate's
	// own itself (from the OLM bundle, for instance).
	PrerequisitesOnly bool
}

// auditPolicy logs every request's metadata, so that a test can see each one the operator made.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
`

// Start starts one API server named name and waits until its CRDs are served.
func Start(ctx context.Context, name string) (*Cluster, error) {
	return StartWith(ctx, name, Options{})
}

// StartWith is Start with options.
func StartWith(ctx context.Context, name string, o Options) (*Cluster, error) {
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(AssetsDir(), bin)); err != nil {
			return nil, fmt.Errorf("test control plane binary missing (run `make testbed`): %w", err)
		}
	}
	scheme, err := controllers.NewScheme()
	if err != nil {
		return nil, err
	}
	crdDirs := CRDDirs()
	if o.PrerequisitesOnly {
		crdDirs = []string{filepath.Join(RepoRoot(), "tests", "testbed", "crds")}
	}
	env := &envtest.Environment{
		Scheme:                   scheme,
		BinaryAssetsDirectory:    AssetsDir(),
		CRDDirectoryPaths:        crdDirs,
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStartTimeout: 90 * time.Second,
		// CRDs take longer to be served when several servers start on two busy cores.
		CRDInstallOptions:       envtest.CRDInstallOptions{MaxTime: 90 * time.Second},
		ControlPlaneStopTimeout: 30 * time.Second,
	}
	if o.AuditLog != "" {
		policy := filepath.Join(filepath.Dir(o.AuditLog), "audit-policy.yaml")
		if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
			return nil, fmt.Errorf("writing audit policy: %w", err)
		}
		env.ControlPlane.GetAPIServer().Configure().
			Set("audit-policy-file", policy).
			Set("audit-log-path", o.AuditLog).
			Set("audit-log-mode", "blocking")
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting API server %s: %w", name, err)
	}
	c := &Cluster{Name: name, Config: cfg, env: env}
	if err := c.init(scheme); err != nil {
		return nil, errors.Join(err, env.Stop())
	}
	return c, nil
}

func (c *Cluster) init(scheme *runtime.Scheme) error {
	cl, err := client.New(c.Config, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("client for %s: %w", c.Name, err)
	}
	c.Client = cl
	user, err := c.env.AddUser(envtest.User{Name: "fleetgate-admin", Groups: []string{"system:masters"}}, c.Config)
	if err != nil {
		return fmt.Errorf("admin user for %s: %w", c.Name, err)
	}
	if c.Kubeconfig, err = user.KubeConfig(); err != nil {
		return fmt.Errorf("kubeconfig for %s: %w", c.Name, err)
	}
	if c.dir, err = os.MkdirTemp("", "fleetgate-"+c.Name+"-"); err != nil {
		return fmt.Errorf("temp dir: %w", err)
	}
	c.KubeconfigPath = filepath.Join(c.dir, "kubeconfig")
	if err := os.WriteFile(c.KubeconfigPath, c.Kubeconfig, 0o600); err != nil {
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	return nil
}

// Stop stops the API server and its etcd and removes their files.
func (c *Cluster) Stop() error {
	if c.restarted != nil && c.restarted.Process != nil {
		_ = c.restarted.Process.Kill()
	}
	err := c.env.Stop()
	if c.dir != "" {
		err = errors.Join(err, os.RemoveAll(c.dir))
	}
	return err
}

// StartFleet starts n API servers in parallel, named names[i] or member-i.
func StartFleet(ctx context.Context, names ...string) ([]*Cluster, error) {
	clusters := make([]*Cluster, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() {
			clusters[i], errs[i] = Start(ctx, name)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, c := range clusters {
			if c != nil {
				err = errors.Join(err, c.Stop())
			}
		}
		return nil, err
	}
	return clusters, nil
}

// ForTest starts one API server per name for the test and stops them when it ends. It skips the
// test in -short mode, since each server costs seconds.
func ForTest(t testing.TB, names ...string) []*Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("needs real API servers; skipped in -short mode")
	}
	clusters, err := StartFleet(t.Context(), names...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, c := range clusters {
			if err := c.Stop(); err != nil {
				t.Errorf("stopping %s: %v", c.Name, err)
			}
		}
	})
	return clusters
}

// QuietGlobalLogger gives controller-runtime's process-wide logger (which envtest's CRD installer
// uses) a sink that prints only errors. Call it once from TestMain or a main function.
func QuietGlobalLogger() {
	ctrllog.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
}
