// Package testbed starts real kube-apiservers (with etcd), built from source into bin/, with every CRD
// fleetgate reads installed: ours, the Gateway API experimental channel, the MCS API and external-dns's
// DNSEndpoint. One server is a cluster; several make a fleet. A server started with Options.Node
// can get a real node (node.go) that runs pods.
package testbed

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
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
	// thread started (and stops) the servers, which die with it (proc.go).
	thread *thread
	// apiServerArgs and restarted belong to StopAPIServer and StartAPIServer.
	apiServerArgs []string
	restarted     *exec.Cmd
	// podCA signs the certificate pods see (Options.Node); nil without.
	podCA []byte
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

// Options change what a test bed's API server has installed and how it runs; the zero value is
// Start's.
type Options struct {
	// Without leaves out the CRDs whose file name (in CRDDirs) contains any of these, e.g.
	// "gateway.networking.k8s.io_" for the whole Gateway API, "_tcproutes" for one kind or
	// "multicluster.x-k8s.io_" for the MCS API: a cluster without fleetgate's prerequisites.
	Without []string
	// PrerequisitesOnly installs only the third-party CRDs, so that a test installs fleetgate's
	// own itself (from the OLM bundle, for instance).
	PrerequisitesOnly bool
	// AuditLog, when set, is the file the server writes its audit log to: every request, at the
	// Metadata level (user, verb, resource, response code), as JSON lines.
	AuditLog string
	// Node makes the server one a node (StartNode) can join: it listens on every address and
	// advertises the host's (HostIP), so that pods reach it through the kubernetes Service; it
	// reaches kubelets by their InternalIP; and ServiceAccount admission is on, so that pods get
	// their service account's token.
	Node bool
}

