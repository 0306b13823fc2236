package gcpfake_test

import (
	"fmt"
	"sync"
	"testing"

	"cloud.google.com/go/compute/apiv1/computepb"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"

	"github.com/fleetgate/fleetgate/providers/gcp/gcpfake"
)

// colls are the collections of one load balancer, in dependency order.
var colls = []string{"healthChecks", "networkEndpointGroups", "backendServices", "urlMaps", "sslCertificates", "targetHttpProxies", "targetHttpsProxies", "addresses", "forwardingRules"}

func scopeOf(region string) string {
	if region == "" {
		return "global"
	}
	return "regions/" + region
}

// stack inserts one HTTP+HTTPS load balancer in region ("" for global). References use every form
// the compute v1 reference accepts ("The full or partial URL of …"): partial "global/…",
// "regions/R/…", "zones/Z/…", "projects/P/…" and full URLs.
func (e *env) stack(region string) {
	e.t.Helper()
	ctx, p, scope := e.ctx, project, scopeOf(region)
	link := func(coll, name string) string { return scope + "/" + coll + "/" + name }
	crt, key := selfSigned(e.t, "example.com")
	hc := &computepb.HealthCheck{Name: proto.String("hc"), Type: proto.String("HTTP"), HttpHealthCheck: &computepb.HTTPHealthCheck{Port: proto.Int32(8080)}}
	bs := &computepb.BackendService{Name: proto.String("bs"), HealthChecks: []string{link("healthChecks", "hc")},
		Backends: []*computepb.Backend{{Group: proto.String("zones/" + zone + "/networkEndpointGroups/neg")}}}
	um := &computepb.UrlMap{Name: proto.String("um"), DefaultService: proto.String("projects/" + p + "/" + link("backendServices", "bs"))}
	cert := &computepb.SslCertificate{Name: proto.String("cert"), Certificate: proto.String(crt), PrivateKey: proto.String(key)}
	hp := &computepb.TargetHttpProxy{Name: proto.String("hp"), UrlMap: proto.String(gcpfake.Link("projects/" + p + "/" + link("urlMaps", "um")))}
	sp := &computepb.TargetHttpsProxy{Name: proto.String("sp"), UrlMap: proto.String(link("urlMaps", "um")), SslCertificates: []string{link("sslCertificates", "cert")}}
	ip := &computepb.Address{Name: proto.String("ip")}
	frHTTP := &computepb.ForwardingRule{Name: proto.String("fr-http"), Target: proto.String(link("targetHttpProxies", "hp")), IPAddress: proto.String(link("addresses", "ip")), PortRange: proto.String("80")}
	frHTTPS := &computepb.ForwardingRule{Name: proto.String("fr-https"), Target: proto.String(link("targetHttpsProxies", "sp")), PortRange: proto.String("443")}

	e.do(e.neg.Insert(ctx, &computepb.InsertNetworkEndpointGroupRequest{Project: p, Zone: zone,
		NetworkEndpointGroupResource: &computepb.NetworkEndpointGroup{Name: proto.String("neg"), DefaultPort: proto.Int32(8080)}}))
	if region == "" {
		e.do(e.hc.Insert(ctx, &computepb.InsertHealthCheckRequest{Project: p, HealthCheckResource: hc}))
		e.do(e.bs.Insert(ctx, &computepb.InsertBackendServiceRequest{Project: p, BackendServiceResource: bs}))
		e.do(e.um.Insert(ctx, &computepb.InsertUrlMapRequest{Project: p, UrlMapResource: um}))
		e.do(e.cert.Insert(ctx, &computepb.InsertSslCertificateRequest{Project: p, SslCertificateResource: cert}))
		e.do(e.hp.Insert(ctx, &computepb.InsertTargetHttpProxyRequest{Project: p, TargetHttpProxyResource: hp}))
		e.do(e.sp.Insert(ctx, &computepb.InsertTargetHttpsProxyRequest{Project: p, TargetHttpsProxyResource: sp}))
		e.do(e.gaddr.Insert(ctx, &computepb.InsertGlobalAddressRequest{Project: p, AddressResource: ip}))
		e.do(e.gfr.Insert(ctx, &computepb.InsertGlobalForwardingRuleRequest{Project: p, ForwardingRuleResource: frHTTP}))
		e.do(e.gfr.Insert(ctx, &computepb.InsertGlobalForwardingRuleRequest{Project: p, ForwardingRuleResource: frHTTPS}))
		return
	}
	e.do(e.rhc.Insert(ctx, &computepb.InsertRegionHealthCheckRequest{Project: p, Region: region, HealthCheckResource: hc}))
	e.do(e.rbs.Insert(ctx, &computepb.InsertRegionBackendServiceRequest{Project: p, Region: region, BackendServiceResource: bs}))
	e.do(e.rum.Insert(ctx, &computepb.InsertRegionUrlMapRequest{Project: p, Region: region, UrlMapResource: um}))
	e.do(e.rcert.Insert(ctx, &computepb.InsertRegionSslCertificateRequest{Project: p, Region: region, SslCertificateResource: cert}))
	e.do(e.rhp.Insert(ctx, &computepb.InsertRegionTargetHttpProxyRequest{Project: p, Region: region, TargetHttpProxyResource: hp}))
	e.do(e.rsp.Insert(ctx, &computepb.InsertRegionTargetHttpsProxyRequest{Project: p, Region: region, TargetHttpsProxyResource: sp}))
	e.do(e.addr.Insert(ctx, &computepb.InsertAddressRequest{Project: p, Region: region, AddressResource: ip}))
	e.do(e.fr.Insert(ctx, &computepb.InsertForwardingRuleRequest{Project: p, Region: region, ForwardingRuleResource: frHTTP}))
	e.do(e.fr.Insert(ctx, &computepb.InsertForwardingRuleRequest{Project: p, Region: region, ForwardingRuleResource: frHTTPS}))
}

