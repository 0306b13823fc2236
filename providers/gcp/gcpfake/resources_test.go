package gcpfake_test

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"cloud.google.com/go/compute/apiv1/computepb"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/iterator"
	"google.golang.org/protobuf/proto"

	"github.com/fleetgate/fleetgate/providers/gcp/gcpfake"
)

// TestAddresses pins allocation (lowest free address of the scope's test range) and, per the
// compute v1 reference (Address.status): "A RESERVED address is currently reserved and available to
// use. An IN_USE address is currently being used by another resource", with users ("The URLs of the
// resources that are using this address"); an address in use cannot be deleted.
func TestAddresses(t *testing.T) {
	e := newEnv(t)
	ctx, p := e.ctx, project
	insert := func(name, ip string) {
		a := &computepb.Address{Name: proto.String(name)}
		if ip != "" {
			a.Address = proto.String(ip)
		}
		e.do(e.gaddr.Insert(ctx, &computepb.InsertGlobalAddressRequest{Project: p, AddressResource: a}))
	}
	addrOf := func(name string) *computepb.Address {
		a, _ := gcpfake.Get[*computepb.Address](e.srv, "projects/proj/global/addresses/"+name)
		return a
	}
	insert("a", "")
	insert("b", "")
	insert("fixed", "203.0.113.50")
	e.do(e.addr.Insert(ctx, &computepb.InsertAddressRequest{Project: p, Region: region, AddressResource: &computepb.Address{Name: proto.String("r")}}))
	e.do(e.gaddr.Delete(ctx, &computepb.DeleteGlobalAddressRequest{Project: p, Address: "a"}))
	insert("c", "") // takes the freed .1
	r, _ := gcpfake.Get[*computepb.Address](e.srv, "projects/proj/regions/"+region+"/addresses/r")
	got := []string{addrOf("b").GetAddress(), addrOf("fixed").GetAddress(), addrOf("c").GetAddress(), r.GetAddress(), addrOf("b").GetStatus()}
	if diff := cmp.Diff([]string{"203.0.113.2", "203.0.113.50", "203.0.113.1", "198.51.100.1", "RESERVED"}, got); diff != "" {
		t.Errorf("allocation (-want +got):\n%s", diff)
	}
	expect(t, "reserve a reserved IP", opErr(e.gaddr.Insert(ctx, &computepb.InsertGlobalAddressRequest{Project: p,
		AddressResource: &computepb.Address{Name: proto.String("dup"), Address: proto.String("203.0.113.2")}})), http.StatusBadRequest)

	// A rule naming b's IP uses b; a rule without IPAddress gets the next free (ephemeral) IP.
	e.do(e.hc.Insert(ctx, &computepb.InsertHealthCheckRequest{Project: p, HealthCheckResource: &computepb.HealthCheck{Name: proto.String("hc")}}))
	e.do(e.bs.Insert(ctx, &computepb.InsertBackendServiceRequest{Project: p, BackendServiceResource: &computepb.BackendService{Name: proto.String("bs")}}))
	e.do(e.um.Insert(ctx, &computepb.InsertUrlMapRequest{Project: p, UrlMapResource: &computepb.UrlMap{Name: proto.String("um"), DefaultService: proto.String("global/backendServices/bs")}}))
	e.do(e.hp.Insert(ctx, &computepb.InsertTargetHttpProxyRequest{Project: p, TargetHttpProxyResource: &computepb.TargetHttpProxy{Name: proto.String("hp"), UrlMap: proto.String("global/urlMaps/um")}}))
	for name, ip := range map[string]*string{"uses-b": proto.String("203.0.113.2"), "ephemeral": nil} {
		e.do(e.gfr.Insert(ctx, &computepb.InsertGlobalForwardingRuleRequest{Project: p, ForwardingRuleResource: &computepb.ForwardingRule{
			Name: proto.String(name), IPAddress: ip, Target: proto.String("global/targetHttpProxies/hp")}}))
	}
	b := addrOf("b")
	eph, _ := gcpfake.Get[*computepb.ForwardingRule](e.srv, "projects/proj/global/forwardingRules/ephemeral")
	if diff := cmp.Diff([]string{"IN_USE", gcpfake.Link("projects/proj/global/forwardingRules/uses-b"), "203.0.113.3", "RESERVED"},
		[]string{b.GetStatus(), strings.Join(b.GetUsers(), ","), eph.GetIPAddress(), addrOf("c").GetStatus()}); diff != "" {
		t.Errorf("use (-want +got):\n%s", diff)
	}
	expect(t, "delete used address", opErr(e.gaddr.Delete(ctx, &computepb.DeleteGlobalAddressRequest{Project: p, Address: "b"})), http.StatusBadRequest)

	// The aggregated list holds every scope of the collection, filtered like a list.
	agg := map[string][]string{}
	it := e.addr.AggregatedList(ctx, &computepb.AggregatedListAddressesRequest{Project: p, Filter: proto.String("name ne fixed")})
	for {
		pair, err := it.Next()
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range pair.Value.GetAddresses() {
			agg[pair.Key] = append(agg[pair.Key], a.GetName())
		}
	}
	if diff := cmp.Diff(map[string][]string{"global": {"b", "c"}, "regions/" + region: {"r"}}, agg); diff != "" {
		t.Errorf("aggregated (-want +got):\n%s", diff)
	}
}

