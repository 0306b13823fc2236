package integration

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/controllers"
	"github.com/fleetgate/fleetgate/providers"
	"github.com/fleetgate/fleetgate/tests/testbed"
)

// soakConverge is how long an object may differ from its desired status before the soak fails.
const soakConverge = 5 * time.Second

// TestStatusSoak runs the production wiring, with a provider that is always ready and proxies that
// ACK each config after a few milliseconds, against a real API server while other namespaces churn
// (Ingresses with TLS and their Secrets, an Ingress of an unknown class, a defaultBackend-only
// Ingress, an EndpointSlice growing from 1 to 10 endpoints, HTTPRoutes, deletions) and a second
// client patches annotations of the watched objects to make the status writer conflict. Every
// stable object must reach its desired status within soakConverge every time it is looked at, an
// Ingress or Gateway that had its address must never lose it (its gateway stays programmed), and
// no conflict may be logged at error level. FLEETGATE_SOAK=<duration> runs the churn that long
// (`make soak`); the default fits in `make test`.
func TestStatusSoak(t *testing.T) {
	churnFor := 15 * time.Second
	if v := os.Getenv("FLEETGATE_SOAK"); v != "" {
		d, err := time.ParseDuration(v)
		must(t, err)
		churnFor = d
	}
	c := testbed.ForTest(t, "hub")[0]
	ctx := t.Context()
	s := newSoak(t, c)
	s.start()
	s.createStable(13, 5, 40)
	testbed.Eventually(t, 60*time.Second, func() error { return errorsOf(s.check()) })
	t.Logf("%d stable objects converged", 13+5+5*40)

	churnCtx, stop := context.WithTimeout(ctx, churnFor)
	defer stop()
	s.watch(churnCtx)
	var wg sync.WaitGroup
	wg.Go(func() { s.churn(churnCtx) })
	wg.Go(func() { s.bump(churnCtx) })
	bad := map[string]time.Time{}
	checks := 0
	for churnCtx.Err() == nil {
		now, failing := time.Now(), s.check()
		for key, err := range failing {
			first, ok := bad[key]
			if !ok {
				bad[key], first = now, now
			}
			if now.Sub(first) > soakConverge {
				t.Errorf("%s: not converged for %s: %v", key, now.Sub(first).Round(time.Millisecond), err)
				bad[key] = now // told once per period
			}
		}
		for key := range bad {
			if _, still := failing[key]; !still {
				delete(bad, key)
			}
		}
		checks++
		time.Sleep(200 * time.Millisecond)
	}
	wg.Wait()
	s.watching.Wait()
	testbed.Eventually(t, soakConverge, func() error { return errorsOf(s.check()) })

	s.mu.Lock()
	for i, w := range s.withdrawn {
		if i == 10 {
			t.Errorf("... %d withdrawals in all", len(s.withdrawn))
			break
		}
		t.Errorf("withdrawn while its gateway stayed programmed: %s", w)
	}
	s.mu.Unlock()
	conflicts := s.counter("fleetgate_status_writes_total", "conflict")
	t.Logf("%d checks, %d churn steps, %d annotation bumps, %.0f status conflicts", checks, s.steps, s.bumps, conflicts)
	if conflicts == 0 {
		t.Error("the second client forced no status conflict: the soak proves nothing about retries")
	}
	s.logs.mu.Lock()
	defer s.logs.mu.Unlock()
	for _, line := range s.logs.errors {
		if strings.Contains(strings.ToLower(line), "conflict") {
			t.Errorf("conflict logged at error level: %s", line)
		}
	}
}

// soak is the operator under test, the objects whose status it checks, and the churn around them.
type soak struct {
	t        *testing.T
	c        *testbed.Cluster
	reg      *prometheus.Registry
	logs     *errorLog
	delivery *controllers.Trigger
	configs  *ackingConfigs

	// The stable objects are checked: stable names them ("Kind namespace/name"), routesPer is the
	// number of routes of each Gateway.
	ingresses, gateways, routes []client.ObjectKey
	stable                      []string
	routesPer                   int
	steps, bumps                int
	watching                    sync.WaitGroup

	mu sync.Mutex
	// addressed tells, per object, that it had its address once; withdrawn lists the times it
	// lost it afterwards.
	addressed map[string]bool
	withdrawn []string
}

