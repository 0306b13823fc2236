package aws

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/dataplane/ir"
	"github.com/fleetgate/fleetgate/providers"
)

// Proxies run the fleetgate proxies that serve the HTTP and HTTPS listeners of a network load
// balancer: the NLB forwards those ports over TCP to the proxy pods, which do the routing.
type Proxies interface {
	// Ensure runs (or updates) the proxies of lb and reports whether they are ready.
	Ensure(ctx context.Context, lb *providers.LoadBalancer) (providers.Status, error)
	// Delete removes them.
	Delete(ctx context.Context, lb *providers.LoadBalancer) error
	// Endpoints are the addresses the proxies of lb receive connections on, in every member
	// cluster, without changing anything (a plan reads them too). Ports are filled in by the caller.
	Endpoints(ctx context.Context, lb *providers.LoadBalancer) ([]ir.Endpoint, error)
}

// runProxies runs the proxies of a network load balancer with HTTP or HTTPS listeners and
// reports their status; nil when lb needs none.
func (p *Provider) runProxies(ctx context.Context, lb *providers.LoadBalancer, o v1alpha1.AWSOptions) (*providers.Status, error) {
	if p.o.Proxies == nil || o.LoadBalancerType != v1alpha1.AWSNetwork || !proxied(lb) {
		return nil, nil
	}
	st, err := p.o.Proxies.Ensure(ctx, proxyModel(lb))
	if err != nil {
		return nil, fmt.Errorf("running the proxies behind the network load balancer: %w", err)
	}
	return &st, nil
}

// removeProxies removes the proxies of a gateway that needs none (any more): its last HTTP
// listener went, or its class is no longer a network load balancer's. Nothing else would, since
// the sweep leaves a gateway's proxies to the provider that serves it.
func (p *Provider) removeProxies(ctx context.Context, lb *providers.LoadBalancer) error {
	if p.o.Proxies == nil {
		return nil
	}
	if err := p.o.Proxies.Delete(ctx, proxyModel(lb)); err != nil {
		return fmt.Errorf("removing the proxies that no listener of %s needs: %w", lb.Gateway, err)
	}
	return nil
}

// proxyParameters run the proxies behind a Service of type ClusterIP: the NLB targets the pods
// themselves, so a cloud load balancer of the Service's own would be a second, unused one.
const proxyParameters = `{"serviceType":"ClusterIP"}`

// proxied tells whether lb has listeners its network load balancer hands to the proxies.
func proxied(lb *providers.LoadBalancer) bool {
	return lb.Routing != nil && slices.ContainsFunc(lb.Routing.Listeners, isL7)
}

func isL7(l ir.Listener) bool { return l.Protocol == ir.ProtocolHTTP || l.Protocol == ir.ProtocolHTTPS }

// proxyModel is the model the proxies are run from: lb with its HTTP and HTTPS ports only.
func proxyModel(lb *providers.LoadBalancer) *providers.LoadBalancer {
	pm := *lb
	pm.Parameters = json.RawMessage(proxyParameters)
	pm.Ports = nil
	for _, p := range lb.Ports {
		if p.Protocol == string(ir.ProtocolHTTP) || p.Protocol == string(ir.ProtocolHTTPS) {
			pm.Ports = append(pm.Ports, p)
		}
	}
	return &pm
}

// throughProxies is lb as its network load balancer serves it: every HTTP and HTTPS listener
// becomes a TCP listener to the proxies' endpoints on the same port. lb itself is not changed
// (its Routing is shared with the config server).
func throughProxies(lb *providers.LoadBalancer, eps []ir.Endpoint) *providers.LoadBalancer {
	out := *lb
	cfg := *lb.Routing
	cfg.Listeners = make([]ir.Listener, 0, len(lb.Routing.Listeners))
	for _, l := range lb.Routing.Listeners {
		if !isL7(l) {
			cfg.Listeners = append(cfg.Listeners, l)
			continue
		}
		be := ir.Backend{Name: fmt.Sprintf("%s/proxies:%d", lb.Gateway, l.Port), Weight: 1}
		for _, ep := range eps {
			ep.Port = l.Port
			be.Endpoints = append(be.Endpoints, ep)
		}
		cfg.Listeners = append(cfg.Listeners, ir.Listener{Name: l.Name, Port: l.Port, Protocol: ir.ProtocolTCP,
			SourceRanges: l.SourceRanges, L4: &ir.L4Route{Name: "proxies/" + l.Name, Backends: []ir.Backend{be}}})
	}
	out.Routing = &cfg
	return &out
}

// errNoProxies: the operator runs no proxies a network load balancer could hand HTTP to.
var errNoProxies = errors.New("HTTP and HTTPS listeners of a network load balancer are served by the fleetgate proxies, which this operator does not run here")
