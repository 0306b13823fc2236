package xds

import "time"

// RefusalTTL is how long a replica refused for want of a common wire version keeps counting in
// Status after its last attempt: proxies retry within 30s (ClientOptions.MaxBackoff) plus jitter,
// so a live one is refused again well before, and one that was replaced (rolled back) stops
// holding the gateway back. OnChange is called when one expires.
const RefusalTTL = 2 * time.Minute

// refusal is a replica refused for want of a common wire version.
type refusal struct {
	reason string
	at     time.Time // of its last attempt
}

// refuse records that node cannot be served gateway, and why.
func (s *Server) refuse(gateway, node, reason string) {
	s.mu.Lock()
	g := s.gatewayLocked(gateway)
	s.evictLocked(g, node)
	if g.refused == nil {
		g.refused = map[string]refusal{}
	}
	g.refused[node] = refusal{reason: reason, at: s.now()}
	s.scheduleExpiryLocked(gateway, g)
	s.mu.Unlock()
	s.metrics.refusals.Inc()
	s.changed(gateway)
}

// expireRefusalsLocked forgets g's refusals older than the TTL and reports whether there were any.
// It needs Server.mu held.
func (s *Server) expireRefusalsLocked(g *gatewayState) bool {
	expired := false
	for node, r := range g.refused {
		if s.now().Sub(r.at) >= s.opts.RefusalTTL {
			delete(g.refused, node)
			expired = true
		}
	}
	return expired
}

// stopExpiries stops every refusal timer: the server no longer serves, nothing is to be told.
func (s *Server) stopExpiries() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, g := range s.gateways {
		if g.expiry != nil {
			g.expiry.Stop()
			g.expiry = nil
		}
	}
}

// scheduleExpiryLocked sets g's timer to the expiry of its oldest refusal, so that a refusal that
// runs out tells OnChange, as its arrival did: the gateway may be programmed without it. It needs
// Server.mu held.
func (s *Server) scheduleExpiryLocked(gateway string, g *gatewayState) {
	if g.expiry != nil {
		g.expiry.Stop()
		g.expiry = nil
	}
	var first time.Time
	for _, r := range g.refused {
		if first.IsZero() || r.at.Before(first) {
			first = r.at
		}
	}
	if first.IsZero() {
		return
	}
	g.expiry = time.AfterFunc(max(0, first.Add(s.opts.RefusalTTL).Sub(s.now())), func() {
		s.mu.Lock()
		cur, ok := s.gateways[gateway]
		expired := false
		if ok && cur == g {
			expired = s.expireRefusalsLocked(g)
			s.scheduleExpiryLocked(gateway, g)
			s.dropIfUnusedLocked(gateway, g)
		}
		s.mu.Unlock()
		if expired {
			s.changed(gateway)
		}
	})
}