// TestNetworkEndpoints pins attach/detach/list and size. Per the compute v1 reference
// (NetworkEndpoint): instance "is required for network endpoints of type GCE_VM_IP and
// GCE_VM_IP_PORT"; port "If not specified, the defaultPort for the network endpoint group will be
// used" and "can not be set for network endpoints of type GCE_VM_IP"; defaultPort "If the network
// endpoint type is either GCE_VM_IP … this field must not be specified". The reference is silent on
// attaching an existing endpoint or detaching a missing one; the fake refuses both with 400 invalid
// (GCE's form for a bad field value), which is unverified against a real project.
func TestNetworkEndpoints(t *testing.T) {
	e := newEnv(t)
	ctx, p := e.ctx, project
	insertNEG := func(z, name, typ string, port *int32) error {
		return opErr(e.neg.Insert(ctx, &computepb.InsertNetworkEndpointGroupRequest{Project: p, Zone: z, NetworkEndpointGroupResource: &computepb.NetworkEndpointGroup{
			Name: proto.String(name), NetworkEndpointType: proto.String(typ), DefaultPort: port}}))
	}
	for _, err := range []error{
		insertNEG(zone, "port", "GCE_VM_IP_PORT", proto.Int32(8080)),
		insertNEG(zone, "noport", "GCE_VM_IP_PORT", nil),
		insertNEG(zone, "ip", "GCE_VM_IP", nil),
		insertNEG("europe-west1-b", "port", "GCE_VM_IP_PORT", proto.Int32(80)),
	} {
		expect(t, "insert NEG", err, 0)
	}
	expect(t, "GCE_VM_IP with defaultPort", insertNEG(zone, "bad", "GCE_VM_IP", proto.Int32(80)), http.StatusBadRequest)

	ep := func(instance, ip string, port int32) *computepb.NetworkEndpoint {
		n := &computepb.NetworkEndpoint{IpAddress: proto.String(ip)}
		if instance != "" {
			n.Instance = proto.String(instance)
		}
		if port != 0 {
			n.Port = proto.Int32(port)
		}
		return n
	}
	attach := func(neg string, eps ...*computepb.NetworkEndpoint) error {
		return opErr(e.neg.AttachNetworkEndpoints(ctx, &computepb.AttachNetworkEndpointsNetworkEndpointGroupRequest{Project: p, Zone: zone, NetworkEndpointGroup: neg,
			NetworkEndpointGroupsAttachEndpointsRequestResource: &computepb.NetworkEndpointGroupsAttachEndpointsRequest{NetworkEndpoints: eps}}))
	}
	detach := func(neg string, eps ...*computepb.NetworkEndpoint) error {
		return opErr(e.neg.DetachNetworkEndpoints(ctx, &computepb.DetachNetworkEndpointsNetworkEndpointGroupRequest{Project: p, Zone: zone, NetworkEndpointGroup: neg,
			NetworkEndpointGroupsDetachEndpointsRequestResource: &computepb.NetworkEndpointGroupsDetachEndpointsRequest{NetworkEndpoints: eps}}))
	}
	for _, tc := range []struct {
		name string
		err  error
		code int
	}{
		{"attach three", attach("port", ep("vm-1", "10.0.0.1", 0), ep("vm-2", "10.0.0.2", 0), ep("vm-2", "10.0.0.2", 9000)), 0},
		{"attach without instance", attach("port", ep("", "10.0.0.9", 0)), http.StatusBadRequest},
		{"attach existing", attach("port", ep("vm-1", "10.0.0.1", 8080)), http.StatusBadRequest},
		{"attach twice in one call", attach("port", ep("vm-3", "10.0.0.3", 0), ep("vm-3", "10.0.0.3", 0)), http.StatusBadRequest},
		{"attach without port or defaultPort", attach("noport", ep("vm-1", "10.0.0.1", 0)), http.StatusBadRequest},
		{"attach GCE_VM_IP with port", attach("ip", ep("vm-1", "10.0.0.1", 80)), http.StatusBadRequest},
		{"attach GCE_VM_IP without instance", attach("ip", ep("", "10.0.0.1", 0)), http.StatusBadRequest},
		{"attach GCE_VM_IP", attach("ip", ep("vm-1", "10.0.0.1", 0)), 0},
		{"attach to missing NEG", attach("nope", ep("vm-1", "10.0.0.1", 0)), http.StatusNotFound},
		{"detach by default port", detach("port", ep("vm-1", "10.0.0.1", 0)), 0},
		{"detach missing", detach("port", ep("vm-1", "10.0.0.1", 0)), http.StatusBadRequest},
	} {
		expect(t, tc.name, tc.err, tc.code)
	}

	e.srv.ResetCalls()
	var listed []string
	it := e.neg.ListNetworkEndpoints(ctx, &computepb.ListNetworkEndpointsNetworkEndpointGroupsRequest{Project: p, Zone: zone, NetworkEndpointGroup: "port", MaxResults: proto.Uint32(1)})
	for {
		item, err := it.Next()
		if err != nil {
			break
		}
		n := item.GetNetworkEndpoint()
		listed = append(listed, fmt.Sprintf("%s %s:%d", n.GetInstance(), n.GetIpAddress(), n.GetPort()))
	}
	if diff := cmp.Diff([]string{"vm-2 10.0.0.2:8080", "vm-2 10.0.0.2:9000"}, listed); diff != "" {
		t.Errorf("listed (-want +got):\n%s", diff)
	}
	if n := len(e.srv.Calls()); n != 2 {
		t.Errorf("listing 2 endpoints 1 per page took %d calls", n)
	}
	neg, _ := e.neg.Get(ctx, &computepb.GetNetworkEndpointGroupRequest{Project: p, Zone: zone, NetworkEndpointGroup: "port"})
	ipNEG, _ := gcpfake.Get[*computepb.NetworkEndpointGroup](e.srv, "projects/proj/zones/"+zone+"/networkEndpointGroups/ip")
	stored := e.srv.Endpoints("projects/proj/zones/" + zone + "/networkEndpointGroups/port")
	if neg.GetSize() != 2 || len(stored) != 2 || ipNEG.GetSize() != 1 || neg.GetNetwork() != gcpfake.Link("projects/proj/global/networks/default") {
		t.Errorf("NEGs: %v, %v", neg, ipNEG)
	}

	agg := map[string][]string{}
	ait := e.neg.AggregatedList(ctx, &computepb.AggregatedListNetworkEndpointGroupsRequest{Project: p})
	for {
		pair, err := ait.Next()
		if err != nil {
			break
		}
		for _, n := range pair.Value.GetNetworkEndpointGroups() {
			agg[pair.Key] = append(agg[pair.Key], n.GetName())
		}
	}
	if diff := cmp.Diff(map[string][]string{"zones/europe-west1-b": {"port"}, "zones/" + zone: {"ip", "noport", "port"}}, agg); diff != "" {
		t.Errorf("aggregated (-want +got):\n%s", diff)
	}
}

