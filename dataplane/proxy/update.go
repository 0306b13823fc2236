package proxy

import (
	"errors"
	"fmt"
	"maps"
	"reflect"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// Update applies u to the config in service, compiling only the virtual hosts it adds or replaces
// and sharing everything else with the table in service, so that a change of one host costs work
// in proportion to that host (plus, amortized, a share of copying its listener's host map: see
// hostMap.recent); a new base compiles every listener but not their hosts. The result is
// validated as Apply validates a whole config: on error nothing changes and the previous config
// keeps being served. The first update compiles whole.
func (s *Server) Update(u *ir.Update) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("proxy is shut down")
	}
	old := s.cur.Load()
	if old == nil {
		cfg, err := (*ir.Config)(nil).Patch(u)
		if err != nil {
			s.metrics.applies.WithLabelValues("invalid").Inc()
			return fmt.Errorf("invalid config: %w", err)
		}
		return s.applyLocked(cfg)
	}
	base := s.base
	if u.Base != nil {
		base = u.Base
	}
	c := newCompiler(s.compileDeps(), base.BackendClientCertificate, tlsTransports{})
	certs := s.certs
	if u.Base != nil {
		certs = certCache{}
	}
	// A new client certificate for TLS backends compiles every host that has one again.
	clientCert := u.Base != nil && !reflect.DeepEqual(u.Base.BackendClientCertificate, s.base.BackendClientCertificate)
	t, drop, err := c.patch(old, base, u, certs, clientCert)
	if err == nil {
		err = c.err
	}
	if err != nil {
		c.abort()
		s.metrics.applies.WithLabelValues("invalid").Inc()
		return fmt.Errorf("invalid config: %w", err)
	}
	if _, err := s.install(t); err != nil {
		c.abort()
		return err
	}
	s.base, s.certs = base, certs
	// Pools no longer used stay until the next whole Apply: finding them would take a walk of
	// every backend. Their idle connections time out meanwhile.
	maps.Copy(s.tlsPools, c.tlsNext)
	s.metrics.release(drop)
	s.applied(t)
	return nil
}

// hostChanges are an update's changes to one listener's hosts.
type hostChanges struct {
	add    []*ir.VirtualHost
	remove []string
}

