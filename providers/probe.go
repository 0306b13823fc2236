package providers

import (
	"context"
	"strings"

	"github.com/go-logr/logr"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// HTTPProbe is a backend pod's HTTP readiness probe as a cloud health check can follow it: the
// kubelet's idea of ready, which GKE's Ingress also takes for its health checks.
type HTTPProbe struct {
	// Path starts with "/".
	Path string
	// Scheme is HTTP or HTTPS.
	Scheme string
}

// ReadinessProbes finds the HTTP readiness probe of the pods behind a backend, so that a cloud
// health check checks what the kubelet checks (as GKE's Ingress does) when the class names no path.
type ReadinessProbes interface {
	// ReadinessProbe returns the probe of the pod serving ep, a backend endpoint of Service
	// namespace/service in ep.Cluster, when it is an HTTP GET on ep's port; ok is false otherwise.
	ReadinessProbe(ctx context.Context, namespace, service string, ep ir.Endpoint) (p HTTPProbe, ok bool, err error)
}

// BackendProbes asks probes for the probe of every backend of cfg (by backend name), one endpoint
// per cluster, keeping those whose path starts with "/" and fits maxPathLen. A backend whose
// clusters disagree, or whose lookup fails, is left out (its health check keeps the default): the
// probe is a hint, never a reason to fail the load balancer.
func BackendProbes(ctx context.Context, probes ReadinessProbes, cfg *ir.Config, maxPathLen int, log logr.Logger) map[string]HTTPProbe {
	if probes == nil || cfg == nil {
		return nil
	}
	out := map[string]HTTPProbe{}
	seen := map[string]bool{}
	for _, be := range backends(cfg) {
		if seen[be.Name] || be.Invalid {
			continue
		}
		seen[be.Name] = true
		namespace, service, ok := serviceOf(be.Name)
		if !ok {
			continue
		}
		found, agree := HTTPProbe{}, true
		asked := map[string]bool{}
		for _, ep := range be.Endpoints {
			if asked[ep.Cluster] {
				continue
			}
			asked[ep.Cluster] = true
			probe, ok, err := probes.ReadinessProbe(ctx, namespace, service, ep)
			if err != nil {
				log.V(1).Info("readiness probe lookup failed; the health check keeps its default", "backend", be.Name, "cluster", ep.Cluster, "error", err.Error())
			}
			usable := strings.HasPrefix(probe.Path, "/") && len(probe.Path) <= maxPathLen
			if err != nil || !ok || !usable || (found != HTTPProbe{} && probe != found) {
				agree = false
				break
			}
			found = probe
		}
		if agree && found != (HTTPProbe{}) {
			out[be.Name] = found
		}
	}
	return out
}

// backends are every backend of cfg.
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
