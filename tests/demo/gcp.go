package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"cloud.google.com/go/compute/apiv1/computepb"
	mdns "github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/providers/dns/bindtest"
	"github.com/fleetgate/fleetgate/providers/gcp/gcpfake"
	"github.com/fleetgate/fleetgate/tests/testbed"
)

const demoProject = "demo-project"

// startGCP starts the compute fake in this process with auth on, and gives the operator
// Application Default Credentials: a service account key whose token endpoint is the fake. It
// returns the operator's GCP flags.
func startGCP(dir string) (*gcpfake.Server, []string, error) {
	fake := gcpfake.New()
	fake.RequireAuth()
	key, err := fake.NewServiceAccountKey(demoProject, "operator@"+demoProject+".iam.gserviceaccount.com")
	if err != nil {
		fake.Close()
		return nil, nil, err
	}
	path := filepath.Join(dir, "gcp-adc.json")
	if err := os.WriteFile(path, key, 0o600); err != nil {
		fake.Close()
		return nil, nil, err
	}
	if err := os.Setenv("GOOGLE_APPLICATION_CREDENTIALS", path); err != nil {
		fake.Close()
		return nil, nil, err
	}
	return fake, []string{"--gcp-project", demoProject, "--gcp-endpoint", fake.URL()}, nil
}

