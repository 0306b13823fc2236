package local_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgate/fleetgate/dataplane/xds"
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
// provider of the suite, as they outlive an operator; proxies are real `fleetgate dataplane`
// processes, found in /proc by their binary and --gateway argument.
type suiteEnv struct {
	admin    client.Client // the test's own client; its writes are not counted
	counting client.Client // what providers get
	writes   atomic.Int64
	// issued counts proxy credentials: the provider issues them for every proxy it starts, and
	// a proxy cannot join the config stream without them.
	issued atomic.Int64
	dir    string
	binary string // the fleetgate binary, in a directory of this test's own
	ca     *xds.CA

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
	bin, err := testbed.BuildOperator(tmp)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := xds.NewCA("providertest CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	e := &suiteEnv{admin: c.Client, dir: filepath.Join(tmp, "state"), binary: bin, ca: ca}
	e.counting = providertest.CountingClient(wc, &e.writes)
	if err := c.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *suiteEnv) provider(t *testing.T) providers.Provider {
	t.Helper()
	p, err := local.New(local.Options{
		// No config server listens: the proxies keep dialling it, which is all the suite needs.
		Command:    []string{e.binary, "dataplane"},
		XDSAddress: "127.0.0.1:1",
		Credentials: func(gateway string) (local.Credentials, error) {
			e.issued.Add(1)
			kp, err := e.ca.IssueClient([]string{gateway}, time.Hour)
			return local.Credentials{CertPEM: kp.CertPEM, KeyPEM: kp.KeyPEM, CAPEM: e.ca.CertPEM()}, err
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

func (e *suiteEnv) mutations() int { return int(e.writes.Load() + e.issued.Load()) }

// proxies finds the running proxies, the children of this process that run e.binary's
// dataplane: pids by gateway.
func (e *suiteEnv) proxies() (map[string][]string, error) {
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	self := strconv.Itoa(os.Getpid())
	out := map[string][]string{}
	for _, d := range procs {
		pid := d.Name()
		stat, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
		if err != nil {
			continue // not a process, or gone
		}
		_, rest, _ := strings.Cut(string(stat), ") ")
		if f := strings.Fields(rest); len(f) < 2 || f[1] != self || f[0] == "Z" {
			continue
		}
		args, err := cmdline(pid)
		if err != nil || len(args) < 2 || args[0] != e.binary || args[1] != "dataplane" {
			continue
		}
		if i := slices.Index(args, "--gateway"); i >= 0 && i+1 < len(args) {
			out[args[i+1]] = append(out[args[i+1]], pid)
		}
	}
	return out, nil
}

// cmdline reads a process's arguments. They read as empty for a moment while the process execs
// (the proxy re-execs itself at start), so an empty read is retried.
func cmdline(pid string) ([]string, error) {
	for range 100 {
		b, err := os.ReadFile(filepath.Join("/proc", pid, "cmdline"))
		if err != nil {
			return nil, err
		}
		if len(b) > 0 {
			return strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00"), nil
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil, nil
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
	pids, err := e.proxies()
	if err != nil {
		return nil, err
	}
	for gw, ps := range pids {
		slices.Sort(ps)
		out["process/"+gw] = strings.Join(ps, ",")
	}
	return out, nil
}

// observe reads the gateway's Service, and fails unless its proxy runs: the Service stands for it.
func (e *suiteEnv) observe(ctx context.Context, lb *providers.LoadBalancer) (providertest.Observed, error) {
	owned, err := e.owned(ctx)
	if err != nil {
		return providertest.Observed{}, err
	}
	if _, ok := owned["process/"+lb.Gateway]; !ok {
		log, _ := os.ReadFile(filepath.Join(e.dir, providers.GatewayID(lb.Gateway), "proxy.log"))
		return providertest.Observed{}, fmt.Errorf("no proxy of %s runs; its log:\n%s", lb.Gateway, log)
	}
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
// for its Services and real proxies (the fleetgate binary, built here, with certificates from a
// real CA), started by the provider's own exec path.
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
