package gcp

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/compute/apiv1/computepb"
	gocmp "github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/api/option"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/dataplane/ir"
	"github.com/fleetgate/fleetgate/providers"
	"github.com/fleetgate/fleetgate/providers/gcp/gcpfake"
)

// testRetries retry like the operator, without the waits.
var testRetries = Retries{MaxAttempts: 5, Initial: time.Millisecond, Max: time.Millisecond, Timeout: 10 * time.Second, Operation: 10 * time.Second}

// allCollections are the fake's collections of every kind the provider makes.
var allCollections = []string{"addresses", "firewalls", "healthChecks", "networkEndpointGroups", "backendServices",
	"sslCertificates", "urlMaps", "targetHttpProxies", "targetHttpsProxies", "forwardingRules"}

// testProvider is a provider talking to a fresh fake, with members' placement from members.
func testProvider(t *testing.T, members map[string]Member) (*Provider, *gcpfake.Server) {
	t.Helper()
	fake := gcpfake.NewServer(t)
	p, err := New(Options{
		Fleet:         testFleet,
		Defaults:      v1alpha1.GCPOptions{Project: "my-project", Region: "europe-west1"},
		ClientOptions: fake.NoAuth(),
		Retries:       testRetries,
		Members: func(context.Context) (map[string]v1alpha1.MemberClusterSpec, error) {
			out := map[string]v1alpha1.MemberClusterSpec{}
			for name, m := range members {
				out[name] = v1alpha1.MemberClusterSpec{Zones: m.Zones, Provider: v1alpha1.ProviderHints{Network: m.Network, NetworkTags: m.NetworkTags}}
			}
			return out, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p, fake
}

// goldenModel reads testdata/<name>.in.yaml as a model for Ensure.
func goldenModel(t *testing.T, name string) (*providers.LoadBalancer, map[string]Member) {
	t.Helper()
	raw, err := os.ReadFile("testdata/" + name + ".in.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var gi goldenInput
	if err := yaml.UnmarshalStrict(raw, &gi); err != nil {
		t.Fatal(err)
	}
	gi.Routing.Gateway = gi.Gateway
	params, err := json.Marshal(gi.GCP)
	if err != nil {
		t.Fatal(err)
	}
	ns, n := providers.SplitKey(gi.Gateway)
	return &providers.LoadBalancer{Gateway: gi.Gateway, Namespace: ns, Name: n, Provider: "gcp", Clusters: gi.Clusters,
		Addresses: gi.Addresses, Labels: gi.Labels, Parameters: params, Routing: &gi.Routing}, gi.Members
}

func counts(fake *gcpfake.Server) map[string]int {
	out := map[string]int{}
	for _, c := range allCollections {
		if n := fake.Count(c); n > 0 {
			out[c] = n
		}
	}
	return out
}

func mutations(fake *gcpfake.Server) []string {
	var out []string
	for _, c := range fake.Mutations() {
		path := c.Path[strings.LastIndex(c.Path, "/projects/")+len("/projects/"):]
		out = append(out, c.Method+" "+path)
	}
	return out
}

func ensure(t *testing.T, p *Provider, lb *providers.LoadBalancer) providers.Status {
	t.Helper()
	st, err := p.Ensure(context.Background(), lb)
	if err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	return st
}

// TestEnsureGlobalLifecycle creates a global load balancer with every URL map feature, changes
// it piece by piece (each change costs only its own calls), and deletes it (nothing is left).
func TestEnsureGlobalLifecycle(t *testing.T) {
	lb, members := goldenModel(t, "global-http")
	p, fake := testProvider(t, members)
	want, err := Build(lb, mustDecode(t, lb.Parameters), Env{Members: members}, testFleet)
	if err != nil {
		t.Fatal(err)
	}

	st := ensure(t, p, lb)
	if !st.Ready || st.Reason != providers.ReasonProgrammed || !st.Direct || len(st.Addresses) != 1 {
		t.Fatalf("status = %+v, want ready and programmed on one address", st)
	}
	if ip := netip.MustParseAddr(st.Addresses[0].Value); !netip.MustParsePrefix("203.0.113.0/24").Contains(ip) {
		t.Errorf("address %s is not from the fake's global range", ip)
	}
	if !strings.Contains(st.Message, "left out") {
		t.Errorf("status message %q does not carry the Stack's notes", st.Message)
	}
	if diff := gocmp.Diff(map[string]int{"addresses": 1, "firewalls": 2, "healthChecks": 2, "networkEndpointGroups": 5, "backendServices": 6,
		"urlMaps": 1, "targetHttpProxies": 1, "forwardingRules": 1}, counts(fake)); diff != "" {
		t.Errorf("resources (-want +got):\n%s", diff)
	}
	// The URL map in the fake is the built one, with the ownership record.
	um, ok := gcpfake.Get[*computepb.UrlMap](fake, "projects/my-project/global/urlMaps/"+resourceOf(t, want, KindURLMap).Name)
	if !ok {
		t.Fatal("the URL map is not in the fake")
	}
	if o, ok := parseOwner(um.GetDescription()); !ok || o.Gateway != lb.Gateway || o.Fleet != testFleet || o.Resource != "urlmap/80" {
		t.Errorf("URL map ownership record %q", um.GetDescription())
	}
	if got, wantRules := len(um.GetPathMatchers()[1].GetRouteRules()), 4; got != wantRules {
		t.Errorf("foo.example.com has %d route rules, want %d", got, wantRules)
	}
	neg := resourceOf(t, want, KindNEG)
	if eps := fake.Endpoints("projects/my-project/" + neg.Scope.String() + "/networkEndpointGroups/" + neg.Name); len(eps) != len(neg.Endpoints) || eps[0].GetInstance() == "" {
		t.Errorf("NEG %s endpoints = %v, want %v", neg.ID, eps, neg.Endpoints)
	}

	// Steady state: nothing to do.
	fake.ResetCalls()
	ensure(t, p, lb)
	if m := mutations(fake); len(m) != 0 {
		t.Errorf("steady state made %d mutating calls: %v", len(m), m)
	}

	// A weight changes: the URL map alone is updated.
	fake.ResetCalls()
	lb.Routing.Listeners[0].VirtualHosts[1].Routes[0].Backends[0].Weight = 5
	ensure(t, p, lb)
	if diff := gocmp.Diff([]string{"PUT my-project/global/urlMaps/" + resourceOf(t, want, KindURLMap).Name}, mutations(fake)); diff != "" {
		t.Errorf("weight change calls (-want +got):\n%s", diff)
	}

	// An endpoint is added: one attach.
	fake.ResetCalls()
	web := &lb.Routing.Listeners[0].VirtualHosts[0].Routes[1].Backends[0]
	web.Endpoints = append(web.Endpoints, ir.Endpoint{Address: "10.0.0.3", Port: 8080, Cluster: "hub", Node: "node-c"})
	ensure(t, p, lb)
	if m := mutations(fake); len(m) != 1 || !strings.HasSuffix(m[0], "/attachNetworkEndpoints") {
		t.Errorf("new endpoint calls = %v, want one attach", m)
	}
	// And removed again: one detach.
	fake.ResetCalls()
	web.Endpoints = web.Endpoints[:2]
	ensure(t, p, lb)
	if m := mutations(fake); len(m) != 1 || !strings.HasSuffix(m[0], "/detachNetworkEndpoints") {
		t.Errorf("removed endpoint calls = %v, want one detach", m)
	}

	// Labels change: setLabels on the address and the forwarding rule, nothing else.
	fake.ResetCalls()
	lb.Labels = map[string]string{"app": "store"}
	ensure(t, p, lb)
	if m := mutations(fake); len(m) != 2 || !strings.HasSuffix(m[0], "/setLabels") || !strings.HasSuffix(m[1], "/setLabels") {
		t.Errorf("label change calls = %v, want two setLabels", m)
	}

	// A member joins: the anchors' labels are rewritten, nothing is replaced.
	fake.ResetCalls()
	lb.Clusters = []string{"east", "hub", "west"}
	ensure(t, p, lb)
	if m := mutations(fake); len(m) != 2 || slices.ContainsFunc(m, func(c string) bool { return !strings.HasSuffix(c, "/setLabels") }) {
		t.Errorf("a member joining made %v, want setLabels on the address and the forwarding rule", m)
	}
	// One member lets go: the others still hold the load balancer.
	fake.ResetCalls()
	if err := p.Delete(context.Background(), &providers.LoadBalancer{Gateway: lb.Gateway, Parameters: lb.Parameters, Clusters: []string{"west"}}); err != nil {
		t.Fatal(err)
	}
	if m := mutations(fake); len(m) != 0 {
		t.Errorf("deleting for one of three members made %v", m)
	}

	// Delete leaves nothing.
	if err := p.Delete(context.Background(), lb); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if c := counts(fake); len(c) != 0 {
		t.Errorf("after Delete: %v", c)
	}
	// Deleting again is fine.
	if err := p.Delete(context.Background(), lb); err != nil {
		t.Fatalf("second Delete: %v", err)
	}
}

// TestEnsureCertificateRotation: a new certificate is created, the proxy moved to it, and the
// old one deleted; HTTP redirects to HTTPS without a backend.
func TestEnsureCertificateRotation(t *testing.T) {
	lb, members := goldenModel(t, "global-https")
	p, fake := testProvider(t, members)
	st := ensure(t, p, lb)
	if !st.Ready {
		t.Fatalf("status %+v", st)
	}
	if n := fake.Count("sslCertificates"); n != 2 {
		t.Fatalf("%d certificates, want 2", n)
	}
	old := fake.Keys("sslCertificates")
	fake.ResetCalls()
	c := &lb.Routing.Listeners[1].Certificates[1]
	c.CertPEM, c.KeyPEM = selfSigned(t, "b.example.com")
	ensure(t, p, lb)
	verbs := mutations(fake)
	if len(verbs) != 3 || !strings.HasPrefix(verbs[0], "POST my-project/global/sslCertificates") ||
		!strings.HasSuffix(verbs[1], "/setSslCertificates") || !strings.HasPrefix(verbs[2], "DELETE my-project/global/sslCertificates/") {
		t.Errorf("rotation calls = %v, want insert, setSslCertificates, delete", verbs)
	}
	now := fake.Keys("sslCertificates")
	if len(now) != 2 || slices.Equal(now, old) {
		t.Errorf("certificates after rotation %v (before %v)", now, old)
	}
}

// TestEnsureRegionalAndNetwork: a regional load balancer on a reserved address and a passthrough
// network load balancer live in their region; deleting them leaves the reserved address alone.
func TestEnsureRegionalAndNetwork(t *testing.T) {
	for _, name := range []string{"regional-named-address", "network"} {
		t.Run(name, func(t *testing.T) {
			lb, members := goldenModel(t, name)
			p, fake := testProvider(t, members)
			o := mustDecode(t, lb.Parameters)
			ctx := context.Background()
			if name == "regional-named-address" {
				// The user's reserved address.
				insertAddress(t, fake, o.Project, o.Region, "web-ip")
			}
			st := ensure(t, p, lb)
			if !st.Ready || len(st.Addresses) != 1 || !netip.MustParsePrefix("198.51.100.0/24").Contains(netip.MustParseAddr(st.Addresses[0].Value)) {
				t.Fatalf("status %+v, want one regional address", st)
			}
			for _, k := range fake.Keys("forwardingRules") {
				if !strings.Contains(k, "/regions/"+o.Region+"/") {
					t.Errorf("forwarding rule %s outside the region", k)
				}
			}
			fake.ResetCalls()
			ensure(t, p, lb)
			if m := mutations(fake); len(m) != 0 {
				t.Errorf("steady state: %v", m)
			}
			if err := p.Delete(ctx, lb); err != nil {
				t.Fatal(err)
			}
			left := counts(fake)
			if name == "regional-named-address" {
				if diff := gocmp.Diff(map[string]int{"addresses": 1}, left); diff != "" {
					t.Errorf("left after Delete (-want +got):\n%s", diff)
				}
			} else if len(left) != 0 {
				t.Errorf("left after Delete: %v", left)
			}
		})
	}
}

// TestList finds a gateway by its resources alone, with its clusters, for the orphan sweep; a
// resource of another fleet is not listed.
func TestList(t *testing.T) {
	lb, members := goldenModel(t, "global-http")
	p, fake := testProvider(t, members)
	ensure(t, p, lb)
	// Another fleet's gateway in the same project.
	other, err := New(Options{Fleet: "fleet-2", Defaults: v1alpha1.GCPOptions{Project: "my-project"}, ClientOptions: fake.NoAuth()})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	lb2, _ := goldenModel(t, "global-https")
	if _, err := other.Ensure(context.Background(), lb2); err != nil {
		t.Fatal(err)
	}
	got, err := p.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Gateway != lb.Gateway || !slices.Equal(got[0].Clusters, []string{"east", "hub"}) {
		t.Fatalf("List = %+v, want %s in east and hub", got, lb.Gateway)
	}
	if err := p.Delete(context.Background(), &got[0]); err != nil {
		t.Fatal(err)
	}
	if n := fake.Count("urlMaps"); n != 2 {
		t.Errorf("%d URL maps left, want the other fleet's two", n)
	}
}

// TestDryRun plans every call and makes none.
func TestDryRun(t *testing.T) {
	lb, members := goldenModel(t, "global-https")
	p, fake := testProvider(t, members)
	lb.Annotations = map[string]string{annotationDryRun: "true"}
	st := ensure(t, p, lb)
	if st.Ready || st.Reason != providers.ReasonPending || !strings.HasPrefix(st.Message, "dry run: 16 calls would be made; insert address global/") {
		t.Errorf("dry run status %+v", st)
	}
	if m := mutations(fake); len(m) != 0 {
		t.Errorf("dry run mutated: %v", m)
	}
	calls, err := p.Plan(context.Background(), lb)
	if err != nil || len(calls) != 16 {
		t.Errorf("Plan = %d calls, %v", len(calls), err)
	}
}

// TestOperationErrors: an operation that ends with errors fails Ensure, whether or not it
// carries an HTTP status (the client's Wait only sees the first), and the next Ensure completes.
func TestOperationErrors(t *testing.T) {
	for _, withStatus := range []bool{true, false} {
		lb, members := goldenModel(t, "global-https")
		p, fake := testProvider(t, members)
		fake.Inject(func(c gcpfake.Call) bool { return c.Method == "POST" && strings.HasSuffix(c.Path, "/global/urlMaps") },
			gcpfake.Fault{Code: 400, Reason: "INVALID_FIELD_VALUE", InOperation: true, WithHTTPStatus: withStatus}, 1)
		_, err := p.Ensure(context.Background(), lb)
		if err == nil {
			t.Fatalf("withStatus=%v: Ensure succeeded over a failed operation", withStatus)
		}
		if !withStatus {
			if oe, ok := errors.AsType[*opError](err); !ok || !strings.Contains(oe.Error(), "INVALID_FIELD_VALUE") {
				t.Errorf("error %v is not the operation's", err)
			}
		}
		if st := ensure(t, p, lb); !st.Ready {
			t.Errorf("withStatus=%v: after the failure %+v", withStatus, st)
		}
		if n := fake.Count("urlMaps"); n != 2 {
			t.Errorf("%d URL maps, want one per listener", n)
		}
	}
}

// TestCredentialsErrors: a 401 or a 403 for permission is a CredentialsError naming the account;
// a 403 for quota is not.
func TestCredentialsErrors(t *testing.T) {
	for _, tt := range []struct {
		code   int
		reason string
		want   string
	}{
		{401, "authError", providers.ReasonCredentialsRejected},
		{403, "forbidden", providers.ReasonPermissionDenied},
		{403, "rateLimitExceeded", ""},
	} {
		lb, members := goldenModel(t, "global-https")
		p, fake := testProvider(t, members)
		fake.FailNext("GET", "/global/addresses", tt.code, tt.reason, 1)
		_, err := p.Ensure(context.Background(), lb)
		ce, ok := errors.AsType[*providers.CredentialsError](err)
		if tt.want == "" {
			if ok || err == nil {
				t.Errorf("%d %s: %v, want a plain error", tt.code, tt.reason, err)
			}
			continue
		}
		if !ok || ce.Reason != tt.want || !strings.Contains(ce.Account, "project my-project") {
			t.Errorf("%d %s: %v, want a %s CredentialsError", tt.code, tt.reason, err, tt.want)
		}
	}
}

// TestFaults: with 30% of calls failing (429/503), repeated Ensures converge to the clean
// result without duplicates, then make no mutating call.
func TestFaults(t *testing.T) {
	lb, members := goldenModel(t, "global-http")
	clean, cleanFake := testProvider(t, members)
	ensure(t, clean, lb)
	p, fake := testProvider(t, members)
	fake.SetFaultRate(0.3, 7)
	var failures int
	for i := 0; ; i++ {
		if i == 200 {
			t.Fatal("no convergence in 200 Ensures")
		}
		_, err := p.Ensure(context.Background(), lb)
		if err == nil {
			break
		}
		if failures < 3 {
			t.Logf("Ensure %d: %v", i, err)
		}
		failures++
	}
	fake.SetFaultRate(0, 0)
	if failures == 0 {
		t.Error("no Ensure failed: the faults were not injected")
	}
	if diff := gocmp.Diff(counts(cleanFake), counts(fake)); diff != "" {
		t.Errorf("resources after faults differ from a clean run (-clean +faults):\n%s", diff)
	}
	if diff := gocmp.Diff(cleanFake.Keys("backendServices"), fake.Keys("backendServices")); diff != "" {
		t.Errorf("backend services differ (-clean +faults):\n%s", diff)
	}
	fake.ResetCalls()
	ensure(t, p, lb)
	if m := mutations(fake); len(m) != 0 {
		t.Errorf("after convergence: %v", m)
	}
	t.Logf("%d failed Ensures before convergence", failures)
}

func resourceOf(t *testing.T, s *Stack, k Kind) *Resource {
	t.Helper()
	for i := range s.Resources {
		if s.Resources[i].Kind == k {
			return &s.Resources[i]
		}
	}
	t.Fatalf("no %s in the Stack", k)
	return nil
}

func mustDecode(t *testing.T, params json.RawMessage) v1alpha1.GCPOptions {
	t.Helper()
	o, err := decodeOptions(params, v1alpha1.GCPOptions{Project: "my-project", Region: "europe-west1"})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// insertAddress reserves an address in the fake, as a user would.
func insertAddress(t *testing.T, fake *gcpfake.Server, project, region, name string) {
	t.Helper()
	c, err := newClients(context.Background(), project, testRetries, fake.NoAuth()...)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.insert(context.Background(), KindAddress, Scope{Region: region}, &computepb.Address{Name: proto.String(name)}); err != nil {
		t.Fatal(err)
	}
}

// selfSigned is a new ECDSA certificate and key for host, PEM-encoded.
func selfSigned(t testing.TB, host string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: host}, DNSNames: []string{host},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kd, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kd})
}

// TestServiceAccountKeySecret: a class naming a key Secret reaches the API through the key's
// token exchange; a Secret without a service account key, and a key that was revoked, are
// CredentialsErrors naming the Secret and never the key.
func TestServiceAccountKeySecret(t *testing.T) {
	fake := gcpfake.NewServer(t)
	fake.RequireAuth()
	key, err := fake.NewServiceAccountKey("my-project", "fleetgate@my-project.iam.gserviceaccount.com")
	if err != nil {
		t.Fatal(err)
	}
	secrets := map[string][]byte{secretKeyServiceAccount: key}
	reg := prometheus.NewRegistry()
	p, err := New(Options{Fleet: testFleet, Retries: testRetries, Registerer: reg,
		Secrets: func(_ context.Context, ns, name string) (map[string][]byte, error) {
			if ns != "gcp" || name != "sa" {
				return nil, errors.New("not found")
			}
			return secrets, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	lb, _ := goldenModel(t, "global-https")
	lb.Parameters = mustJSON(t, v1alpha1.GCPOptions{Project: "my-project", Endpoint: fake.URL(),
		Credentials: &v1alpha1.GCPCredentials{SecretRef: &v1alpha1.ObjectRef{Namespace: "gcp", Name: "sa"}}})
	st, err := p.Ensure(context.Background(), lb)
	if err != nil || !st.Ready {
		t.Fatalf("Ensure with the key: %+v, %v", st, err)
	}
	if !strings.Contains(st.Account, "key in Secret gcp/sa") {
		t.Errorf("status account %q does not name the Secret", st.Account)
	}
	// Every call went through the counting transport, under the identity's auth.
	calls := map[string]float64{}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "fleetgate_gcp_api_calls_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			calls[labels["method"]+" "+labels["code"]] += m.GetCounter().GetValue()
		}
	}
	if calls["POST urlMaps 200"] != 2 || calls["POST targetHttpProxies 200"] != 1 || calls["GET forwardingRules 200"] == 0 {
		t.Errorf("fleetgate_gcp_api_calls_total = %v, want the inserts and lists counted", calls)
	}
	if n := float64(len(fake.Calls())); calls == nil || sum(calls) != n {
		t.Errorf("%v calls counted, the fake saw %v", sum(calls), n)
	}

	fake.Revoke("fleetgate@my-project.iam.gserviceaccount.com")
	// A new key version (the Secret changed) makes new clients, which need a new token.
	secrets[secretKeyServiceAccount] = append(slices.Clone(key), ' ')
	_, err = p.Ensure(context.Background(), lb)
	ce, ok := errors.AsType[*providers.CredentialsError](err)
	if !ok || ce.Reason != providers.ReasonCredentialsRejected || strings.Contains(ce.Error(), "PRIVATE KEY") {
		t.Errorf("revoked key: %v, want CredentialsRejected without the key", err)
	}

	secrets[secretKeyServiceAccount] = []byte(`{"type":"external_account","credential_source":{"file":"/etc/passwd"}}`)
	_, err = p.Ensure(context.Background(), lb)
	if ce, ok := errors.AsType[*providers.CredentialsError](err); !ok || ce.Reason != providers.ReasonCredentialsUnavailable {
		t.Errorf("not a service account key: %v, want CredentialsUnavailable", err)
	}
}

// TestCredentialConfigs: workload identity and impersonation become the credential
// configurations the auth library reads, pointing at Google's token services.
func TestCredentialConfigs(t *testing.T) {
	const audience = "//iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/p/providers/q"
	key := []byte(`{"type":"service_account","client_email":"fg@p.iam.gserviceaccount.com"}`)
	for _, tt := range []struct {
		name string
		c    v1alpha1.GCPCredentials
		typ  option.CredentialsType
		want map[string]any
	}{
		{"key", v1alpha1.GCPCredentials{SecretRef: &v1alpha1.ObjectRef{}}, option.ServiceAccount,
			map[string]any{"type": "service_account", "client_email": "fg@p.iam.gserviceaccount.com"}},
		{"key as another account", v1alpha1.GCPCredentials{SecretRef: &v1alpha1.ObjectRef{}, Impersonate: "lb@p.iam.gserviceaccount.com"},
			option.ImpersonatedServiceAccount, map[string]any{"type": "impersonated_service_account",
				"service_account_impersonation_url": "https://iamcredentials.googleapis.com/v1/projects/-/serviceAccounts/lb@p.iam.gserviceaccount.com:generateAccessToken",
				"source_credentials":                map[string]any{"type": "service_account", "client_email": "fg@p.iam.gserviceaccount.com"}}},
		{"workload identity", v1alpha1.GCPCredentials{WorkloadIdentity: &v1alpha1.GCPWorkloadIdentity{Audience: audience, TokenFile: "/var/run/token"}},
			option.ExternalAccount, map[string]any{"type": "external_account", "audience": audience,
				"subject_token_type": "urn:ietf:params:oauth:token-type:jwt", "token_url": "https://sts.googleapis.com/v1/token",
				"credential_source": map[string]any{"file": "/var/run/token"}}},
	} {
		typ, cfg, err := credentialConfig(&tt.c, key)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		var got map[string]any
		if err := json.Unmarshal(cfg, &got); err != nil {
			t.Fatal(err)
		}
		if typ != tt.typ {
			t.Errorf("%s: type %s, want %s", tt.name, typ, tt.typ)
		}
		if diff := gocmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
}

// probesByService answers the readiness probe of every endpoint of one Service.
type probesByService map[string]providers.HTTPProbe // "namespace/service" → probe

func (p probesByService) ReadinessProbe(_ context.Context, namespace, service string, _ ir.Endpoint) (providers.HTTPProbe, bool, error) {
	probe, ok := p[namespace+"/"+service]
	return probe, ok, nil
}

// TestReadinessProbes: a backend's health check follows its pods' readiness probe; the others
// keep "/".
func TestReadinessProbes(t *testing.T) {
	lb, members := goldenModel(t, "global-http")
	fake := gcpfake.NewServer(t)
	p, err := New(Options{Fleet: testFleet, Defaults: v1alpha1.GCPOptions{Project: "my-project"}, ClientOptions: fake.NoAuth(),
		Retries: testRetries, Probes: probesByService{"infra/web": {Path: "/ready", Scheme: "HTTP"}},
		Members: func(context.Context) (map[string]v1alpha1.MemberClusterSpec, error) {
			out := map[string]v1alpha1.MemberClusterSpec{}
			for name, m := range members {
				out[name] = v1alpha1.MemberClusterSpec{Zones: m.Zones}
			}
			return out, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ensure(t, p, lb)
	paths := map[string]int{}
	for _, k := range fake.Keys("healthChecks") {
		hc, _ := gcpfake.Get[*computepb.HealthCheck](fake, k)
		paths[hc.GetHttpHealthCheck().GetRequestPath()+hc.GetHttp2HealthCheck().GetRequestPath()]++
	}
	if diff := gocmp.Diff(map[string]int{"/": 2, "/ready": 1}, paths); diff != "" {
		t.Errorf("health check paths (-want +got):\n%s", diff)
	}
}

func sum(m map[string]float64) float64 {
	var s float64
	for _, v := range m {
		s += v
	}
	return s
}

// TestStablePriorities: a route added in front of the others, and one removed, move no other
// rule's priority in the live URL map.
func TestStablePriorities(t *testing.T) {
	lb, members := goldenModel(t, "global-http")
	p, fake := testProvider(t, members)
	ensure(t, p, lb)
	prios := func() map[string]int32 {
		out := map[string]int32{}
		for _, k := range fake.Keys("urlMaps") {
			um, _ := gcpfake.Get[*computepb.UrlMap](fake, k)
			for _, pm := range um.GetPathMatchers() {
				for _, r := range pm.GetRouteRules() {
					out[r.GetDescription()] = r.GetPriority()
				}
			}
		}
		return out
	}
	before := prios()
	vh := &lb.Routing.Listeners[0].VirtualHosts[1]
	added := ir.Route{Name: "HTTPRoute/infra/first/0/0", Match: ir.Match{Path: &ir.StringMatch{Type: ir.MatchExact, Value: "/first"}},
		Backends: vh.Routes[0].Backends}
	vh.Routes = append([]ir.Route{added}, vh.Routes...)
	ensure(t, p, lb)
	after := prios()
	for id, prio := range before {
		if after[id] != prio {
			t.Errorf("rule %s moved from priority %d to %d", id, prio, after[id])
		}
	}
	if first := after["HTTPRoute/infra/first/0/0#0"]; first == 0 || first >= after["HTTPRoute/infra/foo/0/0#0"] {
		t.Errorf("the new rule has priority %d, want one before %d", first, after["HTTPRoute/infra/foo/0/0#0"])
	}
	vh.Routes = vh.Routes[:len(vh.Routes)-1] // the regular expression route goes
	ensure(t, p, lb)
	for id, prio := range prios() {
		if after[id] != prio {
			t.Errorf("after a removal, rule %s moved from priority %d to %d", id, after[id], prio)
		}
	}
}

// TestEnsureClassMoves: a gateway whose class moves from a regional load balancer to the global
// one leaves nothing in the region (every region is listed, not only the class's: a class moved to
// another region is found the same way), moving back leaves nothing global, and Delete then leaves
// nothing at all.
func TestEnsureClassMoves(t *testing.T) {
	lb, members := goldenModel(t, "global-https")
	p, fake := testProvider(t, members)
	in := func(scope string) []string {
		var out []string
		for _, c := range allCollections {
			for _, k := range fake.Keys(c) {
				if strings.Contains(k, "/"+scope+"/") {
					out = append(out, k)
				}
			}
		}
		return out
	}
	regional := json.RawMessage(`{"project":"my-project","loadBalancerType":"regional","region":"europe-west1"}`)
	global := json.RawMessage(`{"project":"my-project"}`)
	lb.Parameters = regional
	ensure(t, p, lb)
	if len(in("regions/europe-west1")) == 0 {
		t.Fatal("the regional load balancer made nothing in europe-west1")
	}
	lb.Parameters = global
	ensure(t, p, lb)
	if left := in("regions/europe-west1"); len(left) != 0 {
		t.Errorf("after the class became global, left in europe-west1: %v", left)
	}
	if len(in("global")) == 0 {
		t.Fatal("the global load balancer made nothing")
	}
	lb.Parameters = regional
	ensure(t, p, lb)
	for _, k := range in("global") {
		if !strings.Contains(k, "/firewalls/") { // firewall rules are global whatever the load balancer
			t.Errorf("after the class became regional again, left global: %s", k)
		}
	}
	if err := p.Delete(context.Background(), lb); err != nil {
		t.Fatal(err)
	}
	if left := counts(fake); len(left) != 0 {
		t.Errorf("left after Delete: %v", left)
	}
}
