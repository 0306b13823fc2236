package translate

import (
	"cmp"
	"slices"
	"strings"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// portKey names one port group of one gateway across passes.
type portKey struct {
	gateway string
	port    int32
}

// hostGroup is what the virtual hosts of one port group were made of in the pass that last built
// them (Memo), so that the next pass builds again only the hosts whose attachments changed, and
// hands on the very same route lists for the others: with one route changed among 20,000,
// building every host again was half of a pass.
type hostGroup struct {
	pass uint64
	// The class's retry cap and regex bound, which shape every host.
	retries, regex int
	// listeners are the port group's listeners, which decide who owns each hostname; attached
	// their attachments, in attachment order (the same order in every pass for unchanged routes).
	listeners []listenerShape
	attached  [][]attachment
	// plain says that no rule was left out of the hosts for its class's provider (t.unexpressed)
	// or for an older Ingress (t.lostMatches): only then do a host's attachments alone decide it.
	plain bool
	// wild are the less specific hostnames (wildcards and "", whose routes other hosts take in)
	// in specificity order, with their own matches.
	wild  []wildHost
	hosts []ir.VirtualHost
	// entries are the hosts by hostname ("" for any), with the matches their routes came from.
	entries map[string]*hostEntry
}

type listenerShape struct {
	key      listenerKey
	hostname string
}

type wildHost struct {
	name    string
	matches []*compiledMatch
}

type hostEntry struct {
	matches []*compiledMatch
	routes  []ir.Route
}

// virtualHosts returns the virtual hosts of port group g of a gateway of class c: built host by
// host from the port group's hosts of the last pass when only some attachments changed (Memo),
// whole otherwise.
func (t *translator) virtualHosts(gateway string, c *classInfo, g portGroup) []ir.VirtualHost {
	if t.hosts == nil {
		return t.buildHosts(c, g, nil).hosts
	}
	k := portKey{gateway, g.port}
	prev := t.hosts.groups[k]
	if prev != nil && prev.fits(t, c, g) {
		if changed, ok := prev.changedHosts(g); ok {
			prev.update(t, c, g, changed)
			return prev.hosts
		}
	}
	t.hosts.rebuilt++
	st := t.buildHosts(c, g, prev)
	t.hosts.groups[k] = st
	return st.hosts
}

// fits reports whether st can be updated host by host into the hosts of g in this pass: the same
// listeners, class limits and plain rules.
func (st *hostGroup) fits(t *translator, c *classInfo, g portGroup) bool {
	if !st.plain || len(t.unexpressed) > 0 || len(t.lostMatches) > 0 ||
		st.retries != c.proxy.maxRetryAttempts || st.regex != c.proxy.maxRegexInstructions || len(st.listeners) != len(g.ls) {
		return false
	}
	for i, l := range g.ls {
		if st.listeners[i] != (listenerShape{l.key(), l.hostname}) {
			return false
		}
	}
	return true
}

// changedHosts lists the hostnames of the attachments that are not the same as in st (added,
// gone, or of other hostnames), walking each listener's attachments of both passes side by side.
// It reports false when a less specific hostname is among them (other hosts take in its routes),
// or when they are so many that building every host is as cheap.
func (st *hostGroup) changedHosts(g portGroup) ([]string, bool) {
	total := 0
	for _, l := range g.ls {
		total += len(l.hosts)
	}
	limit := 64 + total/16
	var changed []string
	mark := func(hs []string) bool {
		for _, h := range hs {
			if h == "" || strings.HasPrefix(h, "*") {
				return false
			}
		}
		changed = append(changed, hs...)
		return len(changed) <= limit
	}
	for li, l := range g.ls {
		prev, cur := st.attached[li], l.hosts
		i, j := 0, 0
		for i < len(prev) || j < len(cur) {
			switch {
			case i < len(prev) && j < len(cur) && prev[i].route == cur[j].route:
				if !slices.Equal(prev[i].hostnames, cur[j].hostnames) && (!mark(prev[i].hostnames) || !mark(cur[j].hostnames)) {
					return nil, false
				}
				i, j = i+1, j+1
			case i < len(prev) && (j == len(cur) || i+1 < len(prev) && prev[i+1].route == cur[j].route):
				if !mark(prev[i].hostnames) { // gone
					return nil, false
				}
				i++
			default:
				if !mark(cur[j].hostnames) { // new, or in place of prev[i]
					return nil, false
				}
				j++
			}
		}
	}
	sortBySpecificity(changed)
	return slices.Compact(changed), true
}

// ownMatches returns, for each of hosts, the matches of the routes attached with that hostname
// to the listener that owns it, in precedence order, as buildHosts finds them. lost and
// unexpressed rules are left out.
func (t *translator) ownMatches(c *classInfo, g portGroup, hosts []string) [][]*compiledMatch {
	p := c.proxy
	at := func(h string) int { return slices.Index(hosts, h) }
	if len(hosts) > 8 {
		idx := make(map[string]int, len(hosts))
		for i, h := range hosts {
			idx[h] = i
		}
		at = func(h string) int {
			if i, ok := idx[h]; ok {
				return i
			}
			return -1
		}
	}
	own := make([][]*compiledMatch, len(hosts))
	for _, l := range g.ls {
		for _, a := range l.hosts {
			for _, h := range a.hostnames {
				i := at(h)
				if i < 0 || g.owner(h) != l {
					continue
				}
				lost := t.lostMatches[a.route]
				for mi := range a.route.matches {
					if m := &a.route.matches[mi]; m.servedBy(p) && t.expressedBy(a.route, c, m.prec.rule) && !slices.Contains(lost, mi) {
						own[i] = append(own[i], m)
					}
				}
			}
		}
	}
	for _, ms := range own {
		slices.SortStableFunc(ms, func(a, b *compiledMatch) int { return comparePrecedence(a.prec, b.prec) })
	}
	return own
}

// update builds again the changed hosts (exact hostnames, sorted by specificity) of st, and
// makes st the port group's hosts of this pass: a new list, sharing the others' routes.
func (st *hostGroup) update(t *translator, c *classInfo, g portGroup, changed []string) {
	for i, l := range g.ls {
		if old := st.attached[i]; cap(old) > 0 && (len(l.hosts) == 0 || &old[:1][0] != &l.hosts[:1][0]) {
			clear(old[:cap(old)]) // keeps no route alive
			if t.hosts.spare == nil {
				t.hosts.spare = map[listenerKey][]attachment{}
			}
			t.hosts.spare[l.key()] = old
		}
		st.attached[i] = l.hosts
	}
	st.pass = t.hosts.pass
	if len(changed) == 0 {
		t.hosts.hits += len(st.hosts)
		return // nothing changed: the very list of the last pass
	}
	own := t.ownMatches(c, g, changed)
	out := make([]ir.VirtualHost, 0, len(st.hosts)+len(changed))
	k := 0 // st.hosts before k are in out
	built := 0
	for i, h := range changed {
		pos, found := slices.BinarySearchFunc(st.hosts[k:], h, func(vh ir.VirtualHost, h string) int {
			return compareSpecificity(vh.Hostname, h)
		})
		out = append(out, st.hosts[k:k+pos]...)
		k += pos
		if found {
			k++
		}
		if len(own[i]) == 0 {
			delete(st.entries, h) // no route serves it any more
			continue
		}
		ms := st.withWildcards(g, h, own[i])
		e := st.entries[h]
		if e == nil || !slices.Equal(e.matches, ms) {
			e = &hostEntry{matches: ms, routes: hostRoutes(ms, g.port, st.retries)}
			st.entries[h] = e
			built++
		}
		out = append(out, ir.VirtualHost{Hostname: h, Routes: e.routes})
	}
	out = append(out, st.hosts[k:]...)
	t.hosts.hits += len(out) - built
	st.hosts = out
}

// withWildcards returns the matches of exact hostname h: its own, then those of the less
// specific hostnames of the same listener that match it, since the spec ranks the more specific
// hostname first.
func (st *hostGroup) withWildcards(g portGroup, h string, own []*compiledMatch) []*compiledMatch {
	var owner *listener
	ms := own
	for _, w := range st.wild {
		if !hostMatches(w.name, h) {
			continue
		}
		if owner == nil {
			owner = g.owner(h)
		}
		if g.owner(w.name) == owner {
			ms = append(slices.Clip(ms), w.matches...)
		}
	}
	return ms
}

// buildHosts builds every virtual host of port group g, reusing the route lists of prev's hosts
// made of the very same matches, and returns what they were made of.
func (t *translator) buildHosts(c *classInfo, g portGroup, prev *hostGroup) *hostGroup {
	p := c.proxy
	st := &hostGroup{retries: p.maxRetryAttempts, regex: p.maxRegexInstructions,
		plain: len(t.unexpressed) == 0 && len(t.lostMatches) == 0}
	if t.hosts != nil {
		st.pass = t.hosts.pass
		st.entries = map[string]*hostEntry{}
		st.listeners = make([]listenerShape, len(g.ls))
		st.attached = make([][]attachment, len(g.ls))
		for i, l := range g.ls {
			st.listeners[i], st.attached[i] = listenerShape{l.key(), l.hostname}, l.hosts
		}
	}
	if prev != nil && (prev.retries != st.retries || prev.regex != st.regex) {
		prev = nil // its routes were capped otherwise
	}
	// Pointers into the routes' matches: a route reused from an earlier pass keeps them, which
	// lets a host whose matches are all the same keep its route list.
	byHost := map[string][]*compiledMatch{}
	for _, l := range g.ls {
		for _, a := range l.hosts {
			for _, h := range a.hostnames {
				if g.owner(h) != l {
					continue
				}
				lost := t.lostMatches[a.route]
				for i := range a.route.matches {
					if m := &a.route.matches[i]; m.servedBy(p) && t.expressedBy(a.route, c, m.prec.rule) && !slices.Contains(lost, i) {
						byHost[h] = append(byHost[h], m)
					}
				}
			}
		}
	}
	hosts := make([]string, 0, len(byHost))
	for h, ms := range byHost {
		hosts = append(hosts, h)
		slices.SortStableFunc(ms, func(a, b *compiledMatch) int { return comparePrecedence(a.prec, b.prec) })
	}
	sortBySpecificity(hosts)
	// Only wildcards and "" match a hostname other than themselves; compareSpecificity sorts them
	// after every exact hostname, so the search for less specific matches starts there.
	wild := slices.IndexFunc(hosts, func(h string) bool { return h == "" || strings.HasPrefix(h, "*") })
	if wild < 0 {
		wild = len(hosts)
	}
	// The owners of the less specific hostnames, which the loop below asks for again and again;
	// an exact hostname's own owner is looked up only when one of them matches it.
	owners := make(map[string]*listener, len(hosts)-wild)
	for _, h := range hosts[wild:] {
		owners[h] = g.owner(h)
		st.wild = append(st.wild, wildHost{h, byHost[h]})
	}
	st.hosts = make([]ir.VirtualHost, 0, len(hosts))
	var ms []*compiledMatch
	for i, h := range hosts {
		ms = append(ms[:0], byHost[h]...)
		// A request for h also matches routes of less specific hostnames of the same listener;
		// they come after h's own routes, since the spec ranks the more specific hostname first.
		var owner *listener
		for _, h2 := range hosts[max(i+1, wild):] {
			if !hostMatches(h2, h) {
				continue
			}
			if owner == nil {
				owner = owners[h]
				if i < wild {
					owner = g.owner(h)
				}
			}
			if owners[h2] == owner {
				ms = append(ms, byHost[h2]...)
			}
		}
		var e *hostEntry
		if prev != nil {
			if old := prev.entries[h]; old != nil && slices.Equal(old.matches, ms) {
				e = old
				t.hosts.hits++
			}
		}
		if e == nil {
			e = &hostEntry{routes: hostRoutes(ms, g.port, p.maxRetryAttempts)}
			if st.entries != nil {
				e.matches = slices.Clone(ms)
			}
		}
		if st.entries != nil {
			st.entries[h] = e
		}
		st.hosts = append(st.hosts, ir.VirtualHost{Hostname: cmp.Or(h, "*"), Routes: e.routes})
	}
	return st
}

// hostRoutes returns the routes of a virtual host on port made of ms, in order, with retries
// capped at maxRetries.
func hostRoutes(ms []*compiledMatch, port int32, maxRetries int) []ir.Route {
	routes := make([]ir.Route, len(ms))
	for i, m := range ms {
		routes[i] = m.ir
		routes[i].Filters.Redirect = redirectPort(m.ir.Filters.Redirect, port)
		if rt := m.ir.Retry; rt != nil && rt.Attempts > maxRetries {
			capped := *rt
			capped.Attempts = maxRetries
			routes[i].Retry = &capped
		}
	}
	return routes
}
