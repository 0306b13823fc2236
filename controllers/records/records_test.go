package records

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/external-dns/endpoint"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/controllers/snapshot"
	"github.com/fleetgate/fleetgate/controllers/translate"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func meta(ns, name string, age int, ann map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1, UID: types.UID("uid-" + ns + "-" + name),
		CreationTimestamp: metav1.NewTime(epoch.Add(time.Duration(age) * time.Minute)), Annotations: ann}
}

// gateway is a Gateway of class fleetgate with one HTTP listener per hostname ("" for none) and
// the given infrastructure annotations.
func gateway(cluster, name string, age int, infra map[string]string, hosts ...string) snapshot.Object[gwv1.Gateway] {
	gw := &gwv1.Gateway{ObjectMeta: meta("infra", name, age, nil), Spec: gwv1.GatewaySpec{GatewayClassName: "fleetgate"}}
	for i, h := range hosts {
		l := gwv1.Listener{Name: gwv1.SectionName("l" + string(rune('a'+i))), Port: gwv1.PortNumber(80 + i), Protocol: gwv1.HTTPProtocolType}
		if h != "" {
			l.Hostname = ptr.To(gwv1.Hostname(h))
		}
		gw.Spec.Listeners = append(gw.Spec.Listeners, l)
	}
	if infra != nil {
		gw.Spec.Infrastructure = &gwv1.GatewayInfrastructure{Annotations: map[gwv1.AnnotationKey]gwv1.AnnotationValue{}}
		for k, v := range infra {
			gw.Spec.Infrastructure.Annotations[gwv1.AnnotationKey(k)] = gwv1.AnnotationValue(v)
		}
	}
	return snapshot.Object[gwv1.Gateway]{Cluster: cluster, Obj: gw}
}

func route(cluster, gw string, hosts ...string) snapshot.Object[gwv1.HTTPRoute] {
	r := &gwv1.HTTPRoute{ObjectMeta: meta("infra", "r-"+gw, 0, nil)}
	r.Spec.ParentRefs = []gwv1.ParentReference{{Name: gwv1.ObjectName(gw)}}
	for _, h := range hosts {
		r.Spec.Hostnames = append(r.Spec.Hostnames, gwv1.Hostname(h))
	}
	r.Spec.Rules = []gwv1.HTTPRouteRule{{}}
	return snapshot.Object[gwv1.HTTPRoute]{Cluster: cluster, Obj: r}
}

func base(weights map[string]int32) *snapshot.Snapshot {
	return &snapshot.Snapshot{
		ClusterWeights: weights,
		GatewayClasses: []snapshot.Object[gwv1.GatewayClass]{{Cluster: "hub", Obj: &gwv1.GatewayClass{
			ObjectMeta: metav1.ObjectMeta{Name: "fleetgate", Generation: 1},
			Spec: gwv1.GatewayClassSpec{ControllerName: v1alpha1.ControllerName, ParametersRef: &gwv1.ParametersReference{
				Group: "fleetgate.dev", Kind: "GatewayClassConfig", Name: "default"}}}}},
		ClassConfigs: []snapshot.Object[v1alpha1.GatewayClassConfig]{{Cluster: "hub", Obj: &v1alpha1.GatewayClassConfig{
			ObjectMeta: metav1.ObjectMeta{Name: "default", Generation: 1},
			Spec:       v1alpha1.GatewayClassConfigSpec{Provider: v1alpha1.ProviderInCluster, Scope: v1alpha1.ScopeCluster}}}},
	}
}

func ip(v string) gwv1.GatewayStatusAddress {
	return gwv1.GatewayStatusAddress{Type: ptr.To(gwv1.IPAddressType), Value: v}
}

func host(v string) gwv1.GatewayStatusAddress {
	return gwv1.GatewayStatusAddress{Type: ptr.To(gwv1.HostnameAddressType), Value: v}
}

func addressed(addrs ...gwv1.GatewayStatusAddress) translate.Programmed {
	return translate.Programmed{Ready: true, Addresses: addrs}
}

