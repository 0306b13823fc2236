package aws

import (
	"cmp"
	"slices"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/dataplane/ir"
	"github.com/fleetgate/fleetgate/providers"
)

// TestBuildApplication builds whole ALB Stacks from hand-written models and compares every field.
func TestBuildApplication(t *testing.T) {
	albName := loadBalancerName(testGateway, testFleet, "web", TypeApplication, schemeInternetFacing)
	baseStack := func() *Stack {
		return &Stack{
			Gateway: testGateway, GatewayID: providers.GatewayID(testGateway), Clusters: []string{"east", "hub"},
			LoadBalancer: LoadBalancer{
				Name: albName, Type: TypeApplication, Scheme: schemeInternetFacing, IPAddressType: "ipv4",
				Subnets:    []string{"subnet-a", "subnet-b"},
				Attributes: map[string]string{attrDeletionProtection: "false", attrAccessLogsEnabled: "false", attrIdleTimeout: "60"},
			},
			SecurityGroup: &SecurityGroup{ID: "sg", Name: albName, Description: "fleetgate load balancer of gateway hub/infra/web", VPC: testVPC},
		}
	}

	// HTTP: every condition kind, per-cluster weights, a redirect, a 500, host precedence.
	webTG := wantTG("hub/infra/web:8080", "hub", 8080, protocolHTTP, versionHTTP1, Target{IP: "10.0.0.4", Port: 8080}, Target{IP: "10.0.0.5", Port: 8080})
	fooHub := wantTG("hub/infra/foo:80", "hub", 80, protocolHTTP, versionHTTP1, Target{IP: "10.0.0.6", Port: 8080})
	fooEast := wantTG("hub/infra/foo:80", "east", 80, protocolHTTP, versionHTTP1, Target{IP: "192.168.1.7", Port: 8080, AvailabilityZone: "all"})
	httpModel := testModel(httpListener(80,
		ir.VirtualHost{Hostname: "*", Routes: []ir.Route{
			{Name: "HTTPRoute/infra/web/0/0", Match: ir.Match{Path: prefix("/")}, Backends: []ir.Backend{
				backend("hub/infra/web:8080", 1, ep("hub", "10.0.0.5", 8080, 0), ep("hub", "10.0.0.4", 8080, 0))}},
			{Name: "HTTPRoute/infra/broken/0/0", Match: ir.Match{Path: prefix("/broken")}, Backends: []ir.Backend{
				{Name: "hub/infra/missing:80", Weight: 1, Invalid: true}}},
		}},
		ir.VirtualHost{Hostname: "foo.example.com", Routes: []ir.Route{
			{Name: "HTTPRoute/infra/foo/0/0", Match: ir.Match{
				Path: exact("/login"), Method: "POST",
				Headers:     []ir.KeyMatch{{Name: "x-env", Type: ir.MatchExact, Value: "prod"}},
				QueryParams: []ir.KeyMatch{{Name: "debug", Type: ir.MatchExact, Value: "1"}},
			}, Backends: []ir.Backend{backend("hub/infra/foo:80", 1, ep("hub", "10.0.0.6", 8080, 0), ep("east", "192.168.1.7", 8080, 3))}},
		}},
		ir.VirtualHost{Hostname: "*.example.com", Routes: []ir.Route{
			{Name: "HTTPRoute/infra/redir/0/0", Match: ir.Match{Path: prefix("/old/")}, Filters: ir.Filters{Redirect: &ir.Redirect{
				Scheme: "https", Port: 443, Path: &ir.PathModifier{Type: ir.ReplaceFullPath, Value: "/new"}, StatusCode: 301}}},
		}},
	))
	httpModel.Labels = map[string]string{"team": "web", "app": "shop"}
	httpOpts := albOptions()
	httpOpts.Tags = map[string]string{"team": "platform", "cost-centre": "42"}
	httpWant := baseStack()
	httpWant.Tags = map[string]string{"team": "platform", "cost-centre": "42", "app": "shop"}
	httpWant.SecurityGroup.Ingress = []IngressRule{{Protocol: "tcp", Port: 80, CIDR: "0.0.0.0/0"}}
	httpWant.TargetGroups = sortTGs(webTG, fooHub, fooEast)
	httpWant.Listeners = []Listener{{ID: "listener/80", Port: 80, Protocol: protocolHTTP, DefaultAction: fixed404()}}
	httpWant.Notes = []string{"route HTTPRoute/infra/foo/0/0: ALB compares header and query parameter values ignoring case"}
	httpWant.Rules = []Rule{
		{ID: ruleID(80, "foo.example.com", "HTTPRoute/infra/foo/0/0"), Listener: "listener/80", Origin: "HTTPRoute/infra/foo/0/0",
			Conditions: []Condition{
				{Field: fieldHostHeader, Values: []string{"foo.example.com"}},
				{Field: fieldPathPattern, Values: []string{"/login"}},
				{Field: fieldMethod, Values: []string{"POST"}},
				{Field: fieldHeader, HeaderName: "x-env", Values: []string{"prod"}},
				{Field: fieldQuery, Query: []KeyValue{{Key: "debug", Value: "1"}}},
			},
			// hub has 1 endpoint of weight 1, east 1 of weight 3: a quarter and three quarters.
			Action: Action{Forward: []WeightedTargetGroup{{TargetGroup: fooEast.ID, Weight: 3}, {TargetGroup: fooHub.ID, Weight: 1}}}},
		{ID: ruleID(80, "*.example.com", "HTTPRoute/infra/redir/0/0"), Listener: "listener/80", Origin: "HTTPRoute/infra/redir/0/0",
			Conditions: []Condition{
				{Field: fieldHostHeader, Values: []string{"*.example.com"}},
				{Field: fieldPathPattern, Values: []string{"/old", "/old/*"}},
			},
			Action: Action{Redirect: &Redirect{Protocol: "HTTPS", Host: "#{host}", Port: "443", Path: "/new", Query: "#{query}", StatusCode: "HTTP_301"}}},
		{ID: ruleID(80, "*", "HTTPRoute/infra/web/0/0"), Listener: "listener/80", Origin: "HTTPRoute/infra/web/0/0",
			Conditions: []Condition{{Field: fieldPathPattern, Values: []string{"/*"}}},
			Action:     Action{Forward: []WeightedTargetGroup{{TargetGroup: webTG.ID, Weight: 1}}}},
		{ID: ruleID(80, "*", "HTTPRoute/infra/broken/0/0"), Listener: "listener/80", Origin: "HTTPRoute/infra/broken/0/0",
			Conditions: []Condition{{Field: fieldPathPattern, Values: []string{"/broken", "/broken/*"}}},
			Action:     Action{Fixed: &FixedResponse{StatusCode: "500", ContentType: "text/plain"}}},
	}

	// HTTPS: imported certificates, dualstack, options, gRPC/h2c/TLS backends.
	leafA, chainA1, chainA2, keyA := pemBlock("leaf-a"), pemBlock("inter-1"), pemBlock("inter-2"), []byte("key-a")
	leafB, keyB := pemBlock("leaf-b"), []byte("key-b")
	certA := Certificate{ID: certificateID("infra/a"), CertPEM: leafA, ChainPEM: append(slices.Clone(chainA1), chainA2...), KeyPEM: keyA,
		Fingerprint: wantFingerprint(leafA, append(slices.Clone(chainA1), chainA2...), keyA)}
	certB := Certificate{ID: certificateID("infra/b"), CertPEM: leafB, KeyPEM: keyB, Fingerprint: wantFingerprint(leafB, nil, keyB)}
	httpsModel := testModel(
		httpListener(80),
		ir.Listener{Name: "https", Port: 443, Protocol: ir.ProtocolHTTPS, SourceRanges: []string{"10.0.0.0/8"},
			Certificates: []ir.Certificate{
				{Name: "infra/a", CertPEM: slices.Concat(leafA, chainA1, chainA2), KeyPEM: keyA},
				{Name: "infra/b", CertPEM: leafB, KeyPEM: keyB},
			},
			VirtualHosts: []ir.VirtualHost{
				{Hostname: "*", Routes: []ir.Route{
					{Name: "HTTPRoute/infra/h2/0/0", Match: ir.Match{Path: prefix("/h2")}, Backends: []ir.Backend{
						{Name: "hub/infra/h2:80", Weight: 1, AppProtocol: ir.AppH2C, Endpoints: []ir.Endpoint{ep("hub", "10.0.1.10", 8080, 0)}}}},
					{Name: "HTTPRoute/infra/tls/0/0", Match: ir.Match{Path: prefix("/secure")}, Backends: []ir.Backend{
						{Name: "hub/infra/s:443", Weight: 1, AppProtocol: ir.AppTLS, Endpoints: []ir.Endpoint{ep("hub", "10.0.0.11", 8443, 0)}}}},
				}},
				{Hostname: "grpc.example.com", Routes: []ir.Route{
					{Name: "GRPCRoute/infra/g/0/0", Match: ir.Match{Path: exact("/pkg.Svc/Get")}, Backends: []ir.Backend{
						{Name: "hub/infra/g:9000", Weight: 1, AppProtocol: ir.AppH2C, Endpoints: []ir.Endpoint{ep("hub", "10.0.0.9", 9000, 0)}}}},
				}},
			}})
	httpsOpts := albOptions()
	httpsOpts.IPAddressType = "dualstack"
	httpsOpts.DeletionProtection = true
	httpsOpts.AccessLogs = &v1alpha1.AWSAccessLogs{Bucket: "logs", Prefix: "web"}
	httpsOpts.IdleTimeoutSeconds = ptr.To[int32](120)
	httpsOpts.DeregistrationDelaySeconds = ptr.To[int32](30)
	httpsOpts.HealthCheck = &v1alpha1.AWSHealthCheck{Path: "/healthz", Matcher: "200-299", IntervalSeconds: ptr.To[int32](10)}
	withOpts := func(tg TargetGroup) TargetGroup {
		tg.Attributes[attrDeregistrationDelay] = "30"
		tg.HealthCheck.IntervalSeconds = 10
		if tg.ProtocolVersion != versionGRPC {
			tg.HealthCheck.Path, tg.HealthCheck.Matcher = "/healthz", "200-299"
		}
		return tg
	}
	gTG := withOpts(wantTG("hub/infra/g:9000", "hub", 9000, protocolHTTP, versionGRPC, Target{IP: "10.0.0.9", Port: 9000}))
	h2TG := withOpts(wantTG("hub/infra/h2:80", "hub", 80, protocolHTTP, versionHTTP2, Target{IP: "10.0.1.10", Port: 8080}))
	sTG := withOpts(wantTG("hub/infra/s:443", "hub", 443, protocolHTTPS, versionHTTP1, Target{IP: "10.0.0.11", Port: 8443}))
	httpsWant := baseStack()
	httpsWant.LoadBalancer.IPAddressType = "dualstack"
	httpsWant.LoadBalancer.Attributes = map[string]string{attrDeletionProtection: "true", attrAccessLogsEnabled: "true",
		attrAccessLogsBucket: "logs", attrAccessLogsPrefix: "web", attrIdleTimeout: "120"}
	httpsWant.SecurityGroup.Ingress = []IngressRule{{Protocol: "tcp", Port: 80, CIDR: "0.0.0.0/0"}, {Protocol: "tcp", Port: 80, CIDR: "::/0"}, {Protocol: "tcp", Port: 443, CIDR: "10.0.0.0/8"}}
	httpsWant.TargetGroups = sortTGs(gTG, h2TG, sTG)
	httpsWant.Certificates = []Certificate{certA, certB}
	slices.SortFunc(httpsWant.Certificates, func(a, b Certificate) int { return cmp.Compare(a.ID, b.ID) })
	httpsWant.Listeners = []Listener{
		{ID: "listener/443", Port: 443, Protocol: protocolHTTPS, Certificates: []string{certA.ID, certB.ID}, SSLPolicy: defaultSSLPolicy, DefaultAction: fixed404()},
		{ID: "listener/80", Port: 80, Protocol: protocolHTTP, DefaultAction: fixed404()},
	}
	httpsWant.Rules = []Rule{
		{ID: ruleID(443, "grpc.example.com", "GRPCRoute/infra/g/0/0"), Listener: "listener/443", Origin: "GRPCRoute/infra/g/0/0",
			Conditions: []Condition{{Field: fieldHostHeader, Values: []string{"grpc.example.com"}}, {Field: fieldPathPattern, Values: []string{"/pkg.Svc/Get"}}},
			Action:     Action{Forward: []WeightedTargetGroup{{TargetGroup: gTG.ID, Weight: 1}}}},
		{ID: ruleID(443, "*", "HTTPRoute/infra/h2/0/0"), Listener: "listener/443", Origin: "HTTPRoute/infra/h2/0/0",
			Conditions: []Condition{{Field: fieldPathPattern, Values: []string{"/h2", "/h2/*"}}},
			Action:     Action{Forward: []WeightedTargetGroup{{TargetGroup: h2TG.ID, Weight: 1}}}},
		{ID: ruleID(443, "*", "HTTPRoute/infra/tls/0/0"), Listener: "listener/443", Origin: "HTTPRoute/infra/tls/0/0",
			Conditions: []Condition{{Field: fieldPathPattern, Values: []string{"/secure", "/secure/*"}}},
			Action:     Action{Forward: []WeightedTargetGroup{{TargetGroup: sTG.ID, Weight: 1}}}},
	}

	// Certificates by ARN: nothing imported.
	arnOpts := albOptions()
	arnOpts.CertificateARNs = []string{"arn:aws:acm:us-east-1:123456789012:certificate/1", "arn:aws:acm:us-east-1:123456789012:certificate/2"}
	arnOpts.SSLPolicy = "ELBSecurityPolicy-2016-08"
	arnWant := baseStack()
	arnWant.SecurityGroup.Ingress = []IngressRule{{Protocol: "tcp", Port: 443, CIDR: "0.0.0.0/0"}}
	arnWant.Listeners = []Listener{{ID: "listener/443", Port: 443, Protocol: protocolHTTPS, Certificates: arnOpts.CertificateARNs, SSLPolicy: "ELBSecurityPolicy-2016-08", DefaultAction: fixed404()}}

	// More than 5 (backend, cluster) pairs: one target group per backend, and a Note.
	manyRoute := "HTTPRoute/infra/many/0/0"
	spread := func(name string, weight uint32) ir.Backend {
		return backend(name, weight, ep("c1", "10.0.0.30", 80, 0), ep("c2", "10.0.0.31", 80, 0), ep("c3", "10.0.0.32", 80, 0))
	}
	manyA := wantTG("hub/infra/a:80", "", 80, protocolHTTP, versionHTTP1, Target{IP: "10.0.0.30", Port: 80}, Target{IP: "10.0.0.31", Port: 80}, Target{IP: "10.0.0.32", Port: 80})
	manyB := wantTG("hub/infra/b:80", "", 80, protocolHTTP, versionHTTP1, Target{IP: "10.0.0.30", Port: 80}, Target{IP: "10.0.0.31", Port: 80}, Target{IP: "10.0.0.32", Port: 80})
	// Weights beyond 999 are scaled, and a small share keeps 1.
	bigX := wantTG("hub/infra/x:80", "c1", 80, protocolHTTP, versionHTTP1, Target{IP: "10.0.0.40", Port: 80})
	bigY := wantTG("hub/infra/y:80", "c1", 80, protocolHTTP, versionHTTP1, Target{IP: "10.0.0.41", Port: 80})
	manyModel := testModel(httpListener(80, ir.VirtualHost{Hostname: "*", Routes: []ir.Route{
		{Name: manyRoute, Match: ir.Match{Path: prefix("/many")}, Backends: []ir.Backend{spread("hub/infra/a:80", 3), spread("hub/infra/b:80", 1)}},
		{Name: "HTTPRoute/infra/big/0/0", Match: ir.Match{Path: prefix("/big")}, Backends: []ir.Backend{
			backend("hub/infra/x:80", 5000, ep("c1", "10.0.0.40", 80, 0)), backend("hub/infra/y:80", 2, ep("c1", "10.0.0.41", 80, 0))}},
	}}))
	manyWant := baseStack()
	manyWant.SecurityGroup.Ingress = []IngressRule{{Protocol: "tcp", Port: 80, CIDR: "0.0.0.0/0"}}
	manyWant.TargetGroups = sortTGs(manyA, manyB, bigX, bigY)
	manyWant.Listeners = []Listener{{ID: "listener/80", Port: 80, Protocol: protocolHTTP, DefaultAction: fixed404()}}
	manyWant.Rules = []Rule{
		{ID: ruleID(80, "*", manyRoute), Listener: "listener/80", Origin: manyRoute,
			Conditions: []Condition{{Field: fieldPathPattern, Values: []string{"/many", "/many/*"}}},
			Action:     Action{Forward: []WeightedTargetGroup{{TargetGroup: manyA.ID, Weight: 3}, {TargetGroup: manyB.ID, Weight: 1}}}},
		{ID: ruleID(80, "*", "HTTPRoute/infra/big/0/0"), Listener: "listener/80", Origin: "HTTPRoute/infra/big/0/0",
			Conditions: []Condition{{Field: fieldPathPattern, Values: []string{"/big", "/big/*"}}},
			Action:     Action{Forward: []WeightedTargetGroup{{TargetGroup: bigX.ID, Weight: 999}, {TargetGroup: bigY.ID, Weight: 1}}}},
	}
	manyWant.Notes = []string{"cluster weights of HTTPRoute/infra/many/0/0 approximated by endpoint count: 6 target groups needed, ALB allows 5"}

	tests := []struct {
		name  string
		model *providers.LoadBalancer
		opts  v1alpha1.AWSOptions
		want  *Stack
	}{
		{name: "http routes", model: httpModel, opts: httpOpts, want: httpWant},
		{name: "https with imported certificates", model: httpsModel, opts: httpsOpts, want: httpsWant},
		{name: "https with certificate ARNs", model: testModel(ir.Listener{Name: "https", Port: 443, Protocol: ir.ProtocolHTTPS,
			Certificates: []ir.Certificate{{Name: "infra/a", CertPEM: leafA, KeyPEM: keyA}}}), opts: arnOpts, want: arnWant},
		{name: "more than 5 target groups fall back to one per backend", model: manyModel, opts: albOptions(), want: manyWant},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Build(tt.model, tt.opts, testNetwork(), testFleet)
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			if diff := gocmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Build (-want +got):\n%s", diff)
			}
		})
	}
}

func sortTGs(tgs ...TargetGroup) []TargetGroup {
	slices.SortFunc(tgs, func(a, b TargetGroup) int { return cmp.Compare(a.ID, b.ID) })
	return tgs
}
