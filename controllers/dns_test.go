package controllers

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	dnsv1a1 "sigs.k8s.io/external-dns/apis/v1alpha1"
	"sigs.k8s.io/external-dns/endpoint"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/controllers/records"
	"github.com/fleetgate/fleetgate/controllers/snapshot"
	"github.com/fleetgate/fleetgate/controllers/translate"
	"github.com/fleetgate/fleetgate/providers"
)

func TestOwnerVerdict(t *testing.T) {
	tests := []struct {
		name  string
		owner records.Owner
		want  dnsVerdict
	}{{
		name:  "every name published",
		owner: records.Owner{Names: []string{"a.example.com", "b.example.com"}},
		want:  dnsVerdict{status: metav1.ConditionTrue, reason: ReasonDNSPublished, message: "published a.example.com, b.example.com"},
	}, {
		name:  "weighted",
		owner: records.Owner{Names: []string{"a.example.com"}, Weighted: true},
		want: dnsVerdict{status: metav1.ConditionTrue, reason: ReasonDNSPublished,
			message: "published a.example.com (weighted with other gateways serving the same names)"},
	}, {
		name: "a name lost to another gateway",
		owner: records.Owner{Names: []string{"a.example.com", "b.example.com"},
			Conflicts: map[string]string{"a.example.com": "hub/infra/old"}},
		want: dnsVerdict{status: metav1.ConditionFalse, reason: ReasonDNSConflicted,
			message:   "a.example.com is published by gateway hub/infra/old; published b.example.com",
			conflicts: map[string]string{"a.example.com": "gateway hub/infra/old publishes it"}},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ownerVerdict(&tc.owner), cmp.AllowUnexported(dnsVerdict{})); diff != "" {
				t.Errorf("verdict (-want +got):\n%s", diff)
			}
		})
	}
}

