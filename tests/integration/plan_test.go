package integration

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/providers"
	"github.com/fleetgate/fleetgate/providers/aws/mototest"
	"github.com/fleetgate/fleetgate/providers/gcp/gcpfake"
	"github.com/fleetgate/fleetgate/tests/testbed"
)

// TestPlanCommand runs the built `fleetgate plan` against a real API server holding a Gateway of an
// ALB class on moto (through the fault shim, which counts calls): it lists the creates of the
// whole stack, and moto holds no load balancer and has received no mutating call afterwards.
// --gateway selects one Gateway; an unknown one is an error. A Gateway of an NLB class with an HTTP
// listener is planned with the proxies' ready addresses from the EndpointSlices of their Service
// (written by hand here, as the EndpointSlice controller would). Once the operator binary has
// deployed the Gateways, plan finds the ALBs in sync: its translation and fleet are the operator's;
// the NLB's proxies are then the local-mode operator's processes, which plan says it cannot see.
func TestPlanCommand(t *testing.T) {
	c := testbed.ForTest(t, "plan")[0]
	moto := planMoto(t)
	shim := mototest.NewFaults(moto.URL)
	t.Cleanup(shim.Close)
	ctx := t.Context()
	vpc, err := testbed.MotoVPC(ctx, moto.URL)
	must(t, err)
	objs := testbed.AWSClass("aws-alb", shim.URL(), vpc)
	objs = append(objs, testbed.Published("default", "web", "10.0.1.10", 8080)...)
	objs = append(objs, testbed.HTTPGateway("default", "web", "aws-alb", "web.example.com", "web")...)
	objs = append(objs, testbed.HTTPGateway("default", "api", "aws-alb", "api.example.com", "web")...)
	// An NLB class: its Gateway's HTTP listener goes through the proxies, found by the
	// EndpointSlices of their Service as the operator in a cluster finds them.
	nlbClass := testbed.AWSClass("aws-nlb", shim.URL(), vpc)[1:] // the namespace is made above
	nlbClass[1].(*v1alpha1.GatewayClassConfig).Spec.AWS.LoadBalancerType = v1alpha1.AWSNetwork
	objs = append(objs, nlbClass...)
	objs = append(objs, testbed.HTTPGateway("default", "shop", "aws-nlb", "shop.example.com", "web")...)
	proxies := inClusterProxies("default", "shop", map[string]bool{"10.0.1.50": true, "10.0.2.50": true, "10.0.1.51": false})
	objs = append(objs, proxies...)
	objs = append(objs, proxySlice("default", "shop", "tenant-1", "someone-else", "10.9.9.9"))
	// A GCP class on the compute fake, which takes only the tokens of the key in its Secret.
	fake := gcpfake.NewServer(t)
	fake.RequireAuth()
	key, err := fake.NewServiceAccountKey("plan-project", "plan@plan-project.iam.gserviceaccount.com")
	must(t, err)
	objs = append(objs, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "fleetgate-system", Name: "gcp-key"}, Data: map[string][]byte{"key.json": key}},
		&v1alpha1.GatewayClassConfig{ObjectMeta: metav1.ObjectMeta{Name: "gcp"}, Spec: v1alpha1.GatewayClassConfigSpec{Provider: v1alpha1.ProviderGCP,
			GCP: &v1alpha1.GCPOptions{Project: "plan-project", Endpoint: fake.URL(),
				Credentials: &v1alpha1.GCPCredentials{SecretRef: &v1alpha1.ObjectRef{Namespace: "fleetgate-system", Name: "gcp-key"}}}}},
		&gwv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "gcp"}, Spec: gwv1.GatewayClassSpec{ControllerName: v1alpha1.ControllerName,
			ParametersRef: &gwv1.ParametersReference{Group: v1alpha1.Group, Kind: "GatewayClassConfig", Name: "gcp"}}})
	objs = append(objs, testbed.HTTPGateway("default", "edge", "gcp", "edge.example.com", "web")...)
	must(t, testbed.CreateAll(ctx, c.Client, objs...))
	bin, err := testbed.BuildOperator(t.TempDir())
	must(t, err)

	plan := func(t *testing.T, args ...string) (string, error) {
		t.Helper()
		args = append([]string{"plan", "--kubeconfig", c.KubeconfigPath, "--fleet-id", "plan-test"}, args...)
		cmd := exec.CommandContext(ctx, bin, args...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		t.Logf("fleetgate %s:\n%s%s", strings.Join(args, " "), out, stderr.String())
		return string(out), err
	}

	tests := []struct {
		name     string
		args     []string
		want     []string // substrings of stdout
		wantNot  []string
		wantFail bool
	}{
		{name: "every gateway", want: []string{"hub/default/web (class aws-alb):", "hub/default/api (class aws-alb):", "hub/default/shop (class aws-nlb):",
			"CreateSecurityGroup", "CreateTargetGroup", "CreateLoadBalancer", "CreateListener", "CreateRule", "RegisterTargets"}},
		{name: "one gateway", args: []string{"--gateway", "default/api"},
			want: []string{"hub/default/api (class aws-alb):", "CreateLoadBalancer"}, wantNot: []string{"hub/default/web"}},
		// Only the ready endpoints of the EndpointSlice controller's slices are the proxies.
		{name: "NLB through the proxies", args: []string{"--gateway", "default/shop"},
			want: []string{"hub/default/shop (class aws-nlb):", "CreateLoadBalancer", "CreateListener listener/80: TCP:80",
				"RegisterTargets", "10.0.1.50:80,10.0.2.50:80"},
			wantNot: []string{"no plan", "10.0.1.51", "10.9.9.9", "HTTP:80", "hub/default/web"}},
		{name: "GCP gateway", args: []string{"--gateway", "default/edge"},
			want:    []string{"hub/default/edge (class gcp):", "insert address global/", "insert urlMap global/", "insert forwardingRule global/"},
			wantNot: []string{"hub/default/web"}},
		{name: "unknown gateway", args: []string{"--gateway", "default/none"}, wantFail: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := plan(t, tt.args...)
			if (err != nil) != tt.wantFail {
				t.Fatalf("fleetgate plan: %v (want failure %v)", err, tt.wantFail)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("stdout has no %q:\n%s", w, out)
				}
			}
			for _, w := range tt.wantNot {
				if strings.Contains(out, w) {
					t.Errorf("stdout has %q:\n%s", w, out)
				}
			}
		})
	}

	if m := fake.Mutations(); len(m) != 0 || len(fake.Calls()) == 0 {
		t.Errorf("the GCP plan made mutating calls %v (of %d)", m, len(fake.Calls()))
	}
	if mutating, reads := shim.Counts(); mutating != 0 || reads == 0 {
		t.Errorf("the plans made %d mutating and %d read calls, want 0 mutating and some reads", mutating, reads)
	}
	cfg, err := mototest.Config(ctx, moto.URL)
	must(t, err)
	lbs, err := elbv2.NewFromConfig(cfg).DescribeLoadBalancers(ctx, &elbv2.DescribeLoadBalancersInput{})
	must(t, err)
	if len(lbs.LoadBalancers) != 0 {
		t.Errorf("moto holds %d load balancers after the plans, want 0", len(lbs.LoadBalancers))
	}

	// Once the operator (same fleet) has deployed them, plan agrees with it: nothing to do. The
	// operator runs in local mode, where the proxies are its own processes: it makes their
	// Service itself, and plan cannot know their addresses.
	must(t, errors.Join(c.Client.Delete(ctx, proxies[0]), c.Client.Delete(ctx, proxies[1])))
	t.Setenv("AWS_ACCESS_KEY_ID", "testing") // the operator's own account, swept too, is moto
	t.Setenv("AWS_SECRET_ACCESS_KEY", "testing")
	op, err := testbed.StartOperator(bin, c, t.TempDir(), "--fleet-id", "plan-test", "--aws-region", mototest.Region, "--aws-endpoint", moto.URL)
	must(t, err)
	t.Cleanup(func() {
		if err := op.Stop(); err != nil {
			t.Error(err)
		}
	})
	for _, name := range []string{"web", "api", "shop", "edge"} {
		testbed.Eventually(t, 60*time.Second, func() error {
			var gw gwv1.Gateway
			if err := c.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, &gw); err != nil {
				return err
			}
			if !meta.IsStatusConditionTrue(gw.Status.Conditions, string(gwv1.GatewayConditionProgrammed)) {
				return fmt.Errorf("Gateway default/%s is not Programmed: %v", name, gw.Status.Conditions)
			}
			return nil
		})
	}
	out, err := plan(t)
	if err == nil {
		t.Error("fleetgate plan succeeded although it could not plan the local proxies' gateway")
	}
	for _, want := range []string{"hub/default/api (class aws-alb): in sync\n", "hub/default/web (class aws-alb): in sync\n",
		"hub/default/edge (class gcp): in sync\n",
		"hub/default/shop (class aws-nlb): no plan: ", "cannot be known outside the operator"} {
		if !strings.Contains(out, want) {
			t.Errorf("after the operator deployed, stdout has no %q:\n%s", want, out)
		}
	}
}