// published is an owner's outcome in a form cmp can show: records as "name type targets [set weight]".
type published struct {
	Names       []string
	Records     []string
	Conflicts   map[string]string
	Unaddressed bool
}

func summary(owners []Owner) map[string]published {
	out := map[string]published{}
	for _, o := range owners {
		p := published{Names: o.Names, Conflicts: o.Conflicts, Unaddressed: o.Unaddressed}
		for _, ep := range o.Endpoints {
			s := ep.DNSName + " " + ep.RecordType + " " + ep.Targets.String()
			if ep.SetIdentifier != "" {
				w, _ := ep.GetProviderSpecificProperty(WeightProperty)
				s += " set=" + ep.SetIdentifier + " weight=" + w
			}
			p.Records = append(p.Records, s)
		}
		out[o.Key] = p
	}
	return out
}

func TestBuild(t *testing.T) {
	tests := []struct {
		name       string
		snap       func(s *snapshot.Snapshot)
		weights    map[string]int32
		programmed map[string]translate.Programmed
		retained   map[string][]Retained
		want       map[string]published
	}{{
		name: "listener hostnames and route hostnames within them get A records",
		snap: func(s *snapshot.Snapshot) {
			s.Gateways = append(s.Gateways, gateway("hub", "web", 0, nil, "www.example.com", "*.apps.example.com"))
			s.HTTPRoutes = append(s.HTTPRoutes, route("hub", "web", "a.apps.example.com", "other.example.net"))
		},
		programmed: map[string]translate.Programmed{"hub/infra/web": addressed(ip("192.0.2.10"), ip("2001:db8::1"), ip("192.0.2.9"))},
		want: map[string]published{"hub/infra/web": {
			Names: []string{"*.apps.example.com", "a.apps.example.com", "www.example.com"},
			Records: []string{
				"*.apps.example.com A 192.0.2.10;192.0.2.9", "*.apps.example.com AAAA 2001:db8::1",
				"a.apps.example.com A 192.0.2.10;192.0.2.9", "a.apps.example.com AAAA 2001:db8::1",
				"www.example.com A 192.0.2.10;192.0.2.9", "www.example.com AAAA 2001:db8::1",
			},
		}},
	}, {
		name: "a load balancer's DNS name gets a CNAME; a listener without hostname takes the route's",
		snap: func(s *snapshot.Snapshot) {
			s.Gateways = append(s.Gateways, gateway("hub", "alb", 0, nil, ""))
			s.HTTPRoutes = append(s.HTTPRoutes, route("hub", "alb", "Shop.Example.com."))
		},
		programmed: map[string]translate.Programmed{"hub/infra/alb": addressed(host("alb-1.us-east-1.elb.amazonaws.com"))},
		want: map[string]published{"hub/infra/alb": {
			Names:   []string{"shop.example.com"},
			Records: []string{"shop.example.com CNAME alb-1.us-east-1.elb.amazonaws.com"},
		}},
	}, {
		name: "a gateway without an address yet publishes nothing and says so",
		snap: func(s *snapshot.Snapshot) {
			s.Gateways = append(s.Gateways, gateway("hub", "web", 0, nil, "www.example.com"))
		},
		programmed: map[string]translate.Programmed{"hub/infra/web": {Reason: "Pending"}},
		want:       map[string]published{"hub/infra/web": {Names: []string{"www.example.com"}, Unaddressed: true}},
	}, {
		name: "a gateway without any hostname has no owner",
		snap: func(s *snapshot.Snapshot) {
			s.Gateways = append(s.Gateways, gateway("hub", "web", 0, nil, ""))
		},
		programmed: map[string]translate.Programmed{"hub/infra/web": addressed(ip("192.0.2.10"))},
		want:       map[string]published{},
	}, {
		name:    "per-cluster copies of one gateway share the name as weighted records: MemberCluster weight × gateway weight",
		weights: map[string]int32{"hub": 100, "member-a": 30},
		snap: func(s *snapshot.Snapshot) {
			s.Gateways = append(s.Gateways,
				gateway("hub", "web", 0, map[string]string{AnnotationWeight: "2"}, "www.example.com"),
				gateway("member-a", "web", 5, nil, "www.example.com"))
		},
		programmed: map[string]translate.Programmed{
			"hub/infra/web":      addressed(host("alb-1.us-east-1.elb.amazonaws.com")),
			"member-a/infra/web": addressed(ip("198.51.100.7")),
		},
		want: map[string]published{
			"hub/infra/web": {Names: []string{"www.example.com"},
				Records: []string{"www.example.com CNAME alb-1.us-east-1.elb.amazonaws.com set=hub/infra/web weight=200"}},
			"member-a/infra/web": {Names: []string{"www.example.com"},
				Records: []string{"www.example.com A 198.51.100.7 set=member-a/infra/web weight=30"}},
		},
	}, {
		name: "two differently named gateways on one name without weights: the older wins",
		snap: func(s *snapshot.Snapshot) {
			s.Gateways = append(s.Gateways,
				gateway("hub", "young", 10, nil, "www.example.com", "young.example.com"),
				gateway("hub", "old", 0, nil, "www.example.com"))
		},
		programmed: map[string]translate.Programmed{
			"hub/infra/young": addressed(ip("192.0.2.2")),
			"hub/infra/old":   addressed(ip("192.0.2.1")),
		},
		want: map[string]published{
			"hub/infra/old": {Names: []string{"www.example.com"}, Records: []string{"www.example.com A 192.0.2.1"}},
			"hub/infra/young": {Names: []string{"www.example.com", "young.example.com"},
				Records:   []string{"young.example.com A 192.0.2.2"},
				Conflicts: map[string]string{"www.example.com": "hub/infra/old"}},
		},
	}, {
		name: "differently named gateways that both set a weight share the name",
		snap: func(s *snapshot.Snapshot) {
			s.Gateways = append(s.Gateways,
				gateway("hub", "aws", 0, map[string]string{AnnotationWeight: "3"}, "www.example.com"),
				gateway("hub", "gcp", 1, map[string]string{AnnotationWeight: "1"}, "www.example.com"))
		},
		programmed: map[string]translate.Programmed{
			"hub/infra/aws": addressed(host("alb-1.us-east-1.elb.amazonaws.com")),
			"hub/infra/gcp": addressed(host("gcp.example.net")),
		},
		want: map[string]published{
			"hub/infra/aws": {Names: []string{"www.example.com"},
				Records: []string{"www.example.com CNAME alb-1.us-east-1.elb.amazonaws.com set=hub/infra/aws weight=300"}},
			"hub/infra/gcp": {Names: []string{"www.example.com"},
				Records: []string{"www.example.com CNAME gcp.example.net set=hub/infra/gcp weight=100"}},
		},
	}, {
		name: "a weighted record kept for an unreachable member keeps the remaining copy weighted",
		snap: func(s *snapshot.Snapshot) {
			s.Gateways = append(s.Gateways, gateway("hub", "web", 0, nil, "www.example.com", "only.example.com"))
		},
		programmed: map[string]translate.Programmed{"hub/infra/web": addressed(ip("192.0.2.1"))},
		retained:   map[string][]Retained{"www.example.com": {{Key: "member-a/infra/web", Weighted: true}}},
		want: map[string]published{"hub/infra/web": {Names: []string{"only.example.com", "www.example.com"},
			Records: []string{"only.example.com A 192.0.2.1", "www.example.com A 192.0.2.1 set=hub/infra/web weight=100"}}},
	}, {
		name: "a plain record kept for an unreachable member keeps its name",
		snap: func(s *snapshot.Snapshot) {
			s.Gateways = append(s.Gateways, gateway("hub", "web", 0, nil, "www.example.com", "only.example.com"))
		},
		programmed: map[string]translate.Programmed{"hub/infra/web": addressed(ip("192.0.2.1"))},
		retained:   map[string][]Retained{"www.example.com": {{Key: "member-a/infra/old"}}},
		want: map[string]published{"hub/infra/web": {Names: []string{"only.example.com", "www.example.com"},
			Records:   []string{"only.example.com A 192.0.2.1"},
			Conflicts: map[string]string{"www.example.com": "member-a/infra/old"}}},
	}, {
		name: "a LoadBalancer Service with external-dns's hostname annotation, and an Ingress's hosts",
		snap: func(s *snapshot.Snapshot) {
			s.Services = append(s.Services, snapshot.Object[corev1.Service]{Cluster: "hub", Obj: &corev1.Service{
				ObjectMeta: meta("infra", "db", 0, map[string]string{AnnotationHostname: "db.example.com, db2.example.com"}),
				Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, LoadBalancerClass: ptr.To(v1alpha1.LoadBalancerClassInCluster),
					Ports: []corev1.ServicePort{{Port: 5432, Protocol: corev1.ProtocolTCP}}}}})
			s.IngressClasses = append(s.IngressClasses, snapshot.Object[networkingv1.IngressClass]{Cluster: "hub", Obj: &networkingv1.IngressClass{
				ObjectMeta: metav1.ObjectMeta{Name: "fleetgate"}, Spec: networkingv1.IngressClassSpec{Controller: v1alpha1.IngressControllerName}}})
			s.Ingresses = append(s.Ingresses, snapshot.Object[networkingv1.Ingress]{Cluster: "hub", Obj: &networkingv1.Ingress{
				ObjectMeta: meta("infra", "shop", 0, nil),
				Spec: networkingv1.IngressSpec{IngressClassName: ptr.To("fleetgate"), Rules: []networkingv1.IngressRule{
					{Host: "shop.example.com", IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
						Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: ptr.To(networkingv1.PathTypePrefix),
							Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "shop",
								Port: networkingv1.ServiceBackendPort{Number: 80}}}}}}}}}}}})
		},
		programmed: map[string]translate.Programmed{
			"hub/service:infra/db":  addressed(ip("192.0.2.5")),
			"hub/ingress:fleetgate": addressed(ip("192.0.2.6")),
		},
		want: map[string]published{
			"hub/service:infra/db": {Names: []string{"db.example.com", "db2.example.com"},
				Records: []string{"db.example.com A 192.0.2.5", "db2.example.com A 192.0.2.5"}},
			"hub/ingress:fleetgate": {Names: []string{"shop.example.com"}, Records: []string{"shop.example.com A 192.0.2.6"}},
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			weights := tc.weights
			if weights == nil {
				weights = map[string]int32{"hub": v1alpha1.DefaultClusterWeight}
			}
			s := base(weights)
			tc.snap(s)
			s = s.Sort()
			res := translate.Translate(s)
			got := summary(Build(s, res, tc.programmed, tc.retained))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("owners (-want +got):\n%s", diff)
			}
		})
	}
}

