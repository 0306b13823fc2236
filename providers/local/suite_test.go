package local_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/fleetgate/fleetgate/providers"
	"github.com/fleetgate/fleetgate/providers/local"
	"github.com/fleetgate/fleetgate/providers/providertest"
	"github.com/fleetgate/fleetgate/tests/testbed"
)

const (
	hub       = "hub"
	namespace = "providertest"
)

// suiteEnv is one API server for the gateways' Services and one state directory shared by every
// provider of the suite, as they outlive an operator; proxies are stand-in processes (see
// TestProviderSuite) that record their start.
type suiteEnv struct {
	admin    client.Client // the test's own client; its writes are not counted
	counting client.Client // what providers get
	writes   atomic.Int64
	dir      string
	starts   string // the stand-in proxy appends "<pid> <gateway>" here when it starts

	mu   sync.Mutex
	live []*local.Provider // the providers whose proxies Restart ends
}

func newSuiteEnv(t *testing.T) *suiteEnv {
	t.Helper()
	c := testbed.ForTest(t, hub)[0]
	wc, err := client.NewWithWatch(c.Config, client.Options{Scheme: c.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	e := &suiteEnv{admin: c.Client, dir: filepath.Join(tmp, "state"), starts: filepath.Join(tmp, "starts")}
	count := func() { e.writes.Add(1) }
	e.counting = interceptor.NewClient(wc, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.CreateOption) error {
			count()
			return c.Create(ctx, o, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.UpdateOption) error {
			count()
			return c.Update(ctx, o, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, o client.Object, p client.Patch, opts ...client.PatchOption) error {
			count()
			return c.Patch(ctx, o, p, opts...)
		},
		Apply: func(ctx context.Context, c client.WithWatch, o runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			count()
			return c.Apply(ctx, o, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.DeleteOption) error {
			count()
			return c.Delete(ctx, o, opts...)
		},
		DeleteAllOf: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.DeleteAllOfOption) error {
			count()
			return c.DeleteAllOf(ctx, o, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, o client.Object, opts ...client.SubResourceUpdateOption) error {
			count()
			return c.SubResource(sub).Update(ctx, o, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, o client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			count()
			return c.SubResource(sub).Patch(ctx, o, p, opts...)
		},
	})
	if err := c.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *suiteEnv) provider(t *testing.T) providers.Provider {
	t.Helper()
	p, err := local.New(local.Options{
		// $2 is the value of --gateway, the first argument the provider adds.
		Command:    []string{"/bin/sh", "-c", `echo "$$ $2" >> '` + e.starts + `'; exec sleep 600`, "proxy"},
		XDSAddress: "127.0.0.1:1",
		Credentials: func(string) (local.Credentials, error) {
			return local.Credentials{CertPEM: []byte("c"), KeyPEM: []byte("k"), CAPEM: []byte("ca")}, nil
		},
		Dir:      e.dir,
		Client:   func(string) (client.Client, error) { return e.counting, nil },
		Clusters: func() []string { return []string{hub} },
		Log:      logr.Discard(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(context.WithoutCancel(t.Context())) })
	e.mu.Lock()
	e.live = append(e.live, p)
	e.mu.Unlock()
	return p
}

// restart ends the proxies of every provider so far, as the operator's exit does (Pdeathsig).
func (e *suiteEnv) restart(t *testing.T) {
	e.mu.Lock()
	live := e.live
	e.live = nil
	e.mu.Unlock()
	for _, p := range live {
		if err := p.Stop(t.Context()); err != nil {
			t.Fatalf("stopping an earlier provider: %v", err)
		}
	}
}

// startedProxies reads the stand-in proxies' start records: gateway by pid, in start order.
func (e *suiteEnv) startedProxies() ([][2]string, error) {
	b, err := os.ReadFile(e.starts)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out [][2]string
	for line := range strings.Lines(string(b)) {
		pid, gw, ok := strings.Cut(strings.TrimSpace(line), " ")
		if ok {
			out = append(out, [2]string{pid, gw})
		}
	}
	return out, nil
}

func (e *suiteEnv) mutations() int {
	started, err := e.startedProxies()
	if err != nil {
		panic(err) // the harness's own file; nothing else writes it
	}
	return int(e.writes.Load()) + len(started)
}

// running tells whether pid is a live (not zombie) stand-in proxy.
func running(pid string) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(stat), ") ")
	cmdline, err := os.ReadFile(filepath.Join("/proc", pid, "cmdline"))
	return err == nil && !strings.HasPrefix(rest, "Z") && strings.HasPrefix(string(cmdline), "sleep\x00600")
}

// owned is every resource of the local provider: Services with the ownership label, state
// directories, and running proxies (by gateway, their pids as version).
func (e *suiteEnv) owned(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	var svcs corev1.ServiceList
	if err := e.admin.List(ctx, &svcs, client.MatchingLabels{providers.LabelManagedBy: providers.ManagedBy}); err != nil {
		return nil, err
	}
	for _, s := range svcs.Items {
		out["Service/"+s.Namespace+"/"+s.Name] = s.ResourceVersion
	}
	dirs, err := os.ReadDir(e.dir)
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	for _, d := range dirs {
		out["state/"+d.Name()] = ""
	}
	started, err := e.startedProxies()
	if err != nil {
		return nil, err
	}
	pids := map[string][]string{}
	for _, s := range started {
		if running(s[0]) {
			pids[s[1]] = append(pids[s[1]], s[0])
		}
	}
	for gw, ps := range pids {
		slices.Sort(ps)
		out["process/"+gw] = strings.Join(ps, ",")
	}
	return out, nil
}

func (e *suiteEnv) observe(ctx context.Context, lb *providers.LoadBalancer) (providertest.Observed, error) {
	svc := &corev1.Service{}
	if err := e.admin.Get(ctx, client.ObjectKey{Namespace: lb.Namespace, Name: providers.ResourceName(lb)}, svc); err != nil {
		return providertest.Observed{}, err
	}
	o := providertest.Observed{Labels: svc.Labels}
	for _, p := range svc.Spec.Ports {
		o.Ports = append(o.Ports, providers.Port{Port: p.Port, Transport: providers.Transport(p.Protocol)})
	}
	return o, nil
}

func suiteModel(name string) *providers.LoadBalancer {
	return &providers.LoadBalancer{
		Gateway: hub + "/" + namespace + "/" + name, Namespace: namespace, Name: name,
		Class: "fleetgate", Provider: "incluster", Scope: "Cluster",
		Clusters: []string{hub},
		Ports: []providers.Port{
			{Port: 53, Transport: providers.TransportUDP, Protocol: "UDP"},
			{Port: 80, Transport: providers.TransportTCP, Protocol: "HTTP"},
		},
		Labels:      map[string]string{"team": "edge"},
		Annotations: map[string]string{"example.com/owner": "edge-team"},
		GatewayUIDs: map[string]string{hub: "6f1f6c2e-0000-4000-8000-000000000002"},
	}
}

// TestProviderSuite runs the shared provider suite on the local provider with a real API server
// for its Services and real processes started by the provider's own exec path. The processes are
// a shell that records its start and becomes `sleep`, not the fleetgate proxy: the provider's
// job is the process's life, address, state and Services, while a real proxy would need the
// operator binary built and a config server with a CA to stay up (the integration tests run the
// local mode with real proxies end to end).
func TestProviderSuite(t *testing.T) {
	e := newSuiteEnv(t)
	providertest.Run(t, providertest.Harness{
		New:       e.provider,
		Model:     suiteModel,
		Owned:     e.owned,
		Settle:    func(context.Context, *providers.LoadBalancer) error { return nil }, // a running process is ready
		Observe:   e.observe,
		Mutations: e.mutations,
		Restart:   e.restart,
		ValidParameters: []json.RawMessage{nil, json.RawMessage("null"), json.RawMessage("{}"),
			json.RawMessage(`{"replicas":3,"serviceType":"NodePort"}`)},
		InvalidParameters: []json.RawMessage{json.RawMessage(`{"replica":3}`), json.RawMessage(`{"replicas":"two"}`),
			json.RawMessage(`[`), json.RawMessage(`{"serviceType":7}`)},
	})
}
