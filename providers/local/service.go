package local

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/providers"
)

// desiredService is the Service that represents a local gateway in its cluster, the way a cloud
// load balancer's Service does: type LoadBalancer without a selector, the gateway's listener ports,
// and the proxy's address in status.loadBalancer once it runs. `kubectl get svc` shows where the
// gateway is, tools that read LoadBalancer Services (external-dns) find it, and the Gateway's
// spec.infrastructure labels and annotations land on it. It is owned by the Gateway, so deleting
// the Gateway deletes it even when the operator is down.
func desiredService(lb *providers.LoadBalancer, cluster string) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name: providers.ResourceName(lb), Namespace: lb.Namespace,
			Labels: providers.ResourceLabels(lb), Annotations: providers.ResourceAnnotations(lb),
		},
		Spec: corev1.ServiceSpec{
			Type:                          corev1.ServiceTypeLoadBalancer,
			LoadBalancerClass:             ptr.To(v1alpha1.LoadBalancerClassLocal),
			AllocateLoadBalancerNodePorts: ptr.To(false),
		},
	}
	if uid := lb.GatewayUIDs[cluster]; uid != "" {
		svc.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: "gateway.networking.k8s.io/v1", Kind: "Gateway", Name: lb.Name,
			UID: types.UID(uid), Controller: ptr.To(true),
		}}
	}
	for _, p := range lb.Ports {
		proto := corev1.ProtocolTCP
		if p.Transport == providers.TransportUDP {
			proto = corev1.ProtocolUDP
		}
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{
			Name: fmt.Sprintf("%s-%d", strings.ToLower(string(p.Transport)), p.Port), Protocol: proto, Port: p.Port,
		})
	}
	return svc
}

// serviceTimeout bounds each Service call: the Service is a picture of the gateway, and a slow API
// server must not hold up the proxies' configs.
const serviceTimeout = 5 * time.Second

// ensureServices makes the gateway's Service right in each of its clusters, writing only what
// differs; addr is the proxy's address, invalid while none runs. A failure fails Ensure, which is
// retried: the proxy serves meanwhile, but the gateway is not what the model says until its
// Services are.
func (p *Provider) ensureServices(ctx context.Context, lb *providers.LoadBalancer, addr netip.Addr) error {
	if p.opts.Client == nil {
		return nil
	}
	var errs []error
	for _, cluster := range lb.Clusters {
		c, err := p.opts.Client(cluster)
		if err == nil {
			cctx, cancel := context.WithTimeout(ctx, serviceTimeout)
			err = ensureService(cctx, c, desiredService(lb, cluster), addr)
			cancel()
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("local: Service of %s in cluster %s: %w", lb.Gateway, cluster, err))
		}
	}
	return errors.Join(errs...)
}

func ensureService(ctx context.Context, c client.Client, want *corev1.Service, addr netip.Addr) error {
	if len(want.Spec.Ports) == 0 {
		// A Service needs a port; a gateway without a valid listener has nothing to show.
		return deleteOwned(ctx, c, want.Namespace, want.Annotations[providers.AnnotationGateway])
	}
	got := &corev1.Service{}
	err := c.Get(ctx, client.ObjectKeyFromObject(want), got)
	switch {
	case apierrors.IsNotFound(err):
		got = want.DeepCopy()
		if err := c.Create(ctx, got); err != nil {
			if apierrors.IsAlreadyExists(err) {
				return nil // the reader lags behind; the next pass sees it
			}
			return fmt.Errorf("creating Service %s/%s: %w", want.Namespace, want.Name, err)
		}
	case err != nil:
		return fmt.Errorf("reading Service %s/%s: %w", want.Namespace, want.Name, err)
	case got.Labels[providers.LabelManagedBy] != providers.ManagedBy:
		return fmt.Errorf("a Service %s/%s exists and is not fleetgate's", want.Namespace, want.Name)
	case !sameService(got, want):
		// A merge patch without a resourceVersion: a lagging reader costs no conflict.
		orig := got.DeepCopy()
		got.Labels, got.Annotations, got.OwnerReferences = want.Labels, want.Annotations, want.OwnerReferences
		got.Spec.Ports = want.Spec.Ports
		if err := c.Patch(ctx, got, client.MergeFrom(orig)); err != nil {
			return fmt.Errorf("updating Service %s/%s: %w", want.Namespace, want.Name, err)
		}
	}
	var ingress []corev1.LoadBalancerIngress
	if addr.IsValid() {
		// ipMode Proxy: the address is the proxy process's, not a VIP for kube-proxy. With VIP (the
		// default) a node's kube-proxy takes the address over and, this Service having no
		// endpoints, rejects every connection to it before it reaches the proxy.
		ingress = []corev1.LoadBalancerIngress{{IP: addr.String(), IPMode: ptr.To(corev1.LoadBalancerIPModeProxy)}}
	}
	if slices.EqualFunc(got.Status.LoadBalancer.Ingress, ingress, func(a, b corev1.LoadBalancerIngress) bool {
		return a.IP == b.IP && ptr.Deref(a.IPMode, "") == ptr.Deref(b.IPMode, "")
	}) {
		return nil
	}
	orig := got.DeepCopy()
	got.Status.LoadBalancer.Ingress = ingress
	if err := c.Status().Patch(ctx, got, client.MergeFrom(orig)); err != nil {
		return fmt.Errorf("writing Service %s/%s status: %w", want.Namespace, want.Name, err)
	}
	return nil
}

