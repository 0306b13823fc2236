package gcpfake_test

import (
	"net/http"
	"strings"
	"testing"

	"cloud.google.com/go/compute/apiv1/computepb"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"

	"github.com/fleetgate/fleetgate/providers/gcp/gcpfake"
)

// expect fails unless err is an API error with code (0: no error).
func expect(t *testing.T, what string, err error, code int) {
	t.Helper()
	if got, reason := apiErr(t, err); got != code {
		t.Errorf("%s: got %d %q (%v), want %d", what, got, reason, err, code)
	}
}

// TestFingerprints pins optimistic locking. Per the compute v1 reference, UrlMap and BackendService
// "An up-to-date fingerprint must be provided in order to update … otherwise the request will fail
// with error 412 conditionNotMet" (so a missing one fails too); ForwardingRule only asks to
// "Include the fingerprint in patch request" (a missing one is accepted); labelFingerprint "You must
// always provide an up-to-date fingerprint hash in order to update or change labels"; HealthCheck
// has no fingerprint.
func TestFingerprints(t *testing.T) {
	e := newEnv(t)
	e.stack("")
	ctx, p := e.ctx, project
	um, err := e.um.Get(ctx, &computepb.GetUrlMapRequest{Project: p, UrlMap: "um"})
	if err != nil {
		t.Fatal(err)
	}
	stale := um.GetFingerprint()
	um.Description = proto.String("v2")
	e.do(e.um.Update(ctx, &computepb.UpdateUrlMapRequest{Project: p, UrlMap: "um", UrlMapResource: um}))
	cur, _ := gcpfake.Get[*computepb.UrlMap](e.srv, "projects/proj/global/urlMaps/um")
	if cur.GetFingerprint() == stale || cur.GetFingerprint() == "" || cur.GetDescription() != "v2" {
		t.Errorf("after update: fingerprint %q (was %q), description %q", cur.GetFingerprint(), stale, cur.GetDescription())
	}

	um.Fingerprint = proto.String(stale)
	expect(t, "url map update, stale", opErr(e.um.Update(ctx, &computepb.UpdateUrlMapRequest{Project: p, UrlMap: "um", UrlMapResource: um})), http.StatusPreconditionFailed)
	expect(t, "url map patch, stale", opErr(e.um.Patch(ctx, &computepb.PatchUrlMapRequest{Project: p, UrlMap: "um", UrlMapResource: um})), http.StatusPreconditionFailed)
	um.Fingerprint = nil
	expect(t, "url map update, missing", opErr(e.um.Update(ctx, &computepb.UpdateUrlMapRequest{Project: p, UrlMap: "um", UrlMapResource: um})), http.StatusPreconditionFailed)
	expect(t, "backend service update, missing", opErr(e.bs.Update(ctx, &computepb.UpdateBackendServiceRequest{Project: p, BackendService: "bs",
		BackendServiceResource: &computepb.BackendService{Name: proto.String("bs")}})), http.StatusPreconditionFailed)
	expect(t, "health check update, none", opErr(e.hc.Update(ctx, &computepb.UpdateHealthCheckRequest{Project: p, HealthCheck: "hc",
		HealthCheckResource: &computepb.HealthCheck{Name: proto.String("hc"), Type: proto.String("TCP")}})), 0)

	frKey := "projects/proj/global/forwardingRules/fr-http"
	fr0, _ := gcpfake.Get[*computepb.ForwardingRule](e.srv, frKey)
	expect(t, "forwarding rule patch, missing", opErr(e.gfr.Patch(ctx, &computepb.PatchGlobalForwardingRuleRequest{Project: p, ForwardingRule: "fr-http",
		ForwardingRuleResource: &computepb.ForwardingRule{Description: proto.String("x")}})), 0)
	expect(t, "forwarding rule patch, stale", opErr(e.gfr.Patch(ctx, &computepb.PatchGlobalForwardingRuleRequest{Project: p, ForwardingRule: "fr-http",
		ForwardingRuleResource: &computepb.ForwardingRule{Fingerprint: fr0.Fingerprint}})), http.StatusPreconditionFailed)

	// setLabels on a forwarding rule and an address.
	fr1, _ := gcpfake.Get[*computepb.ForwardingRule](e.srv, frKey)
	labels := func(fp *string) *computepb.GlobalSetLabelsRequest {
		return &computepb.GlobalSetLabelsRequest{LabelFingerprint: fp, Labels: map[string]string{"owner": "fleetgate"}}
	}
	expect(t, "setLabels, missing", opErr(e.gfr.SetLabels(ctx, &computepb.SetLabelsGlobalForwardingRuleRequest{Project: p, Resource: "fr-http", GlobalSetLabelsRequestResource: labels(nil)})), http.StatusPreconditionFailed)
	e.do(e.gfr.SetLabels(ctx, &computepb.SetLabelsGlobalForwardingRuleRequest{Project: p, Resource: "fr-http", GlobalSetLabelsRequestResource: labels(fr1.LabelFingerprint)}))
	fr2, _ := gcpfake.Get[*computepb.ForwardingRule](e.srv, frKey)
	if fr2.GetLabels()["owner"] != "fleetgate" || fr2.GetLabelFingerprint() == fr1.GetLabelFingerprint() || fr2.GetFingerprint() == fr1.GetFingerprint() {
		t.Errorf("after setLabels: %v", fr2)
	}
	expect(t, "setLabels, stale", opErr(e.gfr.SetLabels(ctx, &computepb.SetLabelsGlobalForwardingRuleRequest{Project: p, Resource: "fr-http", GlobalSetLabelsRequestResource: labels(fr1.LabelFingerprint)})), http.StatusPreconditionFailed)
	ip, _ := gcpfake.Get[*computepb.Address](e.srv, "projects/proj/global/addresses/ip")
	e.do(e.gaddr.SetLabels(ctx, &computepb.SetLabelsGlobalAddressRequest{Project: p, Resource: "ip", GlobalSetLabelsRequestResource: labels(ip.LabelFingerprint)}))
	expect(t, "address setLabels, stale", opErr(e.gaddr.SetLabels(ctx, &computepb.SetLabelsGlobalAddressRequest{Project: p, Resource: "ip", GlobalSetLabelsRequestResource: labels(ip.LabelFingerprint)})), http.StatusPreconditionFailed)

	// setUrlMap, setSslCertificates and setTarget change the fingerprint too.
	hp0, _ := gcpfake.Get[*computepb.TargetHttpProxy](e.srv, "projects/proj/global/targetHttpProxies/hp")
	e.do(e.hp.SetUrlMap(ctx, &computepb.SetUrlMapTargetHttpProxyRequest{Project: p, TargetHttpProxy: "hp", UrlMapReferenceResource: &computepb.UrlMapReference{UrlMap: proto.String("global/urlMaps/um")}}))
	hp1, _ := gcpfake.Get[*computepb.TargetHttpProxy](e.srv, "projects/proj/global/targetHttpProxies/hp")
	if hp1.GetFingerprint() == hp0.GetFingerprint() {
		t.Errorf("setUrlMap kept fingerprint %q", hp0.GetFingerprint())
	}
	e.do(e.gfr.SetTarget(ctx, &computepb.SetTargetGlobalForwardingRuleRequest{Project: p, ForwardingRule: "fr-http", TargetReferenceResource: &computepb.TargetReference{Target: proto.String("global/targetHttpsProxies/sp")}}))
	if fr3, _ := gcpfake.Get[*computepb.ForwardingRule](e.srv, frKey); fr3.GetTarget() != gcpfake.Link("projects/proj/global/targetHttpsProxies/sp") || fr3.GetFingerprint() == fr2.GetFingerprint() {
		t.Errorf("after setTarget: %v", fr3)
	}
}

