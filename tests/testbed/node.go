package testbed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A node is a real kubelet on this machine, joined to a test bed API server started with
// Options.Node: containerd (Debian's, with runc and the CNI plugins; `make node-packages`), a CNI
// bridge, and kubelet, kube-proxy (nftables mode), kube-scheduler and kube-controller-manager built
// from source (`make testbed-node`). Images come from docker archives (BuildImage), never from a
// registry. It needs root, and there is one per machine at a time: kubelet, containerd and the CNI
// plugins keep state in fixed places (/var/lib/kubelet, /run/containerd, /var/lib/cni, ...), so a
// lock file serialises nodes, and each start first sweeps what an earlier, killed run left.
const (
	// NodeName is the node's name.
	NodeName = "fleetgate-node"
	// PodCIDR is the pods' range, which the CNI bridge hands out.
	PodCIDR    = "10.88.0.0/16"
	nodeBridge = "fgnode0"
	// serviceCIDR is envtest's API server's service range; the kubernetes Service has its first IP.
	serviceCIDR         = "10.0.0.0/24"
	kubernetesServiceIP = "10.0.0.1"
)

// nodeRoot holds what the node's processes can be told to keep elsewhere. Fixed, not a temp dir:
// the sweep after a killed run finds its processes by it.
func nodeRoot() string { return filepath.Join(os.TempDir(), "fleetgate-testnode") }

// nodeGlobalDirs are where kubelet, containerd and CNI keep state whatever they are told.
func nodeGlobalDirs() []string {
	return []string{"/run/containerd", "/var/lib/kubelet", "/var/log/pods", "/var/log/containers", "/var/lib/cni"}
}

// nodeSysctls are the kernel settings the node's processes change: ip_forward (CNI bridge),
// route_localnet (kube-proxy), the panic and overcommit settings and key quotas (kubelet), and the
// conntrack table size (kube-proxy). The node puts them back.
func nodeSysctls() []string {
	return []string{
		"net/ipv4/ip_forward", "net/ipv6/conf/all/forwarding", "net/ipv4/conf/all/route_localnet",
		"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
		"kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes",
		"net/netfilter/nf_conntrack_max", "net/netfilter/nf_conntrack_tcp_timeout_established",
		"net/netfilter/nf_conntrack_tcp_timeout_close_wait", "net/netfilter/nf_conntrack_tcp_be_liberal",
	}
}

// NodeOptions change what StartNode sets up.
type NodeOptions struct {
	// Images are docker archives (BuildImage) imported into the node's containerd before its
	// kubelet starts; pods use them with imagePullPolicy Never. The sandbox image is always there.
	Images []string
}

// Node is a running node.
type Node struct {
	// IP is the node's InternalIP, the host's (HostIP).
	IP string
	// Logs is the directory the node's processes log to, removed by Stop (NodeForTest shows their
	// ends when the test failed).
	Logs string

	root  string
	lock  *os.File
	procs []*nodeProc
}

type nodeProc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
}

// NodeSupported says why this machine cannot run a node, or nil.
func NodeSupported() error {
	if os.Geteuid() != 0 {
		return errors.New("a node needs root")
	}
	var missing []string
	for _, bin := range []string{"containerd", "containerd-shim-runc-v2", "ctr", "runc", "nft", "iptables-save", "iptables-restore", "ip"} {
		if _, err := exec.LookPath(bin); err != nil {
			missing = append(missing, bin)
		}
	}
	if _, err := os.Stat("/usr/lib/cni/bridge"); err != nil {
		missing = append(missing, "/usr/lib/cni/bridge")
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing %s (run `make node-packages`)", strings.Join(missing, ", "))
	}
	for _, bin := range []string{"kubelet", "kube-proxy", "kube-scheduler", "kube-controller-manager"} {
		if _, err := os.Stat(filepath.Join(AssetsDir(), bin)); err != nil {
			missing = append(missing, bin)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing %s in %s (run `make testbed testbed-node`)", strings.Join(missing, ", "), AssetsDir())
	}
	return nil
}

// RequireNode skips the test where a node cannot run (NodeSupported), or in -short mode, unless
// $CI is set: there it fails. Node tests call it first, before they start an API server.
func RequireNode(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs a real node; skipped in -short mode")
	}
	if err := NodeSupported(); err != nil {
		if os.Getenv("CI") == "" {
			t.Skipf("no node on this machine (with CI set this fails): %v", err)
		}
		t.Fatalf("no node on this machine: %v", err)
	}
}

