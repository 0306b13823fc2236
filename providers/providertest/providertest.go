// Package providertest is the behaviour every provider must show, as one test suite that each
// provider runs against its own (real or faked) backend through a Harness.
package providertest

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetgate/fleetgate/providers"
)

// Harness connects the suite to one provider and the backend it manages.
type Harness struct {
	// New returns a provider with no state of its own beyond the backend, as a newly started
	// operator has it.
	New func(t *testing.T) providers.Provider
	// Model returns a valid model for a gateway called name, with at least one port, in
	// whatever namespace and clusters the backend has. The suite may change its ports and labels.
	Model func(name string) *providers.LoadBalancer
	// Owned lists every resource in the backend that carries fleetgate's ownership labels/tags,
	// as id → version (resourceVersion, ETag, fingerprint; "" if the backend has none).
	Owned func(ctx context.Context) (map[string]string, error)
	// Settle plays the part of the world outside the provider (kubelets, cloud control
	// planes) so that lb's resources become ready and get addresses. Its writes must not be
	// counted by Mutations.
	Settle func(ctx context.Context, lb *providers.LoadBalancer) error
	// Observe reports what the backend holds for lb's front resource (the Service, the load
	// balancer): its ports and labels/tags.
	Observe func(ctx context.Context, lb *providers.LoadBalancer) (Observed, error)
	// Mutations counts the mutating calls every provider from New made so far, counted outside
	// the provider (a client wrapper counting Create/Update/Patch/Apply/Delete, a process
	// launcher counting starts). Required: idempotence is measured with it.
	Mutations func() int
	// Restart, when set, plays an operator's exit for resources that live only as long as the
	// provider instance that made them (the local provider's proxies are the operator's child
	// processes): it ends them as the exit would. The suite calls it before it uses a second
	// provider from New, and then lets the new provider make them again once.
	Restart func(t *testing.T)
	// ValidParameters and InvalidParameters are provider sections of a GatewayClassConfig that
	// Capabilities must accept and reject; each needs at least one entry.
	ValidParameters, InvalidParameters []json.RawMessage
}

// Observed is what Harness.Observe saw.
type Observed struct {
	Ports  []providers.Port
	Labels map[string]string
}

// Run runs the suite. Subtests run one after another and each leaves nothing owned behind.
func Run(t *testing.T, h Harness) {
	if h.New == nil || h.Model == nil || h.Owned == nil || h.Settle == nil || h.Observe == nil || h.Mutations == nil {
		t.Fatal("providertest: Harness needs New, Model, Owned, Settle, Observe and Mutations")
	}
	if len(h.ValidParameters) == 0 || len(h.InvalidParameters) == 0 {
		t.Fatal("providertest: Harness needs ValidParameters and InvalidParameters")
	}
	s := &suite{h: h}
	t.Run("EnsureCreatesAndReports", s.ensureCreates)
	t.Run("EnsureIsIdempotent", s.ensureIdempotent)
	t.Run("ModelChangesAreApplied", s.modelChanges)
	t.Run("DeleteRemovesEverything", s.deleteRemoves)
	t.Run("DeleteOfMissingIsFine", s.deleteMissing)
	t.Run("GatewaysDoNotInterfere", s.noInterference)
	t.Run("ListFindsWhatAnEarlierProviderMade", s.sweep)
	t.Run("ConcurrentEnsureOfDifferentGateways", s.concurrent)
	t.Run("InterruptedEnsureIsResumed", s.interrupted)
	t.Run("CapabilitiesArePure", s.capabilities)
}

type suite struct{ h Harness }

// changedLabel is the label modelChanges adds and removes again.
const changedLabel = "providertest.fleetgate.dev/changed"

func (s *suite) owned(t *testing.T) map[string]string {
	t.Helper()
	o, err := s.h.Owned(t.Context())
	if err != nil {
		t.Fatalf("listing owned resources: %v", err)
	}
	return o
}

func (s *suite) mutations() int { return s.h.Mutations() }

// restarted returns a new provider, after playing the old one's exit when the harness can.
func (s *suite) restarted(t *testing.T) providers.Provider {
	t.Helper()
	if s.h.Restart != nil {
		s.h.Restart(t)
	}
	return s.h.New(t)
}

func (s *suite) ensure(t *testing.T, p providers.Provider, lb *providers.LoadBalancer) providers.Status {
	t.Helper()
	st, err := p.Ensure(t.Context(), lb)
	if err != nil {
		t.Fatalf("Ensure(%s): %v", lb.Gateway, err)
	}
	return st
}

