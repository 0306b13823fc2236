package controllers

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/fleetgate/fleetgate/controllers/translate"
	"github.com/fleetgate/fleetgate/dataplane/ir"
	"github.com/fleetgate/fleetgate/providers"
)

type fakeProvider struct {
	ready   bool
	deleted []string
}

func (f *fakeProvider) Ensure(context.Context, *providers.LoadBalancer) (providers.Status, error) {
	if !f.ready {
		return providers.Status{Reason: providers.ReasonPending, Message: "replicas unavailable"}, nil
	}
	return providers.Status{Ready: true, Addresses: []providers.Address{{Type: providers.AddressTypeIPAddress, Value: "203.0.113.1"}}}, nil
}

func (f *fakeProvider) Delete(_ context.Context, lb *providers.LoadBalancer) error {
	f.deleted = append(f.deleted, lb.Gateway)
	return nil
}

type fakeProviders map[string]providers.Provider

func (f fakeProviders) Get(name string) (providers.Provider, bool) { p, ok := f[name]; return p, ok }

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

func (f *fakeConfigs) Acknowledged(_ string, v uint64) (bool, bool, string) {
	switch {
	case v <= f.acked:
		return true, false, ""
	case v <= f.nacked:
		return false, true, "proxy p rejected it"
	}
	return false, false, "waiting"
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
	d := &Dataplane{Providers: fakeProviders{"incluster": prov}, Configs: configs}
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
			want: translate.Programmed{Reason: "Pending", Message: "waiting", Addresses: addr}},
		{name: "version 1 ACKed", res: result(1, "a"), ready: true, acked: 1,
			want: translate.Programmed{Ready: true, Addresses: addr}},
		{name: "a change (version 2) waits for its ACK", res: result(1, "b"), ready: true, acked: 1,
			want: translate.Programmed{Reason: "Pending", Message: "waiting", Addresses: addr}},
		{name: "a refusal of the latest version shows", res: result(2, "c"), ready: true, acked: 2, nacked: 3,
			want: translate.Programmed{Reason: "Invalid", Message: "proxy p rejected it", Addresses: addr}},
	}
	for _, s := range steps {
		prov.ready, configs.acked, configs.nacked = s.ready, s.acked, s.nacked
		got, err := d.Apply(t.Context(), s.res)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if diff := cmp.Diff(s.want, got["hub/ns/gw"], cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s (-want +got):\n%s", s.name, diff)
		}
	}

	// A gateway that leaves the result is deleted and its config withdrawn.
	if _, err := d.Apply(t.Context(), &translate.Result{}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"hub/ns/gw"}, prov.deleted); diff != "" {
		t.Errorf("deleted (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"hub/ns/gw"}, configs.removed); diff != "" {
		t.Errorf("removed configs (-want +got):\n%s", diff)
	}

	// A class whose provider is not enabled gets NoResources.
	res := result(1, "a")
	res.LoadBalancers[0].Provider = "aws"
	got, err := d.Apply(t.Context(), res)
	if err != nil {
		t.Fatal(err)
	}
	if got["hub/ns/gw"].Reason != providers.ReasonNoResources {
		t.Errorf("unknown provider: %+v, want NoResources", got["hub/ns/gw"])
	}
}