// NodeForTest starts a node joined to c (started with Options.Node) for the test and stops it
// when the test ends; it calls RequireNode first.
func NodeForTest(t testing.TB, c *Cluster, o NodeOptions) *Node {
	t.Helper()
	RequireNode(t)
	n, err := StartNode(t.Context(), c, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			n.logTails(t)
		}
		if err := n.Stop(); err != nil {
			t.Errorf("stopping the node: %v", err)
		}
	})
	return n
}

// StartNode starts a node joined to c and waits until it is Ready. It waits for any other node on
// this machine to stop first.
func StartNode(ctx context.Context, c *Cluster, o NodeOptions) (_ *Node, err error) {
	if c.podCA == nil {
		return nil, fmt.Errorf("cluster %s was not started with Options.Node", c.Name)
	}
	ip, err := HostIP()
	if err != nil {
		return nil, err
	}
	root := nodeRoot()
	lock, err := lockNode()
	if err != nil {
		return nil, err
	}
	// Before anything is swept: the sweep would take a foreign kubelet's containers.
	if err := foreignRuntime(root); err != nil {
		return nil, errors.Join(err, lock.Close())
	}
	n := &Node{IP: ip, Logs: root + "-logs", root: root, lock: lock}
	defer func() {
		if err != nil {
			err = errors.Join(err, n.Stop())
		}
	}()
	if err := sweepNode(root); err != nil {
		return nil, fmt.Errorf("sweeping an earlier node's leftovers: %w", err)
	}
	if err := os.MkdirAll(n.Logs, 0o700); err != nil {
		return nil, fmt.Errorf("log dir: %w", err)
	}
	if err := n.prepare(c); err != nil {
		return nil, err
	}
	sock := filepath.Join(root, "containerd", "containerd.sock")
	if err := n.start("containerd", "containerd", "--config", filepath.Join(root, "containerd", "config.toml")); err != nil {
		return nil, err
	}
	if err := n.waitFor(ctx, "containerd", func() error {
		return exec.CommandContext(ctx, "ctr", "--address", sock, "version").Run()
	}); err != nil {
		return nil, err
	}
	pause, err := BuildImage(ctx, root, PauseImage)
	if err != nil {
		return nil, err
	}
	for _, img := range append([]string{pause}, o.Images...) {
		if out, err := exec.CommandContext(ctx, "ctr", "--address", sock, "--namespace", "k8s.io", "images", "import", img).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("importing %s into the node's containerd: %w: %s", img, err, out)
		}
	}
	bin := func(name string) string { return filepath.Join(AssetsDir(), name) }
	kc := func(name string) string { return filepath.Join(root, name+".kubeconfig") }
	// envtest's service-account signing key: the token controller signs with the server's key.
	cert := filepath.Join(c.env.ControlPlane.GetAPIServer().CertDir, "sa-signer.key")
	if err := n.start("kube-controller-manager", bin("kube-controller-manager"),
		"--kubeconfig", kc("kube-controller-manager"),
		"--controllers", strings.Join([]string{"deployment-controller", "replicaset-controller", "endpointslice-controller",
			"endpointslice-mirroring-controller", "namespace-controller", "garbage-collector-controller",
			"serviceaccount-controller", "serviceaccount-token-controller", "root-ca-certificate-publisher-controller",
			"node-lifecycle-controller", "pod-garbage-collector-controller"}, ","),
		"--use-service-account-credentials=false", "--leader-elect=false", "--secure-port=0",
		"--service-cluster-ip-range="+serviceCIDR,
		"--service-account-private-key-file="+cert, "--root-ca-file="+filepath.Join(root, "ca.crt"),
		"--endpointslice-updates-batch-period=0s"); err != nil {
		return nil, err
	}
	if err := n.start("kube-scheduler", bin("kube-scheduler"),
		"--kubeconfig", kc("kube-scheduler"), "--leader-elect=false", "--secure-port=0"); err != nil {
		return nil, err
	}
	if err := n.start("kubelet", bin("kubelet"),
		"--config", filepath.Join(root, "kubelet.yaml"), "--kubeconfig", kc("kubelet"),
		"--root-dir", filepath.Join(root, "kubelet"), "--cert-dir", filepath.Join(root, "kubelet-pki"),
		"--hostname-override", NodeName, "--node-ip", ip); err != nil {
		return nil, err
	}
	if err := n.start("kube-proxy", bin("kube-proxy"), "--config", filepath.Join(root, "kube-proxy.yaml")); err != nil {
		return nil, err
	}
	if err := n.waitFor(ctx, "NodeReady", func() error { return nodeReady(ctx, c.Client) }); err != nil {
		return nil, err
	}
	return n, nil
}