func newSoak(t *testing.T, c *testbed.Cluster) *soak {
	delivery := controllers.NewTrigger()
	return &soak{t: t, c: c, reg: prometheus.NewRegistry(), logs: &errorLog{}, delivery: delivery,
		configs: newAckingConfigs(func() { delivery.Fire("") }), addressed: map[string]bool{}}
}

func (s *soak) start() {
	t := s.t
	registry := providers.NewRegistry()
	registry.Register(string(v1alpha1.ProviderInCluster), readyProvider{})
	apply := &controllers.Dataplane{Providers: registry, Configs: s.configs, Delivered: s.delivery.Fire}
	runOperator(t, s.c, logr.New(&errorSink{log: s.logs}), controllers.Options{Registry: s.reg, Apply: apply, Delivery: s.delivery})
}

// createStable makes, in namespace "stable", ingresses Ingresses of one class (one shared proxy) and
// gateways Gateways with routesPer HTTPRoutes each.
func (s *soak) createStable(ingresses, gateways, routesPer int) {
	t, ctx, c := s.t, s.t.Context(), s.c.Client
	s.routesPer = routesPer
	must(t, testbed.CreateClass(ctx, c, "fleetgate", v1alpha1.ScopeCluster))
	must(t, c.Create(ctx, &networkingv1.IngressClass{
		ObjectMeta: metav1.ObjectMeta{Name: "fleetgate"},
		Spec:       networkingv1.IngressClassSpec{Controller: v1alpha1.IngressControllerName},
	}))
	must(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "stable"}}))
	s.service("stable", "web", 1)
	for i := range ingresses {
		ing := soakIngress("stable", fmt.Sprintf("app-%02d", i), "fleetgate", fmt.Sprintf("app-%02d.example.com", i), "web")
		must(t, c.Create(ctx, ing))
		s.ingresses = append(s.ingresses, client.ObjectKeyFromObject(ing))
		s.stable = append(s.stable, "Ingress "+client.ObjectKeyFromObject(ing).String())
	}
	for g := range gateways {
		gw := &gwv1.Gateway{
			ObjectMeta: metav1.ObjectMeta{Namespace: "stable", Name: fmt.Sprintf("gw-%d", g)},
			Spec: gwv1.GatewaySpec{GatewayClassName: "fleetgate",
				Listeners: []gwv1.Listener{{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType}}},
		}
		must(t, c.Create(ctx, gw))
		s.gateways = append(s.gateways, client.ObjectKeyFromObject(gw))
		s.stable = append(s.stable, "Gateway "+client.ObjectKeyFromObject(gw).String())
		for r := range routesPer {
			rt := soakRoute("stable", fmt.Sprintf("gw-%d-r%02d", g, r), gw.Name, fmt.Sprintf("r%02d.gw-%d.example.com", r, g), "web")
			must(t, c.Create(ctx, rt))
			s.routes = append(s.routes, client.ObjectKeyFromObject(rt))
			s.stable = append(s.stable, "HTTPRoute "+client.ObjectKeyFromObject(rt).String())
		}
	}
}

// check lists the stable objects and returns what differs from its desired status, by object.
func (s *soak) check() map[string]error {
	ctx, c := s.t.Context(), s.c.Client
	out := map[string]error{}
	in := client.InNamespace("stable")
	var ingresses networkingv1.IngressList
	var gateways gwv1.GatewayList
	var routes gwv1.HTTPRouteList
	for _, l := range []client.ObjectList{&ingresses, &gateways, &routes} {
		if err := c.List(ctx, l, in); err != nil {
			out["list"] = err
			return out
		}
	}
	seen := map[string]bool{}
	for i := range ingresses.Items {
		ing := &ingresses.Items[i]
		key := "Ingress " + client.ObjectKeyFromObject(ing).String()
		seen[key] = true
		if err := s.ingressDone(key, ing.Status.LoadBalancer); err != nil {
			out[key] = err
		}
	}
	for i := range gateways.Items {
		gw := &gateways.Items[i]
		key := "Gateway " + client.ObjectKeyFromObject(gw).String()
		seen[key] = true
		if err := s.gatewayDone(key, gw); err != nil {
			out[key] = err
		}
	}
	for i := range routes.Items {
		rt := &routes.Items[i]
		key := "HTTPRoute " + client.ObjectKeyFromObject(rt).String()
		seen[key] = true
		if err := routeDone(rt); err != nil {
			out[key] = err
		}
	}
	for _, key := range s.stable {
		if !seen[key] {
			out[key] = errors.New("not found")
		}
	}
	return out
}

