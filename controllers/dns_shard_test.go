package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	dnsv1a1 "sigs.k8s.io/external-dns/apis/v1alpha1"
	"sigs.k8s.io/external-dns/endpoint"

	"github.com/fleetgate/fleetgate/controllers/records"
	"github.com/fleetgate/fleetgate/providers"
)

// names are n DNS names, r00000.example.com…
func names(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("r%05d.example.com", i)
	}
	return out
}

// plain is one A record per name.
func plain(names []string) []*endpoint.Endpoint {
	var out []*endpoint.Endpoint
	for _, n := range names {
		out = append(out, endpoint.NewEndpoint(n, endpoint.RecordTypeA, "192.0.2.1"))
	}
	return out
}

// checkShards fails unless shards hold exactly eps, in eps' order, each name in the shard of its
// hash, within b unless one name alone is over it.
func checkShards(t *testing.T, eps []*endpoint.Endpoint, shards [][]*endpoint.Endpoint, b dnsShardBounds) {
	t.Helper()
	k := len(shards)
	if k&(k-1) != 0 {
		t.Fatalf("%d shards: not a power of two", k)
	}
	var all []*endpoint.Endpoint
	for i, s := range shards {
		size, names := 0, map[string]bool{}
		for _, ep := range s {
			if got := int(nameHash(ep.DNSName) & uint32(k-1)); got != i {
				t.Errorf("%s in shard %d, its hash gives %d", ep.DNSName, i, got)
			}
			size += recordBytes(ep)
			names[ep.DNSName] = true
		}
		if (len(s) > b.records || size > b.bytes) && len(names) > 1 {
			t.Errorf("shard %d of %d: %d records, ~%d bytes: over %+v", i, k, len(s), size, b)
		}
		all = append(all, s...)
	}
	order := func(x, y *endpoint.Endpoint) int { return slices.Index(eps, x) - slices.Index(eps, y) }
	slices.SortStableFunc(all, order)
	if !slices.Equal(all, eps) {
		t.Errorf("the shards hold %d records, not the %d given", len(all), len(eps))
	}
	for _, s := range shards {
		if !slices.IsSortedFunc(s, order) {
			t.Errorf("a shard's records are not in the given order")
		}
	}
}

func TestShardEndpoints(t *testing.T) {
	weighted := func(n int) []*endpoint.Endpoint {
		var out []*endpoint.Endpoint
		for _, name := range names(n) {
			for _, set := range []string{"hub/default/gw", "member-a/default/gw"} {
				out = append(out,
					endpoint.NewEndpoint(name, endpoint.RecordTypeA, "192.0.2.1").WithSetIdentifier(set).WithProviderSpecific(records.WeightProperty, "100"),
					endpoint.NewEndpoint(name, endpoint.RecordTypeAAAA, "2001:db8::1").WithSetIdentifier(set).WithProviderSpecific(records.WeightProperty, "100"))
			}
		}
		return out
	}
	big := plain([]string{"big.example.com"})
	big = append(big, endpoint.NewEndpoint("big.example.com", endpoint.RecordTypeAAAA, "2001:db8::1"),
		endpoint.NewEndpoint("big.example.com", endpoint.RecordTypeTXT, "x"))
	tests := []struct {
		name   string
		eps    []*endpoint.Endpoint
		have   int
		bounds dnsShardBounds
		want   int // shards
	}{
		{"few records: one", plain(names(10)), 0, dnsShardBounds{1000, 256 << 10}, 1},
		{"at the records bound: one", plain(names(1000)), 1, dnsShardBounds{1000, 256 << 10}, 1},
		{"over the records bound", plain(names(1000)), 1, dnsShardBounds{400, 256 << 10}, 4},
		{"over the bytes bound", plain(names(1000)), 1, dnsShardBounds{1000, 30000}, 4},
		// merged into 4, shards would be over half full: 8 stay
		{"hysteresis: 8 stay", plain(names(1000)), 8, dnsShardBounds{400, 256 << 10}, 8},
		{"shrink from 64 while merged shards are at most half full", plain(names(1000)), 64, dnsShardBounds{400, 256 << 10}, 8},
		{"shrink to one", plain(names(10)), 5, dnsShardBounds{1000, 256 << 10}, 1},
		{"weighted records of a name stay together", weighted(500), 1, dnsShardBounds{800, 256 << 10}, 4},
		{"one name over the bound is not split", big, 1, dnsShardBounds{2, 256 << 10}, 4},
		{"no records", nil, 3, dnsShardBounds{1000, 256 << 10}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := shardEndpoints(tc.eps, tc.have, tc.bounds)
			if diff := cmp.Diff(tc.want, len(got)); diff != "" {
				t.Errorf("shards (-want +got):\n%s", diff)
			}
			checkShards(t, tc.eps, got, tc.bounds)
		})
	}
}

