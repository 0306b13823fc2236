package gcp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"cloud.google.com/go/compute/apiv1/computepb"
	"github.com/go-logr/logr"
	"google.golang.org/api/googleapi"
	"google.golang.org/protobuf/proto"
)

// deployer reconciles the GCE resources of gateways with their Stacks, in one project and for
// one fleet. Each run lists what the gateway owns; only normal (shared by every run) is kept.
type deployer struct {
	c       *clients
	fleet   string
	normal  *normalForms
	metrics *apiMetrics
	log     logr.Logger
}

// Deployed is the load balancer as it stands after a Deploy.
type Deployed struct {
	// Addresses are the IPs the forwarding rules serve on.
	Addresses []string
	// Ready: every forwarding rule of the Stack exists.
	Ready bool
	// Calls are the mutating calls made, or for a DryRun Stack the ones that would be.
	Calls []Call
}

// Call is one mutating call, for plans and tests.
type Call struct {
	Verb  string
	Kind  Kind
	Scope Scope
	Name  string
}

func (c Call) String() string {
	return c.Verb + " " + c.Kind.String() + " " + c.Scope.String() + "/" + c.Name
}

// executor makes mutating calls, or only records them (dry run).
type executor struct {
	dry   bool
	calls []Call
}

func (x *executor) do(c Call, f func() error) error {
	x.calls = append(x.calls, c)
	if x.dry {
		return nil
	}
	if err := f(); err != nil {
		return fmt.Errorf("%s: %w", c, err)
	}
	return nil
}

// live is a resource the gateway owns as listed.
type live struct {
	kind  Kind
	scope Scope
	name  string
	msg   proto.Message
	owner owner
	// clusters are the member clusters an anchor's labels record (see labelCluster), or another
	// kind's ownership record.
	clusters []string
}

// holders are the member clusters holding a gateway as its resources l record them: the anchors'
// labels, or without anchors (an Ensure or a Delete stopped between them and the rest) what the
// others recorded when they were written.
func holders(ls []*live) []string {
	var anchored, others []string
	hasAnchor := false
	for _, l := range ls {
		if l.kind.anchor() {
			hasAnchor = true
			anchored = append(anchored, l.clusters...)
		} else {
			others = append(others, l.clusters...)
		}
	}
	if hasAnchor {
		others = anchored
	}
	slices.Sort(others)
	return slices.Compact(others)
}

type resKey struct {
	kind  Kind
	scope Scope
	name  string
}

func (r *Resource) key() resKey { return resKey{r.Kind, r.Scope, r.Name} }

// named is what every compute resource message has.
type named interface {
	proto.Message
	GetName() string
	GetDescription() string
}

// observe lists every resource whose name starts with prefix, in the global scope and (with one
// aggregated list per kind) every region and zone, keeping those whose ownership record is this
// fleet's. Listing every region, not only the class's, finds what a gateway left behind when its
// class moved to another region or load balancer type, so that it is deleted, not leaked.
func (d *deployer) observe(ctx context.Context, prefix string) (map[resKey]*live, error) {
	out := map[resKey]*live{}
	filter := prefixFilter(prefix)
	for k := range numKinds {
		var found []scoped
		if k != KindNEG { // NEGs are zonal only
			msgs, err := d.c.list(ctx, k, Scope{}, filter)
			if err != nil {
				return nil, fmt.Errorf("listing global %ss: %w", k, err)
			}
			for _, m := range msgs {
				found = append(found, scoped{Scope{}, m})
			}
		}
		if k != KindFirewall { // firewall rules are global only
			across, err := d.c.listAcross(ctx, k, filter)
			if err != nil {
				return nil, fmt.Errorf("listing %ss across regions: %w", k, err)
			}
			found = append(found, across...)
		}
		for _, f := range found {
			n, ok := f.msg.(named)
			if !ok || !strings.HasPrefix(n.GetName(), prefix) {
				continue
			}
			o, ok := parseOwner(n.GetDescription())
			if !ok || o.Fleet != d.fleet {
				continue
			}
			l := &live{kind: k, scope: f.scope, name: n.GetName(), msg: f.msg, owner: o, clusters: o.Clusters}
			if labeled, ok := f.msg.(interface{ GetLabels() map[string]string }); ok && k.anchor() {
				l.clusters = labeledClusters(labeled.GetLabels())
			}
			out[resKey{k, f.scope, n.GetName()}] = l
		}
	}
	return out, nil
}

