package proxy

import (
	"net/http"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// compileOwners maps each certificate hostname of an HTTPS listener (one per Gateway listener
// sharing the port; "" for a listener without hostname) to itself, so that a request can be checked
// against the listener its TLS handshake chose.
func compileOwners(certs []ir.Certificate) *hostMap[string] {
	m := newHostMap[string]()
	for _, c := range certs {
		if len(c.Hostnames) == 0 {
			m.add("*", "*")
		}
		for _, h := range c.Hostnames {
			m.add(h, h)
		}
	}
	return m
}

// misdirected reports whether an HTTPS request's Host belongs to another listener than the one its
// SNI selected, as happens when HTTP/2 clients reuse a connection across names; such requests get
// 421 (RFC 9110 §15.5.20) instead of crossing into the other listener's routes.
func misdirected(lt *listenerTable, r *http.Request) bool {
	if lt.owners == nil || r.TLS == nil || r.TLS.ServerName == "" {
		return false
	}
	bySNI, ok := lt.owners.lookup(normalizeHost(r.TLS.ServerName))
	if !ok {
		return false
	}
	// A Host no listener claims is left to routing (404), as before.
	byHost, ok := lt.owners.lookup(normalizeHost(r.Host))
	return ok && byHost != bySNI
}