// auditPolicy logs every request's metadata, so that a test can see each one the operator made.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
`

// CRDFiles are the CRD files of CRDDirs whose name contains any of match, or all of them when
// match is empty.
func CRDFiles(match ...string) ([]string, error) {
	return crdFiles(CRDDirs(), match...)
}

func crdFiles(dirs []string, match ...string) ([]string, error) {
	var out []string
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil, fmt.Errorf("reading CRD directory: %w", err)
		}
		for _, e := range entries {
			if e.IsDir() || filepath.Ext(e.Name()) != ".yaml" {
				continue
			}
			if len(match) == 0 || slices.ContainsFunc(match, func(m string) bool { return strings.Contains(e.Name(), m) }) {
				out = append(out, filepath.Join(dir, e.Name()))
			}
		}
	}
	return out, nil
}

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
	dirs := CRDDirs()
	if o.PrerequisitesOnly {
		dirs = []string{filepath.Join(RepoRoot(), "tests", "testbed", "crds")}
	}
	all, err := crdFiles(dirs)
	if err != nil {
		return nil, err
	}
	var crds []string
	for _, f := range all {
		if !slices.ContainsFunc(o.Without, func(m string) bool { return strings.Contains(filepath.Base(f), m) }) {
			crds = append(crds, f)
		}
	}
	dir, err := os.MkdirTemp("", "fleetgate-"+name+"-")
	if err != nil {
		return nil, fmt.Errorf("temp dir: %w", err)
	}
	assets, err := tiedAssets(filepath.Join(dir, "bin"))
	if err != nil {
		return nil, errors.Join(err, os.RemoveAll(dir))
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:        crds,
		Scheme:                   scheme,
		BinaryAssetsDirectory:    AssetsDir(),
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStartTimeout: 90 * time.Second,
		// CRDs take longer to be served when several servers start on two busy cores.
		CRDInstallOptions:       envtest.CRDInstallOptions{MaxTime: 90 * time.Second},
		ControlPlaneStopTimeout: 30 * time.Second,
	}
	if o.AuditLog != "" {
		policy := filepath.Join(dir, "audit-policy.yaml")
		if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
			return nil, errors.Join(fmt.Errorf("writing audit policy: %w", err), os.RemoveAll(dir))
		}
		env.ControlPlane.GetAPIServer().Configure().
			Set("audit-policy-file", policy).
			Set("audit-log-path", o.AuditLog).
			Set("audit-log-mode", "blocking")
	}
	var podCA []byte
	if o.Node {
		ip, err := HostIP()
		if err != nil {
			return nil, errors.Join(err, os.RemoveAll(dir))
		}
		// Pods reach the server at the kubernetes Service's IP, forwarded to the host's: without
		// SNI, the server picks the certificate by the address it was reached on.
		var crt, key string
		if podCA, crt, key, err = podServingCert(dir, ip); err != nil {
			return nil, errors.Join(err, os.RemoveAll(dir))
		}
		env.ControlPlane.GetAPIServer().Configure().
			Set("bind-address", "0.0.0.0").
			Set("advertise-address", ip).
			Set("tls-sni-cert-key", crt+","+key+":"+ip).
			Set("kubelet-preferred-address-types", "InternalIP").
			Disable("disable-admission-plugins") // envtest turns ServiceAccount admission off
	}
	// Explicit paths: envtest would prefer $KUBEBUILDER_ASSETS to the wrappers' directory.
	env.ControlPlane.GetAPIServer().Path = filepath.Join(assets, "kube-apiserver")
	env.ControlPlane.Etcd = &envtest.Etcd{Path: filepath.Join(assets, "etcd")}
	c := &Cluster{Name: name, env: env, dir: dir, thread: newThread(), podCA: podCA}
	c.thread.do(func() { c.Config, err = env.Start() })
	if err != nil {
		c.thread.close()
		return nil, errors.Join(fmt.Errorf("starting API server %s: %w", name, err), os.RemoveAll(dir))
	}
	if err := c.init(scheme); err != nil {
		return nil, errors.Join(err, c.Stop())
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
	c.KubeconfigPath = filepath.Join(c.dir, "kubeconfig")
	if err := os.WriteFile(c.KubeconfigPath, c.Kubeconfig, 0o600); err != nil {
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	return nil
}

// InstallCRDs installs the test bed's CRD files whose name contains any of match, and waits until
// they are served: prerequisites installed after the operator started.
func (c *Cluster) InstallCRDs(match ...string) error {
	files, err := CRDFiles(match...)
	if err != nil {
		return err
	}
	if _, err := envtest.InstallCRDs(c.Config, envtest.CRDInstallOptions{Paths: files, ErrorIfPathMissing: true, MaxTime: 90 * time.Second}); err != nil {
		return fmt.Errorf("installing CRDs %v in %s: %w", match, c.Name, err)
	}
	return nil
}

// UninstallCRDs deletes the test bed's CRD files whose name contains any of match.
func (c *Cluster) UninstallCRDs(match ...string) error {
	files, err := CRDFiles(match...)
	if err != nil {
		return err
	}
	if err := envtest.UninstallCRDs(c.Config, envtest.CRDInstallOptions{Paths: files}); err != nil {
		return fmt.Errorf("uninstalling CRDs %v in %s: %w", match, c.Name, err)
	}
	return nil
}

// Stop stops the API server and its etcd and removes their files.
func (c *Cluster) Stop() error {
	if c.restarted != nil && c.restarted.Process != nil {
		_ = c.restarted.Process.Kill()
	}
	var err error
	c.thread.do(func() { err = c.env.Stop() })
	c.thread.close()
	return errors.Join(err, os.RemoveAll(c.dir))
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
	stopWithTest(t, clusters)
	return clusters
}

// ForTestWith is ForTest for one API server started with o.
func ForTestWith(t testing.TB, name string, o Options) *Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("needs real API servers; skipped in -short mode")
	}
	c, err := StartWith(t.Context(), name, o)
	if err != nil {
		t.Fatal(err)
	}
	stopWithTest(t, []*Cluster{c})
	return c
}

func stopWithTest(t testing.TB, clusters []*Cluster) {
	t.Cleanup(func() {
		for _, c := range clusters {
			if err := c.Stop(); err != nil {
				t.Errorf("stopping %s: %v", c.Name, err)
			}
		}
	})
}

// QuietGlobalLogger gives controller-runtime's process-wide logger (which envtest's CRD installer
// uses) a sink that prints only errors. Call it once from TestMain or a main function.
func QuietGlobalLogger() {
	ctrllog.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
}