// Deploy makes the resources of s.Prefix what s says, in creation order, then deletes what the
// gateway owns that s does not hold, in reverse order. A DryRun Stack is only planned.
//
// Idempotence: a resource is created with its name and ownership record in the create call
// itself, so one created just before a crash is found by the next run, never duplicated.
func (d *deployer) Deploy(ctx context.Context, s *Stack) (Deployed, error) {
	x := &executor{dry: s.DryRun}
	dep, err := d.run(ctx, s, x)
	dep.Calls = x.calls
	return dep, err
}

func (d *deployer) run(ctx context.Context, s *Stack, x *executor) (Deployed, error) {
	owned, err := d.observe(ctx, s.Prefix)
	if err != nil {
		return Deployed{}, err
	}
	keep := map[resKey]bool{}
	for i := range s.Resources {
		r := &s.Resources[i]
		k := r.key()
		keep[k] = true
		if err := d.sync(ctx, s, r, owned[k], x); err != nil {
			return Deployed{}, err
		}
	}
	if err := d.cleanup(ctx, owned, keep, x); err != nil {
		return Deployed{}, err
	}
	dep := Deployed{Ready: true}
	if !x.dry {
		if dep.Addresses, err = d.addresses(ctx, s, owned, x.calls); err != nil {
			return dep, err
		}
	}
	return dep, nil
}

// sync brings one resource to r (l is what exists of it, nil if nothing).
func (d *deployer) sync(ctx context.Context, s *Stack, r *Resource, l *live, x *executor) error {
	desc, err := s.description(r)
	if err != nil {
		return err
	}
	want := proto.Clone(r.Msg)
	setDescription(want, desc)
	call := func(verb string) Call { return Call{Verb: verb, Kind: r.Kind, Scope: r.Scope, Name: r.Name} }
	if l == nil {
		if err := x.do(call("insert"), func() error { return d.c.insert(ctx, r.Kind, r.Scope, want) }); err != nil {
			return err
		}
		return d.syncEndpoints(ctx, r, nil, x)
	}
	spec := specHash(r.Kind, r.Msg)
	drifted := ""
	if l.owner.Spec == spec && r.Kind.updatable() {
		if drifted = drift(r.Kind, r.Msg, l.msg); drifted != "" && d.normal.is(d.c.project, r.key(), spec, l.msg) {
			drifted = ""
		}
		if drifted != "" {
			d.log.Info("GCP resource changed outside fleetgate; restoring it", "kind", r.Kind.String(), "name", r.Name, "field", drifted)
		}
	}
	if l.owner.Spec != spec || drifted != "" {
		switch {
		case r.Kind.updatable():
			setFingerprint(want, l.msg)
			if um, ok := want.(*computepb.UrlMap); ok {
				stablePriorities(um, l.msg.(*computepb.UrlMap))
			}
			if err := x.do(call("update"), func() error { return d.c.put(ctx, r.Scope, r.Name, want) }); err != nil {
				return err
			}
			if drifted != "" && !x.dry {
				d.metrics.restored.WithLabelValues(r.Kind.String()).Inc()
				return d.settle(ctx, r, spec)
			}
		default:
			// Immutable: replaced under the same name (what references it by name keeps working once
			// it is back). NEGs and certificates never get here: their names hash what they are.
			if err := x.do(call("delete"), func() error { return d.c.remove(ctx, r.Kind, r.Scope, r.Name) }); err != nil {
				return err
			}
			if err := x.do(call("insert"), func() error { return d.c.insert(ctx, r.Kind, r.Scope, want) }); err != nil {
				return err
			}
			return d.syncEndpoints(ctx, r, nil, x)
		}
	}
	if err := d.syncSetters(ctx, r, l, x, call); err != nil {
		return err
	}
	return d.syncEndpoints(ctx, r, l, x)
}

// settle reads r back after restoring it from drift: where GCE keeps a field of it other than as
// written (its normal form of the value), that state is remembered as r's, so that the next run
// does not restore it again and again.
func (d *deployer) settle(ctx context.Context, r *Resource, spec string) error {
	got, err := d.c.list(ctx, r.Kind, r.Scope, `name eq "`+r.Name+`"`)
	if err != nil {
		return fmt.Errorf("reading %s %s back: %w", r.Kind, r.Name, err)
	}
	if len(got) != 1 {
		return nil // gone meanwhile: the next run creates it
	}
	if field := drift(r.Kind, r.Msg, got[0]); field != "" {
		d.log.Info("GCE keeps a field of a restored resource other than as written; taking that as its form", "kind", r.Kind.String(), "name", r.Name, "field", field)
		d.normal.set(d.c.project, r.key(), spec, got[0])
		return nil
	}
	d.normal.forget(d.c.project, r.key())
	return nil
}