// TestListPagingAndFilter pins maxResults/pageToken paging, name order, and the filter forms of the
// compute v1 list reference: "eq"/"ne" take an RE2 ("The literal value must match the entire
// field"), "="/"!=" a literal, parenthesized expressions are ANDed, and the two kinds "cannot be
// mixed in one request".
func TestListPagingAndFilter(t *testing.T) {
	e := newEnv(t)
	for _, n := range []string{"hc-c", "hc-a", "hc-e", "other", "hc-b", "hc-d"} {
		e.do(e.hc.Insert(e.ctx, &computepb.InsertHealthCheckRequest{Project: project, HealthCheckResource: &computepb.HealthCheck{Name: proto.String(n)}}))
	}
	e.srv.ResetCalls()
	got := names(t, e.hc.List(e.ctx, &computepb.ListHealthChecksRequest{Project: project, MaxResults: proto.Uint32(2)}).Next)
	if diff := cmp.Diff([]string{"hc-a", "hc-b", "hc-c", "hc-d", "hc-e", "other"}, got); diff != "" || len(e.srv.Calls()) != 3 {
		t.Errorf("paged list in %d calls (-want +got):\n%s", len(e.srv.Calls()), diff)
	}
	for _, tc := range []struct {
		filter string
		want   []string
	}{
		{`name eq "hc-.*"`, []string{"hc-a", "hc-b", "hc-c", "hc-d", "hc-e"}},
		{`name eq 'hc-a'`, []string{"hc-a"}},
		{`name eq hc-[ab]`, []string{"hc-a", "hc-b"}},
		{`name eq "hc"`, nil}, // whole field, not a substring
		{`name ne "hc-.*"`, []string{"other"}},
		{`name = "hc-c"`, []string{"hc-c"}},
		{`name != "other"`, []string{"hc-a", "hc-b", "hc-c", "hc-d", "hc-e"}},
		{`(name eq "hc-.*") (name ne "hc-[a-c]")`, []string{"hc-d", "hc-e"}},
		{`(name != other) AND (name != hc-e)`, []string{"hc-a", "hc-b", "hc-c", "hc-d"}},
		{`(name eq "hc-(a|b)") (name ne 'hc-(b)')`, []string{"hc-a"}},
		{`name eq hc-(c|d)`, []string{"hc-c", "hc-d"}},
		{`kind = "compute#healthCheck" `, []string{"hc-a", "hc-b", "hc-c", "hc-d", "hc-e", "other"}},
	} {
		got := names(t, e.hc.List(e.ctx, &computepb.ListHealthChecksRequest{Project: project, Filter: proto.String(tc.filter)}).Next)
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("filter %s (-want +got):\n%s", tc.filter, diff)
		}
	}
	for _, f := range []string{`name:hc`, `(name = a) OR (name = b)`, `name eq "("`, `name < b`, `(name eq hc-.*) (name != hc-e)`, `(name = a`} {
		_, err := e.hc.List(e.ctx, &computepb.ListHealthChecksRequest{Project: project, Filter: proto.String(f)}).Next()
		expect(t, "filter "+f, err, http.StatusBadRequest)
	}
}

