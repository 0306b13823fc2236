package translate

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/controllers/snapshot"
)

// fleetSnapshot is the convergence benchmark's shape: one fleet Gateway in three members, a
// Service with one endpoint in each, and n HTTPRoutes spread over the members.
func fleetSnapshot(n int) *snapshot.Snapshot { return membersSnapshot(3, n) }

// membersSnapshot is fleetSnapshot over the hub and members-1 more clusters.
func membersSnapshot(members, n int) *snapshot.Snapshot {
	clusters := []string{"hub"}
	for i := 1; i < members; i++ {
		clusters = append(clusters, fmt.Sprintf("member-%d", i))
	}
	s := &snapshot.Snapshot{ClusterWeights: map[string]int32{}}
	for _, c := range clusters {
		s.ClusterWeights[c] = 100
		s.GatewayClasses = append(s.GatewayClasses, snapshot.Object[gwv1.GatewayClass]{Cluster: c, Obj: &gwv1.GatewayClass{
			ObjectMeta: metav1.ObjectMeta{Name: "fleet", Generation: 1, UID: types.UID("gc-" + c), ResourceVersion: "1"},
			Spec: gwv1.GatewayClassSpec{ControllerName: v1alpha1.ControllerName,
				ParametersRef: &gwv1.ParametersReference{Group: v1alpha1.Group, Kind: "GatewayClassConfig", Name: "fleet"}}}})
		s.ClassConfigs = append(s.ClassConfigs, snapshot.Object[v1alpha1.GatewayClassConfig]{Cluster: c, Obj: &v1alpha1.GatewayClassConfig{
			ObjectMeta: metav1.ObjectMeta{Name: "fleet", Generation: 1},
			Spec:       v1alpha1.GatewayClassConfigSpec{Provider: v1alpha1.ProviderInCluster, Scope: v1alpha1.ScopeFleet}}})
		s.Gateways = append(s.Gateways, snapshot.Object[gwv1.Gateway]{Cluster: c, Obj: &gwv1.Gateway{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "gw", Generation: 1, UID: types.UID("gw-" + c)},
			Spec:       gwv1.GatewaySpec{GatewayClassName: "fleet", Listeners: []gwv1.Listener{{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType}}}}})
		s.Namespaces = append(s.Namespaces, snapshot.Object[corev1.Namespace]{Cluster: c, Obj: &corev1.Namespace{
			ObjectMeta: metav1.ObjectMeta{Name: "default", UID: types.UID("ns-" + c), ResourceVersion: "1"}}})
		s.Services = append(s.Services, snapshot.Object[corev1.Service]{Cluster: c, Obj: &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: types.UID("svc-" + c), ResourceVersion: "1"},
			Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}})
		s.EndpointSlices = append(s.EndpointSlices, snapshot.Object[discoveryv1.EndpointSlice]{Cluster: c, Obj: &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: "default", Name: "web-1", UID: types.UID("eps-" + c), ResourceVersion: "1", Labels: map[string]string{discoveryv1.LabelServiceName: "web", discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](9080)}},
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"198.18.0.51"}}}}})
	}
	for i := range n {
		s.HTTPRoutes = append(s.HTTPRoutes, snapshot.Object[gwv1.HTTPRoute]{Cluster: clusters[i%len(clusters)], Obj: scaleRoute(i)})
	}
	return s.Sort()
}

func scaleRoute(i int) *gwv1.HTTPRoute {
	return &gwv1.HTTPRoute{
		// Created one second apart, as the convergence bench's routes are: the route added last is
		// the newest, which orders after every other.
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("r%d", i), Generation: 1,
			UID: types.UID(fmt.Sprintf("uid-%d", i)), ResourceVersion: fmt.Sprint(100 + i),
			CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Second))},
		Spec: gwv1.HTTPRouteSpec{
			CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "gw"}}},
			Hostnames:       []gwv1.Hostname{gwv1.Hostname(fmt.Sprintf("r%d.example.com", i))},
			Rules: []gwv1.HTTPRouteRule{{BackendRefs: []gwv1.HTTPBackendRef{{BackendRef: gwv1.BackendRef{
				BackendObjectReference: gwv1.BackendObjectReference{Name: "web", Port: ptr.To(gwv1.PortNumber(80))}}}}}},
		},
	}
}

// BenchmarkTranslateFleet3000 is one pass after one route was added, at the convergence
// benchmark's 3,000 routes, with compiled routes reused.
func BenchmarkTranslateFleet3000(b *testing.B) {
	benchPass(b, func(c *Memo, s *snapshot.Snapshot) { c.Translate(s) })
}

// BenchmarkBeginFleet3000 is the first stage alone: what a route's Accepted waits for.
func BenchmarkBeginFleet3000(b *testing.B) {
	benchPass(b, func(c *Memo, s *snapshot.Snapshot) { c.Begin(s) })
}

// BenchmarkTranslateFleet20k is BenchmarkTranslateFleet3000 at the target size: 20,000
// routes over ten member clusters.
func BenchmarkTranslateFleet20k(b *testing.B) {
	benchPassAt(b, 10, 20000, func(c *Memo, s *snapshot.Snapshot) { c.Translate(s) })
}

// BenchmarkBeginFleet20k is BenchmarkBeginFleet3000 at 20,000 routes over ten member clusters.
func BenchmarkBeginFleet20k(b *testing.B) {
	benchPassAt(b, 10, 20000, func(c *Memo, s *snapshot.Snapshot) { c.Begin(s) })
}

// benchPass times pass on snapshots of 3,000 and 3,001 routes in turn, after a first pass.
func benchPass(b *testing.B, pass func(*Memo, *snapshot.Snapshot)) { benchPassAt(b, 3, 3000, pass) }

// benchPassAt times pass on snapshots of n and n+1 routes over members clusters in turn, after
// a first pass: each pass sees one route added or removed. The two snapshots hold the same
// objects but the one route, as snapshots of informer caches do.
func benchPassAt(b *testing.B, members, n int, pass func(*Memo, *snapshot.Snapshot)) {
	more := *membersSnapshot(members, n+1)
	less := more
	less.HTTPRoutes = slices.DeleteFunc(slices.Clone(more.HTTPRoutes), func(o snapshot.Object[gwv1.HTTPRoute]) bool {
		return o.Obj.Name == fmt.Sprintf("r%d", n)
	})
	snaps := [2]*snapshot.Snapshot{&less, &more}
	c := NewMemo()
	c.Translate(snaps[0])
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		pass(c, snaps[(i+1)%2])
	}
}