// listAll lists every collection of region ("" for global) through the clients.
func (e *env) listAll(region string) map[string][]string {
	ctx, p, t := e.ctx, project, e.t
	out := map[string][]string{
		"networkEndpointGroups": names(t, e.neg.List(ctx, &computepb.ListNetworkEndpointGroupsRequest{Project: p, Zone: zone}).Next),
	}
	if region == "" {
		out["healthChecks"] = names(t, e.hc.List(ctx, &computepb.ListHealthChecksRequest{Project: p}).Next)
		out["backendServices"] = names(t, e.bs.List(ctx, &computepb.ListBackendServicesRequest{Project: p}).Next)
		out["urlMaps"] = names(t, e.um.List(ctx, &computepb.ListUrlMapsRequest{Project: p}).Next)
		out["sslCertificates"] = names(t, e.cert.List(ctx, &computepb.ListSslCertificatesRequest{Project: p}).Next)
		out["targetHttpProxies"] = names(t, e.hp.List(ctx, &computepb.ListTargetHttpProxiesRequest{Project: p}).Next)
		out["targetHttpsProxies"] = names(t, e.sp.List(ctx, &computepb.ListTargetHttpsProxiesRequest{Project: p}).Next)
		out["addresses"] = names(t, e.gaddr.List(ctx, &computepb.ListGlobalAddressesRequest{Project: p}).Next)
		out["forwardingRules"] = names(t, e.gfr.List(ctx, &computepb.ListGlobalForwardingRulesRequest{Project: p}).Next)
		return out
	}
	out["healthChecks"] = names(t, e.rhc.List(ctx, &computepb.ListRegionHealthChecksRequest{Project: p, Region: region}).Next)
	out["backendServices"] = names(t, e.rbs.List(ctx, &computepb.ListRegionBackendServicesRequest{Project: p, Region: region}).Next)
	out["urlMaps"] = names(t, e.rum.List(ctx, &computepb.ListRegionUrlMapsRequest{Project: p, Region: region}).Next)
	out["sslCertificates"] = names(t, e.rcert.List(ctx, &computepb.ListRegionSslCertificatesRequest{Project: p, Region: region}).Next)
	out["targetHttpProxies"] = names(t, e.rhp.List(ctx, &computepb.ListRegionTargetHttpProxiesRequest{Project: p, Region: region}).Next)
	out["targetHttpsProxies"] = names(t, e.rsp.List(ctx, &computepb.ListRegionTargetHttpsProxiesRequest{Project: p, Region: region}).Next)
	out["addresses"] = names(t, e.addr.List(ctx, &computepb.ListAddressesRequest{Project: p, Region: region}).Next)
	out["forwardingRules"] = names(t, e.fr.List(ctx, &computepb.ListForwardingRulesRequest{Project: p, Region: region}).Next)
	return out
}

