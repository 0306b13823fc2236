package controllers

// The embedded publishers (GatewayClassConfig spec.dns): the records of each config's gateways
// handed to a DNSSyncer, and the verdicts it reports merged with the DNSEndpoints'.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/external-dns/endpoint"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/controllers/records"
	"github.com/fleetgate/fleetgate/controllers/translate"
	"github.com/fleetgate/fleetgate/providers"
)

// withDNSEndpoint is the verdict of a gateway whose class publishes into its zone itself (zone)
// and whose records were also written as a DNSEndpoint (ep): the zone's, unless the DNSEndpoint
// could not be written.
func withDNSEndpoint(zone, ep dnsVerdict) dnsVerdict {
	if ep.reason == ReasonDNSWriteFailed && zone.status == metav1.ConditionTrue {
		return dnsVerdict{status: metav1.ConditionFalse, reason: ReasonDNSWriteFailed, message: zone.message + "; but " + ep.message}
	}
	return zone
}

// syncZones has every config's records published, those of configs that lost or changed spec.dns
// (or left the fleet) removed from where they no longer publish, and returns the verdict of each
// owner of the pass in a zone. clusters are those the pass read: a config missing from zones that
// was read from another cluster is unknown, and its records stay.
func (p *dnsPublisher) syncZones(ctx context.Context, zones map[string]DNSZoneRecords, owners []records.Owner, clusters []string) (map[string]dnsVerdict, error) {
	byKey := make(map[string]*records.Owner, len(owners))
	for i := range owners {
		byKey[owners[i].Key] = &owners[i]
	}
	verdicts := map[string]dnsVerdict{}
	ledger, errs := p.readLedger(ctx)
	if ledger {
		// Before publishing anywhere new: a config deleted before the next save is still found.
		errs = append(errs, p.ledger.save(ctx, p.places(zones)))
	}
	for _, name := range slices.Sorted(maps.Keys(zones)) {
		z := zones[name]
		out, err := p.o.Sync.Publish(ctx, name, z.Options, z.Owners)
		if err != nil {
			err = fmt.Errorf("embedded DNS publication of GatewayClassConfig %s: %w", name, err)
			errs = append(errs, err)
		}
		for key := range z.Owners {
			if o := byKey[key]; o != nil {
				verdicts[key] = zoneVerdict(o, z.Options, out[key], err)
			}
		}
	}
	errs = append(errs, p.retireZones(ctx, zones, clusters))
	if ledger {
		errs = append(errs, p.ledger.save(ctx, p.places(zones)))
	}
	return verdicts, errors.Join(errs...)
}

// readLedger has the places of the ledger retired (those still published are kept, see
// retireZones) the first time, and tells whether the ledger can be written: not before it was
// read, lest it lose the places it holds.
func (p *dnsPublisher) readLedger(ctx context.Context) (bool, []error) {
	if p.ledger == nil {
		return false, nil
	}
	if p.ledger.saved != nil {
		return true, nil
	}
	places, err := p.ledger.load(ctx)
	if err != nil {
		return false, []error{err}
	}
	if p.retiring == nil {
		p.retiring = map[string]dnsPlace{}
	}
	for _, pl := range places {
		p.retiring[pl.key()] = pl
	}
	if len(places) > 0 {
		p.log.Info("read where the embedded DNS publishers have published", "configmap", DNSLedgerName, "places", len(places))
	}
	return true, nil
}

// retireZones removes the records published under a spec.dns that went or changed since the last
// pass (or, after a restart, that the ledger holds): those of a config that no longer publishes,
// and those a config left behind in the zones (or the provider, or under the owner ID) it moved
// away from. Their gateways would otherwise keep names in a zone that nothing serves and nobody
// removes. A config of a member that was not read is not gone while the member is registered
// (unreachable): its records wait. The delete budget holds back a large removal for its grace
// period, so a config retires over several passes; one that comes back publishes again instead.
func (p *dnsPublisher) retireZones(ctx context.Context, zones map[string]DNSZoneRecords, clusters []string) error {
	if p.retiring == nil {
		p.retiring = map[string]dnsPlace{}
	}
	for name, pl := range p.zonesSynced {
		if z, ok := zones[name]; !ok || !equality.Semantic.DeepEqual(z.Options, pl.DNS) {
			p.retiring[pl.key()] = pl
		}
	}
	p.zonesSynced = make(map[string]dnsPlace, len(zones))
	for name, z := range zones {
		p.zonesSynced[name] = dnsPlace{Config: name, DNS: z.Options, Cluster: z.Cluster}
	}
	var errs []error
	for _, key := range slices.Sorted(maps.Keys(p.retiring)) {
		r := p.retiring[key]
		z, ok := zones[r.Config]
		if !ok && !slices.Contains(clusters, r.Cluster) {
			// Its cluster was not read: while the member is registered (unreachable), the config is
			// unknown, not gone.
			registered, err := p.registered(ctx, r.Cluster)
			if err != nil {
				errs = append(errs, err)
			}
			if registered || err != nil {
				continue
			}
		}
		opts, keep := r.DNS, []string(nil)
		if ok && z.Options.Provider == opts.Provider && z.Options.OwnerID == opts.OwnerID {
			// Same records, perhaps the same zone: only the domains it no longer publishes into go.
			keep = z.Options.Zones
			opts.Zones = domainsOutside(opts.Zones, keep)
			if len(opts.Zones) == 0 {
				delete(p.retiring, key) // it publishes there again
				continue
			}
		}
		done, err := p.o.Sync.Retire(ctx, r.Config, opts, keep)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("removing the records of GatewayClassConfig %s from zone %s (%s), which it no longer publishes into: %w",
				r.Config, strings.Join(opts.Zones, ", "), opts.Provider, err))
		case done:
			delete(p.retiring, key)
			p.log.Info("removed the records of a GatewayClassConfig from where it no longer publishes", "config", r.Config,
				"zones", opts.Zones, "provider", opts.Provider, "kept", keep)
		}
	}
	return errors.Join(errs...)
}