// TestBuildIsDeterministic: the records do not depend on the order of the snapshot's objects,
// so that an unchanged fleet never rewrites a DNSEndpoint.
func TestBuildIsDeterministic(t *testing.T) {
	mk := func(order []int) []Owner {
		s := base(map[string]int32{"hub": 100, "member-a": 50})
		gws := []snapshot.Object[gwv1.Gateway]{
			gateway("hub", "web", 0, nil, "www.example.com"),
			gateway("member-a", "web", 0, nil, "www.example.com"),
		}
		for _, i := range order {
			s.Gateways = append(s.Gateways, gws[i])
		}
		s = s.Sort()
		return Build(s, translate.Translate(s), map[string]translate.Programmed{
			"hub/infra/web": addressed(ip("192.0.2.1")), "member-a/infra/web": addressed(ip("192.0.2.2"))}, nil)
	}
	a, b := mk([]int{0, 1}), mk([]int{1, 0})
	if diff := cmp.Diff(summary(a), summary(b)); diff != "" {
		t.Errorf("order changed the owners (-a +b):\n%s", diff)
	}
	// Same creation time: the smaller key is the older, and both share by identity.
	if got := len(a[0].Endpoints) + len(a[1].Endpoints); got != 2 || a[0].Endpoints[0].SetIdentifier == "" {
		t.Errorf("want one weighted record per copy, got %v %v", a[0].Endpoints, a[1].Endpoints)
	}
}

