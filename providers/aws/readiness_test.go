package aws

import (
	"context"
	"errors"
	"testing"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/dataplane/ir"
	"github.com/fleetgate/fleetgate/providers"
)

// TestReadinessProbeHealthCheck: an HTTP health check without a path from the class follows the
// backend's readiness probe; the class's path, a probe of another scheme and gRPC keep theirs.
func TestReadinessProbeHealthCheck(t *testing.T) {
	const web, api = "hub/apps/web:80", "hub/apps/api:80"
	probes := map[string]providers.HTTPProbe{
		web: {Path: "/healthz", Scheme: protocolHTTP},
		api: {Path: "/ready", Scheme: protocolHTTPS},
	}
	route := func(name string, app ir.AppProtocol) ir.Route {
		be := backend(name, 1, ep("hub", "10.0.0.5", 8080, 0))
		be.AppProtocol = app
		return ir.Route{Name: "HTTPRoute/apps/r/0/0", Match: ir.Match{Path: prefix("/r")}, Backends: []ir.Backend{be}}
	}
	cases := []struct {
		name    string
		class   *v1alpha1.AWSHealthCheck
		backend string
		app     ir.AppProtocol
		want    string
	}{
		{name: "probe path", backend: web, want: "/healthz"},
		{name: "class path wins", class: &v1alpha1.AWSHealthCheck{Path: "/lb"}, backend: web, want: "/lb"},
		{name: "class without path", class: &v1alpha1.AWSHealthCheck{IntervalSeconds: ptr.To[int32](10)}, backend: web, want: "/healthz"},
		{name: "HTTPS probe on an HTTP target group", backend: api, want: defaultHealthCheckPath},
		{name: "HTTPS probe on an HTTPS target group", backend: api, app: ir.AppTLS, want: "/ready"},
		{name: "no probe", backend: "hub/apps/other:80", want: defaultHealthCheckPath},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := albOptions()
			o.HealthCheck = tc.class
			net := testNetwork()
			net.Probes = probes
			lb := testModel(httpListener(80, ir.VirtualHost{Hostname: "*", Routes: []ir.Route{route(tc.backend, tc.app)}}))
			s, err := Build(lb, o, net, testFleet)
			if err != nil {
				t.Fatal(err)
			}
			if len(s.TargetGroups) != 1 {
				t.Fatalf("%d target groups, want 1", len(s.TargetGroups))
			}
			if got := s.TargetGroups[0].HealthCheck.Path; got != tc.want {
				t.Errorf("health check path %q, want %q", got, tc.want)
			}
		})
	}
	// A gRPC target group checks the gRPC way whatever the pods' HTTP probe says.
	b := &builder{o: albOptions()}
	if got := b.healthCheck(protocolHTTP, versionGRPC, probes[web]).Path; got != defaultGRPCHealthCheckPath {
		t.Errorf("gRPC health check path %q, want %q", got, defaultGRPCHealthCheckPath)
	}
}

type fakeProbes map[string]providers.HTTPProbe // by cluster; a missing cluster has no probe

var errProbe = errors.New("pods are forbidden")

func (f fakeProbes) ReadinessProbe(_ context.Context, namespace, service string, ep ir.Endpoint) (providers.HTTPProbe, bool, error) {
	if ep.Cluster == "broken" {
		return providers.HTTPProbe{}, false, errProbe
	}
	p, ok := f[namespace+"/"+service+"@"+ep.Cluster]
	return p, ok, nil
}

// TestReadinessProbes: a backend takes its pods' probe only when every cluster serving it agrees
// on a usable one; a failed lookup is not an error of the load balancer.
func TestReadinessProbes(t *testing.T) {
	healthz := providers.HTTPProbe{Path: "/healthz", Scheme: "HTTP"}
	probes := fakeProbes{
		"apps/web@east": healthz, "apps/web@west": healthz,
		"apps/split@east": healthz, "apps/split@west": {Path: "/other", Scheme: "HTTP"},
		"apps/half@east":     healthz,
		"apps/relative@east": {Path: "healthz", Scheme: "HTTP"},
		"apps/flaky@east":    healthz,
	}
	be := func(name string, clusters ...string) ir.Backend {
		var eps []ir.Endpoint
		for i, c := range clusters {
			eps = append(eps, ep(c, "10.0.0."+string(rune('1'+i)), 8080, 0), ep(c, "10.0.1."+string(rune('1'+i)), 8080, 0))
		}
		return backend(name, 1, eps...)
	}
	lb := testModel(httpListener(80, ir.VirtualHost{Hostname: "*", Routes: []ir.Route{{Name: "r", Backends: []ir.Backend{
		be("fleet/apps/web:80", "east", "west"),
		be("fleet/apps/split:80", "east", "west"),
		be("fleet/apps/half:80", "east", "west"),
		be("hub/apps/relative:80", "east"),
		be("fleet/apps/flaky:80", "east", "broken"),
		{Name: "hub/apps/gone:80", Invalid: true},
	}}}}))
	lb.Routing.Listeners = append(lb.Routing.Listeners, ir.Listener{Name: "tcp", Port: 9000, Protocol: ir.ProtocolTCP,
		L4: &ir.L4Route{Name: "t", Backends: []ir.Backend{be("hub/apps/web:9000", "east")}}})
	p := &Provider{o: Options{Probes: probes, Log: logr.Discard()}}
	got := p.readinessProbes(t.Context(), lb)
	want := map[string]providers.HTTPProbe{"fleet/apps/web:80": healthz, "hub/apps/web:9000": healthz}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("probes (-want +got):\n%s", d)
	}
	if got := (&Provider{o: Options{Log: logr.Discard()}}).readinessProbes(t.Context(), lb); got != nil {
		t.Errorf("without Probes: %v, want none", got)
	}
}
