package controllers

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/fleetgate/fleetgate/controllers/provision"
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
	// Proxies lists the gateway's proxies connected to this config server and what each did with
	// the versions sent to it.
	Proxies(gateway string) []ProxyState
	RemoveGateway(gateway string)
}

// ProviderSource finds the provider named by a GatewayClassConfig; providers.Registry is one.
type ProviderSource interface {
	Get(name string) (providers.Provider, bool)
	Names() []string
}

// The in-cluster provider's objects, and the CA Secret of the config server. Server-side apply
// writes them (patch), and an apply that creates is also authorized as create; nothing updates them,
// and nothing watches ServiceAccounts (they are listed by label to be deleted).
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=services;secrets,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=get;list;create;patch;delete

// Cloud health checks follow the readiness probe of a backend's pods (one pod read per backend).
// +kubebuilder:rbac:groups="",resources=pods,verbs=get

// Dataplane is the Applier that makes gateways real: the provisioning engine has each load
// balancer built, the config server feeds its proxies, and a gateway is programmed only when both
// are done: the provider reports it ready for its current model and every proxy ACKed the config
// of this translation.
type Dataplane struct {
	Providers ProviderSource
	Configs   ConfigServer
	// Delivered is told that a provider call for the gateway finished, so that Programmed is
	// re-evaluated without a new translation (the delivery trigger); nil tells no one.
	Delivered func(gateway string)
	// Provisioning tunes the engine (workers, resync, sweep, backoff); its Providers, Log,
	// Registerer and callbacks are set by the Dataplane.
	Provisioning provision.Options

	engine     *provision.Engine
	finalizers *finalizers
	// peers are the other operator replicas' delivery reports; nil when this replica is alone.
	peers *peerReports
	// reports publishes this replica's view to the others; nil when alone.
	reports *reportWriter

	mu sync.Mutex
	// published holds the gateways whose configs are published, so that those that go are withdrawn.
	published map[string]bool
	// delivery holds what the last Apply learnt of each gateway, so that Programmed can follow
	// the provider's results and the proxies' ACKs without another Apply.
	delivery map[string]delivery
}

// delivery is one gateway's state after Apply: its provider, the config version published and
// the first version that carried the Gateway objects' current generations, or a verdict that does
// not depend on the provider nor the proxies.
type delivery struct {
	provider string
	// class is the GatewayClass of a gateway of Gateway objects; "" for Ingresses and Services,
	// whose class names are not GatewayClasses.
	class   string
	version uint64
	// since is what Programmed waits for: a route change makes a new version but leaves the
	// Gateway's generation alone, and must not flap it to Pending (and back) on every Gateway.
	since       uint64
	generations string
	final       *translate.Programmed
}

// newEngine builds the provisioning engine; Setup runs it (and the finalizers) on the leader.
func (d *Dataplane) newEngine(reg prometheus.Registerer, log logr.Logger) error {
	o := d.Provisioning
	o.Providers, o.Registerer, o.Log = d.Providers, reg, log
	o.OnResult = func(gateway string) {
		if d.Delivered != nil {
			d.Delivered(gateway)
		}
		d.finalizers.poke()
	}
	o.OnSweep = d.finalizers.poke
	e, err := provision.New(o)
	if err != nil {
		return err
	}
	d.engine = e
	return nil
}

// Apply publishes the config of every gateway of res, hands their load-balancer models to the
// provisioning engine, withdraws the configs of gateways that went away (the engine deletes their
// load balancers), and reports each gateway's programmed state as of now. It never waits for a
// provider.
func (d *Dataplane) Apply(_ context.Context, res *translate.Result) (map[string]translate.Programmed, error) {
	if d.engine == nil {
		return nil, errors.New("the dataplane's provisioning engine is not set up")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[string]translate.Programmed, len(res.LoadBalancers))
	published := make(map[string]bool, len(res.LoadBalancers))
	desired := make([]provision.Desired, 0, len(res.LoadBalancers))
	prev := d.delivery
	d.delivery = make(map[string]delivery, len(res.LoadBalancers))
	generations := gatewayGenerations(res)
	for i := range res.LoadBalancers {
		lb := res.LoadBalancers[i]
		if _, ok := d.Providers.Get(lb.Provider); !ok {
			p := translate.Programmed{Reason: providers.ReasonNoResources,
				Message: fmt.Sprintf("provider %q is not enabled in this operator", lb.Provider)}
			out[lb.Gateway], d.delivery[lb.Gateway] = p, delivery{final: &p}
			continue
		}
		version := d.Configs.SetConfig(lb.Gateway, &res.Configs[i])
		published[lb.Gateway] = true
		desired = append(desired, provision.Desired{Model: lb, Version: version})
		dl := delivery{provider: lb.Provider, version: version, since: version, generations: generations[lb.Gateway]}
		if dl.generations != "" {
			dl.class = lb.Class
		}
		// Gateways without generations to report (those of Ingresses and Services) wait for the
		// latest version; so does everything after a config-server hiccup.
		if p, ok := prev[lb.Gateway]; ok && p.final == nil && dl.generations != "" && p.generations == dl.generations &&
			p.since != 0 && p.since <= version {
			dl.since = p.since
		}
		d.delivery[lb.Gateway] = dl
		out[lb.Gateway] = d.programmed(dl, lb.Gateway)
	}
	d.engine.Set(desired, res.Clusters)
	for gw := range d.published {
		if !published[gw] {
			d.Configs.RemoveGateway(gw)
		}
	}
	d.published = published
	d.finalizers.observe(res, published)
	d.reports.poke()
	return out, nil
}

