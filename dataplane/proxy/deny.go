package proxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// errDeniedEndpoint is the dial error of an endpoint in the deny list in force; callers answer as
// for an endpoint that cannot be reached.
var errDeniedEndpoint = errors.New("endpoint address is denied")

// checkEndpoint refuses, and counts, an endpoint ("host:port") whose address lies in a network of
// the table in service's deny list. Every dial site calls it: the config is checked by translation
// already, but a proxy must not connect to its node's metadata service whatever config it is given.
// A host that is not an IP literal is refused too, as it would be resolved by the proxy's own DNS.
func (s *Server) checkEndpoint(ep string) error {
	t := s.cur.Load()
	if t == nil || t.limits == nil || len(t.limits.deniedEndpoints) == 0 {
		return nil
	}
	if !deniedAddr(t.limits.deniedEndpoints, ep) {
		return nil
	}
	s.metrics.deniedDials.Inc()
	return fmt.Errorf("dial %s: %w", ep, errDeniedEndpoint)
}

func deniedAddr(denied []netip.Prefix, ep string) bool {
	host, _, err := net.SplitHostPort(ep)
	if err != nil {
		host = ep
	}
	return ir.InNetworks(denied, host)
}

// guardedDialer dials for the net/http transports (HTTP/1.1, h2c, TLS backends, mirrors), after
// the deny check.
func (s *Server) guardedDialer(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if err := s.checkEndpoint(addr); err != nil {
			return nil, err
		}
		return d.DialContext(ctx, network, addr)
	}
}

// denyChanged, called with each table put in service (under Server.mu), closes the idle upstream
// connections when the deny list changes: a kept-alive connection to an endpoint denied now would
// otherwise carry requests without a dial. The fast path's pool drops only those to denied
// endpoints; the net/http pools cannot tell theirs apart and drop every idle one (rare: the list is
// operator-set).
func (s *Server) denyChanged(t *table) {
	if t.limits == nil || slices.Equal(s.deniedInForce, t.limits.deniedEndpoints) {
		return
	}
	s.deniedInForce = t.limits.deniedEndpoints
	p := &s.fastPool
	p.mu.Lock()
	for ep, list := range p.idle {
		if deniedAddr(s.deniedInForce, ep) {
			for _, uc := range list {
				uc.c.Close()
			}
			delete(p.idle, ep)
		}
	}
	p.mu.Unlock()
	s.up.close()
	for _, tp := range s.tlsPools {
		tp.CloseIdleConnections()
	}
}