// registered tells whether the MemberCluster named cluster exists.
func (p *dnsPublisher) registered(ctx context.Context, cluster string) (bool, error) {
	if p.live == nil {
		return true, nil
	}
	err := p.live.Get(ctx, client.ObjectKey{Name: cluster}, &v1alpha1.MemberCluster{})
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading MemberCluster %s, whose GatewayClassConfig published DNS records: %w", cluster, err)
	}
	return true, nil
}

// domainsOutside are the domains of zones that are not in keep, compared as DNS names.
func domainsOutside(zones, keep []string) []string {
	norm := func(d string) string { return strings.ToLower(strings.TrimSuffix(d, ".")) }
	var out []string
	for _, z := range zones {
		if !slices.ContainsFunc(keep, func(k string) bool { return norm(k) == norm(z) }) {
			out = append(out, z)
		}
	}
	return out
}

// zoneVerdict is the verdict of an owner whose class publishes into its zone itself: which names
// are published and served (read back from the zone), and why the others are not.
func zoneVerdict(o *records.Owner, opts v1alpha1.DNSOptions, out providers.DNSOwnerOutcome, err error) dnsVerdict {
	where := fmt.Sprintf("zone %s (%s)", strings.Join(opts.Zones, ", "), opts.Provider)
	switch {
	case o.Unaddressed:
		return dnsVerdict{status: metav1.ConditionFalse, reason: ReasonDNSNoAddress,
			message: fmt.Sprintf("the gateway has no address; the records last published in %s for %s are kept", where, records.Describe(o.Names))}
	case err != nil:
		return dnsVerdict{status: metav1.ConditionFalse, reason: ReasonDNSWriteFailed,
			message: fmt.Sprintf("publishing %s into %s failed (the records last published stay; retried): %v", records.Describe(o.Names), where, err)}
	}
	lost := map[string]string{}
	for n, holder := range o.Conflicts {
		lost[n] = "gateway " + holder + " publishes it"
	}
	maps.Copy(lost, out.Lost)
	var served []string
	for _, n := range o.Names {
		if _, l := lost[n]; !l && out.Refused[n] == "" && !slices.Contains(out.Unserved, n) {
			served = append(served, n)
		}
	}
	v := dnsVerdict{status: metav1.ConditionTrue, reason: ReasonDNSPublished, conflicts: lost}
	var parts []string
	for _, n := range slices.Sorted(maps.Keys(lost)) {
		parts = append(parts, fmt.Sprintf("%s is not published: %s", n, lost[n]))
	}
	for _, n := range slices.Sorted(maps.Keys(out.Refused)) {
		parts = append(parts, fmt.Sprintf("%s cannot be published: %s", n, out.Refused[n]))
	}
	if len(out.Unserved) > 0 {
		parts = append(parts, fmt.Sprintf("%s accepted %s but does not serve it as written when read back (written again on the next pass)",
			where, records.Describe(out.Unserved)))
	}
	switch {
	case len(lost) > 0:
		v.status, v.reason = metav1.ConditionFalse, ReasonDNSConflicted
	case len(out.Refused) > 0:
		v.status, v.reason = metav1.ConditionFalse, ReasonDNSRefused
	case len(out.Unserved) > 0:
		v.status, v.reason = metav1.ConditionFalse, ReasonDNSNotServed
	}
	if len(served) > 0 {
		msg := fmt.Sprintf("published %s in %s; read back from the zone, it serves them", records.Describe(served), where)
		if o.Weighted {
			msg += " (weighted with other gateways serving the same names)"
		}
		parts = append(parts, msg)
	}
	if len(parts) == 0 {
		parts = append(parts, "no names to publish in "+where)
	}
	v.message = strings.Join(parts, "; ")
	return v
}

// zoneRecords splits the records held by owner among the configs with spec.dns: an owner missing
// from held has nothing to publish; one held as nil is unknown, and its records stay.
func zoneRecords(zones map[string]translate.DNSZone, held map[string][]*endpoint.Endpoint) map[string]DNSZoneRecords {
	out := make(map[string]DNSZoneRecords, len(zones))
	for name, z := range zones {
		owners := make(map[string][]*endpoint.Endpoint, len(z.Gateways))
		for _, key := range z.Gateways {
			eps, ok := held[key]
			if !ok {
				eps = []*endpoint.Endpoint{} // nothing to publish, not "unknown" (nil)
			}
			owners[key] = eps
		}
		out[name] = DNSZoneRecords{Options: z.Options, Cluster: z.Cluster, Owners: owners}
	}
	return out
}