// ingressDone tells whether an Ingress's status.loadBalancer is the class's address, and records
// the address as given once it is.
func (s *soak) ingressDone(key string, lb networkingv1.IngressLoadBalancerStatus) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(lb.Ingress) == 1 && lb.Ingress[0].IP == soakAddress {
		s.addressed[key] = true
		return nil
	}
	if s.addressed[key] {
		s.withdrawn = append(s.withdrawn, fmt.Sprintf("%s: status.loadBalancer = %+v after it had %s", key, lb, soakAddress))
	}
	return fmt.Errorf("status.loadBalancer = %+v, want %s", lb, soakAddress)
}

// gatewayDone tells whether a Gateway is accepted and programmed with its address and routes.
func (s *soak) gatewayDone(key string, gw *gwv1.Gateway) error {
	err := gatewayStatusDone(gw, s.routesPer)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case err == nil:
		s.addressed[key] = true
	case s.addressed[key] && !programmedWithAddress(gw):
		s.withdrawn = append(s.withdrawn, fmt.Sprintf("%s: %v after it was programmed", key, err))
	}
	return err
}

func programmedWithAddress(gw *gwv1.Gateway) bool {
	return meta.IsStatusConditionTrue(gw.Status.Conditions, string(gwv1.GatewayConditionProgrammed)) && len(gw.Status.Addresses) == 1
}

// watch sees every write of the stable Ingresses and Gateways, so that an address withdrawn and
// given back between two checks is caught too.
func (s *soak) watch(ctx context.Context) {
	wc, err := client.NewWithWatch(s.c.Config, client.Options{Scheme: s.c.Client.Scheme()})
	must(s.t, err)
	for _, l := range []client.ObjectList{&networkingv1.IngressList{}, &gwv1.GatewayList{}} {
		w, err := wc.Watch(ctx, l, client.InNamespace("stable"))
		must(s.t, err)
		s.watching.Go(func() {
			defer w.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case ev, ok := <-w.ResultChan():
					if !ok {
						return
					}
					switch o := ev.Object.(type) {
					case *networkingv1.Ingress:
						_ = s.ingressDone("Ingress "+client.ObjectKeyFromObject(o).String(), o.Status.LoadBalancer)
					case *gwv1.Gateway:
						_ = s.gatewayDone("Gateway "+client.ObjectKeyFromObject(o).String(), o)
					}
				}
			}
		})
	}
}

func gatewayStatusDone(gw *gwv1.Gateway, routes int) error {
	for _, typ := range []gwv1.GatewayConditionType{gwv1.GatewayConditionAccepted, gwv1.GatewayConditionProgrammed} {
		cond := meta.FindStatusCondition(gw.Status.Conditions, string(typ))
		if cond == nil || cond.Status != metav1.ConditionTrue || cond.ObservedGeneration != gw.Generation {
			return fmt.Errorf("%s = %+v, want True at generation %d", typ, cond, gw.Generation)
		}
	}
	if len(gw.Status.Addresses) != 1 || gw.Status.Addresses[0].Value != soakAddress {
		return fmt.Errorf("addresses = %+v, want %s", gw.Status.Addresses, soakAddress)
	}
	if len(gw.Status.Listeners) != 1 || gw.Status.Listeners[0].AttachedRoutes != int32(routes) {
		return fmt.Errorf("listeners = %+v, want one with %d routes", gw.Status.Listeners, routes)
	}
	return nil
}