func TestZoneVerdict(t *testing.T) {
	opts := v1alpha1.DNSOptions{Provider: v1alpha1.DNSProviderRFC2136, Zones: []string{"example.com"}}
	names := []string{"a.example.com", "b.example.com"}
	tests := []struct {
		name  string
		owner records.Owner
		out   providers.DNSOwnerOutcome
		err   error
		want  dnsVerdict
	}{{
		name:  "every name published and served",
		owner: records.Owner{Names: names},
		want: dnsVerdict{status: metav1.ConditionTrue, reason: ReasonDNSPublished, conflicts: map[string]string{},
			message: "published a.example.com, b.example.com in zone example.com (rfc2136); read back from the zone, it serves them"},
	}, {
		name:  "a name held by a record fleetgate did not create",
		owner: records.Owner{Names: names},
		out:   providers.DNSOwnerOutcome{Lost: map[string]string{"a.example.com": "held by an A record fleetgate did not create"}},
		want: dnsVerdict{status: metav1.ConditionFalse, reason: ReasonDNSConflicted,
			conflicts: map[string]string{"a.example.com": "held by an A record fleetgate did not create"},
			message: "a.example.com is not published: held by an A record fleetgate did not create; " +
				"published b.example.com in zone example.com (rfc2136); read back from the zone, it serves them"},
	}, {
		name:  "a name lost to another gateway before the zone",
		owner: records.Owner{Names: names, Conflicts: map[string]string{"b.example.com": "hub/infra/old"}},
		want: dnsVerdict{status: metav1.ConditionFalse, reason: ReasonDNSConflicted,
			conflicts: map[string]string{"b.example.com": "gateway hub/infra/old publishes it"},
			message: "b.example.com is not published: gateway hub/infra/old publishes it; " +
				"published a.example.com in zone example.com (rfc2136); read back from the zone, it serves them"},
	}, {
		name:  "refused and not served",
		owner: records.Owner{Names: names},
		out: providers.DNSOwnerOutcome{Refused: map[string]string{"a.example.com": "outside the zones"},
			Unserved: []string{"b.example.com"}},
		want: dnsVerdict{status: metav1.ConditionFalse, reason: ReasonDNSRefused, conflicts: map[string]string{},
			message: "a.example.com cannot be published: outside the zones; zone example.com (rfc2136) accepted b.example.com " +
				"but does not serve it as written when read back (written again on the next pass)"},
	}, {
		name:  "not served",
		owner: records.Owner{Names: names[:1]},
		out:   providers.DNSOwnerOutcome{Unserved: []string{"a.example.com"}},
		want: dnsVerdict{status: metav1.ConditionFalse, reason: ReasonDNSNotServed, conflicts: map[string]string{},
			message: "zone example.com (rfc2136) accepted a.example.com but does not serve it as written when read back (written again on the next pass)"},
	}, {
		name:  "the zone failed",
		owner: records.Owner{Names: names},
		err:   errors.New("connection refused"),
		want: dnsVerdict{status: metav1.ConditionFalse, reason: ReasonDNSWriteFailed,
			message: "publishing a.example.com, b.example.com into zone example.com (rfc2136) failed (the records last published stay; retried): connection refused"},
	}, {
		name:  "no address yet",
		owner: records.Owner{Names: names, Unaddressed: true},
		err:   errors.New("ignored"),
		want: dnsVerdict{status: metav1.ConditionFalse, reason: ReasonDNSNoAddress,
			message: "the gateway has no address; the records last published in zone example.com (rfc2136) for a.example.com, b.example.com are kept"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, zoneVerdict(&tc.owner, opts, tc.out, tc.err), cmp.AllowUnexported(dnsVerdict{})); diff != "" {
				t.Errorf("verdict (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSetDNSPublished(t *testing.T) {
	gw := func(cluster, key string, gen int64) translate.GatewayStatus {
		return translate.GatewayStatus{Ref: translate.ObjectRef{Cluster: cluster, Kind: "Gateway", Namespace: "infra", Name: "web"},
			Gateway: key, Generation: gen, Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue}}}
	}
	res := &translate.Result{Gateways: []translate.GatewayStatus{gw("hub", "hub/infra/web", 3), gw("member-a", "member-a/infra/web", 7), gw("hub", "other", 1)}}
	setDNSPublished(res, map[string]dnsVerdict{
		"hub/infra/web": {status: metav1.ConditionTrue, reason: ReasonDNSPublished, message: "published a.example.com"},
		"member-a/infra/web": {status: metav1.ConditionFalse, reason: ReasonDNSConflicted, message: "lost",
			conflicts: map[string]string{"a.example.com": "gateway hub/infra/web publishes it"}},
	})
	var got [][]metav1.Condition
	for _, gs := range res.Gateways {
		got = append(got, gs.Conditions)
	}
	accepted := metav1.Condition{Type: "Accepted", Status: metav1.ConditionTrue}
	want := [][]metav1.Condition{
		{accepted, {Type: ConditionDNSPublished, Status: metav1.ConditionTrue, ObservedGeneration: 3, Reason: ReasonDNSPublished, Message: "published a.example.com"}},
		{accepted, {Type: ConditionDNSPublished, Status: metav1.ConditionFalse, ObservedGeneration: 7, Reason: ReasonDNSConflicted, Message: "lost"}},
		{accepted},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("conditions (-want +got):\n%s", diff)
	}
	wantNotices := []translate.Notice{{Ref: res.Gateways[1].Ref, Type: "Warning", Reason: ReasonDNSConflict,
		Message: "hostname a.example.com is not published for this Gateway: gateway hub/infra/web publishes it"}}
	if diff := cmp.Diff(wantNotices, res.Notices); diff != "" {
		t.Errorf("notices (-want +got):\n%s", diff)
	}
}

func TestDNSEndpointObject(t *testing.T) {
	hubGateway := records.Object{Cluster: "hub", Kind: "Gateway", Namespace: "infra", Name: "web", UID: "u1"}
	tests := []struct {
		name    string
		objects []records.Object
		owners  []metav1.OwnerReference
	}{{
		name:    "a hub Gateway in the DNSEndpoint's namespace owns it",
		objects: []records.Object{hubGateway},
		owners:  []metav1.OwnerReference{{APIVersion: "gateway.networking.k8s.io/v1", Kind: "Gateway", Name: "web", UID: "u1"}},
	}, {
		name: "every hub Ingress of a group owns it",
		objects: []records.Object{{Cluster: "hub", Kind: "Ingress", Namespace: "infra", Name: "a", UID: "u4"},
			{Cluster: "hub", Kind: "Ingress", Namespace: "infra", Name: "b", UID: "u5"}},
		owners: []metav1.OwnerReference{{APIVersion: "networking.k8s.io/v1", Kind: "Ingress", Name: "a", UID: "u4"},
			{APIVersion: "networking.k8s.io/v1", Kind: "Ingress", Name: "b", UID: "u5"}},
	}, {
		name:    "a fleet gateway also in a member: no owner, the publisher removes it",
		objects: []records.Object{hubGateway, {Cluster: "member-a", Kind: "Gateway", Namespace: "infra", Name: "web", UID: "u2"}},
	}, {
		name:    "an object in another namespace: no owner",
		objects: []records.Object{hubGateway, {Cluster: "hub", Kind: "Service", Namespace: "other", Name: "db", UID: "u3"}},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := &records.Owner{Key: "hub/infra/web", Namespace: "infra", Name: "Web.Gateway", Clusters: []string{"hub", "member-a"},
				Objects:   tc.objects,
				Endpoints: []*endpoint.Endpoint{endpoint.NewEndpoint("a.example.com", endpoint.RecordTypeA, "192.0.2.1")}}
			got := dnsEndpointObject(o, "infra", dnsEndpointName(o), o.Endpoints)
			want := metav1.ObjectMeta{Namespace: "infra", Name: "fleetgate-web-gateway-" + got.Name[len(got.Name)-8:],
				Labels:          map[string]string{providers.LabelManagedBy: providers.ManagedBy, providers.LabelGateway: providers.GatewayID(o.Key)},
				Annotations:     map[string]string{providers.AnnotationGateway: o.Key, annotationDNSClusters: "hub,member-a"},
				OwnerReferences: tc.owners,
			}
			if diff := cmp.Diff(want, got.ObjectMeta); diff != "" {
				t.Errorf("metadata (-want +got):\n%s", diff)
			}
			if again := dnsEndpointObject(o, "infra", dnsEndpointName(o), o.Endpoints); again.Name != got.Name || !sameDNSEndpoint(again, got) {
				t.Errorf("not deterministic: %s vs %s", again.Name, got.Name)
			}
			if other := dnsEndpointName(&records.Owner{Key: "member-a/infra/web", Name: "Web.Gateway"}); other == got.Name {
				t.Errorf("two keys share the name %s", got.Name)
			}
		})
	}
}

func TestRetainedRecords(t *testing.T) {
	obj := func(key, clusters string, eps ...*endpoint.Endpoint) *dnsv1a1.DNSEndpoint {
		return &dnsv1a1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
			providers.AnnotationGateway: key, annotationDNSClusters: clusters}}, Spec: dnsv1a1.DNSEndpointSpec{Endpoints: eps}}
	}
	weighted := endpoint.NewEndpoint("a.example.com", endpoint.RecordTypeA, "192.0.2.1").WithSetIdentifier("member-a/infra/web")
	existing := map[string][]*dnsv1a1.DNSEndpoint{
		"hub/infra/web":      {obj("hub/infra/web", "hub", endpoint.NewEndpoint("a.example.com", endpoint.RecordTypeA, "192.0.2.2"))},
		"hub/infra/gone":     {obj("hub/infra/gone", "hub", endpoint.NewEndpoint("g.example.com", endpoint.RecordTypeA, "192.0.2.3"))},
		"member-a/infra/web": {obj("member-a/infra/web", "member-a", weighted)},
		// in two shards: the records of both are retained
		"member-a/infra/old": {obj("member-a/infra/old", "member-a", endpoint.NewEndpoint("o.example.com", endpoint.RecordTypeCNAME, "lb.example.net")),
			obj("member-a/infra/old", "member-a", endpoint.NewEndpoint("p.example.com", endpoint.RecordTypeCNAME, "lb.example.net"))},
	}
	d := &dnsDesired{owners: []records.Owner{{Key: "hub/infra/web"}}, clusters: []string{"hub"}}
	want := map[string][]records.Retained{
		"a.example.com": {{Key: "member-a/infra/web", Weighted: true}},
		"o.example.com": {{Key: "member-a/infra/old"}},
		"p.example.com": {{Key: "member-a/infra/old"}},
	}
	if diff := cmp.Diff(want, retainedRecords(existing, d)); diff != "" {
		t.Errorf("retained (-want +got):\n%s", diff)
	}
	// Once member-a is read again its owners are known: nothing is retained.
	d.clusters = []string{"hub", "member-a"}
	if got := retainedRecords(existing, d); got != nil {
		t.Errorf("retained %v with every cluster read", got)
	}
}