// BenchmarkBuild: the records of 1000 per-cluster gateways in two members, every name shared by
// the two copies of its Gateway, as each pass and each apply verdict computes them.
func BenchmarkBuild(b *testing.B) {
	s := base(map[string]int32{"hub": 100, "member-a": 50})
	programmed := map[string]translate.Programmed{}
	for i := range 500 {
		name := "gw" + strconv.Itoa(i)
		for j, cluster := range []string{"hub", "member-a"} {
			s.Gateways = append(s.Gateways, gateway(cluster, name, i, nil, name+".example.com"))
			programmed[cluster+"/infra/"+name] = addressed(ip("192.0.2." + strconv.Itoa(j+1)))
		}
	}
	s = s.Sort()
	res := translate.Translate(s)
	b.ReportAllocs()
	for b.Loop() {
		if owners := Build(s, res, programmed, nil); len(owners) != 1000 {
			b.Fatalf("%d owners, want 1000", len(owners))
		}
	}
}

// TestEqualSeesEveryField: Owner.Equal names every field of Owner and of the records it compares;
// a field added to either must be added there too (and counted here).
func TestEqualSeesEveryField(t *testing.T) {
	for _, tc := range []struct {
		typ  reflect.Type
		want int
	}{{reflect.TypeFor[Owner](), 10}, {reflect.TypeFor[endpoint.Endpoint](), 8}} {
		if got := tc.typ.NumField(); got != tc.want {
			t.Errorf("%s has %d fields, Owner.Equal knows %d: compare the new ones there", tc.typ, got, tc.want)
		}
	}
}