// TestShardOneChange: with the shard count unchanged, one name added or removed changes one shard
// and leaves every other as it was; a doubling splits each shard in two and moves nothing else.
func TestShardOneChange(t *testing.T) {
	b := dnsShardBounds{DefaultDNSShardRecords, DefaultDNSShardBytes}
	base := plain(names(5000))
	before := shardEndpoints(base, 1, b)
	added := append(slices.Clone(base[:2500]), append(plain([]string{"r02500-new.example.com"}), base[2500:]...)...)
	tests := []struct {
		name string
		eps  []*endpoint.Endpoint
	}{
		{"a name added", added},
		{"a name removed", slices.Delete(slices.Clone(base), 1234, 1235)},
		{"a name's target changed", append(slices.Clone(base[:4999]), endpoint.NewEndpoint(base[4999].DNSName, endpoint.RecordTypeA, "192.0.2.2"))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			after := shardEndpoints(tc.eps, len(before), b)
			if len(after) != len(before) {
				t.Fatalf("%d shards, were %d", len(after), len(before))
			}
			var changed []int
			for i := range after {
				if !sameRecords(before[i], after[i]) {
					changed = append(changed, i)
				}
			}
			if len(changed) != 1 {
				t.Errorf("shards %v of %d changed, want one", changed, len(after))
			}
		})
	}
	t.Run("doubling splits shards", func(t *testing.T) {
		k := len(before)
		after := shardEndpoints(base, 1, dnsShardBounds{b.records / 2, b.bytes})
		if len(after) != 2*k {
			t.Fatalf("%d shards with half the bound, want %d", len(after), 2*k)
		}
		for i, s := range after {
			for _, ep := range s {
				if !slices.Contains(before[i%k], ep) {
					t.Errorf("%s moved from shard %d to %d", ep.DNSName, slices.IndexFunc(before, func(s []*endpoint.Endpoint) bool { return slices.Contains(s, ep) }), i)
				}
			}
		}
	})
}

func TestShardIndex(t *testing.T) {
	const base = "fleetgate-web-0a1b2c3d"
	tests := []struct {
		name string
		want int
		ok   bool
	}{
		{base, 0, true},
		{shardName(base, 7), 7, true},
		{base + "-07", 0, false},
		{base + "-0", 0, false},
		{base + "-x", 0, false},
		{"fleetgate-web-other", 0, false},
	}
	for _, tc := range tests {
		i, ok := shardIndex(tc.name, base)
		if diff := cmp.Diff([2]any{tc.want, tc.ok}, [2]any{i, ok}); diff != "" {
			t.Errorf("shardIndex(%s) (-want +got):\n%s", tc.name, diff)
		}
	}
}

// writes counts a client's writes; ops lists them in order.
type writes struct {
	creates, updates, deletes int
	ops                       *[]string
}

func (w *writes) log(op string) {
	if w.ops != nil {
		*w.ops = append(*w.ops, op)
	}
}

// shardEnv is a publisher on a fake API server, the writes it makes and how many objects it reads
// in full (Get).
func shardEnv(t *testing.T) (*dnsPublisher, client.Client, *writes, *int) {
	t.Helper()
	gets := new(int)
	scheme := runtime.NewScheme()
	if err := dnsv1a1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	w := &writes{}
	cl := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&dnsv1a1.DNSEndpoint{}).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			w.creates++
			w.log("create")
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			w.updates++
			w.log("update")
			return c.Update(ctx, obj, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			w.deletes++
			w.log("delete")
			return c.Delete(ctx, obj, opts...)
		},
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			*gets++
			return c.Get(ctx, key, obj, opts...)
		},
	}).Build()
	p := newDNSPublisher(cl, cl, DNSOptions{Namespace: "fleetgate-system", ShardRecords: 1000}, nil, logr.Discard())
	return p, cl, w, gets
}