// patch builds the table u makes of old, whose base becomes base. drop are the series references
// old holds and the new table does not, to give back once it is in service.
func (s *compiler) patch(old *table, base *ir.Config, u *ir.Update, certs certCache, clientCert bool) (t *table, drop []*routeStats, err error) {
	if u.Base != nil {
		if err := u.Base.Validate(); err != nil {
			return nil, nil, err
		}
	}
	listeners := make(map[string]*ir.Listener, len(base.Listeners))
	for i := range base.Listeners {
		listeners[base.Listeners[i].Name] = &base.Listeners[i]
	}
	prev := make(map[string]*listenerTable, len(old.listeners))
	for _, lt := range old.listeners {
		prev[lt.name] = lt
	}
	changes := map[string]*hostChanges{}
	change := func(l string) *hostChanges {
		if changes[l] == nil {
			changes[l] = &hostChanges{}
		}
		return changes[l]
	}
	var errs []error
	for _, k := range u.Removed {
		if prev[k.Listener] == nil {
			return nil, nil, fmt.Errorf("listener %q: removes a host of a listener the config does not have", k.Listener)
		}
		change(k.Listener).remove = append(change(k.Listener).remove, k.Hostname)
	}
	for i := range u.Hosts {
		h := &u.Hosts[i]
		if listeners[h.Listener] == nil {
			return nil, nil, fmt.Errorf("listener %q: hosts for a listener the config does not have", h.Listener)
		}
		if err := ir.ValidateHost(h.Listener, &h.Host, base.Limits); err != nil {
			errs = append(errs, err)
		}
		change(h.Listener).add = append(change(h.Listener).add, &h.Host)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	t = &table{version: u.Version, listeners: old.listeners, limits: old.limits}
	if u.Base != nil {
		if t.limits, err = s.resolveLimits(base.Limits); err != nil {
			return nil, nil, err
		}
		s.lim = t.limits // every listener is compiled again below, with these
	}
	if u.Base == nil && len(changes) == 0 {
		return t, nil, nil // a new version of the same config
	}
	t.listeners = make(map[portKey]*listenerTable, len(base.Listeners))
	for i := range base.Listeners {
		l := &base.Listeners[i]
		p := prev[l.Name]
		ch := changes[l.Name]
		var lt *listenerTable
		switch {
		case u.Base != nil:
			if lt, err = s.compileListenerBase(l, certs); err != nil {
				return nil, nil, fmt.Errorf("listener %q: %w", l.Name, err)
			}
			if p != nil {
				drop = append(drop, p.own...)
			}
		case ch == nil:
			t.listeners[portKey{l.Port, l.Protocol == ir.ProtocolUDP}] = p
			continue
		default:
			cp := *p
			cp.refs = nil // its hosts change
			lt = &cp
		}
		var hosts *hostMap[*vhost]
		if p != nil {
			hosts = p.hosts
		}
		if ch != nil || clientCert && hosts != nil {
			if hosts == nil {
				hosts = newHostMap[*vhost]()
			} else {
				hosts = hosts.clone()
			}
			if drop, err = s.patchHosts(l.Name, hosts, ch, clientCert, drop); err != nil {
				return nil, nil, err
			}
			if hosts.shared && len(hosts.recent) >= foldAt(len(hosts.exact)) {
				// A large patch folds now, not at the next update: meanwhile the shared exact map
				// would keep every host it replaced alive, and lookups would probe two big maps.
				hosts = hosts.clone()
			}
		}
		if lt.hosts == nil { // not an HTTP listener
			if hosts != nil && hosts.len() > 0 {
				return nil, nil, fmt.Errorf("listener %q: %s listener holds HTTP routes", l.Name, l.Protocol)
			}
		} else if hosts != nil {
			lt.hosts = hosts
		}
		t.listeners[portKey{l.Port, l.Protocol == ir.ProtocolUDP}] = lt
	}
	for name, p := range prev {
		if listeners[name] != nil {
			continue
		}
		if p.hosts != nil {
			// Every host must go with its listener.
			left := p.hosts.clone()
			if _, err := s.patchHosts(name, left, changes[name], false, nil); err != nil {
				return nil, nil, err
			}
			if left.len() > 0 {
				return nil, nil, fmt.Errorf("listener %q: removed with hosts left", name)
			}
		}
		drop = p.stats(drop)
	}
	return t, drop, nil
}

// patchHosts applies ch (may be nil) to hosts, a copy of a listener's host map, and with
// clientCert compiles its hosts with TLS backends again. It returns drop with the series
// references of the hosts it replaced or removed.
func (s *compiler) patchHosts(listener string, hosts *hostMap[*vhost], ch *hostChanges, clientCert bool, drop []*routeStats) ([]*routeStats, error) {
	if ch != nil {
		for _, h := range ch.remove {
			v, ok := hosts.find(h)
			if !ok || v.name != h {
				return nil, fmt.Errorf("listener %q: removes host %q, which it does not have", listener, h)
			}
			hosts.remove(h)
			drop = v.stats(drop)
		}
		for _, in := range ch.add {
			if v, ok := hosts.find(in.Hostname); ok {
				if v.name != in.Hostname {
					return nil, fmt.Errorf("listener %q host %q: duplicate host", listener, in.Hostname)
				}
				hosts.remove(in.Hostname)
				drop = v.stats(drop)
			}
			vh, err := s.compileVHost(listener, in)
			if err != nil {
				return nil, fmt.Errorf("listener %q: %w", listener, err)
			}
			addHost(hosts, vh, in.SingleLabelWildcard)
			s.pace.Tick()
		}
	}
	if !clientCert {
		return drop, nil
	}
	var redo []*vhost
	hosts.each(func(v *vhost) {
		if v.src != nil {
			redo = append(redo, v)
		}
	})
	for _, v := range redo {
		vh, err := s.compileVHost(listener, v.src)
		if err != nil {
			return nil, fmt.Errorf("listener %q: %w", listener, err)
		}
		hosts.remove(v.name)
		addHost(hosts, vh, v.src.SingleLabelWildcard)
		drop = v.stats(drop)
		s.pace.Tick()
	}
	return drop, nil
}
