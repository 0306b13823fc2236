package controllers

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/fleetgate/fleetgate/dataplane/ir"
	"github.com/fleetgate/fleetgate/providers"
)

// TestPodProbes: the probe of the pod an EndpointSlice names for the endpoint, when it is an HTTP
// GET on the endpoint's port (by number or by name); looked up once per TTL.
func TestPodProbes(t *testing.T) {
	slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web-1",
		Labels: map[string]string{discoveryv1.LabelServiceName: "web"}}, AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"10.0.0.1"}, TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: "by-number"}},
			{Addresses: []string{"10.0.0.2"}, TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: "by-name"}},
			{Addresses: []string{"10.0.0.3"}, TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: "other-port"}},
			{Addresses: []string{"10.0.0.4"}, TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: "exec-probe"}},
			{Addresses: []string{"10.0.0.5"}, TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: "missing"}},
			{Addresses: []string{"10.0.0.6"}},
		}}
	pod := func(name string, probe *corev1.Probe) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name}, Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "sidecar", Ports: []corev1.ContainerPort{{Name: "admin", ContainerPort: 9901}},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/sidecar", Port: intstr.FromString("admin")}}}},
			{Name: "app", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}, ReadinessProbe: probe},
		}}}
	}
	httpGet := func(path string, port intstr.IntOrString, scheme corev1.URIScheme) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: port, Scheme: scheme}}}
	}
	gets := 0
	c := fake.NewClientBuilder().WithObjects(slice,
		pod("by-number", httpGet("healthz", intstr.FromInt32(8080), "")),
		pod("by-name", httpGet("/ready", intstr.FromString("http"), corev1.URISchemeHTTPS)),
		pod("other-port", httpGet("/ready", intstr.FromInt32(9090), "")),
		pod("exec-probe", &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}),
	).WithInterceptorFuncs(interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		gets++
		return c.Get(ctx, key, obj, opts...)
	}}).Build()
	now := time.Unix(1000, 0)
	newProbes := func() *PodProbes {
		p := NewPodProbes(func(string) (client.Client, error) { return c, nil })
		p.now = func() time.Time { return now }
		return p
	}

	type result struct {
		Probe providers.HTTPProbe
		OK    bool
	}
	cases := []struct {
		address string
		want    result
	}{
		{"10.0.0.1", result{providers.HTTPProbe{Path: "/healthz", Scheme: "HTTP"}, true}},
		{"10.0.0.2", result{providers.HTTPProbe{Path: "/ready", Scheme: "HTTPS"}, true}},
		{"10.0.0.3", result{}},
		{"10.0.0.4", result{}},
		{"10.0.0.5", result{}},
		{"10.0.0.6", result{}},
		{"10.0.0.9", result{}},
	}
	for _, tc := range cases {
		// One lookup answers for the whole backend in a cluster: a new cache per endpoint here.
		probe, ok, err := newProbes().ReadinessProbe(t.Context(), "apps", "web", ir.Endpoint{Address: tc.address, Port: 8080, Cluster: "east"})
		if err != nil {
			t.Fatalf("%s: %v", tc.address, err)
		}
		if d := cmp.Diff(tc.want, result{probe, ok}); d != "" {
			t.Errorf("%s (-want +got):\n%s", tc.address, d)
		}
	}
	p := newProbes()
	if _, ok, _ := p.ReadinessProbe(t.Context(), "apps", "web", ir.Endpoint{Address: "10.0.0.1", Port: 8080, Cluster: "east"}); !ok {
		t.Fatal("no probe for 10.0.0.1")
	}
	before := gets
	// Another endpoint of the same backend and cluster is answered from the cache.
	if _, ok, _ := p.ReadinessProbe(t.Context(), "apps", "web", ir.Endpoint{Address: "10.0.0.3", Port: 8080, Cluster: "east"}); !ok || gets != before {
		t.Errorf("a cached probe was read again (ok %v, %d gets)", ok, gets-before)
	}
	now = now.Add(probeTTL + time.Second)
	if _, ok, _ := p.ReadinessProbe(t.Context(), "apps", "web", ir.Endpoint{Address: "10.0.0.1", Port: 8080, Cluster: "east"}); !ok || gets != before+1 {
		t.Errorf("an expired probe was not read again (ok %v, %d gets)", ok, gets-before)
	}
}