// shardsOf are the DNSEndpoints of the key, by namespace/name.
func shardsOf(t *testing.T, cl client.Client, key string) map[string]*dnsv1a1.DNSEndpoint {
	t.Helper()
	var list dnsv1a1.DNSEndpointList
	if err := cl.List(t.Context(), &list); err != nil {
		t.Fatal(err)
	}
	out := map[string]*dnsv1a1.DNSEndpoint{}
	for i := range list.Items {
		if list.Items[i].Annotations[providers.AnnotationGateway] == key {
			out[list.Items[i].Namespace+"/"+list.Items[i].Name] = &list.Items[i]
		}
	}
	return out
}

// recordNames are the names of the records of objs, sorted.
func recordNames(objs map[string]*dnsv1a1.DNSEndpoint) []string {
	var out []string
	for _, o := range objs {
		for _, ep := range o.Spec.Endpoints {
			out = append(out, ep.DNSName)
		}
	}
	slices.Sort(out)
	return out
}

// TestPublishShards: the publisher writes an owner's records to as many DNSEndpoints as they need,
// each with the owner's labels, annotations and owners; one name more rewrites one; the verdict
// waits for external-dns to read every one; fewer records delete the shards no longer needed; a
// moved namespace, a gateway without address, every name lost and a gone gateway act on all.
func TestPublishShards(t *testing.T) {
	p, cl, w, _ := shardEnv(t)
	ctx := t.Context()
	owner := func(n []string) records.Owner {
		o := benchOwner(0)
		o.Names, o.Endpoints = n, plain(n)
		return o
	}
	desired := func(ns map[string]bool, clusters []string, owners ...records.Owner) *dnsDesired {
		return &dnsDesired{owners: owners, clusters: clusters, hubNamespaces: ns}
	}
	hub := map[string]bool{"default": true}
	publish := func(d *dnsDesired) (writes, dnsVerdict) {
		t.Helper()
		*w = writes{}
		p.Set(d)
		if err := p.publish(ctx); err != nil {
			t.Fatal(err)
		}
		return *w, p.Verdicts()["hub/default/gw"]
	}
	all := names(3000)
	got, v := publish(desired(hub, []string{"hub"}, owner(all)))
	shards := shardsOf(t, cl, "hub/default/gw")
	base := dnsEndpointName(&records.Owner{Key: "hub/default/gw", Name: "gw"})
	if len(shards) < 4 || shards["default/"+base] == nil || got.creates != len(shards) {
		t.Fatalf("%d DNSEndpoints created (%d writes), want at least 4 (3000 records, 1000 a shard) with %s first", len(shards), got.creates, base)
	}
	for _, s := range shards {
		if len(s.Spec.Endpoints) > 1000 {
			t.Errorf("%s holds %d records", s.Name, len(s.Spec.Endpoints))
		}
		want := metav1.ObjectMeta{Namespace: "default", Name: s.Name,
			Labels:          map[string]string{providers.LabelManagedBy: providers.ManagedBy, providers.LabelGateway: providers.GatewayID("hub/default/gw")},
			Annotations:     map[string]string{providers.AnnotationGateway: "hub/default/gw", annotationDNSClusters: "hub"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "gateway.networking.k8s.io/v1", Kind: "Gateway", Name: "gw", UID: "u1"}}}
		gotMeta := metav1.ObjectMeta{Namespace: s.Namespace, Name: s.Name, Labels: s.Labels, Annotations: s.Annotations, OwnerReferences: s.OwnerReferences}
		if diff := cmp.Diff(want, gotMeta); diff != "" {
			t.Errorf("metadata (-want +got):\n%s", diff)
		}
	}
	if diff := cmp.Diff(all, recordNames(shards)); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}
	if want := fmt.Sprintf("in %d DNSEndpoints; external-dns has not read them yet", len(shards)); !strings.HasSuffix(v.message, want) {
		t.Errorf("verdict %q, want it to end with %q", v.message, want)
	}

	t.Run("external-dns has read them once it read every one", func(t *testing.T) {
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range shards {
				if !yield(k) {
					return
				}
			}
		})
		// The fake client keeps the generation it is given (the API server's would count).
		for _, k := range keys {
			s := shards[k]
			s.Generation = 2
			if err := cl.Update(ctx, s); err != nil {
				t.Fatal(err)
			}
			if k == keys[0] {
				continue
			}
			s.Status.ObservedGeneration = 2
			if err := cl.Status().Update(ctx, s); err != nil {
				t.Fatal(err)
			}
		}
		if _, v := publish(desired(hub, []string{"hub"}, owner(slices.Clone(all)))); !strings.HasSuffix(v.message, "not read them yet") {
			t.Errorf("verdict %q with one shard not read", v.message)
		}
		s := shards[keys[0]]
		s.Status.ObservedGeneration = 2
		if err := cl.Status().Update(ctx, s); err != nil {
			t.Fatal(err)
		}
		got, v := publish(desired(hub, []string{"hub"}, owner(all)))
		if !strings.HasSuffix(v.message, "external-dns has read them") || got != (writes{}) {
			t.Errorf("verdict %q after %+v, want read and no write", v.message, got)
		}
	})

	t.Run("one name more rewrites one shard", func(t *testing.T) {
		more := append(slices.Clone(all), "zz.example.com")
		got, _ := publish(desired(hub, []string{"hub"}, owner(more)))
		if diff := cmp.Diff(writes{updates: 1}, got, cmp.AllowUnexported(writes{})); diff != "" {
			t.Errorf("writes (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(more, recordNames(shardsOf(t, cl, "hub/default/gw"))); diff != "" {
			t.Errorf("records (-want +got):\n%s", diff)
		}
	})

	t.Run("an owner without address keeps every shard", func(t *testing.T) {
		o := owner(all)
		o.Endpoints, o.Unaddressed = nil, true
		got, v := publish(desired(hub, []string{"hub"}, o))
		if got != (writes{}) || v.message != "the gateway has no address; the 3001 records last published are kept" {
			t.Errorf("%+v, verdict %q", got, v.message)
		}
	})

	t.Run("a moved namespace: created in the new one, then deleted in the old", func(t *testing.T) {
		before := len(shardsOf(t, cl, "hub/default/gw"))
		got, _ := publish(desired(map[string]bool{}, []string{"hub"}, owner(all)))
		now := shardsOf(t, cl, "hub/default/gw")
		for k := range now {
			if !strings.HasPrefix(k, "fleetgate-system/") {
				t.Errorf("%s left in the old namespace", k)
			}
		}
		if diff := cmp.Diff(writes{creates: len(now), deletes: before}, got, cmp.AllowUnexported(writes{})); diff != "" {
			t.Errorf("writes (-want +got):\n%s", diff)
		}
		publish(desired(hub, []string{"hub"}, owner(all)))
	})

	t.Run("fewer records: the shards no longer needed go", func(t *testing.T) {
		few := names(10)
		got, _ := publish(desired(hub, []string{"hub"}, owner(few)))
		now := shardsOf(t, cl, "hub/default/gw")
		if len(now) != 1 || now["default/"+base] == nil || got.deletes < 3 {
			t.Errorf("%d DNSEndpoints after %+v, want only %s", len(now), got, base)
		}
		if diff := cmp.Diff(few, recordNames(now)); diff != "" {
			t.Errorf("records (-want +got):\n%s", diff)
		}
	})

	t.Run("every name held by an older owner: all go", func(t *testing.T) {
		publish(desired(hub, []string{"hub"}, owner(all)))
		o := owner(all)
		o.Endpoints = nil
		publish(desired(hub, []string{"hub"}, o))
		if now := shardsOf(t, cl, "hub/default/gw"); len(now) != 0 {
			t.Errorf("%d DNSEndpoints left", len(now))
		}
	})

	t.Run("a gone owner in a cluster not read keeps every shard, and its names are retained", func(t *testing.T) {
		publish(desired(hub, []string{"hub"}, owner(all)))
		n := len(shardsOf(t, cl, "hub/default/gw"))
		p.Set(desired(hub, nil))
		if err := p.publish(ctx); err != nil {
			t.Fatal(err)
		}
		if got := len(p.Retained()); got != len(all) || len(shardsOf(t, cl, "hub/default/gw")) != n {
			t.Errorf("%d names retained, want %d", got, len(all))
		}
		// Once the cluster is read the owner is gone: every shard is deleted.
		got, _ := publish(desired(hub, []string{"hub"}))
		if now := shardsOf(t, cl, "hub/default/gw"); len(now) != 0 || got.deletes != n {
			t.Errorf("%d DNSEndpoints left after %+v", len(now), got)
		}
	})
}

