package incluster

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgate/fleetgate/providers"
)

// ownedKinds are the kinds of object the provider makes, in the order Delete removes them: the
// Service first, so traffic stops before the proxies go.
func ownedKinds() []schema.GroupVersionKind {
	return []schema.GroupVersionKind{
		corev1.SchemeGroupVersion.WithKind("Service"),
		appsv1.SchemeGroupVersion.WithKind("Deployment"),
		corev1.SchemeGroupVersion.WithKind("ServiceAccount"),
		corev1.SchemeGroupVersion.WithKind("Secret"),
	}
}

// listMeta lists the metadata of kind only: the sweep and Delete need no spec, and a Secret's
// data is better never read.
func listMeta(ctx context.Context, c client.Client, kind schema.GroupVersionKind, opts ...client.ListOption) ([]*metav1.PartialObjectMetadata, error) {
	var l metav1.PartialObjectMetadataList
	l.SetGroupVersionKind(kind.GroupVersion().WithKind(kind.Kind + "List"))
	if err := c.List(ctx, &l, opts...); err != nil {
		return nil, fmt.Errorf("listing %ss: %w", kind.Kind, err)
	}
	out := make([]*metav1.PartialObjectMetadata, 0, len(l.Items))
	for i := range l.Items {
		o := &l.Items[i]
		o.SetGroupVersionKind(kind)
		out = append(out, o)
	}
	return out, nil
}

// List finds every gateway with proxy objects in the clusters of Options.Clusters, from their
// labels alone: the ownership labels plus the proxy component label select them, and
// providers.OwnerOf names their gateway (objects it cannot attribute are skipped). A cluster that
// cannot be read is reported in the error; the gateways found in the others are still returned,
// so that one unreachable member does not stop the sweep of the rest.
func (p *Provider) List(ctx context.Context) ([]providers.LoadBalancer, error) {
	if p.opts.Clusters == nil {
		return nil, errors.New("incluster: List needs Options.Clusters")
	}
	found := map[string]*providers.LoadBalancer{}
	var errs []error
	for _, cluster := range p.opts.Clusters() {
		c, err := p.opts.Client(cluster)
		if err == nil {
			err = listIn(ctx, c, cluster, found)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("incluster: listing gateways in cluster %s: %w", cluster, err))
		}
	}
	return providers.Listed(found), errors.Join(errs...)
}

// listIn adds the gateways with proxy objects in one cluster to found, by gateway key.
func listIn(ctx context.Context, c client.Client, cluster string, found map[string]*providers.LoadBalancer) error {
	sel := client.MatchingLabels{providers.LabelManagedBy: providers.ManagedBy, labelComponent: componentProxy}
	for _, kind := range ownedKinds() {
		objs, err := listMeta(ctx, c, kind, sel)
		if err != nil {
			return err
		}
		for _, o := range objs {
			key, name, ok := providers.OwnerOf(o.Labels, o.Annotations)
			if !ok {
				continue
			}
			lb := found[key]
			if lb == nil {
				lb = &providers.LoadBalancer{Gateway: key, Namespace: o.Namespace, Name: name, Provider: Name}
				found[key] = lb
			}
			lb.Clusters = append(lb.Clusters, cluster)
		}
	}
	return nil
}