func TestSameDesired(t *testing.T) {
	// desired builds what two separate passes would: equal content, no shared memory.
	desired := func(edit func(*dnsDesired)) *dnsDesired {
		d := &dnsDesired{
			owners: []records.Owner{{
				Key: "hub/default/gw", Namespace: "default", Name: "gw", Clusters: []string{"hub"},
				Names:     []string{"a.example.com", "b.example.com"},
				Endpoints: []*endpoint.Endpoint{endpoint.NewEndpoint("a.example.com", endpoint.RecordTypeA, "192.0.2.1")},
				Conflicts: map[string]string{"b.example.com": "hub/infra/old"},
			}},
			clusters:      []string{"hub", "member-1"},
			hubNamespaces: map[string]bool{"default": true},
			retained:      map[string][]records.Retained{"c.example.com": {{Key: "member-2/default/gw"}}},
		}
		if edit != nil {
			edit(d)
		}
		return d
	}
	tests := []struct {
		name string
		edit func(*dnsDesired)
		want bool
	}{
		{"same content", nil, true},
		{"a record's target", func(d *dnsDesired) { d.owners[0].Endpoints[0].Targets[0] = "192.0.2.2" }, false},
		{"a record's weight", func(d *dnsDesired) {
			d.owners[0].Endpoints[0] = d.owners[0].Endpoints[0].WithSetIdentifier(d.owners[0].Key).WithProviderSpecific(records.WeightProperty, "2")
		}, false},
		{"a name added", func(d *dnsDesired) { d.owners[0].Names = append(d.owners[0].Names, "c.example.com") }, false},
		{"a conflict gone", func(d *dnsDesired) { d.owners[0].Conflicts = nil }, false},
		{"address pending", func(d *dnsDesired) { d.owners[0].Unaddressed = true }, false},
		{"an owner gone", func(d *dnsDesired) { d.owners = nil }, false},
		{"a cluster not read", func(d *dnsDesired) { d.clusters = d.clusters[:1] }, false},
		{"a hub namespace", func(d *dnsDesired) { d.hubNamespaces["other"] = true }, false},
		{"retained records", func(d *dnsDesired) { d.retained = nil }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := sameDesired(desired(nil), desired(tc.edit)); got != tc.want {
				t.Errorf("sameDesired = %v, want %v", got, tc.want)
			}
		})
	}
}