// ready ensures lb, settles the world, and ensures again until the provider reports ready.
func (s *suite) ready(t *testing.T, p providers.Provider, lb *providers.LoadBalancer) providers.Status {
	t.Helper()
	s.ensure(t, p, lb)
	if err := s.h.Settle(t.Context(), lb); err != nil {
		t.Fatalf("Settle(%s): %v", lb.Gateway, err)
	}
	st := s.ensure(t, p, lb)
	if !st.Ready {
		t.Fatalf("Ensure(%s) after Settle: not ready: %s: %s", lb.Gateway, st.Reason, st.Message)
	}
	return st
}

// cleanup deletes lbs at the end of the test and checks that nothing owned is left.
func (s *suite) cleanup(t *testing.T, p providers.Provider, lbs ...*providers.LoadBalancer) {
	t.Cleanup(func() {
		ctx := context.WithoutCancel(t.Context())
		for _, lb := range lbs {
			if err := p.Delete(ctx, lb); err != nil {
				t.Errorf("cleanup: Delete(%s): %v", lb.Gateway, err)
			}
		}
		if o, err := s.h.Owned(ctx); err != nil {
			t.Errorf("cleanup: listing owned resources: %v", err)
		} else if len(o) != 0 {
			t.Errorf("cleanup: resources left behind: %v", slices.Sorted(maps.Keys(o)))
		}
	})
}

func (s *suite) ensureCreates(t *testing.T) {
	p := s.h.New(t)
	lb := s.h.Model("create")
	s.cleanup(t, p, lb)

	st := s.ensure(t, p, lb)
	if len(s.owned(t)) == 0 {
		t.Fatal("Ensure created nothing that carries the ownership labels")
	}
	if !st.Ready && st.Reason == "" {
		t.Error("a not-ready Status needs a Reason")
	}
	st = s.ready(t, p, lb)
	if st.Reason != providers.ReasonProgrammed {
		t.Errorf("ready Status has Reason %q, want %q", st.Reason, providers.ReasonProgrammed)
	}
	checkAddresses(t, st.Addresses)
}

func checkAddresses(t *testing.T, as []providers.Address) {
	t.Helper()
	if len(as) == 0 {
		t.Error("a ready Status needs at least one address")
	}
	if d := cmp.Diff(providers.SortAddresses(slices.Clone(as)), as); d != "" {
		t.Errorf("addresses are not sorted and unique (-want +got):\n%s", d)
	}
	for _, a := range as {
		switch a.Type {
		case providers.AddressTypeIPAddress:
			if net.ParseIP(a.Value) == nil {
				t.Errorf("address %q of type IPAddress is not an IP", a.Value)
			}
		case providers.AddressTypeHostname:
			if a.Value == "" {
				t.Error("empty Hostname address")
			}
		default:
			t.Errorf("address %q has type %q", a.Value, a.Type)
		}
	}
}

func (s *suite) ensureIdempotent(t *testing.T) {
	p := s.h.New(t)
	lb := s.h.Model("idempotent")
	s.cleanup(t, p, lb)

	want := s.ready(t, p, lb)
	before, m := s.owned(t), s.mutations()
	for i := range 2 {
		got := s.ensure(t, p, lb)
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("Ensure #%d of an unchanged model changed the Status (-first +now):\n%s", i+3, d)
		}
	}
	if n := s.mutations() - m; n != 0 {
		t.Errorf("Ensure of an unchanged model made %d mutating calls, want 0", n)
	}
	if d := cmp.Diff(before, s.owned(t)); d != "" {
		t.Errorf("Ensure of an unchanged model changed resources (-before +after):\n%s", d)
	}
	// A fresh provider (an operator restart) must see the same world and change nothing either;
	// what died with the old one it makes again, once, in the same places.
	fresh := s.restarted(t)
	m = s.mutations()
	if got := s.ensure(t, fresh, lb); !cmp.Equal(want, got) {
		t.Errorf("a new provider reports %+v, the first reported %+v", got, want)
	}
	if s.h.Restart != nil {
		if d := cmp.Diff(slices.Sorted(maps.Keys(before)), slices.Sorted(maps.Keys(s.owned(t)))); d != "" {
			t.Errorf("a new provider changed what is owned (-before +after):\n%s", d)
		}
		m = s.mutations()
		s.ensure(t, fresh, lb)
	}
	if n := s.mutations() - m; n != 0 {
		t.Errorf("a new provider made %d mutating calls for an unchanged model, want 0", n)
	}
}

