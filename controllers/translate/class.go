package translate

import (
	"encoding/json"
	"fmt"
	"slices"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/providers"
)

// classInfo is one of our GatewayClasses with its resolved parameters.
type classInfo struct {
	name     string
	cluster  string
	accepted bool
	message  string
	provider string
	scope    string
	// parameters is the provider's own section of the GatewayClassConfig as JSON, if any.
	parameters json.RawMessage
	// proxy is the class's spec.proxy, resolved; never nil.
	proxy *proxyPolicy
	// caps is what the provider can express with these parameters (Catalog).
	caps providers.Capabilities
	// ingressNamespace is spec.ingressNamespace, for IngressClasses naming the config.
	ingressNamespace string
	// config names the GatewayClassConfig; dns is its spec.dns (nil when unset).
	config string
	dns    *v1alpha1.DNSOptions
}

// translateClasses validates every GatewayClass of our controller: its parametersRef must name an
// existing fleetgate.dev/GatewayClassConfig with a known provider and scope. A class without one is
// not accepted, so that the provider (and with it, where traffic goes) is always a deliberate choice.
func (t *translator) translateClasses() {
	for _, o := range t.snap.GatewayClasses {
		gc := o.Obj
		if gc == nil || gc.Spec.ControllerName != v1alpha1.ControllerName {
			continue
		}
		ci := &classInfo{name: gc.Name, cluster: o.Cluster, provider: string(v1alpha1.ProviderInCluster), scope: string(v1alpha1.ScopeCluster),
			proxy: defaultProxyPolicy(), caps: providers.FullCapabilities()}
		err := t.resolveParams(o.Cluster, gc.Spec.ParametersRef, ci)
		st := ClassStatus{Ref: ObjectRef{Cluster: o.Cluster, Kind: "GatewayClass", Name: gc.Name}, Generation: gc.Generation}
		if err != nil {
			ci.message = err.Error()
			st.Conditions = append(st.Conditions, cond(string(gwv1.GatewayClassConditionStatusAccepted), false,
				string(gwv1.GatewayClassReasonInvalidParameters), ci.message, gc.Generation))
		} else {
			ci.accepted = true
			st.Conditions = append(st.Conditions, cond(string(gwv1.GatewayClassConditionStatusAccepted), true,
				string(gwv1.GatewayClassReasonAccepted), "GatewayClass is accepted", gc.Generation))
		}
		// A class name is cluster-scoped; the hub's definition wins over a member's because the
		// snapshot is sorted by cluster and the first one is kept.
		if _, dup := t.classes[gc.Name]; !dup {
			t.classes[gc.Name] = ci
		}
		t.res.GatewayClasses = append(t.res.GatewayClasses, st)
	}
}

func (t *translator) resolveParams(cluster string, ref *gwv1.ParametersReference, ci *classInfo) error {
	if ref == nil {
		return fmt.Errorf("parametersRef is required: it must name a %s/GatewayClassConfig", v1alpha1.Group)
	}
	if string(ref.Group) != v1alpha1.Group || string(ref.Kind) != "GatewayClassConfig" {
		return fmt.Errorf("parametersRef must be %s/GatewayClassConfig, not %s/%s", v1alpha1.Group, ref.Group, ref.Kind)
	}
	cfg := t.idx.configs[nsName{cluster, "", ref.Name}]
	if cfg == nil {
		return fmt.Errorf("GatewayClassConfig %q not found", ref.Name)
	}
	switch cfg.Spec.Provider {
	case v1alpha1.ProviderInCluster, v1alpha1.ProviderAWS, v1alpha1.ProviderGCP:
	default:
		return fmt.Errorf("GatewayClassConfig %q: unknown provider %q", ref.Name, cfg.Spec.Provider)
	}
	switch cfg.Spec.Scope {
	case "", v1alpha1.ScopeCluster, v1alpha1.ScopeFleet:
	default:
		return fmt.Errorf("GatewayClassConfig %q: unknown scope %q", ref.Name, cfg.Spec.Scope)
	}
	ci.provider = string(cfg.Spec.Provider)
	params, err := providerParameters(cfg)
	if err != nil {
		return fmt.Errorf("GatewayClassConfig %q: %w", ref.Name, err)
	}
	ci.parameters = params
	caps, err := t.capabilities(ci.provider, params)
	if err != nil {
		return fmt.Errorf("GatewayClassConfig %q: %w", ref.Name, err)
	}
	ci.caps = caps
	if cfg.Spec.Scope != "" {
		ci.scope = string(cfg.Spec.Scope)
	}
	pp, err := newProxyPolicy(cfg.Spec.Proxy)
	if err != nil {
		return fmt.Errorf("GatewayClassConfig %q: %w", ref.Name, err)
	}
	ci.proxy = pp
	ci.ingressNamespace = cfg.Spec.IngressNamespace
	ci.config, ci.dns = cfg.Name, cfg.Spec.DNS
	if ci.dns != nil {
		// Known even without gateways, so that the records of its last gateway are deleted.
		t.addDNS(ci, "")
	}
	return nil
}

// addDNS records that the gateway key ("": none, only the config) is served by a class whose
// config publishes DNS itself.
func (t *translator) addDNS(ci *classInfo, key string) {
	if ci.dns == nil {
		return
	}
	if t.res.DNS == nil {
		t.res.DNS = map[string]DNSZone{}
	}
	z, ok := t.res.DNS[ci.config]
	if !ok {
		// Same-named configs of several clusters: the first cluster's, as for classes.
		z.Options, z.Cluster = *ci.dns, ci.cluster
	}
	if key != "" && !slices.Contains(z.Gateways, key) {
		z.Gateways = append(z.Gateways, key)
		slices.Sort(z.Gateways)
	}
	t.res.DNS[ci.config] = z
}

// providerParameters is the GatewayClassConfig's section of its provider, as JSON; nil when unset.
func providerParameters(cfg *v1alpha1.GatewayClassConfig) (json.RawMessage, error) {
	var section any
	switch cfg.Spec.Provider {
	case v1alpha1.ProviderInCluster:
		if cfg.Spec.InCluster != nil {
			section = cfg.Spec.InCluster
		}
	case v1alpha1.ProviderAWS:
		if cfg.Spec.AWS != nil {
			section = cfg.Spec.AWS
		}
	case v1alpha1.ProviderGCP:
		if cfg.Spec.GCP != nil {
			section = cfg.Spec.GCP
		}
	}
	if section == nil {
		return nil, nil
	}
	b, err := json.Marshal(section)
	if err != nil {
		return nil, fmt.Errorf("encoding %s parameters: %w", cfg.Spec.Provider, err)
	}
	return b, nil
}
