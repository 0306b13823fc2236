package providertest

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/fleetgate/fleetgate/providers"
)

// listed is what List must report of lb: enough for Delete.
func listed(lb *providers.LoadBalancer) providers.LoadBalancer {
	return providers.LoadBalancer{
		Gateway: lb.Gateway, Namespace: lb.Namespace, Name: lb.Name, Provider: lb.Provider,
		Clusters: slices.Sorted(slices.Values(lb.Clusters)),
	}
}

func (s *suite) list(t *testing.T, p providers.Provider) []providers.LoadBalancer {
	t.Helper()
	got, err := p.List(t.Context())
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	out := make([]providers.LoadBalancer, 0, len(got))
	for _, lb := range got {
		out = append(out, listed(&lb))
		if !slices.IsSorted(lb.Clusters) {
			t.Errorf("List: clusters of %s are not sorted: %v", lb.Gateway, lb.Clusters)
		}
	}
	slices.SortFunc(out, func(a, b providers.LoadBalancer) int { return cmp.Compare(a.Gateway, b.Gateway) })
	return out
}

// sweep is the orphan sweep after a restart: a new provider finds, by labels/tags alone, every
// gateway an earlier one made (ready or not), and Delete of what it listed leaves nothing owned.
func (s *suite) sweep(t *testing.T) {
	p := s.h.New(t)
	a, b := s.h.Model("sweep-a"), s.h.Model("sweep-b")
	s.cleanup(t, p, a, b)
	s.ready(t, p, a)
	s.ensure(t, p, b)

	fresh := s.restarted(t)
	got := s.list(t, fresh)
	want := []providers.LoadBalancer{listed(a), listed(b)}
	slices.SortFunc(want, func(a, b providers.LoadBalancer) int { return cmp.Compare(a.Gateway, b.Gateway) })
	if d := gocmp.Diff(want, got); d != "" {
		t.Fatalf("List by a new provider (-want +got):\n%s", d)
	}
	for _, lb := range got {
		if err := fresh.Delete(t.Context(), &lb); err != nil {
			t.Fatalf("Delete(%s) of a listed entry: %v", lb.Gateway, err)
		}
	}
	if o := s.owned(t); len(o) != 0 {
		t.Errorf("Delete of every listed entry left %v", slices.Sorted(maps.Keys(o)))
	}
	if got := s.list(t, fresh); len(got) != 0 {
		t.Errorf("List after the sweep: %v", got)
	}
}

// readyErr is ready for goroutines: it reports instead of failing the test.
func (s *suite) readyErr(ctx context.Context, p providers.Provider, lb *providers.LoadBalancer) (providers.Status, error) {
	if _, err := p.Ensure(ctx, lb); err != nil {
		return providers.Status{}, fmt.Errorf("Ensure(%s): %w", lb.Gateway, err)
	}
	if err := s.h.Settle(ctx, lb); err != nil {
		return providers.Status{}, fmt.Errorf("Settle(%s): %w", lb.Gateway, err)
	}
	st, err := p.Ensure(ctx, lb)
	if err != nil {
		return providers.Status{}, fmt.Errorf("Ensure(%s) after Settle: %w", lb.Gateway, err)
	}
	return st, nil
}

// parallel runs f for every lb at once and returns its results in order.
func parallel[R any](lbs []*providers.LoadBalancer, f func(lb *providers.LoadBalancer) (R, error)) ([]R, []error) {
	rs, errs := make([]R, len(lbs)), make([]error, len(lbs))
	var wg sync.WaitGroup
	for i, lb := range lbs {
		wg.Go(func() { rs[i], errs[i] = f(lb) })
	}
	wg.Wait()
	return rs, errs
}

// concurrent is the provisioning engine's pattern: different gateways at once (run it under
// -race), each ending right, an unchanged second round writing nothing.
func (s *suite) concurrent(t *testing.T) {
	const n = 4
	p := s.h.New(t)
	lbs := make([]*providers.LoadBalancer, n)
	for i := range lbs {
		lbs[i] = s.h.Model(fmt.Sprintf("concurrent-%d", i))
	}
	s.cleanup(t, p, lbs...)
	ctx := t.Context()

	sts, errs := parallel(lbs, func(lb *providers.LoadBalancer) (providers.Status, error) { return s.readyErr(ctx, p, lb) })
	for i, lb := range lbs {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if !sts[i].Ready || sts[i].Reason != providers.ReasonProgrammed {
			t.Errorf("%s after concurrent Ensure: %+v, want ready", lb.Gateway, sts[i])
		}
		checkAddresses(t, sts[i].Addresses)
		s.checkBackend(t, lb)
	}

	m := s.mutations()
	again, errs := parallel(lbs, func(lb *providers.LoadBalancer) (providers.Status, error) { return p.Ensure(ctx, lb) })
	for i, lb := range lbs {
		if errs[i] != nil {
			t.Fatalf("second Ensure(%s): %v", lb.Gateway, errs[i])
		}
		if d := gocmp.Diff(sts[i], again[i]); d != "" {
			t.Errorf("second concurrent Ensure(%s) changed the Status (-first +second):\n%s", lb.Gateway, d)
		}
	}
	if d := s.mutations() - m; d != 0 {
		t.Errorf("a concurrent round of unchanged models made %d mutating calls, want 0", d)
	}

	_, errs = parallel(lbs, func(lb *providers.LoadBalancer) (struct{}, error) { return struct{}{}, p.Delete(ctx, lb) })
	for i, lb := range lbs {
		if errs[i] != nil {
			t.Errorf("concurrent Delete(%s): %v", lb.Gateway, errs[i])
		}
	}
	if o := s.owned(t); len(o) != 0 {
		t.Errorf("concurrent Delete left %v", slices.Sorted(maps.Keys(o)))
	}
}