// TestInjection pins FailNext, Inject and the fault rate, and that a failed call changes nothing.
func TestInjection(t *testing.T) {
	e := newEnv(t)
	ctx, p := e.ctx, project
	insert := func(name string) error {
		return opErr(e.hc.Insert(ctx, &computepb.InsertHealthCheckRequest{Project: p, HealthCheckResource: &computepb.HealthCheck{Name: proto.String(name)}}))
	}
	e.srv.FailNext(http.MethodPost, "/global/healthChecks", http.StatusServiceUnavailable, "backendError", 2)
	var reasons []string
	for range 3 {
		_, reason := apiErr(t, insert("hc"))
		reasons = append(reasons, reason)
	}
	if diff := cmp.Diff([]string{"backendError", "backendError", ""}, reasons); diff != "" || e.srv.Count("healthChecks") != 1 {
		t.Errorf("FailNext: %d health checks (-want +got):\n%s", e.srv.Count("healthChecks"), diff)
	}
	e.srv.Inject(func(c gcpfake.Call) bool { return c.Method == http.MethodDelete }, gcpfake.Fault{Code: http.StatusForbidden, Reason: "forbidden"}, 1)
	expect(t, "injected delete", opErr(e.hc.Delete(ctx, &computepb.DeleteHealthCheckRequest{Project: p, HealthCheck: "hc"})), http.StatusForbidden)
	if e.srv.Count("healthChecks") != 1 {
		t.Error("a failed delete deleted")
	}

	// 30% faults: deterministic for a seed; every failure is 429 or 503 and left nothing behind.
	run := func() ([]string, map[string]int) {
		e.srv.Reset()
		e.srv.SetFaultRate(0.3, 42)
		var failed []string
		reasons := map[string]int{}
		for i := range 100 {
			name := fmt.Sprintf("hc-%d", i)
			if code, reason := apiErr(t, insert(name)); code != 0 {
				failed = append(failed, name)
				reasons[fmt.Sprintf("%d %s", code, reason)]++
				if _, ok := gcpfake.Get[*computepb.HealthCheck](e.srv, "projects/proj/global/healthChecks/"+name); ok {
					t.Errorf("failed insert of %s applied", name)
				}
			}
		}
		return failed, reasons
	}
	failed, byReason := run()
	if len(failed) < 20 || len(failed) > 40 || e.srv.Count("healthChecks") != 100-len(failed) {
		t.Errorf("%d of 100 failed, %d stored", len(failed), e.srv.Count("healthChecks"))
	}
	if len(byReason) != 2 || byReason["429 rateLimitExceeded"]+byReason["503 backendError"] != len(failed) {
		t.Errorf("fault reasons %v", byReason)
	}
	t.Logf("fault rate 0.3, seed 42: %d of 100 inserts failed: %v", len(failed), byReason)
	again, _ := run()
	if diff := cmp.Diff(failed, again); diff != "" {
		t.Errorf("same seed, other faults (-first +second):\n%s", diff)
	}
}

