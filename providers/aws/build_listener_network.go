package aws

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// networkListeners builds one NLB listener per IR listener, forwarding to one target group of its
// single backend's endpoints in every member cluster (an NLB neither splits by weight nor routes
// by SNI). A TCP and a UDP listener on one port become one TCP_UDP listener when they share their
// backend.
func (b *builder) networkListeners(s *Stack) error {
	type planned struct {
		l        Listener
		be       *ir.Backend
		affinity bool
	}
	var ports []planned
	for i := range b.lb.Routing.Listeners {
		l := &b.lb.Routing.Listeners[i]
		if len(l.SourceRanges) > 0 {
			b.note("listener %d: source ranges are not enforced by the network load balancer (no security group)", l.Port)
		}
		out, be, affinity, err := b.networkListener(l)
		if err != nil {
			return fmt.Errorf("listener %d: %w", l.Port, err)
		}
		if be == nil {
			// Like a Service without endpoints: the port is open and no connection gets through.
			be = emptyBackend(out.Port, out.Protocol)
		}
		// IR listeners are sorted by port: a second one on a port directly follows the first.
		if n := len(ports); n > 0 && ports[n-1].l.Port == out.Port {
			if err := mergeTCPUDP(&ports[n-1].l, out.Protocol, ports[n-1].be, be); err != nil {
				return fmt.Errorf("listener %d: %w", l.Port, err)
			}
			ports[n-1].affinity = ports[n-1].affinity || affinity
			continue
		}
		ports = append(ports, planned{l: out, be: be, affinity: affinity})
	}
	// A port of the model that no IR listener carries (its listener has no route yet) is open too.
	for _, mp := range b.lb.Ports {
		if slices.ContainsFunc(ports, func(p planned) bool { return p.l.Port == mp.Port }) {
			continue
		}
		proto := string(mp.Transport)
		ports = append(ports, planned{l: Listener{ID: listenerID(uint32(mp.Port)), Port: mp.Port, Protocol: proto}, be: emptyBackend(mp.Port, proto)})
	}
	slices.SortFunc(ports, func(a, b planned) int { return cmp.Compare(a.l.ID, b.l.ID) })
	for _, p := range ports {
		tg := b.targetGroup(tgSpec{backend: p.be, endpoints: p.be.Endpoints, protocol: targetProtocol(p.l.Protocol), sourceIPAffinity: p.affinity})
		p.l.DefaultAction = Action{Forward: []WeightedTargetGroup{{TargetGroup: tg, Weight: 1}}}
		s.Listeners = append(s.Listeners, p.l)
	}
	return nil
}

// networkListener maps one IR listener to an NLB listener and picks its backend (nil: none) and
// whether the route keeps clients on one endpoint.
func (b *builder) networkListener(l *ir.Listener) (Listener, *ir.Backend, bool, error) {
	out := Listener{ID: listenerID(l.Port), Port: int32(l.Port)}
	var name string
	var backends []ir.Backend
	var affinity bool
	switch l.Protocol {
	case ir.ProtocolTCP, ir.ProtocolUDP:
		out.Protocol = string(l.Protocol)
		if l.L4 != nil {
			name, backends, affinity = l.L4.Name, l.L4.Backends, l.L4.ClientIPAffinity
		}
	case ir.ProtocolTLS:
		if len(l.SNIRoutes) > 1 {
			return Listener{}, nil, false, fmt.Errorf("%d TLS routes: a network load balancer cannot route by SNI: %w", len(l.SNIRoutes), errUnsupported)
		}
		out.Protocol = protocolTCP
		if len(l.SNIRoutes) == 1 {
			r := l.SNIRoutes[0]
			name, backends = r.Name, r.Backends
			if len(r.Hostnames) > 0 {
				b.note("listener %d: route %s: a network load balancer does not check SNI, so connections for any hostname reach it", l.Port, r.Name)
			}
			if r.Terminate {
				out.Protocol = protocolTLS
				var err error
				if out.Certificates, err = b.listenerCertificates(l); err != nil {
					return Listener{}, nil, false, err
				}
				out.SSLPolicy = b.sslPolicy()
			}
		}
	default:
		return Listener{}, nil, false, fmt.Errorf("protocol %s is served by the fleetgate proxies or an application load balancer, not by a network load balancer's listener: %w", l.Protocol, errUnsupported)
	}
	var valid []ir.Backend
	for _, be := range backends {
		if !be.Invalid && be.Weight > 0 {
			valid = append(valid, be)
		}
	}
	if len(valid) > 1 {
		return Listener{}, nil, false, fmt.Errorf("route %s: %d backends, a network load balancer listener forwards to one: %w", name, len(valid), errUnsupported)
	}
	if len(valid) == 0 {
		return out, nil, false, nil
	}
	return out, &valid[0], affinity, nil
}

// emptyBackend stands for "no backend" on a listener: its target group has no targets.
func emptyBackend(port int32, protocol string) *ir.Backend {
	return &ir.Backend{Name: fmt.Sprintf("no-backend-%s:%d", strings.ToLower(protocol), port)}
}

// mergeTCPUDP makes one TCP_UDP listener of the TCP and UDP listeners of one port, which ELBv2
// needs since a port has one listener.
func mergeTCPUDP(have *Listener, protocol string, haveBackend, be *ir.Backend) error {
	pair := map[string]bool{have.Protocol: true, protocol: true}
	if !pair[protocolTCP] || !pair[protocolUDP] {
		return fmt.Errorf("%s and %s listeners on one port: %w", have.Protocol, protocol, errUnsupported)
	}
	if haveBackend.Name != be.Name {
		return fmt.Errorf("TCP and UDP on one port go to different backends, a TCP_UDP listener has one: %w", errUnsupported)
	}
	have.Protocol = protocolTCPUDP
	return nil
}

// targetProtocol is the target group protocol behind an NLB listener: TLS is terminated at the
// load balancer (or passed through on a TCP listener), so targets get TCP.
func targetProtocol(listener string) string {
	if listener == protocolTLS {
		return protocolTCP
	}
	return listener
}
