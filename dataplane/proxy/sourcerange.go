package proxy

import (
	"fmt"
	"net"
	"net/netip"
)

// sourceRanges are the client networks a listener accepts (ir.Listener.SourceRanges, from a
// Service's loadBalancerSourceRanges); empty accepts everyone. Checked once per TCP connection,
// before any byte is read, and once per UDP datagram.
type sourceRanges []netip.Prefix

func compileSourceRanges(in []string) (sourceRanges, error) {
	if len(in) == 0 {
		return nil, nil
	}
	out := make(sourceRanges, 0, len(in))
	for _, s := range in {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("source range: %w", err)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// allows reports whether a client at addr may use the listener. IPv4-mapped IPv6 clients are
// checked as the IPv4 address they are.
func (sr sourceRanges) allows(addr netip.Addr) bool {
	if len(sr) == 0 {
		return true
	}
	addr = addr.Unmap()
	for _, p := range sr {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// allowsConn checks the remote address of an accepted connection; an address that is not IP
// (which a TCP listener never yields) is refused when ranges are set.
func (sr sourceRanges) allowsConn(c net.Conn) bool {
	if len(sr) == 0 {
		return true
	}
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return sr.allows(a.AddrPort().Addr())
	}
	ap, err := netip.ParseAddrPort(c.RemoteAddr().String())
	return err == nil && sr.allows(ap.Addr())
}