func (s *suite) modelChanges(t *testing.T) {
	p := s.h.New(t)
	lb := s.h.Model("change")
	s.cleanup(t, p, lb)
	s.ready(t, p, lb)

	changed := *lb
	top := slices.MaxFunc(lb.Ports, func(a, b providers.Port) int { return int(a.Port - b.Port) })
	changed.Ports = append(slices.Clone(lb.Ports), providers.Port{Port: top.Port + 1, Transport: providers.TransportTCP, Protocol: "TCP"})
	changed.Labels = maps.Clone(lb.Labels)
	if changed.Labels == nil {
		changed.Labels = map[string]string{}
	}
	changed.Labels[changedLabel] = "yes"
	s.checkObserved(t, p, &changed)

	// And back: the added port and label must go again.
	s.checkObserved(t, p, lb)
}

func (s *suite) checkObserved(t *testing.T, p providers.Provider, lb *providers.LoadBalancer) {
	t.Helper()
	s.ensure(t, p, lb)
	s.checkBackend(t, lb)
}

// checkBackend checks that the backend's front resource of lb has lb's ports and labels.
func (s *suite) checkBackend(t *testing.T, lb *providers.LoadBalancer) {
	t.Helper()
	o, err := s.h.Observe(t.Context(), lb)
	if err != nil {
		t.Fatalf("Observe(%s): %v", lb.Gateway, err)
	}
	if d := cmp.Diff(portSet(lb.Ports), portSet(o.Ports)); d != "" {
		t.Errorf("ports after Ensure (-model +backend):\n%s", d)
	}
	for k, v := range lb.Labels {
		if o.Labels[k] != v {
			t.Errorf("label %s=%q after Ensure, want %q", k, o.Labels[k], v)
		}
	}
	if _, inModel := lb.Labels[changedLabel]; !inModel {
		if _, ok := o.Labels[changedLabel]; ok {
			t.Errorf("label %s survived its removal from the model", changedLabel)
		}
	}
}

func portSet(ps []providers.Port) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		out = append(out, fmt.Sprintf("%d/%s", p.Port, p.Transport))
	}
	slices.Sort(out)
	return out
}

func (s *suite) deleteRemoves(t *testing.T) {
	p := s.h.New(t)
	lb := s.h.Model("delete")
	s.ready(t, p, lb)
	if err := p.Delete(t.Context(), lb); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if o := s.owned(t); len(o) != 0 {
		t.Errorf("Delete left %v", slices.Sorted(maps.Keys(o)))
	}
	if err := p.Delete(t.Context(), lb); err != nil {
		t.Errorf("second Delete: %v", err)
	}
	// Ensure after Delete recreates, and a new provider can delete what an old one made.
	s.ensure(t, p, lb)
	if err := s.restarted(t).Delete(t.Context(), lb); err != nil {
		t.Fatalf("Delete by a new provider: %v", err)
	}
	if o := s.owned(t); len(o) != 0 {
		t.Errorf("Delete by a new provider left %v", slices.Sorted(maps.Keys(o)))
	}
}

func (s *suite) deleteMissing(t *testing.T) {
	p := s.h.New(t)
	m := s.mutations()
	if err := p.Delete(t.Context(), s.h.Model("never-created")); err != nil {
		t.Errorf("Delete of a gateway that has no resources: %v", err)
	}
	if n := s.mutations() - m; n != 0 {
		t.Errorf("Delete of nothing made %d mutating calls", n)
	}
}

func (s *suite) noInterference(t *testing.T) {
	p := s.h.New(t)
	a, b := s.h.Model("first"), s.h.Model("second")
	s.cleanup(t, p, a, b)

	stA := s.ready(t, p, a)
	onlyA := s.owned(t)
	stB := s.ready(t, p, b)
	all := s.owned(t)
	if len(all) <= len(onlyA) {
		t.Fatalf("a second gateway added no resources: %v then %v", onlyA, all)
	}
	// Ensuring b must not have touched a's resources, nor changed a's status.
	for id, v := range onlyA {
		if all[id] != v {
			t.Errorf("Ensure of %s changed %s of %s", b.Gateway, id, a.Gateway)
		}
	}
	if got := s.ensure(t, p, a); !cmp.Equal(stA, got) {
		t.Errorf("status of %s changed after %s was added: %+v, was %+v", a.Gateway, b.Gateway, got, stA)
	}

	if err := p.Delete(t.Context(), a); err != nil {
		t.Fatalf("Delete(%s): %v", a.Gateway, err)
	}
	left := s.owned(t)
	wantLeft := maps.Clone(all)
	maps.DeleteFunc(wantLeft, func(id, _ string) bool { _, ok := onlyA[id]; return ok })
	if d := cmp.Diff(wantLeft, left); d != "" {
		t.Errorf("after Delete(%s), resources of %s (-want +got):\n%s", a.Gateway, b.Gateway, d)
	}
	if got := s.ensure(t, p, b); !cmp.Equal(stB, got) {
		t.Errorf("status of %s changed after %s was deleted: %+v, was %+v", b.Gateway, a.Gateway, got, stB)
	}
}