// BenchmarkSameDesired compares two passes' records of one gateway with 20,000 names, as every
// pass does at the target size.
func BenchmarkSameDesired(b *testing.B) {
	desired := func() *dnsDesired {
		o := records.Owner{Key: "hub/default/gw", Namespace: "default", Name: "gw", Clusters: []string{"hub"}}
		for i := range 20000 {
			name := fmt.Sprintf("r%d.example.com", i)
			o.Names = append(o.Names, name)
			o.Endpoints = append(o.Endpoints, endpoint.NewEndpoint(name, endpoint.RecordTypeA, "192.0.2.1"))
		}
		return &dnsDesired{owners: []records.Owner{o}, clusters: []string{"hub"}}
	}
	x, y := desired(), desired()
	b.ReportAllocs()
	for b.Loop() {
		if !sameDesired(x, y) {
			b.Fatal("equal records compared different")
		}
	}
}

// TestPublishDNSSkip: a pass with the inputs of the last build (the delivery pass after an ACK)
// builds no records and hands the publisher nothing; any input the records read rebuilds them.
// Where it skips, the records built anyway must be those of the last build.
func TestPublishDNSSkip(t *testing.T) {
	snap := func() *snapshot.Snapshot {
		gw := &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "web", Generation: 1, UID: "u1"},
			Spec: gwv1.GatewaySpec{GatewayClassName: "fleetgate", Listeners: []gwv1.Listener{{Name: "http", Port: 80,
				Protocol: gwv1.HTTPProtocolType, Hostname: ptr.To[gwv1.Hostname]("www.example.com")}}}}
		return (&snapshot.Snapshot{
			GatewayClasses: []snapshot.Object[gwv1.GatewayClass]{{Cluster: "hub", Obj: &gwv1.GatewayClass{
				ObjectMeta: metav1.ObjectMeta{Name: "fleetgate", Generation: 1},
				Spec: gwv1.GatewayClassSpec{ControllerName: v1alpha1.ControllerName, ParametersRef: &gwv1.ParametersReference{
					Group: v1alpha1.Group, Kind: "GatewayClassConfig", Name: "default"}}}}},
			ClassConfigs: []snapshot.Object[v1alpha1.GatewayClassConfig]{{Cluster: "hub", Obj: &v1alpha1.GatewayClassConfig{
				ObjectMeta: metav1.ObjectMeta{Name: "default", Generation: 1},
				Spec:       v1alpha1.GatewayClassConfigSpec{Provider: v1alpha1.ProviderInCluster, Scope: v1alpha1.ScopeCluster}}}},
			Gateways: []snapshot.Object[gwv1.Gateway]{{Cluster: "hub", Obj: gw}},
		}).Sort()
	}
	addressed := func(ready bool, addrs ...gwv1.GatewayStatusAddress) map[string]translate.Programmed {
		return map[string]translate.Programmed{"hub/infra/web": {Ready: ready, Reason: "Pending", Addresses: addrs}}
	}
	ip := func(v string) gwv1.GatewayStatusAddress {
		return gwv1.GatewayStatusAddress{Type: ptr.To(gwv1.IPAddressType), Value: v}
	}
	s0 := snap()
	r0 := translate.Translate(s0)
	p0 := addressed(false, ip("192.0.2.1"))
	tests := []struct {
		name       string
		snap       *snapshot.Snapshot
		res        *translate.Result
		programmed map[string]translate.Programmed
		retained   map[string][]records.Retained
		skip       bool
	}{
		{name: "same inputs", snap: s0, res: r0, programmed: p0, skip: true},
		{name: "only Ready changed", snap: s0, res: r0, programmed: addressed(true, ip("192.0.2.1")), skip: true},
		{name: "the address type unset, which is an IP", snap: s0, res: r0,
			programmed: addressed(true, gwv1.GatewayStatusAddress{Value: "192.0.2.1"}), skip: true},
		{name: "a key without addresses added", snap: s0, res: r0,
			programmed: map[string]translate.Programmed{"hub/infra/web": p0["hub/infra/web"], "hub/infra/other": {Reason: "Pending"}}, skip: true},
		{name: "an address changed", snap: s0, res: r0, programmed: addressed(true, ip("192.0.2.2"))},
		{name: "an address added", snap: s0, res: r0, programmed: addressed(true, ip("192.0.2.1"), ip("2001:db8::1"))},
		{name: "an IP address became a hostname", snap: s0, res: r0,
			programmed: addressed(true, gwv1.GatewayStatusAddress{Type: ptr.To(gwv1.HostnameAddressType), Value: "192.0.2.1"})},
		{name: "the addresses went", snap: s0, res: r0, programmed: addressed(false)},
		{name: "retained records", snap: s0, res: r0, programmed: p0,
			retained: map[string][]records.Retained{"www.example.com": {{Key: "member-a/infra/web"}}}},
		{name: "a new pass", snap: snap(), res: translate.Translate(s0), programmed: p0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &GatewayReconciler{DNS: newDNSPublisher(nil, nil, DNSOptions{}, nil, logr.Discard())}
			r.publishDNS(s0, r0, p0)
			first := r.DNS.desired
			r.DNS.retained = tc.retained
			r.publishDNS(tc.snap, tc.res, tc.programmed)
			if diff := cmp.Diff(tc.skip, r.DNS.desired == first); diff != "" {
				t.Errorf("skipped (-want +got):\n%s", diff)
			}
			// The skip is exact: what it saves building is what was built last time.
			before, now := records.Build(s0, r0, p0, nil), records.Build(tc.snap, tc.res, tc.programmed, tc.retained)
			same := slices.EqualFunc(before, now, func(a, b records.Owner) bool { return a.Equal(&b) })
			if tc.skip && !same {
				t.Errorf("skipped, but the records changed:\n%s", cmp.Diff(before, now))
			}
			if len(before) != 1 || len(before[0].Endpoints) != 1 {
				t.Fatalf("the pass builds %d owners, want one with a record", len(before))
			}
			if !tc.skip && tc.snap == s0 && same {
				t.Errorf("the case changes no record: it tests no rebuild")
			}
		})
	}
}
