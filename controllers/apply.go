package controllers

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/fleetgate/fleetgate/controllers/translate"
	"github.com/fleetgate/fleetgate/dataplane/ir"
	"github.com/fleetgate/fleetgate/providers"
)

// ConfigServer ships versioned dataplane configs to the proxies of each gateway and tells which
// version they acknowledged.
type ConfigServer interface {
	// SetConfig publishes cfg for the gateway and returns the version it was stamped with; an
	// unchanged config keeps its version.
	SetConfig(gateway string, cfg *ir.Config) uint64
	// Acknowledged tells whether every connected proxy of the gateway serves version v; when not,
	// rejected says whether one refused it, and reason explains.
	Acknowledged(gateway string, v uint64) (ok, rejected bool, reason string)
	RemoveGateway(gateway string)
}

// ProviderSource finds the provider named by a GatewayClassConfig.
type ProviderSource interface {
	Get(name string) (providers.Provider, bool)
}

// The in-cluster provider's objects, and the CA Secret of the config server.
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=services;serviceaccounts;secrets,verbs=get;list;watch;create;update;patch;delete

// Dataplane is the Applier that makes gateways real: the provider builds each load balancer, the
// config server feeds its proxies, and a gateway is programmed only when both are done: the
// provider reports it ready and every proxy ACKed the config of this translation.
type Dataplane struct {
	Providers ProviderSource
	Configs   ConfigServer

	mu sync.Mutex
	// applied holds the models ensured last time, so that gateways that disappear are deleted.
	applied map[string]providers.LoadBalancer
}

// Apply ensures every load balancer of res, publishes its config, deletes what went away, and
// reports each gateway's programmed state.
func (d *Dataplane) Apply(ctx context.Context, res *translate.Result) (map[string]translate.Programmed, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.applied == nil {
		d.applied = map[string]providers.LoadBalancer{}
	}
	out := make(map[string]translate.Programmed, len(res.LoadBalancers))
	current := make(map[string]providers.LoadBalancer, len(res.LoadBalancers))
	var errs []error
	for i := range res.LoadBalancers {
		lb := res.LoadBalancers[i]
		current[lb.Gateway] = lb
		p, ok := d.Providers.Get(lb.Provider)
		if !ok {
			out[lb.Gateway] = translate.Programmed{Reason: providers.ReasonNoResources,
				Message: fmt.Sprintf("provider %q is not enabled in this operator", lb.Provider)}
			continue
		}
		start := time.Now()
		st, err := p.Ensure(ctx, &lb)
		logSlow(ctx, start, "ensure", lb.Gateway)
		if err != nil {
			errs = append(errs, fmt.Errorf("gateway %s: %w", lb.Gateway, err))
			out[lb.Gateway] = translate.Programmed{Reason: string(gwv1.GatewayReasonPending), Message: "provider error: " + err.Error()}
			continue
		}
		version := d.Configs.SetConfig(lb.Gateway, &res.Configs[i])
		out[lb.Gateway] = programmed(st, d.Configs, lb.Gateway, version)
	}
	for key, lb := range d.applied {
		if _, ok := current[key]; ok {
			continue
		}
		if p, ok := d.Providers.Get(lb.Provider); ok {
			start := time.Now()
			err := p.Delete(ctx, &lb)
			logSlow(ctx, start, "delete", lb.Gateway)
			if err != nil {
				errs = append(errs, fmt.Errorf("deleting gateway %s: %w", key, err))
				current[key] = lb // try again next time
				continue
			}
		}
		d.Configs.RemoveGateway(key)
	}
	d.applied = current
	return out, errors.Join(errs...)
}

// slowProviderCall is how long one provider call may take before it is logged: every gateway waits
// for the pass it is in.
const slowProviderCall = time.Second

func logSlow(ctx context.Context, start time.Time, op, gateway string) {
	if d := time.Since(start); d > slowProviderCall {
		log.FromContext(ctx).Info("slow provider call", "op", op, "gateway", gateway, "took", d)
	}
}

func programmed(st providers.Status, configs ConfigServer, gateway string, version uint64) translate.Programmed {
	p := translate.Programmed{Addresses: statusAddresses(st.Addresses)}
	if !st.Ready {
		p.Reason, p.Message = st.Reason, st.Message
		return p
	}
	ok, rejected, reason := configs.Acknowledged(gateway, version)
	switch {
	case ok:
		p.Ready = true
	case rejected:
		p.Reason, p.Message = string(gwv1.GatewayReasonInvalid), reason
	default:
		p.Reason, p.Message = string(gwv1.GatewayReasonPending), reason
	}
	return p
}

func statusAddresses(in []providers.Address) []gwv1.GatewayStatusAddress {
	out := make([]gwv1.GatewayStatusAddress, 0, len(in))
	for _, a := range in {
		t := gwv1.AddressType(a.Type)
		out = append(out, gwv1.GatewayStatusAddress{Type: &t, Value: a.Value})
	}
	return out
}