// BenchmarkBuildManyNames is one gateway serving 20,000 hostnames in two members, as every pass
// builds it at the target size.
func BenchmarkBuildManyNames(b *testing.B) {
	s := base(map[string]int32{"hub": 100, "member-a": 50})
	hosts := make([]string, 20000)
	for i := range hosts {
		hosts[i] = "r" + strconv.Itoa(i) + ".example.com"
	}
	programmed := map[string]translate.Programmed{}
	for j, cluster := range []string{"hub", "member-a"} {
		s.Gateways = append(s.Gateways, gateway(cluster, "web", 1, nil, ""))
		s.HTTPRoutes = append(s.HTTPRoutes, route(cluster, "web", hosts...))
		programmed[cluster+"/infra/web"] = addressed(ip("192.0.2." + strconv.Itoa(j+1)))
	}
	s = s.Sort()
	res := translate.Translate(s)
	b.ReportAllocs()
	for b.Loop() {
		owners := Build(s, res, programmed, nil)
		if n := len(owners); n != 2 || len(owners[0].Endpoints) != 20000 {
			b.Fatalf("%d owners, want 2 with 20000 records each", n)
		}
	}
}

// TestMemoMatchesBuild: a Memo's owners equal Build's through a run of changes, and reuse the
// records of the call before exactly where they are the same.
func TestMemoMatchesBuild(t *testing.T) {
	type state struct {
		hosts   []string
		addrB   string
		weightB int32
	}
	inputs := func(st state) (*snapshot.Snapshot, *translate.Result, map[string]translate.Programmed) {
		s := base(map[string]int32{"hub": 100, "member-a": st.weightB})
		programmed := map[string]translate.Programmed{}
		for cluster, addr := range map[string]string{"hub": "192.0.2.1", "member-a": st.addrB} {
			s.Gateways = append(s.Gateways, gateway(cluster, "web", 1, nil, ""))
			s.HTTPRoutes = append(s.HTTPRoutes, route(cluster, "web", st.hosts...))
			programmed[cluster+"/infra/web"] = addressed(ip(addr))
		}
		s = s.Sort()
		return s, translate.Translate(s), programmed
	}
	abc := []string{"a.example.com", "b.example.com", "c.example.com"}
	m := &Memo{}
	var last []Owner
	for _, step := range []struct {
		name   string
		st     state
		reused int // records of the call before handed on
	}{
		{"first", state{abc, "192.0.2.2", 50}, 0},
		{"same", state{abc, "192.0.2.2", 50}, 6},
		{"a name added", state{append(slices.Clone(abc), "d.example.com"), "192.0.2.2", 50}, 6},
		{"a name gone", state{[]string{"a.example.com", "c.example.com", "d.example.com"}, "192.0.2.2", 50}, 6},
		{"one member's address", state{[]string{"a.example.com", "c.example.com", "d.example.com"}, "192.0.2.3", 50}, 3},
		{"one member's weight", state{[]string{"a.example.com", "c.example.com", "d.example.com"}, "192.0.2.3", 60}, 3},
	} {
		s, res, programmed := inputs(step.st)
		want := Build(s, res, programmed, nil)
		got := m.Build(s, res, programmed, nil)
		if diff := cmp.Diff(summary(want), summary(got)); diff != "" {
			t.Fatalf("%s: Memo.Build differs from Build (-Build +Memo.Build):\n%s", step.name, diff)
		}
		for i := range got {
			if !got[i].Equal(&want[i]) {
				t.Errorf("%s: owner %s differs from Build's", step.name, got[i].Key)
			}
		}
		before := map[*endpoint.Endpoint]bool{}
		for _, o := range last {
			for _, ep := range o.Endpoints {
				before[ep] = true
			}
		}
		reused := 0
		for _, o := range got {
			for _, ep := range o.Endpoints {
				if before[ep] {
					reused++
				}
			}
		}
		if reused != step.reused {
			t.Errorf("%s: %d records reused, want %d", step.name, reused, step.reused)
		}
		last = got
	}
}

