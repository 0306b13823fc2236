package testbed

import (
	"bufio"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
)

func TestMain(m *testing.M) {
	QuietGlobalLogger()
	os.Exit(m.Run())
}

// TestFleetStarts brings up three API servers together and checks that every CRD group fleetgate reads
// is served by each, and that our CRDs' CEL validation is enforced.
func TestFleetStarts(t *testing.T) {
	start := time.Now()
	clusters := ForTest(t, "hub", "member-a", "member-b")
	elapsed := time.Since(start)
	t.Logf("3 API servers with all CRDs up in %s", elapsed.Round(time.Millisecond))
	// The budget; it measures the test bed, not fleetgate's speed.
	if elapsed > 30*time.Second {
		t.Errorf("fleet took %s to start, want < 30s", elapsed)
	}
	want := map[string][]string{
		"gateway.networking.k8s.io/v1":       {"gatewayclasses", "gateways", "httproutes", "grpcroutes"},
		"gateway.networking.k8s.io/v1alpha2": {"tcproutes", "udproutes", "tlsroutes"},
		"gateway.networking.k8s.io/v1beta1":  {"referencegrants"},
		"multicluster.x-k8s.io/v1alpha1":     {"serviceexports", "serviceimports"},
		"externaldns.k8s.io/v1alpha1":        {"dnsendpoints"},
		"fleetgate.dev/v1alpha1":             {"memberclusters", "gatewayclassconfigs"},
	}
	for _, c := range clusters {
		dc, err := discovery.NewDiscoveryClientForConfig(c.Config)
		if err != nil {
			t.Fatal(err)
		}
		for gv, resources := range want {
			list, err := dc.ServerResourcesForGroupVersion(gv)
			if err != nil {
				t.Errorf("%s: %s not served: %v", c.Name, gv, err)
				continue
			}
			served := map[string]bool{}
			for _, r := range list.APIResources {
				served[r.Name] = true
			}
			for _, r := range resources {
				if !served[r] {
					t.Errorf("%s: %s/%s not served", c.Name, gv, r)
				}
			}
		}
		v, err := dc.ServerVersion()
		if err != nil {
			t.Fatal(err)
		}
		if v.GitVersion != "v1.36.3" {
			t.Errorf("%s: server version %q, want v1.36.3 (stamped at build)", c.Name, v.GitVersion)
		}
	}

	hub := clusters[0]
	bad := &v1alpha1.MemberCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "bad-zones"},
		Spec: v1alpha1.MemberClusterSpec{
			KubeconfigSecretRef: v1alpha1.SecretKeyRef{Name: "kc"},
			Region:              "eu-west-1",
			Zones:               []string{"us-east-1a"},
		},
	}
	err := hub.Client.Create(t.Context(), bad)
	if err == nil || !strings.Contains(err.Error(), "every zone must lie in the region") {
		t.Errorf("creating a MemberCluster with a zone outside its region: err = %v, want the CEL rule's message", err)
	}
	good := bad.DeepCopy()
	good.Name = "eu"
	good.Spec.Zones = []string{"eu-west-1a", "eu-west-1b"}
	if err := hub.Client.Create(t.Context(), good); err != nil {
		t.Fatalf("creating a valid MemberCluster: %v", err)
	}
	if good.Spec.Weight != 100 || good.Spec.KubeconfigSecretRef.Key != "kubeconfig" {
		t.Errorf("defaults not applied: weight=%d key=%q", good.Spec.Weight, good.Spec.KubeconfigSecretRef.Key)
	}
}

// envHold makes TestHoldCluster run: it is the helper process of TestServersDieWithTestBinary.
const envHold = "FLEETGATE_TESTBED_HOLD"

// TestServersDieWithTestBinary runs this test binary again as a helper that starts an API server
// and waits, SIGKILLs it, as `go test -timeout` or a CI runner would, and checks that its
// kube-apiserver and etcd are gone with it and no longer listen.
func TestServersDieWithTestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a real API server; skipped in -short mode")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHoldCluster$", "-test.v")
	cmd.Env = append(os.Environ(), envHold+"=1")
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
	var host string
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		if h, ok := strings.CutPrefix(lines.Text(), "HOLDING "); ok {
			host = h
			break
		}
	}
	if host == "" {
		t.Fatalf("the helper ended before its API server served: %v", <-exited)
	}
	go func() {
		for lines.Scan() {
		}
	}()
	tree := Descendants(cmd.Process.Pid)
	for _, want := range []string{"kube-apiserver", "etcd"} {
		if !tree.Has(want) {
			t.Fatalf("the helper runs no %s: %v", want, tree)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited //nolint:errcheck // the error is the kill's own
	// A process whose main thread has ended shows as a zombie while its other threads still
	// exit: its sockets are closed only then, so the port is polled too.
	deadline := time.Now().Add(10 * time.Second)
	for len(tree.Alive()) > 0 || Listening(host) {
		if time.Now().After(deadline) {
			t.Fatalf("10s after the test binary was killed, still running: %v; %s listening: %v", tree.Alive(), host, Listening(host))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestHoldCluster is TestServersDieWithTestBinary's helper: it starts an API server, says where,
// and waits to be killed.
func TestHoldCluster(t *testing.T) {
	if os.Getenv(envHold) == "" {
		t.Skip("the helper process of TestServersDieWithTestBinary")
	}
	c := ForTest(t, "held")[0]
	u, err := url.Parse(c.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("HOLDING %s\n", u.Host)
	<-t.Context().Done() // never: the parent kills this process first
}
