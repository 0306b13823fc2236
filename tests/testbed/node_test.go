package testbed

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestNode starts a real node, runs a 2-replica Deployment of the echo image on it, reaches a pod
// by its IP and both pods through their Service's ClusterIP (kube-proxy) from the host, stops the
// node and checks that it left nothing on the machine.
func TestNode(t *testing.T) {
	RequireNode(t)
	ctx := t.Context()
	sysctls := ReadNodeSysctls()
	c := ForTestWith(t, "node", Options{Node: true})
	echo, err := BuildImage(ctx, t.TempDir(), EchoImage)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	n := NodeForTest(t, c, NodeOptions{Images: []string{echo}})
	t.Logf("node Ready %s after its start", time.Since(start).Round(time.Millisecond))

	labels := map[string]string{"app": "echo"}
	deploy := EchoDeployment("default", "echo", 2)
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "echo"},
		Spec: corev1.ServiceSpec{Selector: labels,
			Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}},
	}
	start = time.Now()
	if err := CreateAll(ctx, c.Client, deploy, svc); err != nil {
		t.Fatal(err)
	}
	Eventually(t, 2*time.Minute, func() error { return DeploymentReady(ctx, c.Client, "default", "echo", 2) })
	t.Logf("2 replicas Ready %s after the Deployment was created", time.Since(start).Round(time.Millisecond))

	var pods corev1.PodList
	if err := c.Client.List(ctx, &pods, client.InNamespace("default"), client.MatchingLabels(labels)); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range pods.Items {
		if p.Status.PodIP == "" || p.Spec.NodeName != NodeName {
			t.Fatalf("pod %s: IP %q on node %q, want an IP on %s", p.Name, p.Status.PodIP, p.Spec.NodeName, NodeName)
		}
		names = append(names, p.Name)
	}
	if len(names) != 2 {
		t.Fatalf("%d echo pods, want 2", len(names))
	}
	pod := pods.Items[0]
	// The API server reaches the kubelet at the node's InternalIP for a pod's log.
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	podLog, err := cs.CoreV1().Pods("default").GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil || !strings.Contains(string(podLog), pod.Name+" serving on :8080") {
		t.Errorf("log of pod %s: %q, %v; want its start line", pod.Name, podLog, err)
	}
	if got, want := get(t, "http://"+pod.Status.PodIP+":8080/direct"), pod.Name+" GET "+pod.Status.PodIP+":8080/direct\n"; got != want {
		t.Errorf("GET the pod's IP: %q, want %q", got, want)
	}
	// kube-proxy programs the Service once it sees the EndpointSlice (refusing until then), and
	// balances new connections at random among the endpoints it knows: both pods answer in the end.
	seen := map[string]int{}
	Eventually(t, time.Minute, func() error {
		got, err := tryGet("http://" + svc.Spec.ClusterIP + "/svc")
		if err != nil {
			return err
		}
		name, _, _ := strings.Cut(got, " ")
		if !slices.Contains(names, name) || got != name+" GET "+svc.Spec.ClusterIP+"/svc\n" {
			t.Fatalf("GET the ClusterIP: %q, want one of the pods %v", got, names)
		}
		if seen[name]++; len(seen) < 2 {
			return fmt.Errorf("the ClusterIP reached only %v, want both pods %v", seen, names)
		}
		return nil
	})
	t.Logf("the ClusterIP reached both pods: %v", seen)

	var total int64
	for role, b := range n.RSS() {
		total += b
		t.Logf("RSS %s: %d MiB", role, b>>20)
	}
	var plane int64
	for _, p := range Descendants(os.Getpid()) {
		if p.Role == "kube-apiserver" || p.Role == "etcd" {
			plane += rss(p.PID)
		}
	}
	t.Logf("RSS of the node: %d MiB, with the API server and etcd: %d MiB", total>>20, (total+plane)>>20)

	// The check below must see a node: a running one leaves something of every kind.
	running := strings.Join(NodeLeftovers(sysctls), "\n")
	for _, kind := range []string{"process kubelet", "process app", "process containerd-shim", "mount ", "netns ",
		"link ", "nft table ip kube-proxy", "iptables chain ", "cgroup ", "dir /var/lib/kubelet", "sysctl net/ipv4/ip_forward"} {
		if !strings.Contains(running, kind) {
			t.Errorf("a running node shows no %q among its leftovers:\n%s", kind, running)
		}
	}
	if err := n.Stop(); err != nil {
		t.Fatalf("stopping the node: %v", err)
	}
	if left := NodeLeftovers(sysctls); len(left) > 0 {
		t.Errorf("the stopped node left:\n%s", strings.Join(left, "\n"))
	}
}