// BenchmarkMemoBuildManyNames is BenchmarkBuildManyNames through a Memo, each call seeing one name
// added or removed, as passes after one route change do.
func BenchmarkMemoBuildManyNames(b *testing.B) {
	var results [2]*translate.Result
	var s *snapshot.Snapshot
	programmed := map[string]translate.Programmed{}
	for k := range results {
		s = base(map[string]int32{"hub": 100, "member-a": 50})
		hosts := make([]string, 20000+k)
		for i := range hosts {
			hosts[i] = "r" + strconv.Itoa(i) + ".example.com"
		}
		for j, cluster := range []string{"hub", "member-a"} {
			s.Gateways = append(s.Gateways, gateway(cluster, "web", 1, nil, ""))
			s.HTTPRoutes = append(s.HTTPRoutes, route(cluster, "web", hosts...))
			programmed[cluster+"/infra/web"] = addressed(ip("192.0.2." + strconv.Itoa(j+1)))
		}
		s = s.Sort()
		results[k] = translate.Translate(s)
	}
	m := &Memo{}
	m.Build(s, results[0], programmed, nil)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		if owners := m.Build(s, results[i%2], programmed, nil); len(owners) != 2 || len(owners[0].Endpoints) != 20000+i%2 {
			b.Fatalf("%d owners, want 2 with %d records each", len(owners), 20000+i%2)
		}
	}
}