// SweepNode removes what a node left on this machine when its test binary was killed; a running
// node is stopped first by its own test. StartNode does it too.
func SweepNode() error {
	lock, err := lockNode()
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := foreignRuntime(nodeRoot()); err != nil {
		return err
	}
	return sweepNode(nodeRoot())
}

// lockNode waits until no other node runs on this machine and returns the lock, held until the
// file is closed (or this process dies).
func lockNode() (*os.File, error) {
	lock, err := os.OpenFile(nodeRoot()+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("node lock: %w", err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		lock.Close()
		return nil, fmt.Errorf("node lock: %w", err)
	}
	return lock, nil
}

// prepare writes the node's configuration under its root: the processes' kubeconfigs and
// configuration files, the CNI network, and the kernel settings to put back.
func (n *Node) prepare(c *Cluster) error {
	root := n.root
	for _, d := range []string{root, filepath.Join(root, "cni"), filepath.Join(root, "containerd")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("node dir: %w", err)
		}
	}
	saved, err := json.Marshal(ReadNodeSysctls())
	if err != nil {
		return err
	}
	files := map[string]string{
		"sysctls.json":           string(saved),
		"ca.crt":                 string(c.podCA),
		"containerd/config.toml": containerdConfig(root),
		"cni/10-fleetgate.conflist": fmt.Sprintf(`{"cniVersion": "1.0.0", "name": "fleetgate", "plugins": [
  {"type": "bridge", "bridge": %q, "isGateway": true, "hairpinMode": true,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": %q}]], "routes": [{"dst": "0.0.0.0/0"}]}}]}
`, nodeBridge, PodCIDR),
		"kubelet.yaml": fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: unix://%s/containerd/containerd.sock
cgroupDriver: cgroupfs
# The machine runs cgroup v1, which kubelet refuses by default since 1.35.
failCgroupV1: false
failSwapOn: false
# The API server (envtest's, without kubelet client credentials) reaches it at the node's IP for
# logs and exec: anonymous and allowed, on that address only.
address: %s
readOnlyPort: 0
healthzPort: 0
authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}
authorization: {mode: AlwaysAllow}
# A shared test machine: evict only when it is nearly full, never collect the imported images.
evictionHard: {memory.available: "100Mi", nodefs.available: "1%%", imagefs.available: "1%%", nodefs.inodesFree: "1%%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
`, root, n.IP),
		"kube-proxy.yaml": fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: nftables
clusterCIDR: %s
hostnameOverride: %s
clientConnection: {kubeconfig: %s}
metricsBindAddress: "127.0.0.1:10249"
healthzBindAddress: "127.0.0.1:10256"
# Leave the host's conntrack settings alone.
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
`, PodCIDR, NodeName, filepath.Join(root, "kube-proxy.kubeconfig")),
	}
	for user, groups := range map[string][]string{
		"kubelet":                 {"system:nodes", "system:masters"},
		"kube-proxy":              {"system:node-proxier", "system:masters"},
		"kube-scheduler":          {"system:masters"},
		"kube-controller-manager": {"system:masters"},
	} {
		name := "system:" + user
		if user == "kubelet" {
			name = "system:node:" + NodeName
		}
		kc, err := c.KubeconfigFor(name, groups...)
		if err != nil {
			return err
		}
		files[user+".kubeconfig"] = string(kc)
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(root, name), []byte(data), 0o600); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	return nil
}

func containerdConfig(root string) string {
	return fmt.Sprintf(`version = 2
root = "%[1]s/containerd/root"
state = "%[1]s/containerd/state"
# opt would install into /opt/containerd.
disabled_plugins = ["io.containerd.internal.v1.opt"]
[grpc]
  address = "%[1]s/containerd/containerd.sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[2]q
  # The machine lacks CAP_SYS_RESOURCE: runc cannot give a sandbox the negative oom_score_adj
  # the kubelet asks for. This clamps it to containerd's own.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "%[1]s/cni"
`, root, PauseImage)
}

// start starts one of the node's processes, logging to Logs/name.log. It dies with this process
// (StartTied); what it starts itself (containerd's shims, the containers) is left to the sweep.
func (n *Node) start(name, bin string, args ...string) error {
	logf, err := os.Create(filepath.Join(n.Logs, name+".log"))
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	waited, err := StartTied(cmd, syscall.SIGKILL)
	if err != nil {
		logf.Close()
		return fmt.Errorf("starting %s: %w", name, err)
	}
	p := &nodeProc{name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		if err := <-waited; err != nil {
			fmt.Fprintf(logf, "%s exited: %v\n", name, err)
		}
		logf.Close()
		close(p.done)
	}()
	n.procs = append(n.procs, p)
	return nil
}

