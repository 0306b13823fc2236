// Package node is a test-only stand-in for a kubelet: it registers one Ready Node, binds Pending
// pods to it, runs each pod as a local process (echo-basic, or a small DNS server for coredns) in
// its own network namespace with a pod IP from 198.19.0.0/16, reports Ready status, serves
// container logs, and finishes pods on deletion. The real kube-controller-manager does the rest.
package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// Options configure a Node.
type Options struct {
	// Name of the Node object.
	Name string
	// IP is the node's address, on lo: the kubelet endpoint listens there and pods' replies go to it.
	IP string
	// PodNet is the first three octets' prefix of pod IPs, e.g. "198.19" (pods get PodNet.x.y).
	PodNet string
	// EchoBinary is echo-basic, built from sigs.k8s.io/gateway-api/conformance/echo-basic.
	EchoBinary string
	// DNSBinary answers DNS queries in place of coredns.
	DNSBinary string
	// Dir holds pod volumes.
	Dir string
	// Logf reports what the node does.
	Logf func(format string, args ...any)
}

// Node runs the pods bound to it.
type Node struct {
	opts Options
	cs   kubernetes.Interface

	mu     sync.Mutex
	pods   map[types.UID]*pod
	nextID int
}

type pod struct {
	ns, name string
	id       int
	ip       string
	box      *sandbox
	cmd      *exec.Cmd
	logs     *logBuffer
	done     chan struct{}
}

// New returns a Node that talks to the API server through cs.
func New(cs kubernetes.Interface, opts Options) *Node {
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	return &Node{opts: opts, cs: cs, pods: map[types.UID]*pod{}}
}

// Run registers the node and runs pods until ctx ends; then it stops every pod process and removes
// their network namespaces.
func (n *Node) Run(ctx context.Context) error {
	removeStaleSandboxes()
	lis, err := net.Listen("tcp", net.JoinHostPort(n.opts.IP, "0"))
	if err != nil {
		return fmt.Errorf("kubelet endpoint: %w", err)
	}
	go func() { _ = n.serveLogs(lis) }()
	defer lis.Close()
	defer n.stopAll()
	if err := n.register(ctx, lis.Addr().(*net.TCPAddr).Port); err != nil {
		return err
	}
	tick := time.NewTicker(300 * time.Millisecond)
	defer tick.Stop()
	for {
		if err := n.sync(ctx); err != nil && ctx.Err() == nil {
			n.opts.Logf("node sync: %v", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

func (n *Node) register(ctx context.Context, port int) error {
	now := metav1.Now()
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.opts.Name, Labels: map[string]string{corev1.LabelHostname: n.opts.Name}},
	}
	created, err := n.cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("registering node: %w", err)
	}
	created.Status = corev1.NodeStatus{
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			LastHeartbeatTime: now, LastTransitionTime: now}},
		Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: n.opts.IP}},
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: int32(port)}},
		Capacity:        corev1.ResourceList{},
	}
	if _, err := n.cs.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("node status: %w", err)
	}
	return nil
}

// sync is one level-based pass over every pod: bind, start, report, finish.
func (n *Node) sync(ctx context.Context) error {
	list, err := n.cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing pods: %w", err)
	}
	seen := map[types.UID]bool{}
	var errs []error
	for i := range list.Items {
		p := &list.Items[i]
		seen[p.UID] = true
		if err := n.syncPod(ctx, p); err != nil {
			errs = append(errs, fmt.Errorf("pod %s/%s: %w", p.Namespace, p.Name, err))
		}
	}
	n.mu.Lock()
	var gone []*pod
	for uid, p := range n.pods {
		if !seen[uid] {
			gone = append(gone, p)
			delete(n.pods, uid)
		}
	}
	n.mu.Unlock()
	for _, p := range gone {
		p.stop()
	}
	return errors.Join(errs...)
}