// Recheck has the gateway's provider look at it again although its model did not change, for
// changes that only the provider can see (a proxy that exited). It is safe to call at any time.
func (d *Dataplane) Recheck(gateway string) {
	if d.engine != nil {
		d.engine.Recheck(gateway)
	}
}

// RecheckProvider has the provider look again at every gateway it serves, for a change of its
// inputs that no model holds. It is safe to call at any time.
func (d *Dataplane) RecheckProvider(provider string) {
	if d.engine != nil {
		d.engine.RecheckProvider(provider)
	}
}

// Programmed reports each gateway's programmed state as of now from what the last Apply
// published: the provider may have answered, and the proxies acknowledged (or rejected) its configs since.
func (d *Dataplane) Programmed() map[string]translate.Programmed {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[string]translate.Programmed, len(d.delivery))
	for gw, dl := range d.delivery {
		out[gw] = d.programmed(dl, gw)
	}
	// Programmed is asked again whenever a proxy answered: the other replicas hear of it too.
	d.reports.poke()
	return out
}

// programmed waits for the provider's result for the gateway's current model (of a routing
// version no older than the one Programmed waits for), then for the proxies.
func (d *Dataplane) programmed(dl delivery, gateway string) translate.Programmed {
	if dl.final != nil {
		return *dl.final
	}
	o, ok := d.engine.Result(dl.provider, gateway)
	switch {
	case !ok || !o.Current || o.Version < dl.since:
		return translate.Programmed{Reason: string(gwv1.GatewayReasonPending), Message: "waiting for provider " + dl.provider}
	case o.Err != nil:
		p := translate.Programmed{Reason: string(gwv1.GatewayReasonPending), Message: "provider error: " + o.Err.Error()}
		if ce, ok := errors.AsType[*providers.CredentialsError](o.Err); ok {
			p.Credentials = ce
		}
		return p
	}
	local := d.Configs.Proxies(gateway)
	proxies := make([]reportedProxy, 0, len(local))
	skip := make(map[string]bool, len(local))
	for _, p := range local {
		proxies = append(proxies, standing(p, dl))
		skip[p.Node] = true
	}
	return programmed(o.Status, dl, append(proxies, d.peers.proxies(gateway, dl, skip)...))
}

// CloudAccounts reports, per GatewayClass, what the latest provider call of each of its Gateways'
// gateways said of its cloud account: the refusal of the first gateway (by key) that got one, or
// else an account that answered. Classes whose gateways have no such answer are left out.
func (d *Dataplane) CloudAccounts() map[string]translate.CloudAccount {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := map[string]translate.CloudAccount{}
	for _, gw := range slices.Sorted(maps.Keys(d.delivery)) {
		dl := d.delivery[gw]
		if dl.class == "" {
			continue
		}
		o, ok := d.engine.Result(dl.provider, gw)
		if !ok {
			continue
		}
		a := out[dl.class]
		switch ce, refused := errors.AsType[*providers.CredentialsError](o.Err); {
		case refused && a.Failure == nil:
			a.Failure = ce
		case o.Err == nil && o.Status.Account != "" && a.Account == "":
			a.Account = o.Status.Account
		default:
			continue
		}
		out[dl.class] = a
	}
	return out
}

// programmed is ready once the provider is and the proxies (connected to any replica) serve the
// config that carries the Gateway's generation; a refusal of the latest config shows even then.
func programmed(st providers.Status, dl delivery, proxies []reportedProxy) translate.Programmed {
	p := translate.Programmed{Addresses: statusAddresses(st.Addresses)}
	if !st.Ready {
		p.Reason, p.Message = st.Reason, st.Message
		return p
	}
	if st.Direct {
		p.Ready = true
		return p
	}
	if _, rejected, reason := acknowledged(proxies, levelLatest, dl); rejected {
		p.Reason, p.Message = string(gwv1.GatewayReasonInvalid), reason
		return p
	}
	ok, rejected, reason := acknowledged(proxies, levelSince, dl)
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

// acknowledged tells whether at least one proxy is connected and every one serves the config at
// level want or newer; when not, whether one refused it (a NACK at that level or newer with no ACK
// of it, or no common wire version) — final until a new config or proxy —, and reason explains,
// quoting the proxy, with versions in this replica's numbers.
func acknowledged(proxies []reportedProxy, want reportLevel, dl delivery) (ok, rejected bool, reason string) {
	version := func(l reportLevel) uint64 {
		if l == levelLatest {
			return dl.version
		}
		return dl.since
	}
	v := version(want)
	if v == 0 {
		return false, false, "no configuration has been generated yet"
	}
	if len(proxies) == 0 {
		return false, false, "no proxy replica is connected"
	}
	proxies = slices.SortedFunc(slices.Values(proxies), func(a, b reportedProxy) int { return strings.Compare(a.Node, b.Node) })
	waiting := 0
	for _, p := range proxies {
		switch {
		case p.Refused != "":
			return false, true, fmt.Sprintf("proxy %s cannot be served: %s", p.Node, p.Refused)
		case p.Acked >= want:
		case p.Nacked >= want:
			if !rejected {
				reason = fmt.Sprintf("proxy %s rejected version %d: %s", p.Node, version(p.Nacked), p.Reason)
			}
			rejected = true
		default:
			if waiting == 0 && p.behind != "" && !rejected {
				reason = p.behind
			}
			waiting++
		}
	}
	switch {
	case rejected:
		return false, true, reason
	case waiting > 0 && reason != "":
		return false, false, fmt.Sprintf("waiting for %d of %d proxy replicas: %s", waiting, len(proxies), reason)
	case waiting > 0:
		return false, false, fmt.Sprintf("waiting for %d of %d proxy replicas to acknowledge version %d", waiting, len(proxies), v)
	}
	return true, false, ""
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
