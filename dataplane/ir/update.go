package ir

import (
	"fmt"
	"strings"
)

// Update changes a gateway's config from the version a proxy serves to the next one virtual host at
// a time, so that a change of one host costs the config server, the wire and the proxy work in
// proportion to that host rather than to the whole config.
type Update struct {
	Gateway string
	Version uint64
	// Base, when set, replaces everything of the config but its virtual hosts: the listeners, whose
	// VirtualHosts it leaves empty, and BackendClientCertificate. Nil keeps the current base; the
	// first update a proxy applies must carry one.
	Base *Config
	// Hosts are added to their listener, or replace its host of the same Hostname.
	Hosts []ListenerHost
	// Removed are deleted. A host is removed and added in the same update only to move it.
	Removed []HostKey
}

// HostKey names one virtual host of a config.
type HostKey struct {
	Listener string
	Hostname string
}

// ListenerHost is a virtual host of the named listener.
type ListenerHost struct {
	Listener string
	Host     VirtualHost
}

// BaseOf returns cfg without its virtual hosts, as Update.Base holds it. It shares everything else
// with cfg.
func BaseOf(cfg *Config) *Config {
	b := *cfg
	b.Listeners = make([]Listener, len(cfg.Listeners))
	for i, l := range cfg.Listeners {
		l.VirtualHosts = nil
		b.Listeners[i] = l
	}
	return &b
}

// Patch returns the config u makes of c (nil for none): the reference the proxy's incremental
// tables are held to. It fails when u removes or needs something c does not have.
func (c *Config) Patch(u *Update) (*Config, error) {
	base := u.Base
	if base == nil {
		if c == nil {
			return nil, fmt.Errorf("update to version %d has no base and there is no config to patch", u.Version)
		}
		base = c
	}
	out := BaseOf(base)
	out.Gateway, out.Version = u.Gateway, u.Version
	drop := map[HostKey]bool{}
	for _, k := range u.Removed {
		drop[k] = true
	}
	for _, h := range u.Hosts {
		drop[HostKey{h.Listener, h.Host.Hostname}] = true
	}
	hosts := map[string][]VirtualHost{}
	have := map[HostKey]bool{}
	if c != nil {
		for _, l := range c.Listeners {
			for _, vh := range l.VirtualHosts {
				k := HostKey{l.Name, vh.Hostname}
				have[k] = true
				if !drop[k] {
					hosts[l.Name] = append(hosts[l.Name], vh)
				}
			}
		}
	}
	for _, k := range u.Removed {
		if !have[k] {
			return nil, fmt.Errorf("update removes host %q of listener %q, which the config does not have", k.Hostname, k.Listener)
		}
	}
	for _, h := range u.Hosts {
		hosts[h.Listener] = append(hosts[h.Listener], h.Host)
	}
	for i := range out.Listeners {
		l := &out.Listeners[i]
		l.VirtualHosts = hosts[l.Name]
		delete(hosts, l.Name)
	}
	for l := range hosts {
		return nil, fmt.Errorf("listener %q: hosts for a listener the config does not have", l)
	}
	return out, nil
}

// HostnameKey is how a proxy tells configured hostnames apart: case-insensitively, without a
// trailing dot, with "" the same as "*" (the catch-all). Validation and the proxy's host maps both
// use it, so that what Validate calls a duplicate is what the proxy serves as one. (HostKey is
// the listener-and-hostname name of a host in an Update.)
func HostnameKey(h string) string {
	h = strings.TrimSuffix(strings.ToLower(h), ".")
	if h == "" {
		return "*"
	}
	return h
}
