package aws

import (
	"context"
	"strings"

	"github.com/fleetgate/fleetgate/dataplane/ir"
	"github.com/fleetgate/fleetgate/providers"
)

// ReadinessProbes finds the HTTP readiness probe of the pods behind a backend, so that a target
// group checks what the kubelet checks (as GKE's Ingress does) when the class names no path.
type ReadinessProbes interface {
	// ReadinessProbe returns the probe of the pod serving ep, a backend endpoint of Service
	// namespace/service in ep.Cluster, when it is an HTTP GET on ep's port; ok is false otherwise.
	ReadinessProbe(ctx context.Context, namespace, service string, ep ir.Endpoint) (p providers.HTTPProbe, ok bool, err error)
}

// readinessProbes asks for the probe of every backend of lb, one endpoint per cluster. A
// backend whose clusters disagree, or whose lookup fails, keeps the default check: the probe is a
// hint, never a reason to fail the load balancer.
func (p *Provider) readinessProbes(ctx context.Context, lb *providers.LoadBalancer) map[string]providers.HTTPProbe {
	if p.o.Probes == nil || lb.Routing == nil {
		return nil
	}
	out := map[string]providers.HTTPProbe{}
	seen := map[string]bool{}
	for _, be := range backends(lb.Routing) {
		if seen[be.Name] || be.Invalid {
			continue
		}
		seen[be.Name] = true
		namespace, service, ok := serviceOf(be.Name)
		if !ok {
			continue
		}
		found, agree := providers.HTTPProbe{}, true
		asked := map[string]bool{}
		for _, ep := range be.Endpoints {
			if asked[ep.Cluster] {
				continue
			}
			asked[ep.Cluster] = true
			probe, ok, err := p.o.Probes.ReadinessProbe(ctx, namespace, service, ep)
			if err != nil {
				p.o.Log.V(1).Info("readiness probe lookup failed; the target group keeps the default health check", "backend", be.Name, "cluster", ep.Cluster, "error", err.Error())
			}
			usable := strings.HasPrefix(probe.Path, "/") && len(probe.Path) <= maxHealthCheckPathLen
			if err != nil || !ok || !usable || (found != providers.HTTPProbe{} && probe != found) {
				agree = false
				break
			}
			found = probe
		}
		if agree && found != (providers.HTTPProbe{}) {
			out[be.Name] = found
		}
	}
	return out
}

// backends are every backend of cfg: ALB target groups check HTTP, NLB ones do when the class
// asks for an HTTP health check.
func backends(cfg *ir.Config) []*ir.Backend {
	var out []*ir.Backend
	add := func(bs []ir.Backend) {
		for i := range bs {
			out = append(out, &bs[i])
		}
	}
	for li := range cfg.Listeners {
		l := &cfg.Listeners[li]
		for vi := range l.VirtualHosts {
			for ri := range l.VirtualHosts[vi].Routes {
				add(l.VirtualHosts[vi].Routes[ri].Backends)
			}
		}
		for si := range l.SNIRoutes {
			add(l.SNIRoutes[si].Backends)
		}
		if l.L4 != nil {
			add(l.L4.Backends)
		}
	}
	return out
}

// serviceOf reads namespace and Service out of a backend name "cluster/namespace/service:port".
func serviceOf(name string) (namespace, service string, ok bool) {
	parts := strings.Split(name, "/")
	if len(parts) != 3 {
		return "", "", false
	}
	service, _, ok = strings.Cut(parts[2], ":")
	return parts[1], service, ok && parts[1] != "" && service != ""
}
