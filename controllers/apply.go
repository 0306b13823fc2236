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
	// delivery holds what the last Apply learnt of each gateway, so that Programmed can follow
	// the proxies' ACKs without another Apply.
	delivery map[string]delivery
}

// delivery is one gateway's state after Apply: the provider's answer, the config version
// published and the first version that carried the Gateway objects' current generations, or a
// verdict that does not depend on the proxies.
type delivery struct {
	st      providers.Status
	version uint64
	// since is what Programmed waits for: a route change makes a new version but leaves the
	// Gateway's generation alone, and must not flap it to Pending (and back) on every Gateway.
	since       uint64
	generations string
	final       *translate.Programmed
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
	prev := d.delivery
	d.delivery = make(map[string]delivery, len(res.LoadBalancers))
	generations := gatewayGenerations(res)
	var errs []error
	for i := range res.LoadBalancers {
		lb := res.LoadBalancers[i]
		current[lb.Gateway] = lb
		p, ok := d.Providers.Get(lb.Provider)
		if !ok {
			p := translate.Programmed{Reason: providers.ReasonNoResources,
				Message: fmt.Sprintf("provider %q is not enabled in this operator", lb.Provider)}
			out[lb.Gateway], d.delivery[lb.Gateway] = p, delivery{final: &p}
			continue
		}
		start := time.Now()
		st, err := p.Ensure(ctx, &lb)
		logSlow(ctx, start, "ensure", lb.Gateway)
		if err != nil {
			errs = append(errs, fmt.Errorf("gateway %s: %w", lb.Gateway, err))
			p := translate.Programmed{Reason: string(gwv1.GatewayReasonPending), Message: "provider error: " + err.Error()}
			out[lb.Gateway], d.delivery[lb.Gateway] = p, delivery{final: &p}
			continue
		}
		version := d.Configs.SetConfig(lb.Gateway, &res.Configs[i])
		dl := delivery{st: st, version: version, since: version, generations: generations[lb.Gateway]}
		// Gateways without generations to report (those of Ingresses and Services) wait for the
		// latest version; so does everything after a provider or config-server hiccup.
		if p, ok := prev[lb.Gateway]; ok && p.final == nil && dl.generations != "" && p.generations == dl.generations &&
			p.since != 0 && p.since <= version {
			dl.since = p.since
		}
		d.delivery[lb.Gateway] = dl
		out[lb.Gateway] = programmed(dl, d.Configs, lb.Gateway)
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

// Programmed reports each gateway's programmed state as of now from what the last Apply
// published: the proxies may have acknowledged (or rejected) its configs since.
func (d *Dataplane) Programmed() map[string]translate.Programmed {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[string]translate.Programmed, len(d.delivery))
	for gw, dl := range d.delivery {
		if dl.final != nil {
			out[gw] = *dl.final
			continue
		}
		out[gw] = programmed(dl, d.Configs, gw)
	}
	return out
}

// programmed is ready once the provider is and the proxies ACKed the version that carries the
// Gateway's generation; a refusal of the latest version shows even then.
func programmed(dl delivery, configs ConfigServer, gateway string) translate.Programmed {
	st := dl.st
	p := translate.Programmed{Addresses: statusAddresses(st.Addresses)}
	if !st.Ready {
		p.Reason, p.Message = st.Reason, st.Message
		return p
	}
	if _, rejected, reason := configs.Acknowledged(gateway, dl.version); rejected {
		p.Reason, p.Message = string(gwv1.GatewayReasonInvalid), reason
		return p
	}
	ok, rejected, reason := configs.Acknowledged(gateway, dl.since)
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

// gatewayGenerations names, per gateway key, the Gateway objects it is made of with their
// generations; a member leaving or coming back changes it too.
func gatewayGenerations(res *translate.Result) map[string]string {
	out := map[string]string{}
	for _, g := range res.Gateways {
		out[g.Gateway] += fmt.Sprintf("%s/%s/%s@%d;", g.Ref.Cluster, g.Ref.Namespace, g.Ref.Name, g.Generation)
	}
	return out
}

func statusAddresses(in []providers.Address) []gwv1.GatewayStatusAddress {
	out := make([]gwv1.GatewayStatusAddress, 0, len(in))
	for _, a := range in {
		t := gwv1.AddressType(a.Type)
		out = append(out, gwv1.GatewayStatusAddress{Type: &t, Value: a.Value})
	}
	return out
}
