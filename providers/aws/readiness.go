package aws

import (
	"context"

	"github.com/fleetgate/fleetgate/providers"
)

// readinessProbes are the readiness probes of lb's backends that its target groups' health checks
// may follow (providers.BackendProbes).
func (p *Provider) readinessProbes(ctx context.Context, lb *providers.LoadBalancer) map[string]providers.HTTPProbe {
	return providers.BackendProbes(ctx, p.o.Probes, lb.Routing, maxHealthCheckPathLen, p.o.Log)
}
