package controllers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/fleetgate/fleetgate/controllers/translate"
	"github.com/fleetgate/fleetgate/dataplane/ir"
	"github.com/fleetgate/fleetgate/providers"
)

type fakeProvider struct {
	mu      sync.Mutex
	ready   bool
	err     error
	block   chan struct{}
	deleted []string
}

func (f *fakeProvider) set(ready bool, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ready, f.err = ready, err
}

func (f *fakeProvider) Ensure(ctx context.Context, _ *providers.LoadBalancer) (providers.Status, error) {
	f.mu.Lock()
	ready, err, block := f.ready, f.err, f.block
	f.mu.Unlock()
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return providers.Status{}, ctx.Err()
		}
	}
	if err != nil {
		return providers.Status{}, err
	}
	if !ready {
		return providers.Status{Reason: providers.ReasonPending, Message: "replicas unavailable"}, nil
	}
	return providers.Status{Ready: true, Addresses: []providers.Address{{Type: providers.AddressTypeIPAddress, Value: "203.0.113.1"}}}, nil
}

func (f *fakeProvider) Delete(_ context.Context, lb *providers.LoadBalancer) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deleted = append(f.deleted, lb.Gateway)
	return nil
}

func (f *fakeProvider) deletedNow() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.deleted)
}

func (*fakeProvider) List(context.Context) ([]providers.LoadBalancer, error) { return nil, nil }
func (*fakeProvider) Capabilities(json.RawMessage) (providers.Capabilities, error) {
	return providers.FullCapabilities(), nil
}

type fakeProviders map[string]providers.Provider

func (f fakeProviders) Get(name string) (providers.Provider, bool) { p, ok := f[name]; return p, ok }
func (f fakeProviders) Names() []string                            { return slices.Sorted(maps.Keys(f)) }

// newDataplane runs a Dataplane's provisioning engine until the test ends.
func newDataplane(t *testing.T, provs fakeProviders, configs ConfigServer) *Dataplane {
	t.Helper()
	d := &Dataplane{Providers: provs, Configs: configs}
	if err := d.newEngine(prometheus.NewRegistry(), testr.New(t)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.engine.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return d
}

// applyAndWait runs Apply, then waits for the provider's answers (success or error) to this
// pass, and returns Programmed as the delivery trigger would then see it.
func applyAndWait(t *testing.T, d *Dataplane, res *translate.Result) map[string]translate.Programmed {
	t.Helper()
	if _, err := d.Apply(t.Context(), res); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		got := d.Programmed()
		if answered(d, got) {
			// answered reads the engine after got was made, so got may predate the provider's
			// answer: read again, now that the engine has it.
			return d.Programmed()
		}
		if time.Now().After(deadline) {
			t.Fatalf("no provider result: %+v", got)
		}
	}
}

func answered(d *Dataplane, m map[string]translate.Programmed) bool {
	for gw, p := range m {
		if !d.engine.Settled(gw) && !strings.HasPrefix(p.Message, "provider error") {
			return false
		}
	}
	return true
}

func waiting(v uint64) string {
	return fmt.Sprintf("waiting for 1 of 1 proxy replicas to acknowledge version %d", v)
}

// fakeConfigs stamps a new version whenever the config changes; proxies ACK up to acked and refuse nacked.
type fakeConfigs struct {
	versions map[string]uint64
	last     map[string]string
	acked    uint64
	nacked   uint64
	removed  []string
}

func (f *fakeConfigs) SetConfig(gw string, cfg *ir.Config) uint64 {
	key := cfg.Gateway + "|" + string(cfg.Listeners[0].Name) + "|" + cfg.Listeners[0].VirtualHosts[0].Hostname
	if f.last[gw] != key {
		f.versions[gw]++
		f.last[gw] = key
	}
	return f.versions[gw]
}

func (f *fakeConfigs) Proxies(string) []ProxyState {
	p := ProxyState{Node: "p", Acked: f.acked}
	if f.nacked > f.acked {
		p.Nacked, p.NackReason = f.nacked, "config invalid"
	}
	return []ProxyState{p}
}

