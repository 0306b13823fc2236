package ir

import (
	"fmt"
	"net/netip"
)

// ParseNetworks parses a list of CIDRs (Limits.DeniedEndpointCIDRs), masked to their prefix.
func ParseNetworks(cidrs []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, c := range cidrs {
		p, err := netip.ParsePrefix(c)
		if err != nil {
			return nil, fmt.Errorf("network %q: %w", c, err)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// InNetworks reports whether addr, an IP literal, lies in one of nets. It is the one meaning of a
// deny list for translation and the proxy alike: an address that does not parse is in (nothing
// could dial it safely), a zone is ignored (it would make every prefix miss) and an IPv4-mapped
// IPv6 address is its IPv4 address (::ffff:169.254.169.254 is 169.254.169.254).
func InNetworks(nets []netip.Prefix, addr string) bool {
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return true
	}
	a = a.WithZone("").Unmap()
	for _, p := range nets {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
