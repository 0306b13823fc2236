package e2e

import (
	"fmt"
	"math"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	mcsv1a1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/controllers/translate"
	"github.com/fleetgate/fleetgate/tests/testbed"
)

const (
	weightA = 75
	weightB = 25
	// splitRequests is the sample size for the weighted split.
	splitRequests = 10000
)

// TestFleet runs the scenarios on one fleet (three API servers are the expensive part):
// a fleet gateway across hub and both members, a Cluster-scope class, and a member outage. member-b
// is reached only through config/member's ClusterRole, so every scenario also checks that role.
func TestFleet(t *testing.T) {
	f := newFleet(t, weightA, weightB)
	for _, c := range f.all {
		classes(t, c)
	}
	backend(t, f.a, 41, "a", "web")
	backend(t, f.b, 42, "b", "web")
	ctx := t.Context()
	must(t, f.a.Client.Create(ctx, route("ra", "gw", "a.example.com", service("web"))))
	must(t, f.b.Client.Create(ctx, route("rb", "gw", "b.example.com", service("web"))))
	must(t, f.hub.Client.Create(ctx, route("split", "gw", "split.example.com", serviceImport("web"))))

	var addr string
	t.Run("fleet gateway: one address in all three clusters", func(t *testing.T) {
		for _, c := range f.all {
			must(t, c.Client.Create(ctx, gateway("gw", "fleet")))
		}
		// Poll all three Gateways: from the moment one shows the address, every one must within 1s.
		var first time.Time
		got := map[string]string{}
		testbed.Eventually(t, 60*time.Second, func() error {
			for _, c := range f.all {
				if got[c.Name] != "" {
					continue
				}
				a, err := gatewayAddress(ctx, c, "gw")
				if err != nil {
					return err
				}
				if a != "" {
					got[c.Name] = a
					if first.IsZero() {
						first = time.Now()
					}
				}
			}
			if len(got) < len(f.all) {
				return fmt.Errorf("programmed addresses so far: %v", got)
			}
			return nil
		})
		spread := time.Since(first)
		t.Logf("address %s on all three Gateways %s after the first", got["hub"], spread.Round(time.Millisecond))
		if spread > time.Second {
			t.Errorf("address reached every Gateway %s after the first, want ≤ 1s", spread)
		}
		addr = got["hub"]
		for name, a := range got {
			if a != addr {
				t.Errorf("%s has address %s, hub %s: a fleet gateway has one address", name, a, addr)
			}
		}
	})
	if addr == "" {
		t.FailNow()
	}
	p := newProber(addr)

	t.Run("routes from both members serve traffic", func(t *testing.T) {
		p.serves(t, "a.example.com", "a", 20*time.Second)
		p.serves(t, "b.example.com", "b", 20*time.Second)
		routeAccepted(t, f.a, "ra", 10*time.Second)
		routeAccepted(t, f.b, "rb", 10*time.Second)
		// attachedRoutes counts the routes of every member, in every member.
		for _, c := range f.all {
			testbed.Eventually(t, 10*time.Second, func() error {
				var gw gwv1.Gateway
				if err := c.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "gw"}, &gw); err != nil {
					return err
				}
				if len(gw.Status.Listeners) != 1 || gw.Status.Listeners[0].AttachedRoutes != 3 {
					return fmt.Errorf("%s: listeners %+v, want attachedRoutes 3", c.Name, gw.Status.Listeners)
				}
				return nil
			})
		}
	})

	t.Run("ServiceImport created by fleetgate, exports valid", func(t *testing.T) {
		for _, c := range f.all {
			testbed.Eventually(t, 10*time.Second, func() error {
				var si mcsv1a1.ServiceImport
				if err := c.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "web"}, &si); err != nil {
					return err
				}
				if si.Spec.Type != mcsv1a1.ClusterSetIP || len(si.Spec.Ports) != 1 || si.Spec.Ports[0].Port != 80 || len(si.Status.Clusters) != 2 {
					return fmt.Errorf("%s: ServiceImport %+v", c.Name, si)
				}
				return nil
			})
		}
		for _, c := range []client.Client{f.a.Client, f.b.Client} {
			testbed.Eventually(t, 10*time.Second, func() error {
				var se mcsv1a1.ServiceExport
				if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "web"}, &se); err != nil {
					return err
				}
				if !meta.IsStatusConditionTrue(se.Status.Conditions, string(mcsv1a1.ServiceExportConditionValid)) ||
					!meta.IsStatusConditionFalse(se.Status.Conditions, string(mcsv1a1.ServiceExportConditionConflict)) {
					return fmt.Errorf("ServiceExport conditions %+v, want Valid and no Conflict", se.Status.Conditions)
				}
				return nil
			})
		}
	})

	t.Run("ServiceImport route splits by member weight", func(t *testing.T) {
		routeAccepted(t, f.hub, "split", 20*time.Second)
		p.serves(t, "split.example.com", "a", 10*time.Second)
		p.serves(t, "split.example.com", "b", 10*time.Second)
		start := time.Now()
		counts := p.spread("split.example.com", splitRequests, 16)
		took := time.Since(start)
		share := float64(counts["a"]) / float64(splitRequests)
		want := float64(weightA) / float64(weightA+weightB)
		t.Logf("%d requests in %s: a=%d b=%d failed=%d; a's share %.4f, want %.2f±0.02", splitRequests, took.Round(time.Millisecond), counts["a"], counts["b"], counts[""], share, want)
		if counts[""] != 0 {
			t.Errorf("%d requests failed", counts[""])
		}
		if math.Abs(share-want) > 0.02 {
			t.Errorf("a's share %.4f, want %.2f±0.02", share, want)
		}
	})

	t.Run("a route overrides the member weights", func(t *testing.T) {
		r := route("override", "gw", "override.example.com", serviceImport("web"))
		r.Annotations = map[string]string{translate.ClusterWeightsAnnotation: "member-a=1,member-b=3"}
		must(t, f.hub.Client.Create(ctx, r))
		defer func() { must(t, f.hub.Client.Delete(ctx, r)) }()
		routeAccepted(t, f.hub, "override", 20*time.Second)
		p.serves(t, "override.example.com", "a", 10*time.Second)
		p.serves(t, "override.example.com", "b", 10*time.Second)
		const n = 4000
		counts := p.spread("override.example.com", n, 16)
		share := float64(counts["a"]) / n
		t.Logf("%d requests: a=%d b=%d failed=%d; a's share %.4f, want 0.25±0.02 (members weigh %d:%d)", n, counts["a"], counts["b"], counts[""], share, weightA, weightB)
		if counts[""] != 0 {
			t.Errorf("%d requests failed", counts[""])
		}
		if math.Abs(share-0.25) > 0.02 {
			t.Errorf("a's share %.4f, want 0.25±0.02", share)
		}
	})

	t.Run("Cluster scope keeps gateways separate", func(t *testing.T) {
		must(t, f.hub.Client.Create(ctx, gateway("solo", "local")))
		must(t, f.a.Client.Create(ctx, gateway("solo", "local")))
		must(t, f.a.Client.Create(ctx, route("solo-a", "solo", "solo.example.com", service("web"))))
		addrs := map[string]string{}
		testbed.Eventually(t, 30*time.Second, func() error {
			for _, c := range f.all[:2] {
				a, err := gatewayAddress(ctx, c, "solo")
				if err != nil || a == "" {
					return fmt.Errorf("%s: solo not programmed yet (%v)", c.Name, err)
				}
				addrs[c.Name] = a
			}
			return nil
		})
		t.Logf("Cluster-scope addresses: %v (fleet gateway %s)", addrs, addr)
		if addrs["hub"] == addrs["member-a"] || addrs["hub"] == addr || addrs["member-a"] == addr {
			t.Fatalf("Cluster-scope gateways share an address: %v, fleet %s", addrs, addr)
		}
		newProber(addrs["member-a"]).serves(t, "solo.example.com", "a", 10*time.Second)
		if code, _, err := newProber(addrs["hub"]).get("solo.example.com"); err != nil || code != http.StatusNotFound {
			t.Errorf("hub's solo gateway answered solo.example.com with %d %v, want 404: the route is member-a's", code, err)
		}
		for c, want := range map[string]int32{"hub": 0, "member-a": 1} {
			cl := f.hub.Client
			if c == "member-a" {
				cl = f.a.Client
			}
			testbed.Eventually(t, 10*time.Second, func() error {
				var gw gwv1.Gateway
				if err := cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: "solo"}, &gw); err != nil {
					return err
				}
				if len(gw.Status.Listeners) != 1 || gw.Status.Listeners[0].AttachedRoutes != want {
					return fmt.Errorf("%s: solo listeners %+v, want attachedRoutes %d", c, gw.Status.Listeners, want)
				}
				return nil
			})
		}
		// The member-b Gateway of the fleet class is unaffected: still the fleet address.
		if a, _ := gatewayAddress(ctx, f.b, "gw"); a != addr {
			t.Errorf("member-b gw address %q, want %s", a, addr)
		}
	})

	t.Run("member outage: Ready=False, endpoints withdrawn, healthy member served, recovery", func(t *testing.T) {
		// Requests to member-a's backends run through the whole outage; none may fail.
		var sent, failed atomic.Int64
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					code, name, err := p.get("a.example.com")
					sent.Add(1)
					if err != nil || code != http.StatusOK || name != "a" {
						failed.Add(1)
					}
				}
			})
		}
		defer func() {
			close(stop)
			wg.Wait()
		}()

		must(t, f.b.StopAPIServer())
		down, cond := f.memberReady("member-b", metav1.ConditionFalse, 15*time.Second)
		t.Logf("member-b Ready=False %s after its API server stopped: %s: %s", down.Round(time.Millisecond), cond.Reason, cond.Message)
		if down > 10*time.Second {
			t.Errorf("Ready=False after %s, want ≤ 10s", down)
		}
		if cond.Reason != v1alpha1.MemberReasonUnreachable {
			t.Errorf("reason %s, want %s", cond.Reason, v1alpha1.MemberReasonUnreachable)
		}
		// Withdrawn: the split goes to a only, and member-b's route is gone with its cluster.
		start := time.Now()
		testbed.Eventually(t, 10*time.Second, func() error {
			counts := p.spread("split.example.com", 200, 4)
			if counts["a"] != 200 {
				return fmt.Errorf("split after the outage: %v, want all 200 from a", counts)
			}
			return nil
		})
		t.Logf("member-b's endpoints withdrawn %s after Ready=False", time.Since(start).Round(time.Millisecond))
		if code, _, err := p.get("b.example.com"); err != nil || code != http.StatusNotFound {
			t.Errorf("b.example.com during the outage: %d %v, want 404", code, err)
		}

		restart := time.Now()
		must(t, f.b.StartAPIServer())
		up, _ := f.memberReady("member-b", metav1.ConditionTrue, 60*time.Second)
		t.Logf("member-b Ready=True %s after its API server restarted (%s since the restart began)", up.Round(time.Millisecond), time.Since(restart).Round(time.Millisecond))
		p.serves(t, "b.example.com", "b", 20*time.Second)
		p.serves(t, "split.example.com", "b", 10*time.Second)
		routeAccepted(t, f.b, "rb", 10*time.Second)
		// The writer rewrites member-b's objects once it is back; its Gateway may come after its routes.
		testbed.Eventually(t, 10*time.Second, func() error {
			if a, _ := gatewayAddress(ctx, f.b, "gw"); a != addr {
				return fmt.Errorf("member-b gw address after recovery %q, want %s", a, addr)
			}
			return nil
		})
		close(stop)
		wg.Wait()
		stop = make(chan struct{})
		t.Logf("requests to member-a's backend during the outage and recovery: %d sent, %d failed", sent.Load(), failed.Load())
		if failed.Load() != 0 {
			t.Errorf("%d of %d requests to the healthy member failed", failed.Load(), sent.Load())
		}
	})
}