// showGCP applies a GCP class whose calls run as the service account of a key Secret and Gateway
// default/gcp with a route to the echo Service, waits for its global address, describes the URL
// map and the NEG from the fake, then `fleetgate plan`, which finds nothing left to do. With BIND9
// installed, the class also publishes its hostnames into a zone of a local named (spec.dns), and
// the demo asks named for the Gateway's name.
func showGCP(ctx context.Context, c client.Client, fake *gcpfake.Server, operator, kubeconfig, dir string) error {
	step("GCP on the compute fake (%s): a service account key in Secret fleetgate-system/gcp-key", fake.URL())
	key, err := fake.NewServiceAccountKey(demoProject, "lb@"+demoProject+".iam.gserviceaccount.com")
	if err != nil {
		return err
	}
	if err := ensureNamespace(ctx, c, "fleetgate-system"); err != nil {
		return err
	}
	zone, stop, err := startZone(ctx, c, dir)
	if err != nil {
		return err
	}
	defer stop()
	step("applying GatewayClassConfig gcp (provider gcp, global, credentials from the Secret%s), GatewayClass gcp", map[bool]string{true: ", spec.dns into the zone", false: ""}[zone != nil])
	objs := []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "fleetgate-system", Name: "gcp-key"}, Data: map[string][]byte{"key.json": key}},
		&v1alpha1.GatewayClassConfig{ObjectMeta: metav1.ObjectMeta{Name: "gcp"}, Spec: v1alpha1.GatewayClassConfigSpec{Provider: v1alpha1.ProviderGCP,
			GCP: &v1alpha1.GCPOptions{LoadBalancerType: v1alpha1.GCPGlobal,
				Credentials: &v1alpha1.GCPCredentials{SecretRef: &v1alpha1.ObjectRef{Namespace: "fleetgate-system", Name: "gcp-key"}}}}},
		&gwv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "gcp"}, Spec: gwv1.GatewayClassSpec{ControllerName: v1alpha1.ControllerName,
			ParametersRef: &gwv1.ParametersReference{Group: v1alpha1.Group, Kind: "GatewayClassConfig", Name: "gcp"}}},
	}
	if zone != nil {
		objs[1].(*v1alpha1.GatewayClassConfig).Spec.DNS = &v1alpha1.DNSOptions{Provider: v1alpha1.DNSProviderRFC2136, Zones: []string{zone.Zone},
			RFC2136: &v1alpha1.DNSRFC2136{Host: zone.Host, Port: int32(zone.Port), Zone: zone.Zone, TSIGKeyName: bindtest.KeyName,
				TSIGSecretRef: v1alpha1.ObjectRef{Namespace: "fleetgate-system", Name: "tsig"}}}
	}
	if err := testbed.CreateAll(ctx, c, objs...); err != nil {
		return err
	}
	step("applying Gateway default/gcp (HTTP :80) and HTTPRoute default/gcp (gcp.example.com → Service echo)")
	if err := testbed.CreateAll(ctx, c, testbed.HTTPGateway("default", "gcp", "gcp", "gcp.example.com", "echo")...); err != nil {
		return err
	}
	start := time.Now()
	ip, err := waitGateway(ctx, c, "gcp")
	if err != nil {
		return err
	}
	fmt.Printf("    Gateway default/gcp Programmed=True, status.addresses[0] = %s (IPAddress) after %s\n", ip, time.Since(start).Round(time.Millisecond))
	// The route may attach after the Gateway is first programmed: wait for its backend's NEG.
	for deadline := time.Now().Add(20 * time.Second); fake.Count("networkEndpointGroups") == 0; {
		if time.Now().After(deadline) {
			return fmt.Errorf("no NEG for the route's backend in the fake after 20s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	fmt.Printf("    the route's backend reached the load balancer after %s\n", time.Since(start).Round(time.Millisecond))
	step("what the fake holds for it")
	for _, coll := range []string{"addresses", "firewalls", "forwardingRules", "targetHttpProxies", "urlMaps", "backendServices", "healthChecks", "networkEndpointGroups"} {
		fmt.Printf("    %-22s %d\n", coll, fake.Count(coll))
	}
	for _, k := range fake.Keys("urlMaps") {
		um, _ := gcpfake.Get[*computepb.UrlMap](fake, k)
		for _, pm := range um.GetPathMatchers() {
			for _, r := range pm.GetRouteRules() {
				fmt.Printf("    URL map rule priority %d: %s → %d backend service(s)\n", r.GetPriority(), matchText(r), len(r.GetRouteAction().GetWeightedBackendServices()))
			}
		}
	}
	for _, k := range fake.Keys("networkEndpointGroups") {
		for _, ep := range fake.Endpoints(k) {
			fmt.Printf("    NEG %s: %s:%d on VM %s\n", k[strings.LastIndex(k, "/")+1:], ep.GetIpAddress(), ep.GetPort(), ep.GetInstance())
		}
	}
	if zone != nil {
		if err := resolve(ctx, zone, "gcp.example.com", start); err != nil {
			return err
		}
	}
	args := []string{"plan", "--kubeconfig", kubeconfig, "--gateway", "default/gcp", "--gcp-project", demoProject, "--gcp-endpoint", fake.URL()}
	step("%s %s  (what the operator would still call: nothing)", operator, strings.Join(args, " "))
	out, err := exec.CommandContext(ctx, operator, args...).CombinedOutput()
	fmt.Printf("    %s\n", strings.ReplaceAll(strings.TrimSuffix(string(out), "\n"), "\n", "\n    "))
	if err != nil {
		return fmt.Errorf("fleetgate plan: %w", err)
	}
	return nil
}

func matchText(r *computepb.HttpRouteRule) string {
	var parts []string
	for _, m := range r.GetMatchRules() {
		switch {
		case m.GetFullPathMatch() != "":
			parts = append(parts, "path = "+m.GetFullPathMatch())
		case m.GetPrefixMatch() != "":
			parts = append(parts, "path prefix "+m.GetPrefixMatch())
		case m.GetRegexMatch() != "":
			parts = append(parts, "path ~ "+m.GetRegexMatch())
		}
	}
	return strings.Join(parts, " or ")
}

func ensureNamespace(ctx context.Context, c client.Client, name string) error {
	err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if client.IgnoreAlreadyExists(err) != nil {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return nil
}

func waitGateway(ctx context.Context, c client.Client, name string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 40*time.Second)
	defer cancel()
	for {
		var gw gwv1.Gateway
		if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, &gw); err == nil {
			if meta.IsStatusConditionTrue(gw.Status.Conditions, string(gwv1.GatewayConditionProgrammed)) && len(gw.Status.Addresses) > 0 {
				return gw.Status.Addresses[0].Value, nil
			}
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("the Gateway default/%s was not Programmed: %w", name, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// startZone starts named with zone example.com on a free loopback port and puts its TSIG secret in
// Secret fleetgate-system/tsig; without BIND9 it says so and returns a nil server.
func startZone(ctx context.Context, c client.Client, dir string) (*bindtest.Server, func(), error) {
	bin, err := bindtest.Find()
	if err != nil {
		step("skipping the DNS part: BIND9 (named) is not installed (`make bind9` installs it)")
		return nil, func() {}, nil
	}
	zoneDir := filepath.Join(dir, "named")
	if err := os.MkdirAll(zoneDir, 0o700); err != nil {
		return nil, nil, err
	}
	z, err := bindtest.Start(bin, zoneDir, "example.com")
	if err != nil {
		return nil, nil, err
	}
	step("BIND9 serves zone example.com on %s (TSIG key in Secret fleetgate-system/tsig)", z.Addr)
	if err := testbed.CreateAll(ctx, c, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "fleetgate-system", Name: "tsig"},
		Data: map[string][]byte{"secret": []byte(z.Secret)}}); err != nil {
		z.Stop()
		return nil, nil, err
	}
	return z, z.Stop, nil
}

// resolve asks the zone's server for name until it answers with an A record.
func resolve(ctx context.Context, z *bindtest.Server, name string, since time.Time) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for {
		if rrs, err := z.Query(name, mdns.TypeA); err == nil && len(rrs) > 0 {
			step("dig @%s -p %d %s A", z.Host, z.Port, name)
			for _, rr := range rrs {
				fmt.Printf("    %s\n", rr)
			}
			fmt.Printf("    (published through the embedded RFC 2136 publisher %s after the Gateway was applied)\n", time.Since(since).Round(time.Millisecond))
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s did not resolve in the zone: %w", name, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