// deleteAll deletes the stack in reverse dependency order through the clients.
func (e *env) deleteAll(region string) {
	ctx, p := e.ctx, project
	if region == "" {
		e.do(e.gfr.Delete(ctx, &computepb.DeleteGlobalForwardingRuleRequest{Project: p, ForwardingRule: "fr-https"}))
		e.do(e.gfr.Delete(ctx, &computepb.DeleteGlobalForwardingRuleRequest{Project: p, ForwardingRule: "fr-http"}))
		e.do(e.gaddr.Delete(ctx, &computepb.DeleteGlobalAddressRequest{Project: p, Address: "ip"}))
		e.do(e.sp.Delete(ctx, &computepb.DeleteTargetHttpsProxyRequest{Project: p, TargetHttpsProxy: "sp"}))
		e.do(e.hp.Delete(ctx, &computepb.DeleteTargetHttpProxyRequest{Project: p, TargetHttpProxy: "hp"}))
		e.do(e.cert.Delete(ctx, &computepb.DeleteSslCertificateRequest{Project: p, SslCertificate: "cert"}))
		e.do(e.um.Delete(ctx, &computepb.DeleteUrlMapRequest{Project: p, UrlMap: "um"}))
		e.do(e.bs.Delete(ctx, &computepb.DeleteBackendServiceRequest{Project: p, BackendService: "bs"}))
		e.do(e.hc.Delete(ctx, &computepb.DeleteHealthCheckRequest{Project: p, HealthCheck: "hc"}))
	} else {
		e.do(e.fr.Delete(ctx, &computepb.DeleteForwardingRuleRequest{Project: p, Region: region, ForwardingRule: "fr-https"}))
		e.do(e.fr.Delete(ctx, &computepb.DeleteForwardingRuleRequest{Project: p, Region: region, ForwardingRule: "fr-http"}))
		e.do(e.addr.Delete(ctx, &computepb.DeleteAddressRequest{Project: p, Region: region, Address: "ip"}))
		e.do(e.rsp.Delete(ctx, &computepb.DeleteRegionTargetHttpsProxyRequest{Project: p, Region: region, TargetHttpsProxy: "sp"}))
		e.do(e.rhp.Delete(ctx, &computepb.DeleteRegionTargetHttpProxyRequest{Project: p, Region: region, TargetHttpProxy: "hp"}))
		e.do(e.rcert.Delete(ctx, &computepb.DeleteRegionSslCertificateRequest{Project: p, Region: region, SslCertificate: "cert"}))
		e.do(e.rum.Delete(ctx, &computepb.DeleteRegionUrlMapRequest{Project: p, Region: region, UrlMap: "um"}))
		e.do(e.rbs.Delete(ctx, &computepb.DeleteRegionBackendServiceRequest{Project: p, Region: region, BackendService: "bs"}))
		e.do(e.rhc.Delete(ctx, &computepb.DeleteRegionHealthCheckRequest{Project: p, Region: region, HealthCheck: "hc"}))
	}
	e.do(e.neg.Delete(ctx, &computepb.DeleteNetworkEndpointGroupRequest{Project: p, Zone: zone, NetworkEndpointGroup: "neg"}))
}

