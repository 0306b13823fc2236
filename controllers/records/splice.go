package records

import (
	"slices"

	"sigs.k8s.io/external-dns/endpoint"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// The splice: a Memo call with one owner builds it from the last call's (Memo.Build).

// singleOwner is the one owner of a call and what it was built from.
type singleOwner struct {
	owner   Owner
	fixed   []string
	hosts   [][]ir.VirtualHost
	multi   []string
	targets []*endpoint.Endpoint
}

// remember keeps c, built into o, for the next call's splice.
func (m *Memo) remember(c *claim, o *Owner) {
	m.single = &singleOwner{owner: *o, fixed: c.fixed, hosts: c.hosts, multi: c.multi, targets: c.targets}
	m.last = map[string][]*endpoint.Endpoint{o.Key: o.Endpoints}
}

// splice returns c's owner made from s's: the names of the virtual hosts that changed put in or
// taken out, each new name given its records, every other record the very one of s. It reports
// false when c differs from s in anything else (objects, addresses, listener, Service or SNI
// names) or when many hosts changed; then c is to be built in full. c has no retained records
// and is the only claim, so its records are unweighted and it loses no name.
func (s *singleOwner) splice(c *claim) (*Owner, bool) {
	o, p := c.owner, &s.owner
	if o.Key != p.Key || o.Namespace != p.Namespace || o.Name != p.Name || !slices.Equal(o.Clusters, p.Clusters) ||
		!slices.Equal(o.Objects, p.Objects) || !slices.EqualFunc(c.targets, s.targets, sameEndpoint) ||
		!slices.Equal(c.fixed, s.fixed) || len(c.hosts) != len(s.hosts) {
		return nil, false
	}
	limit := 64 + len(p.Names)/16 // past it, a full build is as cheap
	var gone, added []string
	for i := range c.hosts {
		if !diffHosts(s.hosts[i], c.hosts[i], limit, &gone, &added) {
			return nil, false
		}
	}
	if len(gone) == 0 && len(added) == 0 {
		c.multi = s.multi
		o.Names, o.Endpoints = p.Names, p.Endpoints
		return o, true
	}
	slices.Sort(gone)
	slices.Sort(added)
	k := len(c.targets)
	records := func(name string, out []*endpoint.Endpoint) []*endpoint.Endpoint {
		for _, t := range c.targets {
			out = append(out, endpoint.NewEndpoint(name, t.RecordType, t.Targets...))
		}
		return out
	}
	base := s.multi // every name, as often as it came
	var multi []string
	if base == nil {
		base = p.Names
		names, eps, ok := splice(p.Names, p.Endpoints, gone, added, k, records)
		if !ok {
			return nil, false
		}
		if !repeats(names, added) { // the common case: no name comes twice, and the records follow the names
			o.Names, o.Endpoints = slices.Clip(names), eps
			return o, true
		}
		multi = names
	} else {
		var ok bool
		if multi, _, ok = splice(base, nil, gone, added, 0, nil); !ok {
			return nil, false
		}
	}
	// A name is out when no host has it any more, in when none had it before.
	var out, in []string
	for _, n := range slices.Compact(gone) {
		if _, found := slices.BinarySearch(multi, n); !found {
			out = append(out, n)
		}
	}
	for _, n := range slices.Compact(added) {
		if _, found := slices.BinarySearch(base, n); !found {
			in = append(in, n)
		}
	}
	names, eps, ok := splice(p.Names, p.Endpoints, out, in, k, records)
	if !ok {
		return nil, false
	}
	c.multi = multi
	o.Names, o.Endpoints = slices.Clip(names), eps
	return o, true
}

// diffHosts appends to gone and added the names of the hosts of old that cur lacks and of cur
// that old lacks, walking both in their order (translation hands on the unchanged hosts with the
// very same hostname strings, so a host compares by pointer). It reports false when more than
// limit hosts changed.
func diffHosts(old, cur []ir.VirtualHost, limit int, gone, added *[]string) bool {
	if len(old) == len(cur) && (len(old) == 0 || &old[0] == &cur[0]) {
		return true // the very list of the last pass
	}
	note := func(to *[]string, h string) bool {
		if n := hostname(h); n != "" {
			*to = append(*to, n)
		}
		return len(*gone)+len(*added) <= limit
	}
	i, j := 0, 0
	for i < len(old) || j < len(cur) {
		ok := true
		switch {
		case i < len(old) && j < len(cur) && old[i].Hostname == cur[j].Hostname:
			i, j = i+1, j+1
		case i == len(old) || j+1 < len(cur) && old[i].Hostname == cur[j+1].Hostname:
			ok = note(added, cur[j].Hostname) // new
			j++
		case j == len(cur) || i+1 < len(old) && old[i+1].Hostname == cur[j].Hostname:
			ok = note(gone, old[i].Hostname)
			i++
		default: // one in place of the other
			ok = note(gone, old[i].Hostname) && note(added, cur[j].Hostname)
			i, j = i+1, j+1
		}
		if !ok {
			return false
		}
	}
	return true
}

// splice returns the sorted names with those of out (sorted, each in names) taken out and those of
// in (sorted) put in, and the records that go with them: k per name, eps's for the names kept,
// made by records for those put in. It reports false when a name of out is not in names.
func splice(names []string, eps []*endpoint.Endpoint, out, in []string, k int, records func(string, []*endpoint.Endpoint) []*endpoint.Endpoint) ([]string, []*endpoint.Endpoint, bool) {
	n := len(names) - len(out) + len(in)
	newNames := make([]string, 0, n)
	var newEps []*endpoint.Endpoint
	if k > 0 {
		newEps = make([]*endpoint.Endpoint, 0, n*k)
	}
	at := 0 // names before at are passed
	keep := func(to int) {
		newNames = append(newNames, names[at:to]...)
		if k > 0 {
			newEps = append(newEps, eps[at*k:to*k]...)
		}
	}
	for len(out) > 0 || len(in) > 0 {
		if len(in) > 0 && (len(out) == 0 || in[0] <= out[0]) {
			p, _ := slices.BinarySearch(names[at:], in[0])
			keep(at + p)
			newNames = append(newNames, in[0])
			if k > 0 {
				newEps = records(in[0], newEps)
			}
			at, in = at+p, in[1:]
			continue
		}
		p, found := slices.BinarySearch(names[at:], out[0])
		if !found {
			return nil, nil, false
		}
		keep(at + p)
		at, out = at+p+1, out[1:]
	}
	keep(len(names))
	return newNames, newEps, true
}

// repeats tells whether a name of added comes twice in the sorted names.
func repeats(names, added []string) bool {
	for _, n := range added {
		if i, _ := slices.BinarySearch(names, n); i+1 < len(names) && names[i+1] == n {
			return true
		}
	}
	return false
}
