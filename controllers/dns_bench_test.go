package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	dnsv1a1 "sigs.k8s.io/external-dns/apis/v1alpha1"
	"sigs.k8s.io/external-dns/endpoint"

	"github.com/fleetgate/fleetgate/controllers/records"
)

// written counts the bytes of the objects a client creates and updates, as encoded to the API server.
type written struct{ bytes, writes int }

func (w *written) funcs() interceptor.Funcs {
	count := func(obj client.Object) {
		b, _ := json.Marshal(obj)
		w.bytes += len(b)
		w.writes++
	}
	return interceptor.Funcs{
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
// DNSEndpoints, comparing, writing) and the bytes it writes, against a fake client.
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
}