// waitFor polls cond for up to two minutes, and gives up early when one of the node's processes
// has exited.
func (n *Node) waitFor(ctx context.Context, what string, cond func() error) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		err := cond()
		if err == nil {
			return nil
		}
		for _, p := range n.procs {
			select {
			case <-p.done:
				return fmt.Errorf("waiting for %s: %s exited (log in %s)", what, p.name, n.Logs)
			default:
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("waiting for %s: %w", what, errors.Join(err, ctx.Err()))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func nodeReady(ctx context.Context, c client.Client) error {
	var node corev1.Node
	if err := c.Get(ctx, client.ObjectKey{Name: NodeName}, &node); err != nil {
		return err
	}
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
			return nil
		}
	}
	return fmt.Errorf("node %s not Ready", NodeName)
}

// Stop stops the node's processes, its containers and whatever they left on the machine. A
// second Stop does nothing.
func (n *Node) Stop() error {
	if n.lock == nil {
		return nil
	}
	for _, p := range slices.Backward(n.procs) {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
	n.procs = nil
	err := sweepNode(n.root)
	err = errors.Join(err, n.lock.Close())
	n.lock = nil
	return err
}

// KillContainer sends SIGKILL to a container's process, as the kernel's OOM killer or a crash
// would: the kubelet sees it exit and restarts it. id is a pod status containerID
// (containerd://<id>) or the bare ID.
func (n *Node) KillContainer(ctx context.Context, id string) error {
	id = strings.TrimPrefix(id, "containerd://")
	sock := filepath.Join(n.root, "containerd", "containerd.sock")
	if out, err := exec.CommandContext(ctx, "ctr", "--address", sock, "--namespace", "k8s.io", "tasks", "kill", "--signal", "SIGKILL", id).CombinedOutput(); err != nil {
		return fmt.Errorf("killing container %s: %w: %s", id, err, out)
	}
	return nil
}

// RSS returns the resident memory of the node's processes by name (containerd-shim, pause and
// the containers' programs summed), in bytes.
func (n *Node) RSS() map[string]int64 {
	out := map[string]int64{}
	for _, p := range nodeProcesses(n.root) {
		out[p.Role] += rss(p.PID)
	}
	return out
}

func rss(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kb int64
			if _, err := fmt.Sscanf(strings.TrimSpace(rest), "%d kB", &kb); err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

func (n *Node) logTails(t testing.TB) {
	entries, _ := os.ReadDir(n.Logs)
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(n.Logs, e.Name()))
		if len(b) > 4000 {
			b = b[len(b)-4000:]
		}
		t.Logf("--- %s (tail) ---\n%s", e.Name(), b)
	}
}

// HostIP is the IPv4 address of the interface the default route leaves by: what a node advertises
// and pods reach the host on.
func HostIP() (string, error) {
	routes, err := os.ReadFile("/proc/net/route")
	if err != nil {
		return "", fmt.Errorf("reading routes: %w", err)
	}
	var dev string
	for _, line := range strings.Split(string(routes), "\n")[1:] {
		if f := strings.Fields(line); len(f) > 1 && f[1] == "00000000" {
			dev = f[0]
			break
		}
	}
	if dev == "" {
		return "", errors.New("no default route: no host address for a node")
	}
	iface, err := net.InterfaceByName(dev)
	if err != nil {
		return "", fmt.Errorf("interface %s: %w", dev, err)
	}
	addrs, err := iface.Addrs()
	if err != nil {
		return "", fmt.Errorf("addresses of %s: %w", dev, err)
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil {
			return ipn.IP.String(), nil
		}
	}
	return "", fmt.Errorf("%s has no IPv4 address", dev)
}

// EchoDeployment is Deployment namespace/name: replicas pods of EchoImage labelled app=name, ready
// once they answer HTTP on 8080.
func EchoDeployment(namespace, name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "echo", Image: EchoImage, ImagePullPolicy: corev1.PullNever,
					Env: []corev1.EnvVar{{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{
						FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
					Ports: []corev1.ContainerPort{{ContainerPort: 8080}},
					ReadinessProbe: &corev1.Probe{PeriodSeconds: 1, ProbeHandler: corev1.ProbeHandler{
						HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(8080)}}},
				}}},
			},
		},
	}
}

// DeploymentReady says whether Deployment namespace/name has replicas ready pods.
func DeploymentReady(ctx context.Context, c client.Client, namespace, name string, replicas int32) error {
	var d appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &d); err != nil {
		return err
	}
	if d.Status.ReadyReplicas != replicas {
		return fmt.Errorf("deployment %s/%s: %d of %d replicas ready", namespace, name, d.Status.ReadyReplicas, replicas)
	}
	return nil
}