func (n *Node) syncPod(ctx context.Context, p *corev1.Pod) error {
	n.mu.Lock()
	run := n.pods[p.UID]
	n.mu.Unlock()
	switch {
	case p.DeletionTimestamp != nil:
		if run != nil {
			run.stop()
			n.mu.Lock()
			delete(n.pods, p.UID)
			n.mu.Unlock()
		}
		err := n.cs.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{
			GracePeriodSeconds: ptr.To[int64](0), Preconditions: &metav1.Preconditions{UID: &p.UID}})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil
		}
		return err
	case p.Spec.NodeName == "":
		err := n.cs.CoreV1().Pods(p.Namespace).Bind(ctx, &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name, UID: p.UID},
			Target:     corev1.ObjectReference{Kind: "Node", Name: n.opts.Name},
		}, metav1.CreateOptions{})
		if apierrors.IsConflict(err) {
			return nil
		}
		return err
	case p.Spec.NodeName != n.opts.Name || p.Status.Phase == corev1.PodFailed:
		return nil
	case run == nil:
		if err := runnable(p); err != nil {
			return n.fail(ctx, p, err)
		}
		// Errors here (a Secret not there yet) leave the pod pending and are retried, as a kubelet would.
		run, err := n.start(ctx, p)
		if err != nil {
			return err
		}
		return n.reportRunning(ctx, p, run)
	case run.exited():
		// restartPolicy Always: the next pass starts the container again.
		n.opts.Logf("node: pod %s/%s exited; restarting", p.Namespace, p.Name)
		run.stop()
		n.mu.Lock()
		delete(n.pods, p.UID)
		n.mu.Unlock()
	}
	return nil
}

// runnable rejects pods this node can never run.
func runnable(p *corev1.Pod) error {
	if len(p.Spec.Containers) != 1 {
		return fmt.Errorf("%d containers; this node runs exactly one", len(p.Spec.Containers))
	}
	if img := p.Spec.Containers[0].Image; !strings.Contains(img, "/echo-basic") && !strings.Contains(img, "/coredns") {
		return fmt.Errorf("image %s: only echo-basic and coredns run here", img)
	}
	return nil
}

// start runs the pod's single container in a new sandbox and waits briefly until it listens.
func (n *Node) start(ctx context.Context, p *corev1.Pod) (*pod, error) {
	c := p.Spec.Containers[0]
	binary := n.opts.EchoBinary
	if strings.Contains(c.Image, "/coredns") {
		binary = n.opts.DNSBinary
	}
	mounts, err := n.writeVolumes(ctx, p, c, filepath.Join(n.opts.Dir, string(p.UID)))
	if err != nil {
		return nil, err
	}
	n.mu.Lock()
	n.nextID++
	id := n.nextID
	n.mu.Unlock()
	ip := podIP(n.opts.PodNet, id)
	env := []string{"PATH=" + os.Getenv("PATH")}
	for _, e := range c.Env {
		v := e.Value
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			v = fieldValue(p, ip, e.ValueFrom.FieldRef.FieldPath)
		}
		env = append(env, e.Name+"="+rewritePath(v, mounts))
	}
	box, err := newSandbox(id, ip, n.opts.IP)
	if err != nil {
		return nil, err
	}
	run := &pod{ns: p.Namespace, name: p.Name, id: id, ip: ip, box: box, logs: &logBuffer{}, done: make(chan struct{})}
	run.cmd = box.command(binary)
	run.cmd.Env = env
	run.cmd.Stdout, run.cmd.Stderr = run.logs, run.logs
	// Pod processes must not outlive the test that started them.
	run.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := run.cmd.Start(); err != nil {
		box.remove()
		return nil, fmt.Errorf("starting %s: %w", binary, err)
	}
	go func() {
		_ = run.cmd.Wait()
		close(run.done)
	}()
	n.mu.Lock()
	n.pods[p.UID] = run
	n.mu.Unlock()
	run.waitListening(c)
	n.opts.Logf("node: pod %s/%s running at %s", p.Namespace, p.Name, ip)
	return run, nil
}