func routeDone(rt *gwv1.HTTPRoute) error {
	if len(rt.Status.Parents) != 1 {
		return fmt.Errorf("parents = %+v, want one", rt.Status.Parents)
	}
	for _, typ := range []gwv1.RouteConditionType{gwv1.RouteConditionAccepted, gwv1.RouteConditionResolvedRefs} {
		cond := meta.FindStatusCondition(rt.Status.Parents[0].Conditions, string(typ))
		if cond == nil || cond.Status != metav1.ConditionTrue || cond.ObservedGeneration != rt.Generation {
			return fmt.Errorf("%s = %+v, want True at generation %d", typ, cond, rt.Generation)
		}
	}
	return nil
}

// churn changes other namespaces until ctx ends, in the shapes that once left addresses empty.
func (s *soak) churn(ctx context.Context) {
	c := s.c.Client
	for step := 0; ctx.Err() == nil; step++ {
		ns := fmt.Sprintf("churn-%d", step)
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			s.failUnlessDone(ctx, err)
			return
		}
		s.service(ns, "grow", 1)
		host := ns + ".example.com"
		tls := soakIngress(ns, "tls", "fleetgate", host, "grow")
		tls.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{host}, SecretName: "cert"}}
		crt, key, _ := testbed.SelfSignedPEM(s.t, host)
		defaultOnly := &networkingv1.Ingress{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "default-only"},
			Spec: networkingv1.IngressSpec{IngressClassName: ptr.To("fleetgate"),
				DefaultBackend: &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
					Name: "grow", Port: networkingv1.ServiceBackendPort{Number: 80}}}},
		}
		objs := []client.Object{
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cert"}, Type: corev1.SecretTypeTLS,
				Data: map[string][]byte{corev1.TLSCertKey: crt, corev1.TLSPrivateKeyKey: key}},
			tls,
			soakIngress(ns, "other-class", "someone-else", host, "grow"),
			defaultOnly,
			soakRoute(ns, "route", "gw-churn", "route."+host, "grow"),
		}
		for _, o := range objs {
			if err := c.Create(ctx, o); err != nil {
				s.failUnlessDone(ctx, err)
				return
			}
			pause(ctx, 50*time.Millisecond)
		}
		// The backend's EndpointSlice grows one endpoint at a time.
		for n := 2; n <= 10 && ctx.Err() == nil; n++ {
			var es discoveryv1.EndpointSlice
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "grow-1"}, &es); err != nil {
				s.failUnlessDone(ctx, err)
				return
			}
			es.Endpoints = soakEndpoints(n)
			if err := c.Update(ctx, &es); err != nil && !apierrors.IsConflict(err) {
				s.failUnlessDone(ctx, err)
				return
			}
			pause(ctx, 30*time.Millisecond)
		}
		// Ingresses of the step before last go; their Secret, route and backend stay behind, then go too.
		if step >= 2 {
			old := fmt.Sprintf("churn-%d", step-2)
			for _, name := range []string{"tls", "default-only", "other-class"} {
				err := c.Delete(ctx, &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: old, Name: name}})
				if client.IgnoreNotFound(err) != nil {
					s.failUnlessDone(ctx, err)
					return
				}
				pause(ctx, 50*time.Millisecond)
			}
			for _, o := range []client.Object{
				&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: old, Name: "cert"}},
				&gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: old, Name: "route"}},
				// The backend goes last; without it a long soak fills the Service IP range (no
				// namespace controller here deletes a namespace's contents).
				&discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: old, Name: "grow-1"}},
				&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: old, Name: "grow"}},
			} {
				if err := client.IgnoreNotFound(c.Delete(ctx, o)); err != nil {
					s.failUnlessDone(ctx, err)
					return
				}
			}
		}
		s.steps++
	}
}