// TestSortRuns: names in sorted runs, in no order, and none come out sorted.
func TestSortRuns(t *testing.T) {
	many := make([]string, 200)
	for i := range many {
		many[i] = strconv.Itoa((i * 7919) % 200) // 200 values in no order: too many runs to merge
	}
	for name, in := range map[string][]string{
		"none":     nil,
		"one":      {"a"},
		"sorted":   {"a", "b", "c"},
		"runs":     {"d.x", "e.x", "a.xy", "c.xy", "b", "z"},
		"reversed": {"c", "b", "a"},
		"repeats":  {"b", "b", "a", "a"},
		"7 runs":   {"m", "n", "c", "d", "x", "a", "q", "r", "b", "e", "z", "f", "g", "h", "k"},
		"no order": many,
	} {
		want := slices.Sorted(slices.Values(in))
		if diff := cmp.Diff(want, sortRuns(slices.Clone(in)), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
}

// FuzzHostname: the one-scan path gives what trimming and lowering give, for any name.
func FuzzHostname(f *testing.F) {
	for _, s := range []string{"", "*", "a.example.com", "A.Example.COM.", " a.b ", "*.x.y", "a.", "é.x", "a\tb", "ǅ.x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		want := strings.ToLower(strings.TrimSuffix(strings.TrimSpace(h), "."))
		if want == "*" {
			want = ""
		}
		if got := hostname(h); got != want {
			t.Errorf("hostname(%q) = %q, want %q", h, got, want)
		}
	})
}

// spliceWorld is a gateway's world that TestMemoSpliceMatchesBuild changes step by step: routes
// (objects kept between snapshots, as informer caches keep them), listeners, addresses, a second
// gateway, retained records.
type spliceWorld struct {
	routes    []*gwv1.HTTPRoute
	next      int
	listeners int // which of the listener sets below: a second listener without hostname repeats every name
	fixed     string
	second    bool // a second gateway (two owners), for one pass
	addr      string
	retained  map[string][]Retained // for one pass
}

func (w *spliceWorld) route(r *rand.Rand, pool []string) *gwv1.HTTPRoute {
	w.next++
	rt := &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "r" + strconv.Itoa(w.next), Generation: 1,
		UID: types.UID("uid-r" + strconv.Itoa(w.next)), ResourceVersion: strconv.Itoa(w.next),
		CreationTimestamp: metav1.NewTime(epoch.Add(time.Duration(w.next) * time.Second))}}
	rt.Spec.ParentRefs = []gwv1.ParentReference{{Name: "web"}}
	for range 1 + r.IntN(3) {
		rt.Spec.Hostnames = append(rt.Spec.Hostnames, gwv1.Hostname(pool[r.IntN(len(pool))]))
	}
	rt.Spec.Rules = []gwv1.HTTPRouteRule{{}}
	return rt
}

func (w *spliceWorld) snapshot() (*snapshot.Snapshot, map[string]translate.Programmed) {
	s := base(nil)
	hosts := [][]string{{""}, {"", ""}, {"", w.fixed}, {"", "", w.fixed}}[w.listeners]
	gw := gateway("hub", "web", 0, nil, hosts...)
	gw.Obj.Generation = int64(w.listeners*10 + len(w.fixed)) // as the API server does: the translate.Memo compares them
	s.Gateways = append(s.Gateways, gw)
	programmed := map[string]translate.Programmed{"hub/infra/web": addressed(ip(w.addr))}
	if w.second {
		s.Gateways = append(s.Gateways, gateway("hub", "other", 1, nil, "other.example.com"))
		programmed["hub/infra/other"] = addressed(ip("192.0.2.99"))
	}
	for _, rt := range w.routes {
		s.HTTPRoutes = append(s.HTTPRoutes, snapshot.Object[gwv1.HTTPRoute]{Cluster: "hub", Obj: rt})
	}
	return s.Sort(), programmed
}