// TestUpdateClearsPatchKeeps pins the measured client behaviour: Patch drops empty repeated fields
// from the body, so under JSON merge patch semantics (reference: "This method supports PATCH
// semantics and uses the JSON merge patch format") the list is kept; Update (PUT) replaces it.
func TestUpdateClearsPatchKeeps(t *testing.T) {
	e := newEnv(t)
	e.stack("")
	ctx, p, key := e.ctx, project, "projects/proj/global/backendServices/bs"
	bs, _ := gcpfake.Get[*computepb.BackendService](e.srv, key)
	e.srv.ResetCalls()
	e.do(e.bs.Patch(ctx, &computepb.PatchBackendServiceRequest{Project: p, BackendService: "bs",
		BackendServiceResource: &computepb.BackendService{Fingerprint: bs.Fingerprint, Backends: []*computepb.Backend{}, Description: proto.String("patched")}}))
	if body := string(e.srv.Mutations()[0].Body); strings.Contains(body, "backends") {
		t.Errorf("client sent backends in %s", body)
	}
	patched, _ := gcpfake.Get[*computepb.BackendService](e.srv, key)
	if len(patched.GetBackends()) != 1 || len(patched.GetHealthChecks()) != 1 || patched.GetDescription() != "patched" {
		t.Errorf("after patch: %v", patched)
	}
	patched.Backends = nil
	e.do(e.bs.Update(ctx, &computepb.UpdateBackendServiceRequest{Project: p, BackendService: "bs", BackendServiceResource: patched}))
	updated, _ := gcpfake.Get[*computepb.BackendService](e.srv, key)
	if len(updated.GetBackends()) != 0 || updated.GetId() != bs.GetId() || updated.GetSelfLink() != bs.GetSelfLink() {
		t.Errorf("after update: %v", updated)
	}
}