func (f *fakeConfigs) RemoveGateway(gw string) { f.removed = append(f.removed, gw) }

func result(gatewayGeneration int64, host string) *translate.Result {
	return &translate.Result{
		Configs: []ir.Config{{Gateway: "hub/ns/gw", Listeners: []ir.Listener{{Name: "http", Port: 80, Protocol: ir.ProtocolHTTP,
			VirtualHosts: []ir.VirtualHost{{Hostname: host}}}}}},
		LoadBalancers: []providers.LoadBalancer{{Gateway: "hub/ns/gw", Provider: "incluster"}},
		Gateways: []translate.GatewayStatus{{Gateway: "hub/ns/gw", Generation: gatewayGeneration,
			Ref: translate.ObjectRef{Cluster: "hub", Kind: "Gateway", Namespace: "ns", Name: "gw"}}},
	}
}

// TestDataplaneProgrammed walks one gateway through the states Programmed depends on.
func TestDataplaneProgrammed(t *testing.T) {
	ip := gwv1.IPAddressType
	addr := []gwv1.GatewayStatusAddress{{Type: &ip, Value: "203.0.113.1"}}
	prov := &fakeProvider{}
	configs := &fakeConfigs{versions: map[string]uint64{}, last: map[string]string{}}
	d := newDataplane(t, fakeProviders{"incluster": prov}, configs)
	steps := []struct {
		name          string
		res           *translate.Result
		ready         bool
		acked, nacked uint64
		want          translate.Programmed
	}{
		{name: "provider not ready", res: result(1, "a"),
			want: translate.Programmed{Reason: providers.ReasonPending, Message: "replicas unavailable"}},
		{name: "ready, proxies have not ACKed version 1", res: result(1, "a"), ready: true,
			want: translate.Programmed{Reason: "Pending", Message: waiting(1), Addresses: addr}},
		{name: "version 1 ACKed", res: result(1, "a"), ready: true, acked: 1,
			want: translate.Programmed{Ready: true, Addresses: addr}},
		{name: "a route change (version 2, same generation) does not flap it", res: result(1, "b"), ready: true, acked: 1,
			want: translate.Programmed{Ready: true, Addresses: addr}},
		{name: "a new generation (version 3) waits for its ACK", res: result(2, "c"), ready: true, acked: 2,
			want: translate.Programmed{Reason: "Pending", Message: waiting(3), Addresses: addr}},
		{name: "then a route change (version 4) keeps waiting for version 3", res: result(2, "d"), ready: true, acked: 2,
			want: translate.Programmed{Reason: "Pending", Message: waiting(3), Addresses: addr}},
		{name: "version 3 ACKed", res: result(2, "d"), ready: true, acked: 3,
			want: translate.Programmed{Ready: true, Addresses: addr}},
		{name: "a refusal of the latest version shows", res: result(2, "e"), ready: true, acked: 4, nacked: 5,
			want: translate.Programmed{Reason: "Invalid", Message: "proxy p rejected version 5: config invalid", Addresses: addr}},
	}
	for _, s := range steps {
		prov.set(s.ready, nil)
		configs.acked, configs.nacked = s.acked, s.nacked
		got := applyAndWait(t, d, s.res)
		if diff := cmp.Diff(s.want, got["hub/ns/gw"], cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s (-want +got):\n%s", s.name, diff)
		}
	}

	// A gateway that leaves the result is deleted and its config withdrawn.
	if _, err := d.Apply(t.Context(), &translate.Result{}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); !d.engine.Settled("hub/ns/gw") && time.Now().Before(deadline); {
		time.Sleep(2 * time.Millisecond)
	}
	if diff := cmp.Diff([]string{"hub/ns/gw"}, prov.deletedNow()); diff != "" {
		t.Errorf("deleted (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"hub/ns/gw"}, configs.removed); diff != "" {
		t.Errorf("removed configs (-want +got):\n%s", diff)
	}

	// A class whose provider is not enabled gets NoResources.
	res := result(1, "a")
	res.LoadBalancers[0].Provider = "aws"
	got := applyAndWait(t, d, res)
	if got["hub/ns/gw"].Reason != providers.ReasonNoResources {
		t.Errorf("unknown provider: %+v, want NoResources", got["hub/ns/gw"])
	}
}

// TestDeliveryPass checks that ACKs and NACKs that arrive after a full pass reach the Gateway's
// Programmed condition through the delivery pass alone, and that a NACK's verdict does not stick
// once the proxies ACK.
func TestDeliveryPass(t *testing.T) {
	prov := &fakeProvider{ready: true}
	configs := &fakeConfigs{versions: map[string]uint64{}, last: map[string]string{}}
	d := newDataplane(t, fakeProviders{"incluster": prov}, configs)
	w := NewStatusWriter(logr.Discard(), nil, nil)
	r := &GatewayReconciler{Apply: d, Status: w}

	res := result(1, "a")
	res.Gateways[0].Conditions = []metav1.Condition{
		{Type: string(gwv1.GatewayConditionAccepted), Status: metav1.ConditionTrue, Reason: "Accepted", ObservedGeneration: 1},
		{Type: string(gwv1.GatewayConditionProgrammed), Status: metav1.ConditionFalse, Reason: "Pending", ObservedGeneration: 1},
	}
	// What a full pass does with the translation, without reading clusters.
	r.lastTranslation = res.Applied()
	programmed := applyAndWait(t, d, res)
	for gw, p := range programmed {
		res.SetProgrammed(gw, p)
	}
	w.Publish(res, applied)

	ref := res.Gateways[0].Ref
	programmedNow := func() metav1.Condition {
		t.Helper()
		w.mu.Lock()
		defer w.mu.Unlock()
		d := w.desired[ref]
		if d == nil {
			t.Fatalf("no desired status for %v", ref)
		}
		gs, ok := d.want.(*translate.GatewayStatus)
		if !ok {
			t.Fatalf("no desired status for %v", ref)
		}
		return *meta.FindStatusCondition(gs.Conditions, string(gwv1.GatewayConditionProgrammed))
	}
	steps := []struct {
		name          string
		acked, nacked uint64
		status        metav1.ConditionStatus
		reason        string
	}{
		{name: "not acknowledged yet", status: metav1.ConditionFalse, reason: "Pending"},
		{name: "rejected", nacked: 1, status: metav1.ConditionFalse, reason: "Invalid"},
		{name: "acknowledged after all", acked: 1, status: metav1.ConditionTrue, reason: "Programmed"},
	}
	for _, s := range steps {
		configs.acked, configs.nacked = s.acked, s.nacked
		if _, err := r.Reconcile(t.Context(), deliveryKey); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if c := programmedNow(); c.Status != s.status || c.Reason != s.reason {
			t.Errorf("%s: Programmed=%s/%s, want %s/%s", s.name, c.Status, c.Reason, s.status, s.reason)
		}
	}
	// The delivery passes never touched the full pass's own result.
	if c := meta.FindStatusCondition(r.lastTranslation.Gateways[0].Conditions, string(gwv1.GatewayConditionProgrammed)); c.Reason != "Pending" {
		t.Errorf("stored translation changed: Programmed reason %q", c.Reason)
	}
}

// TestProgrammedAcrossMemberOutage: a member's Gateway leaving and coming back changes what the
// gateway is made of, so Programmed waits for the version of that pass, and the delivery state
// (Dataplane.Programmed) turns it True once that version is ACKed, without another Apply.
func TestProgrammedAcrossMemberOutage(t *testing.T) {
	ip := gwv1.IPAddressType
	addr := []gwv1.GatewayStatusAddress{{Type: &ip, Value: "203.0.113.1"}}
	configs := &fakeConfigs{versions: map[string]uint64{}, last: map[string]string{}}
	d := newDataplane(t, fakeProviders{"incluster": &fakeProvider{ready: true}}, configs)
	withMember := func(host string) *translate.Result {
		res := result(1, host)
		res.Gateways = append(res.Gateways, translate.GatewayStatus{Gateway: "hub/ns/gw", Generation: 1,
			Ref: translate.ObjectRef{Cluster: "member-b", Kind: "Gateway", Namespace: "ns", Name: "gw"}})
		return res
	}
	ready := translate.Programmed{Ready: true, Addresses: addr}
	pending := func(v uint64) translate.Programmed {
		return translate.Programmed{Reason: "Pending", Message: waiting(v), Addresses: addr}
	}
	steps := []struct {
		name  string
		res   *translate.Result
		acked uint64
		want  translate.Programmed
	}{
		{name: "both members, version 1 ACKed", res: withMember("a"), acked: 1, want: ready},
		{name: "member-b lost (version 2)", res: result(1, "b"), acked: 1, want: pending(2)},
		{name: "version 2 ACKed", res: result(1, "b"), acked: 2, want: ready},
		{name: "member-b back (version 3)", res: withMember("c"), acked: 2, want: pending(3)},
	}
	for _, s := range steps {
		configs.acked = s.acked
		got := applyAndWait(t, d, s.res)
		if diff := cmp.Diff(s.want, got["hub/ns/gw"], cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s (-want +got):\n%s", s.name, diff)
		}
	}
	configs.acked = 3
	if diff := cmp.Diff(ready, d.Programmed()["hub/ns/gw"], cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("after member-b's version is ACKed (-want +got):\n%s", diff)
	}
}

// TestProgrammedWaitsForProvider: Apply returns while the provider is still at work, the gateway
// Pending until it answers for the current model; a provider error shows until a retry succeeds.
func TestProgrammedWaitsForProvider(t *testing.T) {
	prov := &fakeProvider{ready: true, block: make(chan struct{})}
	configs := &fakeConfigs{versions: map[string]uint64{}, last: map[string]string{}, acked: 10}
	d := newDataplane(t, fakeProviders{"incluster": prov}, configs)
	start := time.Now()
	got, err := d.Apply(t.Context(), result(1, "a"))
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("Apply waited %s for the provider", took)
	}
	want := translate.Programmed{Reason: "Pending", Message: "waiting for provider incluster"}
	if diff := cmp.Diff(want, got["hub/ns/gw"], cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("while the provider works (-want +got):\n%s", diff)
	}
	prov.mu.Lock()
	close(prov.block)
	prov.block = nil
	prov.err = errors.New("quota exceeded")
	prov.mu.Unlock()
	// The first call was let through before the error was set: wait for the error of a changed model.
	got = applyAndWait(t, d, result(2, "b"))
	want = translate.Programmed{Reason: "Pending", Message: "provider error: quota exceeded"}
	if diff := cmp.Diff(want, got["hub/ns/gw"], cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("after a provider error (-want +got):\n%s", diff)
	}
	prov.set(true, nil)
	ip := gwv1.IPAddressType
	ready := translate.Programmed{Ready: true, Addresses: []gwv1.GatewayStatusAddress{{Type: &ip, Value: "203.0.113.1"}}}
	for deadline := time.Now().Add(5 * time.Second); !cmp.Equal(ready, d.Programmed()["hub/ns/gw"]); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the retry never made it programmed: %+v", d.Programmed()["hub/ns/gw"])
		}
	}
}

// TestProgrammedDirect: a load balancer that serves the routing itself (a cloud ALB) is programmed
// once its provider is ready, with no proxy to acknowledge the config; a ready proxied one waits.
func TestProgrammedDirect(t *testing.T) {
	configs := &fakeConfigs{versions: map[string]uint64{}, last: map[string]string{}}
	dl := delivery{provider: "aws", version: 1, since: 1}
	tests := []struct {
		name string
		st   providers.Status
		want bool
	}{
		{name: "direct and ready", st: providers.Status{Ready: true, Direct: true}, want: true},
		{name: "direct, not ready", st: providers.Status{Direct: true, Reason: providers.ReasonPending}},
		{name: "proxied and ready, no ACK", st: providers.Status{Ready: true}},
	}
	for _, tc := range tests {
		if got := programmed(tc.st, dl, []reportedProxy{standing(configs.Proxies("hub/ns/gw")[0], dl)}); got.Ready != tc.want {
			t.Errorf("%s: programmed %+v, want ready=%v", tc.name, got, tc.want)
		}
	}
}
