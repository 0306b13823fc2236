package testbed

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
)

// RegisterMember makes member a MemberCluster of hub: a Secret holding kubeconfig in namespace
// (created if missing) and a MemberCluster named after the member with the given weight. A nil
// kubeconfig means the member's admin kubeconfig.
func RegisterMember(ctx context.Context, hub, member *Cluster, namespace string, weight int32, kubeconfig []byte) error {
	if kubeconfig == nil {
		kubeconfig = member.Kubeconfig
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if err := hub.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", namespace, err)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: member.Name + "-kubeconfig"},
		Data:       map[string][]byte{"kubeconfig": kubeconfig},
	}
	if err := hub.Client.Create(ctx, secret); err != nil {
		return fmt.Errorf("creating kubeconfig Secret of %s: %w", member.Name, err)
	}
	mc := &v1alpha1.MemberCluster{
		ObjectMeta: metav1.ObjectMeta{Name: member.Name},
		Spec: v1alpha1.MemberClusterSpec{
			KubeconfigSecretRef: v1alpha1.SecretKeyRef{Name: secret.Name, Key: "kubeconfig"},
			Weight:              weight,
		},
	}
	if err := hub.Client.Create(ctx, mc); err != nil {
		return fmt.Errorf("creating MemberCluster %s: %w", member.Name, err)
	}
	return nil
}

// KubeconfigFor returns a kubeconfig for a user of the cluster authenticated by a client
// certificate with the given groups (envtest's AddUser), for RBAC tests.
func (c *Cluster) KubeconfigFor(user string, groups ...string) ([]byte, error) {
	u, err := c.env.AddUser(envtest.User{Name: user, Groups: groups}, c.Config)
	if err != nil {
		return nil, fmt.Errorf("adding user %s to %s: %w", user, c.Name, err)
	}
	return u.KubeConfig()
}

// StopAPIServer ends the cluster's kube-apiserver process, as an outage would; etcd keeps running.
// StartAPIServer starts it again with the same arguments: same port, certificates and data.
func (c *Cluster) StopAPIServer() error {
	pid, args, err := c.apiServerProcess()
	if err != nil {
		return err
	}
	c.apiServerArgs = args
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("stopping kube-apiserver of %s: %w", c.Name, err)
	}
	for range 100 {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
			return nil
		}
		if st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); bytes.Contains(st, []byte(") Z ")) {
			return nil // a zombie until envtest reaps it: no longer serving
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("kube-apiserver of %s did not exit", c.Name)
}

// StartAPIServer restarts the kube-apiserver stopped by StopAPIServer and waits until it serves.
func (c *Cluster) StartAPIServer() error {
	if len(c.apiServerArgs) == 0 {
		return errors.New("StartAPIServer without StopAPIServer")
	}
	cmd := exec.Command(c.apiServerArgs[0], c.apiServerArgs[1:]...)
	logf, err := os.Create(filepath.Join(c.dir, "kube-apiserver-restarted.log"))
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	done, err := StartTied(cmd, syscall.SIGKILL)
	if err != nil {
		logf.Close()
		return fmt.Errorf("restarting kube-apiserver of %s: %w", c.Name, err)
	}
	c.restarted = cmd
	go func() {
		<-done //nolint:errcheck // a restarted server is killed; its exit says nothing
		logf.Close()
	}()
	dc, err := discovery.NewDiscoveryClientForConfig(c.Config)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		body, err := dc.RESTClient().Get().AbsPath("/readyz").DoRaw(context.Background())
		if err == nil && string(body) == "ok" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("restarted kube-apiserver of %s not ready after 60s: %v", c.Name, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// apiServerProcess finds this cluster's kube-apiserver by its secure port.
func (c *Cluster) apiServerProcess() (int, []string, error) {
	u, err := url.Parse(c.Config.Host)
	if err != nil {
		return 0, nil, err
	}
	want := "--secure-port=" + u.Port()
	procs, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		return 0, nil, err
	}
	for _, p := range procs {
		raw, err := os.ReadFile(p)
		if err != nil || len(raw) == 0 {
			continue
		}
		args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		if filepath.Base(args[0]) != "kube-apiserver" {
			continue
		}
		for _, a := range args[1:] {
			if a == want {
				var pid int
				if _, err := fmt.Sscanf(p, "/proc/%d/cmdline", &pid); err != nil {
					return 0, nil, err
				}
				return pid, args, nil
			}
		}
	}
	return 0, nil, fmt.Errorf("no kube-apiserver process with %s", want)
}

// RSS returns the operator process's resident memory in bytes (Linux).
func (o *Operator) RSS() (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", o.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kb int64
			if _, err := fmt.Sscanf(strings.TrimSpace(rest), "%d kB", &kb); err != nil {
				return 0, err
			}
			return kb << 10, nil
		}
	}
	return 0, errors.New("no VmRSS")
}