// TestPublishReadsChangedOnly: a pass reads in full only the DNSEndpoints changed since the
// publisher last read or wrote them, and still sees external-dns's stamp, a hand edit and a
// deletion; what it keeps of them shares the pipeline's records.
func TestPublishReadsChangedOnly(t *testing.T) {
	p, cl, w, gets := shardEnv(t)
	ctx := t.Context()
	o := benchOwner(3000)
	d := &dnsDesired{owners: []records.Owner{o}, clusters: []string{"hub"}, hubNamespaces: map[string]bool{"default": true}}
	pass := func() (writes, int, string) {
		t.Helper()
		*w, *gets = writes{}, 0
		p.Set(d)
		if err := p.publish(ctx); err != nil {
			t.Fatal(err)
		}
		return *w, *gets, p.Verdicts()["hub/default/gw"].message
	}
	pass()
	shards := shardsOf(t, cl, "hub/default/gw")
	first := shards["default/"+dnsEndpointName(&o)]
	type outcome struct {
		Writes writes
		Gets   int
		Read   bool
	}
	tests := []struct {
		name string
		edit func()
		want outcome
	}{
		// The fake client leaves generations 0: observedGeneration 0 reads as read.
		{"nothing changed: nothing read", func() {}, outcome{Read: true}},
		{"a new generation of one: it alone is read", func() {
			first.Generation = 3 // the fake client keeps what it is given
			if err := cl.Update(ctx, first); err != nil {
				t.Fatal(err)
			}
		}, outcome{Gets: 1}},
		{"external-dns stamped it: it alone is read", func() {
			first.Status.ObservedGeneration = 3
			if err := cl.Status().Update(ctx, first); err != nil {
				t.Fatal(err)
			}
		}, outcome{Gets: 1, Read: true}},
		{"a hand edit is read and undone", func() {
			var now dnsv1a1.DNSEndpoint
			if err := cl.Get(ctx, client.ObjectKeyFromObject(first), &now); err != nil {
				t.Fatal(err)
			}
			now.Spec.Endpoints = now.Spec.Endpoints[1:]
			if err := cl.Update(ctx, &now); err != nil {
				t.Fatal(err)
			}
		}, outcome{Writes: writes{updates: 1}, Gets: 1}},
		{"a deleted one is created again", func() {
			if err := cl.Delete(ctx, first); err != nil {
				t.Fatal(err)
			}
		}, outcome{Writes: writes{creates: 1}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.edit()
			w, gets, msg := pass()
			got := outcome{Writes: w, Gets: gets, Read: strings.HasSuffix(msg, "external-dns has read them")}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(writes{})); diff != "" {
				t.Errorf("pass (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(names(3000), recordNames(shardsOf(t, cl, "hub/default/gw"))); diff != "" {
				t.Errorf("records (-want +got):\n%s", diff)
			}
			// What it keeps of them holds the pipeline's records, not decoded copies (4.2 MB at 20k).
			ours := map[*endpoint.Endpoint]bool{}
			for _, ep := range o.Endpoints {
				ours[ep] = true
			}
			for key, obj := range p.seen {
				for _, ep := range obj.Spec.Endpoints {
					if !ours[ep] {
						t.Fatalf("%s keeps a copy of %s", key, ep.DNSName)
					}
				}
			}
		})
	}
}

// TestPublishShardOrder: as the shard count grows, the new shards are written before the ones the
// records leave are updated; as it shrinks, the updates go before the deletions: a record is
// always in some DNSEndpoint.
func TestPublishShardOrder(t *testing.T) {
	p, cl, w, _ := shardEnv(t)
	o := benchOwner(3000)
	d := &dnsDesired{owners: []records.Owner{o}, clusters: []string{"hub"}, hubNamespaces: map[string]bool{"default": true}}
	tests := []struct {
		name    string
		records int // bound
		want    []string
	}{
		{"one shard", 3000, []string{"create"}},
		{"grown to 4", 1000, []string{"create", "create", "create", "update"}},
		{"shrunk to 1", 6000, []string{"update", "delete", "delete", "delete"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var ops []string
			*w = writes{ops: &ops}
			p.o.ShardRecords, p.o.ShardBytes = tc.records, 1<<20
			p.Set(d)
			if err := p.publish(t.Context()); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, ops); diff != "" {
				t.Errorf("writes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(names(3000), recordNames(shardsOf(t, cl, "hub/default/gw"))); diff != "" {
				t.Errorf("records (-want +got):\n%s", diff)
			}
		})
	}
}
