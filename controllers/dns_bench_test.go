package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	dnsv1a1 "sigs.k8s.io/external-dns/apis/v1alpha1"
	"sigs.k8s.io/external-dns/endpoint"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/controllers/records"
	"github.com/fleetgate/fleetgate/controllers/snapshot"
	"github.com/fleetgate/fleetgate/controllers/translate"
)

// written counts the bytes of the objects a client creates and updates, as encoded to the API
// server, and of those it lists and gets, as encoded from it.
type written struct{ bytes, writes, read int }

func (w *written) funcs() interceptor.Funcs {
	count := func(obj client.Object) {
		b, _ := json.Marshal(obj)
		w.bytes += len(b)
		w.writes++
	}
	size := func(obj any) int {
		b, _ := json.Marshal(obj)
		return len(b)
	}
	return interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			err := c.List(ctx, list, opts...)
			w.read += size(list)
			return err
		},
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			err := c.Get(ctx, key, obj, opts...)
			w.read += size(obj)
			return err
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			count(obj)
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			count(obj)
			return c.Update(ctx, obj, opts...)
		},
	}
}

// benchOwner is one gateway with n names (r00000.example.com…), one A record each, plus extra.
func benchOwner(n int, extra ...string) records.Owner {
	o := records.Owner{Key: "hub/default/gw", Namespace: "default", Name: "gw", Clusters: []string{"hub"},
		Objects: []records.Object{{Cluster: "hub", Kind: "Gateway", Namespace: "default", Name: "gw", UID: "u1"}}}
	names := make([]string, 0, n+len(extra))
	for i := range n {
		names = append(names, fmt.Sprintf("r%05d.example.com", i))
	}
	names = append(names, extra...)
	for _, name := range names {
		o.Names = append(o.Names, name)
		o.Endpoints = append(o.Endpoints, endpoint.NewEndpoint(name, endpoint.RecordTypeA, "192.0.2.1"))
	}
	return o
}

// BenchmarkDNSRouteChange is one route change at 20,000 names: the publisher's work (listing the
// DNSEndpoints, comparing, writing) and the bytes it reads and writes, against a fake client.
func BenchmarkDNSRouteChange(b *testing.B) {
	scheme := runtime.NewScheme()
	if err := dnsv1a1.AddToScheme(scheme); err != nil {
		b.Fatal(err)
	}
	var w written
	cl := fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(w.funcs()).Build()
	p := newDNSPublisher(cl, cl, DNSOptions{Namespace: "fleetgate-system"}, nil, logr.Discard())
	desired := func(o records.Owner) *dnsDesired {
		return &dnsDesired{owners: []records.Owner{o}, clusters: []string{"hub"}, hubNamespaces: map[string]bool{"default": true}}
	}
	// One route more or less: a name in the middle of the others.
	without, with := desired(benchOwner(20000)), desired(benchOwner(20000, "zz-new.example.com"))
	ctx := context.Background()
	p.Set(without)
	if err := p.publish(ctx); err != nil {
		b.Fatal(err)
	}
	w = written{}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		d := with
		if i%2 == 1 {
			d = without
		}
		i++
		p.Set(d)
		if err := p.publish(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(w.bytes)/float64(i), "written-B/op")
	b.ReportMetric(float64(w.writes)/float64(i), "writes/op")
	b.ReportMetric(float64(w.read)/float64(i), "read-B/op")
}

// BenchmarkDeliveryPassDNS is the DNS part of a delivery pass (a proxy ACK: Programmed's Ready
// changed, nothing the records read) at 20,000 names: "skip" as publishDNS does it now, "build"
// the records.Memo.Build it ran before.
func BenchmarkDeliveryPassDNS(b *testing.B) {
	gw := &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "web", Generation: 1, UID: "u1"},
		Spec: gwv1.GatewaySpec{GatewayClassName: "fleetgate", Listeners: []gwv1.Listener{{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType}}}}
	route := &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "r", Generation: 1},
		Spec: gwv1.HTTPRouteSpec{CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "web"}}},
			Rules: []gwv1.HTTPRouteRule{{}}}}
	for _, n := range names(20000) {
		route.Spec.Hostnames = append(route.Spec.Hostnames, gwv1.Hostname(n))
	}
	snap := (&snapshot.Snapshot{
		GatewayClasses: []snapshot.Object[gwv1.GatewayClass]{{Cluster: "hub", Obj: &gwv1.GatewayClass{
			ObjectMeta: metav1.ObjectMeta{Name: "fleetgate", Generation: 1},
			Spec: gwv1.GatewayClassSpec{ControllerName: v1alpha1.ControllerName, ParametersRef: &gwv1.ParametersReference{
				Group: v1alpha1.Group, Kind: "GatewayClassConfig", Name: "default"}}}}},
		ClassConfigs: []snapshot.Object[v1alpha1.GatewayClassConfig]{{Cluster: "hub", Obj: &v1alpha1.GatewayClassConfig{
			ObjectMeta: metav1.ObjectMeta{Name: "default", Generation: 1},
			Spec:       v1alpha1.GatewayClassConfigSpec{Provider: v1alpha1.ProviderInCluster, Scope: v1alpha1.ScopeCluster}}}},
		Gateways:   []snapshot.Object[gwv1.Gateway]{{Cluster: "hub", Obj: gw}},
		HTTPRoutes: []snapshot.Object[gwv1.HTTPRoute]{{Cluster: "hub", Obj: route}},
	}).Sort()
	res := translate.Translate(snap)
	programmed := func(ready bool) map[string]translate.Programmed {
		return map[string]translate.Programmed{"hub/infra/web": {Ready: ready,
			Addresses: []gwv1.GatewayStatusAddress{{Type: ptr.To(gwv1.IPAddressType), Value: "192.0.2.1"}}}}
	}
	r := &GatewayReconciler{DNS: newDNSPublisher(nil, nil, DNSOptions{}, nil, logr.Discard())}
	r.publishDNS(snap, res, programmed(false))
	if n := len(r.DNS.desired.owners[0].Endpoints); n != 20000 {
		b.Fatalf("%d records, want 20000", n)
	}
	b.Run("skip", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			r.publishDNS(snap, res, programmed(i%2 == 0))
		}
	})
	b.Run("build", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r.records.Build(snap, res, programmed(true), nil)
		}
	})
}

// BenchmarkOwnerVerdict is the verdict of a gateway of 20,000 names that lost none, as every
// publication after a route change makes it.
func BenchmarkOwnerVerdict(b *testing.B) {
	o := benchOwner(20000)
	b.ReportAllocs()
	for b.Loop() {
		if v := ownerVerdict(&o); v.status != metav1.ConditionTrue {
			b.Fatalf("verdict %+v", v)
		}
	}
}
