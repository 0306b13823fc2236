package testbed

import (
	"os"
	"strings"
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