// syncSetters applies what a kind changes with calls of its own: a proxy's URL map and
// certificates, a forwarding rule's target, labels.
func (d *deployer) syncSetters(ctx context.Context, r *Resource, l *live, x *executor, call func(string) Call) error {
	switch want := r.Msg.(type) {
	case *computepb.TargetHttpProxy:
		if have := l.msg.(*computepb.TargetHttpProxy); !sameLink(have.GetUrlMap(), want.GetUrlMap()) {
			return x.do(call("setUrlMap"), func() error { return d.c.setURLMap(ctx, r.Kind, r.Scope, r.Name, want.GetUrlMap()) })
		}
	case *computepb.TargetHttpsProxy:
		have := l.msg.(*computepb.TargetHttpsProxy)
		if !sameLinks(have.GetSslCertificates(), want.GetSslCertificates()) {
			if err := x.do(call("setSslCertificates"), func() error { return d.c.setCertificates(ctx, r.Scope, r.Name, want.GetSslCertificates()) }); err != nil {
				return err
			}
		}
		if !sameLink(have.GetUrlMap(), want.GetUrlMap()) {
			return x.do(call("setUrlMap"), func() error { return d.c.setURLMap(ctx, r.Kind, r.Scope, r.Name, want.GetUrlMap()) })
		}
	case *computepb.ForwardingRule:
		have := l.msg.(*computepb.ForwardingRule)
		if !sameLink(have.GetTarget(), want.GetTarget()) {
			if err := x.do(call("setTarget"), func() error { return d.c.setTarget(ctx, r.Scope, r.Name, want.GetTarget()) }); err != nil {
				return err
			}
		}
		if !maps.Equal(have.GetLabels(), want.GetLabels()) {
			return x.do(call("setLabels"), func() error {
				return d.c.setLabels(ctx, r.Kind, r.Scope, r.Name, want.GetLabels(), have.GetLabelFingerprint())
			})
		}
	case *computepb.Address:
		have := l.msg.(*computepb.Address)
		if !maps.Equal(have.GetLabels(), want.GetLabels()) {
			return x.do(call("setLabels"), func() error {
				return d.c.setLabels(ctx, r.Kind, r.Scope, r.Name, want.GetLabels(), have.GetLabelFingerprint())
			})
		}
	}
	return nil
}

// syncEndpoints attaches a NEG's missing endpoints and detaches the others, in batches the API
// takes. l nil: the NEG was just created, it has none.
func (d *deployer) syncEndpoints(ctx context.Context, r *Resource, l *live, x *executor) error {
	if r.Kind != KindNEG {
		return nil
	}
	var have []*computepb.NetworkEndpoint
	if l != nil {
		var err error
		if have, err = d.c.endpoints(ctx, r.Scope.Zone, r.Name); err != nil {
			return fmt.Errorf("listing the endpoints of %s: %w", r.Name, err)
		}
	}
	haveKeys := map[string]bool{}
	for _, e := range have {
		haveKeys[endpointKey(e)] = true
	}
	wantKeys := map[string]bool{}
	var attach, detach []*computepb.NetworkEndpoint
	for _, e := range r.Endpoints {
		wantKeys[endpointKey(e)] = true
		if !haveKeys[endpointKey(e)] {
			attach = append(attach, e)
		}
	}
	for _, e := range have {
		if !wantKeys[endpointKey(e)] {
			detach = append(detach, e)
		}
	}
	for batch := range slices.Chunk(detach, maxEndpointsPerCall) {
		if err := x.do(Call{Verb: "detachNetworkEndpoints", Kind: KindNEG, Scope: r.Scope, Name: r.Name},
			func() error { return d.c.detach(ctx, r.Scope.Zone, r.Name, batch) }); err != nil {
			return err
		}
	}
	for batch := range slices.Chunk(attach, maxEndpointsPerCall) {
		if err := x.do(Call{Verb: "attachNetworkEndpoints", Kind: KindNEG, Scope: r.Scope, Name: r.Name},
			func() error { return d.c.attach(ctx, r.Scope.Zone, r.Name, batch) }); err != nil {
			return err
		}
	}
	return nil
}