// TestMemoSpliceMatchesBuild: through random runs of changes translated by a translate.Memo (which
// hands on unchanged hosts as the operator's passes do), Memo.Build's owners equal Build's, and
// most passes took the splice.
func TestMemoSpliceMatchesBuild(t *testing.T) {
	pool := []string{"*.wild.example.com", "Upper.Example.com", "fixed.example.com", "fixed-2.example.com"}
	for i := range 60 {
		pool = append(pool, "h"+strconv.Itoa(i)+".example.com")
	}
	for seed := range uint64(8) {
		r := rand.New(rand.NewPCG(seed, 22))
		w := &spliceWorld{fixed: "fixed.example.com", addr: "192.0.2.1"}
		for range 30 {
			w.routes = append(w.routes, w.route(r, pool))
		}
		tr := translate.NewMemo()
		m := &Memo{}
		spliced := 0
		for step := range 300 {
			switch op := r.IntN(100); {
			case op < 35:
				w.routes = append(w.routes, w.route(r, pool))
			case op < 65 && len(w.routes) > 0:
				i := r.IntN(len(w.routes))
				w.routes = slices.Delete(w.routes, i, i+1)
			case op < 85 && len(w.routes) > 0: // a new version of a route, other hostnames
				i := r.IntN(len(w.routes))
				nr := w.route(r, pool)
				nr.Name, nr.UID, nr.CreationTimestamp = w.routes[i].Name, w.routes[i].UID, w.routes[i].CreationTimestamp
				w.routes[i] = nr
			case op < 87:
				w.listeners = r.IntN(4)
			case op < 89: // the same listeners, another fixed name
				w.fixed = []string{"fixed.example.com", "fixed-2.example.com"}[r.IntN(2)]
			case op < 92:
				w.addr = "192.0.2." + strconv.Itoa(1+r.IntN(3))
			case op < 95: // for this pass only, as below
				w.second = true
			case op < 98:
				w.retained = map[string][]Retained{"h1.example.com": {{Key: "member-x/infra/web"}}}
			}
			s, programmed := w.snapshot()
			res := tr.Translate(s)
			if m.single != nil && len(w.retained) == 0 {
				if cs := claimsOf(s, res, programmed); len(cs) == 1 {
					if _, ok := m.single.splice(cs[0]); ok {
						spliced++
					}
				}
			}
			want := Build(s, res, programmed, w.retained)
			got := m.Build(s, res, programmed, w.retained)
			if diff := cmp.Diff(summary(want), summary(got)); diff != "" {
				t.Fatalf("seed %d step %d: Memo.Build differs from Build (-Build +Memo.Build):\n%s", seed, step, diff)
			}
			if !slices.EqualFunc(got, want, func(a, b Owner) bool { return a.Equal(&b) }) {
				t.Fatalf("seed %d step %d: Memo.Build's owners are not Equal to Build's", seed, step)
			}
			w.second, w.retained = false, nil
		}
		if spliced < 150 {
			t.Errorf("seed %d: %d of 300 passes spliced, want most", seed, spliced)
		}
	}
}

// BenchmarkMemoBuildOneChange is one gateway serving 20,000 route hostnames, each call after one
// route added or removed, the results of a translate.Memo as the operator's passes make them
// (unchanged hosts handed on, route objects shared between the snapshots).
func BenchmarkMemoBuildOneChange(b *testing.B) {
	s := base(nil)
	s.Gateways = append(s.Gateways, gateway("hub", "web", 0, nil, ""))
	for i := range 20001 {
		rt := &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "r" + strconv.Itoa(i), Generation: 1,
			UID: types.UID("uid-" + strconv.Itoa(i)), ResourceVersion: strconv.Itoa(100 + i),
			CreationTimestamp: metav1.NewTime(epoch.Add(time.Duration(i) * time.Second))}}
		rt.Spec.ParentRefs = []gwv1.ParentReference{{Name: "web"}}
		rt.Spec.Hostnames = []gwv1.Hostname{gwv1.Hostname("r" + strconv.Itoa(i) + ".example.com")}
		rt.Spec.Rules = []gwv1.HTTPRouteRule{{}}
		s.HTTPRoutes = append(s.HTTPRoutes, snapshot.Object[gwv1.HTTPRoute]{Cluster: "hub", Obj: rt})
	}
	more := *s.Sort()
	less := more
	less.HTTPRoutes = slices.DeleteFunc(slices.Clone(more.HTTPRoutes), func(o snapshot.Object[gwv1.HTTPRoute]) bool { return o.Obj.Name == "r20000" })
	snaps := [2]*snapshot.Snapshot{&less, &more}
	programmed := map[string]translate.Programmed{"hub/infra/web": addressed(ip("192.0.2.1"))}
	tr := translate.NewMemo()
	var results [2]*translate.Result
	results[0] = tr.Translate(snaps[0])
	results[1] = tr.Translate(snaps[1])
	m := &Memo{}
	m.Build(snaps[0], results[0], programmed, nil)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		if owners := m.Build(snaps[i%2], results[i%2], programmed, nil); len(owners) != 1 || len(owners[0].Endpoints) != 20000+i%2 {
			b.Fatalf("%d owners, want 1 with %d records", len(owners), 20000+i%2)
		}
	}
}
