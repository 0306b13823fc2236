package translate

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/fleetgate/fleetgate/dataplane/ir"
	"github.com/fleetgate/fleetgate/providers"
)

// portGroup is the programmable listeners that share one port and transport.
type portGroup struct {
	port      int32
	transport string
	ls        []*listener
}

func groupByPort(ls []*listener) []portGroup {
	var gs []portGroup
	for _, l := range ls {
		if !l.programmable() {
			continue
		}
		i := slices.IndexFunc(gs, func(g portGroup) bool { return g.port == l.spec.Port && g.transport == transport(l.spec.Protocol) })
		if i < 0 {
			gs = append(gs, portGroup{port: l.spec.Port, transport: transport(l.spec.Protocol)})
			i = len(gs) - 1
		}
		gs[i].ls = append(gs[i].ls, l)
	}
	slices.SortFunc(gs, func(a, b portGroup) int {
		return cmp.Or(cmp.Compare(a.port, b.port), cmp.Compare(a.transport, b.transport))
	})
	return gs
}

// owner returns the listener of the group that serves hostname h: the most specific listener
// hostname matching it. Routes attached to a less specific listener do not serve h, which keeps
// listeners isolated from each other.
func (g portGroup) owner(h string) *listener {
	var best *listener
	for _, l := range g.ls {
		if hostMatches(l.hostname, h) && (best == nil || compareSpecificity(l.hostname, best.hostname) < 0) {
			best = l
		}
	}
	return best
}

// buildConfig assembles the dataplane config of one gateway group. Version is left 0: the config server
// stamps versions when it publishes a changed config.
func (t *translator) buildConfig(grp *gatewayGroup) ir.Config {
	cfg := ir.Config{Gateway: grp.key, Limits: grp.class.proxy.limits}
	for _, g := range groupByPort(grp.listeners) {
		proto := g.ls[0].spec.Protocol
		il := ir.Listener{
			Name:     fmt.Sprintf("%s-%d", strings.ToLower(string(proto)), g.port),
			Port:     uint32(g.port),
			Protocol: ir.Protocol(proto),
		}
		for _, l := range g.ls {
			il.Certificates = append(il.Certificates, l.certs...)
			if il.ClientValidation == nil {
				il.ClientValidation = l.clientValidation
			}
		}
		slices.SortStableFunc(il.Certificates, func(a, b ir.Certificate) int {
			return compareSpecificity(firstOr(a.Hostnames), firstOr(b.Hostnames))
		})
		switch proto {
		case gwv1.HTTPProtocolType, gwv1.HTTPSProtocolType:
			il.VirtualHosts = t.virtualHosts(grp.key, grp.class, g)
		case gwv1.TLSProtocolType:
			il.SNIRoutes = sniRoutes(g)
		case gwv1.TCPProtocolType, gwv1.UDPProtocolType:
			if r := g.ls[0].l4; r != nil {
				il.L4 = &ir.L4Route{Name: r.kind + "/" + r.name(), Backends: r.l4}
			}
		}
		cfg.Listeners = append(cfg.Listeners, il)
	}
	// The oldest Gateway with a usable client certificate speaks for the group.
	for _, gw := range grp.gateways {
		if gw.invalidReason == "" && gw.clientCert != nil {
			cfg.BackendClientCertificate = gw.clientCert
			break
		}
	}
	return cfg
}

func firstOr(hs []string) string {
	if len(hs) == 0 {
		return ""
	}
	return hs[0]
}

func sniRoutes(g portGroup) []ir.SNIRoute {
	type entry struct {
		host string
		r    *route
		term bool
	}
	var es []entry
	for _, l := range g.ls {
		for _, a := range l.hosts {
			for _, h := range a.hostnames {
				if g.owner(h) == l {
					es = append(es, entry{h, a.route, l.tlsMode == gwv1.TLSModeTerminate})
				}
			}
		}
	}
	// Most specific SNI first; on equal hostnames the oldest route wins.
	slices.SortStableFunc(es, func(a, b entry) int { return cmp.Or(compareSpecificity(a.host, b.host), olderFirst(a.r, b.r)) })
	var out []ir.SNIRoute
	for _, e := range es {
		sr := ir.SNIRoute{Name: e.r.kind + "/" + e.r.name(), Backends: e.r.l4, Terminate: e.term}
		if e.host != "" {
			sr.Hostnames = []string{e.host}
		}
		out = append(out, sr)
	}
	return out
}

// buildLoadBalancer derives the provider model of one gateway group from its config and oldest
// valid Gateway.
func (t *translator) buildLoadBalancer(grp *gatewayGroup, cfg ir.Config) providers.LoadBalancer {
	lb := providers.LoadBalancer{
		Gateway: grp.key, Namespace: grp.namespace, Name: grp.name,
		Class: grp.class.name, Provider: grp.class.provider, Scope: grp.class.scope,
		Parameters: grp.class.parameters,
	}
	t.addDNS(grp.class, grp.key)
	for _, g := range grp.gateways {
		if !slices.Contains(lb.Clusters, g.obj.Cluster) {
			lb.Clusters = append(lb.Clusters, g.obj.Cluster)
		}
		// Providers make the Gateway the owner of what they create, per cluster.
		if uid := g.object().UID; uid != "" {
			if lb.GatewayUIDs == nil {
				lb.GatewayUIDs = map[string]string{}
			}
			lb.GatewayUIDs[g.obj.Cluster] = string(uid)
		}
	}
	slices.Sort(lb.Clusters)
	for _, l := range cfg.Listeners {
		tr := providers.TransportTCP
		if l.Protocol == ir.ProtocolUDP {
			tr = providers.TransportUDP
		}
		lb.Ports = append(lb.Ports, providers.Port{Port: int32(l.Port), Transport: tr, Protocol: string(l.Protocol)})
	}
	i := slices.IndexFunc(grp.gateways, func(g *gatewayObject) bool { return g.invalidReason == "" })
	if i < 0 {
		return lb
	}
	gw := grp.gateways[i].object()
	for _, a := range gw.Spec.Addresses {
		lb.Addresses = append(lb.Addresses, providers.Address{Type: string(addressType(a)), Value: a.Value})
	}
	if inf := gw.Spec.Infrastructure; inf != nil {
		for k, v := range inf.Labels {
			if lb.Labels == nil {
				lb.Labels = map[string]string{}
			}
			lb.Labels[string(k)] = string(v)
		}
		for k, v := range inf.Annotations {
			if lb.Annotations == nil {
				lb.Annotations = map[string]string{}
			}
			lb.Annotations[string(k)] = string(v)
		}
	}
	return lb
}