// maxInterruptions bounds interrupted's steps: no provider needs this many writes for one gateway.
const maxInterruptions = 12

// interrupted cancels Ensure before it starts, then after its first, second, … mutating call
// (as a shutdown or a lost lease would), until an Ensure completes uninterrupted. After each
// interruption an Ensure with a live ctx must converge to the model and own exactly what an
// uninterrupted Ensure of it owns.
func (s *suite) interrupted(t *testing.T) {
	p := s.h.New(t)
	lb := s.h.Model("interrupted")
	s.cleanup(t, p, lb)

	for step := 0; step < maxInterruptions; step++ {
		cut := s.ensureCancelled(t, p, lb, step)

		s.ready(t, p, lb)
		s.checkBackend(t, lb)
		resumed := slices.Sorted(maps.Keys(s.owned(t)))
		if err := p.Delete(t.Context(), lb); err != nil {
			t.Fatalf("step %d: Delete: %v", step, err)
		}
		s.ready(t, p, lb)
		if d := gocmp.Diff(slices.Sorted(maps.Keys(s.owned(t))), resumed); d != "" {
			t.Errorf("step %d: owned after a resumed Ensure (-uninterrupted +resumed):\n%s", step, d)
		}
		if err := p.Delete(t.Context(), lb); err != nil {
			t.Fatalf("step %d: Delete: %v", step, err)
		}
		if o := s.owned(t); len(o) != 0 {
			t.Fatalf("step %d: Delete left %v", step, slices.Sorted(maps.Keys(o)))
		}
		if !cut {
			// Ensure finished before the cut: every point of it was interrupted once.
			t.Logf("Ensure was interrupted before it started and after each of its %d mutating calls", step-1)
			return
		}
	}
	t.Errorf("Ensure of one gateway made more than %d mutating calls", maxInterruptions)
}

// ensureCancelled runs Ensure(lb) with a ctx cancelled before the call (after == 0) or once
// `after` mutating calls were seen, and tells whether it cancelled before Ensure returned.
func (s *suite) ensureCancelled(t *testing.T, p providers.Provider, lb *providers.LoadBalancer, after int) bool {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	if after == 0 {
		cancel()
		_, _ = p.Ensure(ctx, lb) // an error or not: what counts is what the next Ensure makes of it
		return true
	}
	done := make(chan error, 1)
	m := s.mutations()
	go func() {
		_, err := p.Ensure(ctx, lb)
		done <- err
	}()
	tick := time.NewTicker(100 * time.Microsecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			if ctx.Err() == nil && err != nil {
				t.Fatalf("Ensure(%s), not interrupted: %v", lb.Gateway, err)
			}
			return ctx.Err() != nil
		case <-tick.C:
			if ctx.Err() == nil && s.mutations()-m >= after {
				cancel()
			}
		}
	}
}

// capabilities: Capabilities is pure, accepts the valid sections and rejects the invalid ones,
// the same way every time and for every provider instance.
func (s *suite) capabilities(t *testing.T) {
	p, q := s.h.New(t), s.h.New(t)
	m := s.mutations()
	for _, params := range s.h.ValidParameters {
		first, err := p.Capabilities(params)
		if err != nil {
			t.Errorf("Capabilities(%s): %v", params, err)
			continue
		}
		for _, again := range []providers.Provider{p, q} {
			got, err := again.Capabilities(params)
			if err != nil {
				t.Errorf("Capabilities(%s) a second time: %v", params, err)
			}
			if d := gocmp.Diff(first, got); d != "" {
				t.Errorf("Capabilities(%s) a second time (-first +second):\n%s", params, d)
			}
		}
	}
	for _, params := range s.h.InvalidParameters {
		for _, again := range []providers.Provider{p, p, q} {
			if _, err := again.Capabilities(params); err == nil {
				t.Errorf("Capabilities(%s) accepted invalid parameters", params)
			}
		}
	}
	if n := s.mutations() - m; n != 0 {
		t.Errorf("Capabilities made %d mutating calls", n)
	}
}