// TestRequestLog pins the log: reads (GETs and listNetworkEndpoints) are not mutations, so a steady
// state shows none; a mutation is logged with its path, query and body.
func TestRequestLog(t *testing.T) {
	e := newEnv(t)
	e.stack("")
	ctx, p := e.ctx, project
	e.srv.ResetCalls()
	e.listAll("")
	if _, err := e.um.Get(ctx, &computepb.GetUrlMapRequest{Project: p, UrlMap: "um"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.neg.ListNetworkEndpoints(ctx, &computepb.ListNetworkEndpointsNetworkEndpointGroupsRequest{Project: p, Zone: zone, NetworkEndpointGroup: "neg"}).Next(); err == nil {
		t.Error("the NEG has no endpoints")
	}
	if m := e.srv.Mutations(); len(m) != 0 || len(e.srv.Calls()) != 11 {
		t.Errorf("steady state: %d calls, mutations %+v", len(e.srv.Calls()), m)
	}
	e.do(e.hc.Insert(ctx, &computepb.InsertHealthCheckRequest{Project: p, RequestId: proto.String("req-1"), HealthCheckResource: &computepb.HealthCheck{Name: proto.String("hc2")}}))
	m := e.srv.Mutations()
	if len(m) != 1 || m[0].Path != "/compute/v1/projects/proj/global/healthChecks" || m[0].Query.Get("requestId") != "req-1" ||
		!strings.Contains(string(m[0].Body), `"name":"hc2"`) || m[0].Status != http.StatusOK {
		t.Errorf("mutations %+v", m)
	}
}
