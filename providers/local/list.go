package local

import (
	"context"
	"errors"
	"fmt"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/providers"
)

// List finds every gateway with a state directory in Options.Dir or a Service in a cluster of
// Options.Clusters, from their tags and labels alone (see the package comment). Local mode stands
// in for the in-cluster provider, so entries carry its name. A cluster that cannot be read is
// reported in the error; the gateways found elsewhere are still returned.
func (p *Provider) List(ctx context.Context) ([]providers.LoadBalancer, error) {
	if p.opts.Client != nil && p.opts.Clusters == nil {
		return nil, errors.New("local: List needs Options.Clusters")
	}
	found := map[string]*providers.LoadBalancer{}
	entry := func(gateway, namespace, name string) *providers.LoadBalancer {
		lb := found[gateway]
		if lb == nil {
			lb = &providers.LoadBalancer{Gateway: gateway, Namespace: namespace, Name: name, Provider: string(v1alpha1.ProviderInCluster)}
			found[gateway] = lb
		}
		return lb
	}
	states, err := p.listState()
	if err != nil {
		return nil, err
	}
	for _, st := range states {
		entry(st.Gateway, st.Namespace, st.Name)
	}
	var errs []error
	if p.opts.Client != nil {
		for _, cluster := range p.opts.Clusters() {
			if err := p.listServices(ctx, cluster, entry); err != nil {
				errs = append(errs, fmt.Errorf("local: listing gateways in cluster %s: %w", cluster, err))
			}
		}
	}
	return providers.Listed(found), errors.Join(errs...)
}

// listServices adds the cluster to the entry of every gateway with a Service in it.
func (p *Provider) listServices(ctx context.Context, cluster string, entry func(gateway, namespace, name string) *providers.LoadBalancer) error {
	c, err := p.opts.Client(cluster)
	if err != nil {
		return err
	}
	svcs, err := listOwned(ctx, c)
	if err != nil {
		return err
	}
	for _, svc := range svcs {
		if key, name, ok := providers.OwnerOf(svc.Labels, svc.Annotations); ok {
			lb := entry(key, svc.Namespace, name)
			lb.Clusters = append(lb.Clusters, cluster)
		}
	}
	return nil
}