// planMoto starts a moto server for the test; without moto_server the test skips, except in CI.
func planMoto(t *testing.T) *mototest.Server {
	t.Helper()
	s, err := mototest.Start()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skipf("%v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

// inClusterProxies are the proxy Service of Gateway namespace/name as the in-cluster provider
// makes it, and the EndpointSlice the EndpointSlice controller would keep for its pods, at ips
// (address → ready).
func inClusterProxies(namespace, name string, ips map[string]bool) []client.Object {
	svc := providers.ResourceName(&providers.LoadBalancer{Gateway: "hub/" + namespace + "/" + name, Namespace: namespace, Name: name})
	slice := proxySlice(namespace, name, svc+"-1", "endpointslice-controller.k8s.io")
	for _, ip := range slices.Sorted(maps.Keys(ips)) {
		slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ips[ip])}})
	}
	return []client.Object{
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: svc},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Selector: map[string]string{"app": svc},
				Ports: []corev1.ServicePort{{Name: "tcp-80", Port: 80}}}},
		slice,
	}
}

// proxySlice is an EndpointSlice named sliceName for the proxy Service of Gateway namespace/name,
// managed by managedBy, with ready endpoints at ips.
func proxySlice(namespace, name, sliceName, managedBy string, ips ...string) *discoveryv1.EndpointSlice {
	svc := providers.ResourceName(&providers.LoadBalancer{Gateway: "hub/" + namespace + "/" + name, Namespace: namespace, Name: name})
	s := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: sliceName,
		Labels: map[string]string{discoveryv1.LabelServiceName: svc, discoveryv1.LabelManagedBy: managedBy}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("tcp-80"), Port: ptr.To[int32](80)}}}
	for _, ip := range ips {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}})
	}
	return s
}