// sameService compares what fleetgate sets; the API server's defaults (cluster IP, port
// protocols' other fields) are left alone.
func sameService(got, want *corev1.Service) bool {
	if !maps.Equal(got.Labels, want.Labels) || !maps.Equal(got.Annotations, want.Annotations) ||
		!equality.Semantic.DeepEqual(got.OwnerReferences, want.OwnerReferences) || len(got.Spec.Ports) != len(want.Spec.Ports) {
		return false
	}
	for i, p := range want.Spec.Ports {
		g := got.Spec.Ports[i]
		if g.Name != p.Name || g.Protocol != p.Protocol || g.Port != p.Port {
			return false
		}
	}
	return true
}

// deleteServices deletes the gateway's Services in each of lb.Clusters, found by their labels.
func (p *Provider) deleteServices(ctx context.Context, lb *providers.LoadBalancer) error {
	if p.opts.Client == nil {
		return nil
	}
	var errs []error
	for _, cluster := range lb.Clusters {
		c, err := p.opts.Client(cluster)
		if err == nil {
			cctx, cancel := context.WithTimeout(ctx, serviceTimeout)
			err = deleteOwned(cctx, c, lb.Namespace, lb.Gateway)
			cancel()
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("local: deleting the Service of %s in cluster %s: %w", lb.Gateway, cluster, err))
		}
	}
	return errors.Join(errs...)
}

// servicesLeft returns the clusters of Options.Clusters that still hold a Service of lb.
func (p *Provider) servicesLeft(ctx context.Context, lb *providers.LoadBalancer) ([]string, error) {
	if p.opts.Client == nil || p.opts.Clusters == nil {
		return nil, nil
	}
	var left []string
	for _, cluster := range p.opts.Clusters() {
		c, err := p.opts.Client(cluster)
		var svcs []corev1.Service
		if err == nil {
			svcs, err = listOwned(ctx, c, client.InNamespace(lb.Namespace), client.MatchingLabels(providers.OwnerSelector(lb.Gateway)))
		}
		if err != nil {
			return nil, fmt.Errorf("local: looking for Services of %s in cluster %s: %w", lb.Gateway, cluster, err)
		}
		if len(svcs) > 0 {
			left = append(left, cluster)
		}
	}
	return left, nil
}

// listOwned lists the Services of local mode: fleetgate's ownership labels and LoadBalancerClass.
func listOwned(ctx context.Context, c client.Client, opts ...client.ListOption) ([]corev1.Service, error) {
	var l corev1.ServiceList
	opts = append(opts, client.MatchingLabels{providers.LabelManagedBy: providers.ManagedBy})
	if err := c.List(ctx, &l, opts...); err != nil {
		return nil, fmt.Errorf("listing Services: %w", err)
	}
	return slices.DeleteFunc(l.Items, func(s corev1.Service) bool {
		return s.Spec.LoadBalancerClass == nil || *s.Spec.LoadBalancerClass != v1alpha1.LoadBalancerClassLocal
	}), nil
}

// deleteOwned deletes the gateway's Services in namespace, found by label rather than by name so
// that a Service made under another name (or a listed entry without the gateway's name) goes too.
func deleteOwned(ctx context.Context, c client.Client, namespace, gateway string) error {
	svcs, err := listOwned(ctx, c, client.InNamespace(namespace), client.MatchingLabels(providers.OwnerSelector(gateway)))
	if err != nil {
		return err
	}
	for _, svc := range svcs {
		// The precondition deletes the Service listed, not a namesake made since.
		if err := c.Delete(ctx, &svc, client.Preconditions{UID: &svc.UID}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting Service %s/%s: %w", svc.Namespace, svc.Name, err)
		}
	}
	return nil
}