// waitListening gives the process up to five seconds to accept TCP on its HTTP port; UDP-only pods
// get a short pause instead.
func (p *pod) waitListening(c corev1.Container) {
	port := "3000"
	for _, e := range c.Env {
		switch e.Name {
		case "UDP_ECHO_SERVER":
			port = ""
		case "HTTP_PORT", "TCP_PORT":
			port = e.Value
		}
	}
	if strings.Contains(c.Image, "/coredns") {
		port = ""
	}
	for range 50 {
		if p.exited() {
			return
		}
		if port == "" {
			time.Sleep(200 * time.Millisecond)
			return
		}
		conn, err := net.DialTimeout("tcp", net.JoinHostPort(p.ip, port), 100*time.Millisecond)
		if err == nil {
			conn.Close()
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func fieldValue(p *corev1.Pod, ip, path string) string {
	switch path {
	case "metadata.name":
		return p.Name
	case "metadata.namespace":
		return p.Namespace
	case "metadata.uid":
		return string(p.UID)
	case "spec.nodeName":
		return p.Spec.NodeName
	case "spec.serviceAccountName":
		return p.Spec.ServiceAccountName
	case "status.podIP":
		return ip
	}
	return ""
}

// writeVolumes writes the Secret and ConfigMap volumes the container mounts under dir and returns
// mountPath → directory. Processes share the host's file system, so paths in the container's env
// that point into a mount are rewritten to the directory.
func (n *Node) writeVolumes(ctx context.Context, p *corev1.Pod, c corev1.Container, dir string) (map[string]string, error) {
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		var vol *corev1.Volume
		for i := range p.Spec.Volumes {
			if p.Spec.Volumes[i].Name == m.Name {
				vol = &p.Spec.Volumes[i]
			}
		}
		if vol == nil {
			continue
		}
		var data map[string][]byte
		var items []corev1.KeyToPath
		switch {
		case vol.Secret != nil:
			s, err := n.cs.CoreV1().Secrets(p.Namespace).Get(ctx, vol.Secret.SecretName, metav1.GetOptions{})
			if err != nil {
				return nil, fmt.Errorf("volume %s: %w", m.Name, err)
			}
			data, items = s.Data, vol.Secret.Items
		case vol.ConfigMap != nil:
			cm, err := n.cs.CoreV1().ConfigMaps(p.Namespace).Get(ctx, vol.ConfigMap.Name, metav1.GetOptions{})
			if err != nil {
				return nil, fmt.Errorf("volume %s: %w", m.Name, err)
			}
			data = map[string][]byte{}
			for k, v := range cm.Data {
				data[k] = []byte(v)
			}
			items = vol.ConfigMap.Items
		default:
			continue
		}
		vdir := filepath.Join(dir, m.Name)
		if err := os.MkdirAll(vdir, 0o700); err != nil {
			return nil, err
		}
		if len(items) == 0 {
			for k := range data {
				items = append(items, corev1.KeyToPath{Key: k, Path: k})
			}
		}
		for _, it := range items {
			if err := os.WriteFile(filepath.Join(vdir, it.Path), data[it.Key], 0o600); err != nil {
				return nil, fmt.Errorf("volume %s: %w", m.Name, err)
			}
		}
		mounts[m.MountPath] = vdir
	}
	return mounts, nil
}

func rewritePath(v string, mounts map[string]string) string {
	for mp, dir := range mounts {
		if v == mp || strings.HasPrefix(v, strings.TrimSuffix(mp, "/")+"/") {
			return dir + strings.TrimPrefix(v, mp)
		}
	}
	return v
}

func (n *Node) reportRunning(ctx context.Context, p *corev1.Pod, run *pod) error {
	now := metav1.Now()
	cond := func(t corev1.PodConditionType) corev1.PodCondition {
		return corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: now}
	}
	p.Status = corev1.PodStatus{
		Phase:     corev1.PodRunning,
		HostIP:    n.opts.IP,
		HostIPs:   []corev1.HostIP{{IP: n.opts.IP}},
		PodIP:     run.ip,
		PodIPs:    []corev1.PodIP{{IP: run.ip}},
		StartTime: &now,
		Conditions: []corev1.PodCondition{cond(corev1.PodInitialized), cond(corev1.PodScheduled),
			cond(corev1.ContainersReady), cond(corev1.PodReady)},
		ContainerStatuses: []corev1.ContainerStatus{{
			Name: p.Spec.Containers[0].Name, Image: p.Spec.Containers[0].Image, Ready: true, Started: ptr.To(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
		}},
	}
	_, err := n.cs.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	return err
}

func (n *Node) fail(ctx context.Context, p *corev1.Pod, cause error) error {
	n.opts.Logf("node: pod %s/%s failed: %v", p.Namespace, p.Name, cause)
	p.Status.Phase = corev1.PodFailed
	p.Status.Message = cause.Error()
	p.Status.Conditions = nil
	if _, err := n.cs.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		return errors.Join(cause, err)
	}
	return nil
}

func (n *Node) logsOf(ns, name string) *logBuffer {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, p := range n.pods {
		if p.ns == ns && p.name == name {
			return p.logs
		}
	}
	return nil
}

func (n *Node) stopAll() {
	n.mu.Lock()
	pods := n.pods
	n.pods = map[types.UID]*pod{}
	n.mu.Unlock()
	for _, p := range pods {
		p.stop()
	}
}

func (p *pod) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop kills the process (pods are finished with grace period 0) and removes the sandbox.
func (p *pod) stop() {
	if p.cmd.Process != nil {
		_ = p.cmd.Process.Kill()
	}
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
	}
	p.box.remove()
}

// podIP is the id-th address of prefix (two octets), skipping .0 and .255 in the last octet.
func podIP(prefix string, id int) string {
	return prefix + "." + strconv.Itoa(1+id/250) + "." + strconv.Itoa(1+id%250)
}