// bump is the second client. It patches an annotation of random stable objects, with their
// resourceVersion; every fifth time it changes a route's hostnames (a new generation, so a new
// status to write) and patches that route's annotation right after, so that the writer's write of
// it conflicts.
func (s *soak) bump(ctx context.Context) {
	keys := slices.Concat(s.ingresses, s.gateways, s.routes)
	for i := 0; ctx.Err() == nil; i++ {
		if i%5 == 0 {
			k := s.routes[rand.IntN(len(s.routes))]
			if !s.patch(ctx, k, &gwv1.HTTPRoute{}, func(o client.Object) {
				rt := o.(*gwv1.HTTPRoute)
				if len(rt.Spec.Hostnames) == 1 {
					rt.Spec.Hostnames = append(rt.Spec.Hostnames, gwv1.Hostname("alt-"+rt.Name+".example.com"))
				} else {
					rt.Spec.Hostnames = rt.Spec.Hostnames[:1]
				}
			}) {
				return
			}
			for j := range 3 {
				pause(ctx, time.Duration(j*10)*time.Millisecond)
				if !s.patch(ctx, k, &gwv1.HTTPRoute{}, annotate(i, j)) {
					return
				}
			}
			continue
		}
		k := keys[rand.IntN(len(keys))]
		var obj client.Object
		switch {
		case slices.Contains(s.ingresses, k):
			obj = &networkingv1.Ingress{}
		case slices.Contains(s.gateways, k):
			obj = &gwv1.Gateway{}
		default:
			obj = &gwv1.HTTPRoute{}
		}
		if !s.patch(ctx, k, obj, annotate(i, 0)) {
			return
		}
		pause(ctx, 20*time.Millisecond)
	}
}

func annotate(i, j int) func(client.Object) {
	return func(o client.Object) {
		o.SetAnnotations(map[string]string{"soak.fleetgate.dev/bump": fmt.Sprintf("%d.%d", i, j)})
	}
}

// patch reads the object, changes it and patches it with its resourceVersion; it reports false
// when the test is over or failed.
func (s *soak) patch(ctx context.Context, k client.ObjectKey, obj client.Object, change func(client.Object)) bool {
	c := s.c.Client
	if err := c.Get(ctx, k, obj); err != nil {
		s.failUnlessDone(ctx, err)
		return false
	}
	before := obj.DeepCopyObject().(client.Object)
	change(obj)
	err := c.Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
	if err != nil && !apierrors.IsConflict(err) {
		s.failUnlessDone(ctx, err)
		return false
	}
	s.bumps++
	return true
}

// failUnlessDone fails the test unless the churn is over. The client's rate limiter refuses a wait
// that would outlast the deadline before the context itself expires: that is the end too.
func (s *soak) failUnlessDone(ctx context.Context, err error) {
	if ctx.Err() != nil || strings.Contains(err.Error(), "would exceed context deadline") {
		return
	}
	s.t.Errorf("churn: %v", err)
}

func pause(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// service creates a selectorless Service with an EndpointSlice of n endpoints.
func (s *soak) service(ns, name string, n int) {
	ctx, c := s.t.Context(), s.c.Client
	must(s.t, c.Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
	}))
	must(s.t, c.Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-1",
			Labels: map[string]string{discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080)}},
		Endpoints:   soakEndpoints(n),
	}))
}

func soakEndpoints(n int) []discoveryv1.Endpoint {
	out := make([]discoveryv1.Endpoint, n)
	for i := range out {
		out[i] = discoveryv1.Endpoint{Addresses: []string{fmt.Sprintf("10.1.0.%d", i+1)},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}
	}
	return out
}

func soakIngress(ns, name, class, host, backend string) *networkingv1.Ingress {
	return &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: networkingv1.IngressSpec{IngressClassName: ptr.To(class),
			Rules: []networkingv1.IngressRule{ingressRule(host, ingressPath(networkingv1.PathTypePrefix, "/", backend))}},
	}
}

func soakRoute(ns, name, gateway, host, backend string) *gwv1.HTTPRoute {
	rt := httpRoute(name, host, backend)
	rt.Namespace = ns
	rt.Spec.ParentRefs[0].Name = gwv1.ObjectName(gateway)
	return rt
}

func (s *soak) counter(name, result string) float64 {
	families, err := s.reg.Gather()
	must(s.t, err)
	var sum float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if labelIs(m, "result", result) {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

func labelIs(m *dto.Metric, name, value string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == name && l.GetValue() == value {
			return true
		}
	}
	return false
}

func errorsOf(m map[string]error) error {
	if len(m) == 0 {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return fmt.Errorf("%d objects not converged, first %s: %w", len(m), keys[0], m[keys[0]])
}