// TestOperations pins what op.Wait sees: every mutation returns an Operation in its scope, DONE on
// the first poll; a failed operation applies nothing and is reported by Wait only when it carries
// httpErrorStatusCode.
func TestOperations(t *testing.T) {
	e := newEnv(t)
	ctx, p := e.ctx, project
	hc := func(name string) *computepb.HealthCheck { return &computepb.HealthCheck{Name: proto.String(name)} }

	e.srv.SetRunningOperations(true)
	op, err := e.hc.Insert(ctx, &computepb.InsertHealthCheckRequest{Project: p, HealthCheckResource: hc("a")})
	if err != nil || op.Done() {
		t.Fatalf("insert: done=%v err=%v, want RUNNING", op != nil && op.Done(), err)
	}
	e.srv.ResetCalls()
	got := e.do(op, nil)
	if calls := e.srv.Calls(); len(calls) != 1 || calls[0].Path != "/compute/v1/projects/proj/global/operations/"+op.Name() || !op.Done() {
		t.Errorf("Wait polled %+v", calls)
	}
	e.srv.SetRunningOperations(false)
	want := &computepb.Operation{Kind: proto.String("compute#operation"), Name: proto.String(op.Name()), OperationType: proto.String("insert"),
		Status: computepb.Operation_DONE.Enum(), TargetLink: proto.String(gcpfake.Link("projects/proj/global/healthChecks/a")),
		SelfLink: proto.String(gcpfake.Link("projects/proj/global/operations/" + op.Name()))}
	if diff := cmp.Diff(want.String(), (&computepb.Operation{Kind: got.Kind, Name: got.Name, OperationType: got.OperationType, Status: got.Status,
		TargetLink: got.TargetLink, SelfLink: got.SelfLink}).String()); diff != "" {
		t.Errorf("operation (-want +got):\n%s", diff)
	}
	regional := e.do(e.rhc.Insert(ctx, &computepb.InsertRegionHealthCheckRequest{Project: p, Region: region, HealthCheckResource: hc("r")}))
	zonal := e.do(e.neg.Insert(ctx, &computepb.InsertNetworkEndpointGroupRequest{Project: p, Zone: zone, NetworkEndpointGroupResource: &computepb.NetworkEndpointGroup{Name: proto.String("n")}}))
	if !strings.Contains(regional.GetSelfLink(), "/regions/"+region+"/operations/") || !strings.Contains(zonal.GetSelfLink(), "/zones/"+zone+"/operations/") {
		t.Errorf("operation scopes: %s, %s", regional.GetSelfLink(), zonal.GetSelfLink())
	}

	insertHC := func(c gcpfake.Call) bool {
		return c.Method == http.MethodPost && strings.HasSuffix(c.Path, "/global/healthChecks")
	}
	for _, tc := range []struct {
		name       string
		withStatus bool
	}{{"with httpErrorStatusCode", true}, {"without httpErrorStatusCode", false}} {
		t.Run(tc.name, func(t *testing.T) {
			e.srv.Inject(insertHC, gcpfake.Fault{Code: http.StatusBadRequest, Reason: "RESOURCE_NOT_READY", InOperation: true, WithHTTPStatus: tc.withStatus}, 1)
			op, err := e.hc.Insert(ctx, &computepb.InsertHealthCheckRequest{Project: p, HealthCheckResource: hc("failed")})
			if err != nil {
				t.Fatalf("insert: %v (operation faults arrive in the operation)", err)
			}
			werr := op.Wait(ctx)
			if tc.withStatus {
				expect(t, "Wait", werr, http.StatusBadRequest)
			} else if werr != nil {
				t.Errorf("Wait = %v, want nil: the client ignores an error without httpErrorStatusCode", werr)
			}
			if errs := op.Proto().GetError().GetErrors(); len(errs) != 1 || errs[0].GetCode() != "RESOURCE_NOT_READY" {
				t.Errorf("op.Proto().GetError() = %v", op.Proto().GetError())
			}
			if _, ok := gcpfake.Get[*computepb.HealthCheck](e.srv, "projects/proj/global/healthChecks/failed"); ok {
				t.Error("a failed operation applied its change")
			}
		})
	}
}