func endpointKey(e *computepb.NetworkEndpoint) string {
	return e.GetIpAddress() + "|" + strconv.Itoa(int(e.GetPort())) + "|" + lastSegment(e.GetInstance())
}

// cleanup deletes what the gateway owns and keep does not hold, in reverse creation order, so
// that nothing is deleted while something of the gateway still references it.
func (d *deployer) cleanup(ctx context.Context, owned map[resKey]*live, keep map[resKey]bool, x *executor) error {
	stale := slices.Collect(maps.Keys(owned))
	slices.SortFunc(stale, func(a, b resKey) int {
		return cmp.Or(cmp.Compare(b.kind, a.kind), cmp.Compare(a.scope.String(), b.scope.String()), cmp.Compare(a.name, b.name))
	})
	for _, k := range stale {
		if keep[k] {
			continue
		}
		if err := x.do(Call{Verb: "delete", Kind: k.kind, Scope: k.scope, Name: k.name}, func() error {
			err := d.c.remove(ctx, k.kind, k.scope, k.name)
			if isNotFound(err) {
				err = nil // gone already: what delete wants
			}
			if err == nil {
				d.normal.forget(d.c.project, k)
			}
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}

// addresses are the IPs of the Stack's forwarding rules: the rules' own IPAddress when it is an
// IP, else the address resource it names, read once: as listed (owned) unless this run's calls
// replaced it, else with a GET.
func (d *deployer) addresses(ctx context.Context, s *Stack, owned map[resKey]*live, calls []Call) ([]string, error) {
	var out []string
	read := map[string]string{} // by link: the forwarding rules share one address
	for _, r := range s.Resources {
		fr, ok := r.Msg.(*computepb.ForwardingRule)
		if !ok {
			continue
		}
		ip := fr.GetIPAddress()
		if link := ip; strings.Contains(link, "/addresses/") {
			known, seen := read[link]
			if !seen {
				name := lastSegment(link)
				l := owned[resKey{KindAddress, r.Scope, name}]
				touched := slices.ContainsFunc(calls, func(c Call) bool { return c.Kind == KindAddress && c.Scope == r.Scope && c.Name == name })
				if l != nil && !touched {
					known = l.msg.(*computepb.Address).GetAddress()
				} else {
					var err error
					if known, err = d.c.addressIP(ctx, r.Scope, name); err != nil {
						return nil, fmt.Errorf("reading the address of %s: %w", r.Name, err)
					}
				}
				read[link] = known
			}
			ip = known
		}
		if ip != "" && !slices.Contains(out, ip) {
			out = append(out, ip)
		}
	}
	slices.Sort(out)
	return out, nil
}

func setDescription(m proto.Message, d string) {
	switch v := m.(type) {
	case *computepb.Address:
		v.Description = &d
	case *computepb.Firewall:
		v.Description = &d
	case *computepb.HealthCheck:
		v.Description = &d
	case *computepb.NetworkEndpointGroup:
		v.Description = &d
	case *computepb.BackendService:
		v.Description = &d
	case *computepb.SslCertificate:
		v.Description = &d
	case *computepb.UrlMap:
		v.Description = &d
	case *computepb.TargetHttpProxy:
		v.Description = &d
	case *computepb.TargetHttpsProxy:
		v.Description = &d
	case *computepb.ForwardingRule:
		v.Description = &d
	}
}

// setFingerprint copies the live fingerprint into an update, as GCE requires (412 otherwise).
func setFingerprint(m, l proto.Message) {
	switch v := m.(type) {
	case *computepb.BackendService:
		v.Fingerprint = l.(*computepb.BackendService).Fingerprint
	case *computepb.UrlMap:
		v.Fingerprint = l.(*computepb.UrlMap).Fingerprint
	}
}

// sameLink compares resource URLs by their path from "projects/", so that a full URL and a
// partial one naming the same resource are equal.
func sameLink(a, b string) bool { return relLink(a) == relLink(b) }

func sameLinks(a, b []string) bool {
	return slices.EqualFunc(a, b, sameLink)
}

func relLink(s string) string {
	if i := strings.Index(s, "projects/"); i >= 0 {
		return s[i:]
	}
	return s
}

func lastSegment(s string) string { return s[strings.LastIndex(s, "/")+1:] }

// isNotFound tells a 404 from the API.
func isNotFound(err error) bool {
	ge, ok := errors.AsType[*googleapi.Error](err)
	return ok && ge.Code == 404
}