// TestStack inserts, gets, lists and deletes every kind at global and regional scope (NEGs zonal).
func TestStack(t *testing.T) {
	for _, tc := range []struct {
		region, firstIP, secondIP string
	}{
		{region: "", firstIP: "203.0.113.1", secondIP: "203.0.113.2"},
		{region: region, firstIP: "198.51.100.1", secondIP: "198.51.100.2"},
	} {
		scope := scopeOf(tc.region)
		t.Run(scope, func(t *testing.T) {
			e := newEnv(t)
			e.stack(tc.region)
			key := func(coll, name string) string { return "projects/" + project + "/" + scope + "/" + coll + "/" + name }
			link := func(coll, name string) string { return gcpfake.Link(key(coll, name)) }

			want := map[string][]string{"healthChecks": {"hc"}, "networkEndpointGroups": {"neg"}, "backendServices": {"bs"}, "urlMaps": {"um"},
				"sslCertificates": {"cert"}, "targetHttpProxies": {"hp"}, "targetHttpsProxies": {"sp"}, "addresses": {"ip"}, "forwardingRules": {"fr-http", "fr-https"}}
			if diff := cmp.Diff(want, e.listAll(tc.region)); diff != "" {
				t.Errorf("lists (-want +got):\n%s", diff)
			}

			// Every reference is stored as the full selfLink, whatever form it was sent in.
			um, _ := gcpfake.Get[*computepb.UrlMap](e.srv, key("urlMaps", "um"))
			hp, _ := gcpfake.Get[*computepb.TargetHttpProxy](e.srv, key("targetHttpProxies", "hp"))
			sp, _ := gcpfake.Get[*computepb.TargetHttpsProxy](e.srv, key("targetHttpsProxies", "sp"))
			bs, _ := gcpfake.Get[*computepb.BackendService](e.srv, key("backendServices", "bs"))
			frHTTP, _ := gcpfake.Get[*computepb.ForwardingRule](e.srv, key("forwardingRules", "fr-http"))
			frHTTPS, _ := gcpfake.Get[*computepb.ForwardingRule](e.srv, key("forwardingRules", "fr-https"))
			ip, _ := gcpfake.Get[*computepb.Address](e.srv, key("addresses", "ip"))
			negLink := gcpfake.Link("projects/" + project + "/zones/" + zone + "/networkEndpointGroups/neg")
			gotRefs := []string{um.GetDefaultService(), hp.GetUrlMap(), sp.GetUrlMap(), sp.GetSslCertificates()[0], bs.GetHealthChecks()[0],
				bs.GetBackends()[0].GetGroup(), frHTTP.GetTarget(), frHTTPS.GetTarget()}
			wantRefs := []string{link("backendServices", "bs"), link("urlMaps", "um"), link("urlMaps", "um"), link("sslCertificates", "cert"),
				link("healthChecks", "hc"), negLink, link("targetHttpProxies", "hp"), link("targetHttpsProxies", "sp")}
			if diff := cmp.Diff(wantRefs, gotRefs); diff != "" {
				t.Errorf("references (-want +got):\n%s", diff)
			}

			// The address is allocated first from the scope's test range, the rule naming it takes its
			// IP and makes it IN_USE; the rule without IPAddress gets the next, ephemeral, one.
			gotIP := []string{ip.GetAddress(), ip.GetStatus(), frHTTP.GetIPAddress(), frHTTPS.GetIPAddress()}
			if diff := cmp.Diff([]string{tc.firstIP, "IN_USE", tc.firstIP, tc.secondIP}, gotIP); diff != "" {
				t.Errorf("addresses (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{link("forwardingRules", "fr-http")}, ip.GetUsers()); diff != "" {
				t.Errorf("address users (-want +got):\n%s", diff)
			}

			// What the client reads back carries the server-set fields.
			var got *computepb.UrlMap
			var err error
			if tc.region == "" {
				got, err = e.um.Get(e.ctx, &computepb.GetUrlMapRequest{Project: project, UrlMap: "um"})
			} else {
				got, err = e.rum.Get(e.ctx, &computepb.GetRegionUrlMapRequest{Project: project, Region: tc.region, UrlMap: "um"})
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.GetKind() != "compute#urlMap" || got.GetSelfLink() != link("urlMaps", "um") || got.GetId() == 0 || got.GetFingerprint() == "" ||
				got.GetCreationTimestamp() == "" || (tc.region != "" && got.GetRegion() != gcpfake.Link("projects/"+project+"/"+scope)) {
				t.Errorf("server fields of %v", got)
			}

			// The proxy actions reach the fake at the client's paths in both scopes (globally
			// without "global/").
			umRef := &computepb.UrlMapReference{UrlMap: proto.String(scope + "/urlMaps/um")}
			certs := []string{scope + "/sslCertificates/cert"}
			if tc.region == "" {
				e.do(e.hp.SetUrlMap(e.ctx, &computepb.SetUrlMapTargetHttpProxyRequest{Project: project, TargetHttpProxy: "hp", UrlMapReferenceResource: umRef}))
				e.do(e.sp.SetSslCertificates(e.ctx, &computepb.SetSslCertificatesTargetHttpsProxyRequest{Project: project, TargetHttpsProxy: "sp",
					TargetHttpsProxiesSetSslCertificatesRequestResource: &computepb.TargetHttpsProxiesSetSslCertificatesRequest{SslCertificates: certs}}))
			} else {
				e.do(e.rhp.SetUrlMap(e.ctx, &computepb.SetUrlMapRegionTargetHttpProxyRequest{Project: project, Region: tc.region, TargetHttpProxy: "hp", UrlMapReferenceResource: umRef}))
				e.do(e.rsp.SetSslCertificates(e.ctx, &computepb.SetSslCertificatesRegionTargetHttpsProxyRequest{Project: project, Region: tc.region, TargetHttpsProxy: "sp",
					RegionTargetHttpsProxiesSetSslCertificatesRequestResource: &computepb.RegionTargetHttpsProxiesSetSslCertificatesRequest{SslCertificates: certs}}))
			}
			if sp2, _ := gcpfake.Get[*computepb.TargetHttpsProxy](e.srv, key("targetHttpsProxies", "sp")); sp2.GetFingerprint() == sp.GetFingerprint() {
				t.Error("setSslCertificates kept the fingerprint")
			}

			e.deleteAll(tc.region)
			for _, c := range colls {
				if n := e.srv.Count(c); n != 0 {
					t.Errorf("%d %s left after delete", n, c)
				}
			}
		})
	}
}

// TestProjectsAreSeparate: the same name in two projects is two resources.
func TestProjectsAreSeparate(t *testing.T) {
	e := newEnv(t)
	for _, p := range []string{"a", "b"} {
		e.do(e.hc.Insert(e.ctx, &computepb.InsertHealthCheckRequest{Project: p, HealthCheckResource: &computepb.HealthCheck{Name: proto.String("hc")}}))
	}
	e.do(e.hc.Delete(e.ctx, &computepb.DeleteHealthCheckRequest{Project: "a", HealthCheck: "hc"}))
	if diff := cmp.Diff([]string{"projects/b/global/healthChecks/hc"}, e.srv.Keys("healthChecks")); diff != "" {
		t.Errorf("keys (-want +got):\n%s", diff)
	}
}

// TestConcurrentClients: the fake serves parallel clients (run with -race); IDs stay unique.
func TestConcurrentClients(t *testing.T) {
	e := newEnv(t)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 10 {
				hc := &computepb.HealthCheck{Name: proto.String(fmt.Sprintf("hc-%d-%d", g, i))}
				if _, err := e.hc.Insert(e.ctx, &computepb.InsertHealthCheckRequest{Project: project, HealthCheckResource: hc}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	ids := map[uint64]bool{}
	for _, k := range e.srv.Keys("healthChecks") {
		hc, _ := gcpfake.Get[*computepb.HealthCheck](e.srv, k)
		ids[hc.GetId()] = true
	}
	if len(ids) != 40 {
		t.Errorf("%d distinct IDs for 40 inserts", len(ids))
	}
}