// envHoldNode makes TestHoldNode run: it is the helper process of TestNodeSweptAfterKill.
const envHoldNode = "FLEETGATE_TESTBED_HOLD_NODE"

// TestNodeSweptAfterKill runs this test binary again as a helper that starts a node with two
// pods, SIGKILLs it, as `go test -timeout` or a CI runner would, checks that the node's shims and
// containers outlive it (so there is something to sweep), and then that SweepNode (which every
// StartNode runs first) leaves nothing.
func TestNodeSweptAfterKill(t *testing.T) {
	RequireNode(t)
	sysctls := ReadNodeSysctls()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHoldNode$", "-test.v")
	cmd.Env = append(os.Environ(), envHoldNode+"=1")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	exited, err := StartTied(cmd, syscall.SIGKILL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	lines := bufio.NewScanner(out)
	var holding bool
	for lines.Scan() {
		if dirs, ok := strings.CutPrefix(lines.Text(), "HOLDING"); ok {
			holding = true
			// The killed helper's API server and etcd files: not the node's, but nobody else's.
			t.Cleanup(func() {
				for _, d := range strings.Fields(dirs) {
					_ = os.RemoveAll(d)
				}
			})
			break
		}
	}
	if !holding {
		t.Fatalf("the helper ended before its node ran pods: %v", <-exited)
	}
	go func() {
		for lines.Scan() {
		}
	}()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited //nolint:errcheck // the error is the kill's own
	left := strings.Join(NodeLeftovers(sysctls), "\n")
	for _, kind := range []string{"process app", "process containerd-shim", "mount ", "netns ", "cgroup ", "link ",
		"nft table ip kube-proxy", "iptables chain ", "dir /var/lib/kubelet", "sysctl net/ipv4/ip_forward"} {
		if !strings.Contains(left, kind) {
			t.Errorf("after the kill, no %q among the leftovers: nothing to sweep?\n%s", kind, left)
		}
	}
	if err := SweepNode(); err != nil {
		t.Fatalf("sweeping: %v", err)
	}
	if left := NodeLeftovers(sysctls); len(left) > 0 {
		t.Errorf("the sweep left:\n%s", strings.Join(left, "\n"))
	}
}

// TestHoldNode is TestNodeSweptAfterKill's helper: it starts a node running two echo pods, says
// so, and waits to be killed.
func TestHoldNode(t *testing.T) {
	if os.Getenv(envHoldNode) == "" {
		t.Skip("the helper process of TestNodeSweptAfterKill")
	}
	c := ForTestWith(t, "held-node", Options{Node: true})
	echo, err := BuildImage(t.Context(), t.TempDir(), EchoImage)
	if err != nil {
		t.Fatal(err)
	}
	NodeForTest(t, c, NodeOptions{Images: []string{echo}})
	if err := CreateAll(t.Context(), c.Client, EchoDeployment("default", "echo", 2)); err != nil {
		t.Fatal(err)
	}
	Eventually(t, 2*time.Minute, func() error { return DeploymentReady(t.Context(), c.Client, "default", "echo", 2) })
	fmt.Println("HOLDING", c.dir, c.env.ControlPlane.GetAPIServer().CertDir, c.env.ControlPlane.Etcd.DataDir)
	<-t.Context().Done() // never: the parent kills this process first
}

func get(t *testing.T, url string) string {
	t.Helper()
	body, err := tryGet(url)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

func tryGet(url string) (string, error) {
	// A new connection per request, as kube-proxy balances connections; no proxy from the environment.
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(url)
	if err != nil {
		return "", fmt.Errorf("GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s %q %w", url, resp.Status, b, err)
	}
	return string(b), nil
}
