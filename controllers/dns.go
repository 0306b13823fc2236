package controllers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	dnsv1a1 "sigs.k8s.io/external-dns/apis/v1alpha1"
	"sigs.k8s.io/external-dns/endpoint"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/controllers/records"
	"github.com/fleetgate/fleetgate/controllers/snapshot"
	"github.com/fleetgate/fleetgate/controllers/translate"
	"github.com/fleetgate/fleetgate/providers"
)

// ConditionDNSPublished is the Gateway condition telling whether its hostnames are published as
// DNSEndpoint records, and if not why.
const ConditionDNSPublished = "fleetgate.dev/DNSPublished"

// Reasons of ConditionDNSPublished.
const (
	ReasonDNSPublished       = "Published"
	ReasonDNSCRDNotInstalled = "CRDNotInstalled"
	ReasonDNSNoAddress       = "NoAddress"
	ReasonDNSConflicted      = "Conflicted"
	ReasonDNSWriteFailed     = "WriteFailed"
	// ReasonDNSRefused: a name cannot be published (outside the zones, weights the zone lacks).
	ReasonDNSRefused = "Refused"
	// ReasonDNSNotServed: the zone accepted a change it does not serve when read back.
	ReasonDNSNotServed = "NotServed"
	// ReasonDNSConflict is the reason of the Event a Gateway gets for a hostname another owns.
	ReasonDNSConflict = "DNSConflict"
)

// Annotations of the DNSEndpoints fleetgate writes: the owner's gateway key and the member clusters
// holding its objects, so that an object is deleted only once its owner is known to be gone.
const (
	annotationDNSClusters = "fleetgate.dev/dns-clusters"
)

// DNSSyncer publishes records to DNS providers itself (the embedded publishers of
// GatewayClassConfig spec.dns), for users without external-dns; providers/dns.Publishers is one.
type DNSSyncer interface {
	// Publish makes the zone of config (its spec.dns opts) hold owners' records: by gateway key,
	// the records each gateway holds; an empty set publishes nothing, a nil one keeps what is there.
	// It returns, by gateway key, what did not go as desired.
	Publish(ctx context.Context, config string, opts v1alpha1.DNSOptions, owners map[string][]*endpoint.Endpoint) (map[string]providers.DNSOwnerOutcome, error)
	// Retire removes the records the publisher of config owns in the zones of opts, a spec.dns it
	// no longer has (it went or changed, or config left the fleet), except under the domains in
	// keep (where config still publishes under the same owner ID), within the delete budget; done
	// once nothing is held back.
	Retire(ctx context.Context, config string, opts v1alpha1.DNSOptions, keep []string) (done bool, err error)
}

// DNSZoneRecords are one GatewayClassConfig's spec.dns and, by gateway key, the records each of
// its gateways holds.
type DNSZoneRecords struct {
	Options v1alpha1.DNSOptions
	// Cluster holds the GatewayClassConfig.
	Cluster string
	Owners  map[string][]*endpoint.Endpoint
}

// DNSOptions configure DNSEndpoint publication in the hub.
type DNSOptions struct {
	// Namespace holds the DNSEndpoints of gateways whose namespace the hub does not have (the
	// operator's namespace).
	Namespace string
	// Sync, when set, also gets every owner's records after each publication.
	Sync DNSSyncer
	// Recheck is how often the publisher looks again without a change: for the CRD appearing,
	// DNSEndpoints edited or deleted by hand. Default 10s.
	Recheck time.Duration
	// ShardRecords and ShardBytes bound one DNSEndpoint (records, and bytes about as encoded): an
	// owner's records go to as many as they need. Defaults DefaultDNSShardRecords and
	// DefaultDNSShardBytes.
	ShardRecords, ShardBytes int
}

// +kubebuilder:rbac:groups=externaldns.k8s.io,resources=dnsendpoints,verbs=get;list;create;update;delete

// dnsPublisher writes the hub's DNSEndpoints: per gateway key, as many as its records need
// (dns_shard.go), in the gateway's namespace when the hub has it (owner-referenced to the gateway's
// objects when they all are the hub's, in that namespace, so that the garbage collector removes
// them with them) or else in the operator's namespace; the publisher removes them in any case
// once their gateway is gone. It runs on the leader, apart from the pipeline, and reports a verdict per owner that
// the pipeline merges into the Gateways' ConditionDNSPublished.
type dnsPublisher struct {
	writer  client.Client
	live    client.Reader
	o       DNSOptions
	changed func()
	log     logr.Logger
	poke    chan struct{}

	mu sync.Mutex
	// desired is nil until the first pass: nothing is deleted before fleetgate knows its owners.
	desired *dnsDesired
	// verdicts by gateway key, as of the last publication.
	verdicts   map[string]dnsVerdict
	crdMissing bool
	// retained are the records kept for owners in clusters the last pass did not read, by name.
	retained map[string][]records.Retained
	// zonesSynced are the configs the embedded publishers got last time, with their spec.dns,
	// and retiring the spec.dns they had before, whose records are still being removed (publish
	// runs alone: Start's loop).
	zonesSynced map[string]dnsPlace
	retiring    map[string]dnsPlace
	// ledger keeps these where a restart finds them; nil keeps them in memory only.
	ledger *dnsLedger
	// seen are the DNSEndpoints as last read or written, by namespace/name (publish's alone too):
	// never modified, they stand for those of the same resourceVersion.
	seen map[types.NamespacedName]*dnsv1a1.DNSEndpoint
}

// dnsDesired is what one pipeline pass wants published.
type dnsDesired struct {
	owners []records.Owner
	// clusters were read by the pass: an owner whose objects are all in them and which the pass
	// did not find is gone; one in a cluster not read is unknown, and its records stay.
	clusters []string
	// hubNamespaces are the namespaces the hub has.
	hubNamespaces map[string]bool
	// retained is what the owners were built with (Retained).
	retained map[string][]records.Retained
	// zones are the configs with spec.dns and their gateways (translate.Result.DNS).
	zones map[string]translate.DNSZone
}

// dnsVerdict is the outcome of one owner's publication.
type dnsVerdict struct {
	status          metav1.ConditionStatus
	reason, message string
	// conflicts maps names the owner lost to who holds them ("gateway x publishes it").
	conflicts map[string]string
}

func newDNSPublisher(writer client.Client, live client.Reader, o DNSOptions, changed func(), log logr.Logger) *dnsPublisher {
	if o.Recheck == 0 {
		o.Recheck = 10 * time.Second
	}
	if o.ShardRecords <= 0 {
		o.ShardRecords = DefaultDNSShardRecords
	}
	if o.ShardBytes <= 0 {
		o.ShardBytes = DefaultDNSShardBytes
	}
	p := &dnsPublisher{writer: writer, live: live, o: o, changed: changed, log: log, poke: make(chan struct{}, 1)}
	if o.Sync != nil && writer != nil && o.Namespace != "" {
		p.ledger = &dnsLedger{writer: writer, live: live, namespace: o.Namespace}
	}
	return p
}

// NeedLeaderElection makes the publisher run only on the leader: one writer per name.
func (p *dnsPublisher) NeedLeaderElection() bool { return true }

// Set records what the latest pass wants published and wakes the publisher when it changed.
func (p *dnsPublisher) Set(d *dnsDesired) {
	p.mu.Lock()
	same := p.desired != nil && sameDesired(p.desired, d)
	p.desired = d
	p.mu.Unlock()
	if !same {
		select {
		case p.poke <- struct{}{}:
		default:
		}
	}
}

// sameDesired compares two passes' records field by field: encoding both to JSON to compare them
// took 8 ms and 4 MB per route change at 20,000 names.
func sameDesired(a, b *dnsDesired) bool {
	return slices.EqualFunc(a.owners, b.owners, func(x, y records.Owner) bool { return x.Equal(&y) }) && slices.Equal(a.clusters, b.clusters) &&
		maps.Equal(a.hubNamespaces, b.hubNamespaces) && sameRetained(a.retained, b.retained)
}

func sameRetained(a, b map[string][]records.Retained) bool {
	return maps.EqualFunc(a, b, func(x, y []records.Retained) bool { return slices.Equal(x, y) })
}

// dnsInputs are what records.Build reads: a pass's snapshot and result (neither is modified once
// the pass published them), the addresses apply reported per gateway key (all it reads of a
// Programmed: targets) and the retained records. The delivery pass, on every proxy ACK, usually
// changes only Programmed's Ready: with the same inputs it skips a build (~4.5 ms at 20,000 names).
type dnsInputs struct {
	snap      *snapshot.Snapshot
	res       *translate.Result
	addresses map[string][]gwv1.GatewayStatusAddress // keys with addresses only: none is as absent
	retained  map[string][]records.Retained
}

func newDNSInputs(snap *snapshot.Snapshot, res *translate.Result, programmed map[string]translate.Programmed, retained map[string][]records.Retained) dnsInputs {
	in := dnsInputs{snap: snap, res: res, addresses: make(map[string][]gwv1.GatewayStatusAddress, len(programmed)), retained: retained}
	for key, p := range programmed {
		if len(p.Addresses) > 0 {
			in.addresses[key] = slices.Clone(p.Addresses)
		}
	}
	return in
}

// same tells whether records built from a and b are the same.
func (a *dnsInputs) same(b *dnsInputs) bool {
	sameAddress := func(x, y gwv1.GatewayStatusAddress) bool {
		return x.Value == y.Value && ptr.Deref(x.Type, gwv1.IPAddressType) == ptr.Deref(y.Type, gwv1.IPAddressType)
	}
	return a.snap == b.snap && a.res == b.res && sameRetained(a.retained, b.retained) &&
		maps.EqualFunc(a.addresses, b.addresses, func(x, y []gwv1.GatewayStatusAddress) bool { return slices.EqualFunc(x, y, sameAddress) })
}

// Retained returns the records kept for unseen owners as of the last publication, for Build.
func (p *dnsPublisher) Retained() map[string][]records.Retained {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.retained
}

// Verdicts returns the verdict of every owner of the last publication.
func (p *dnsPublisher) Verdicts() map[string]dnsVerdict {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.verdicts)
}

// Start publishes on every change and every Recheck until ctx ends.
func (p *dnsPublisher) Start(ctx context.Context) error {
	t := time.NewTicker(p.o.Recheck)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-p.poke:
		case <-t.C:
		}
		if err := p.publish(ctx); err != nil && ctx.Err() == nil {
			p.log.Error(err, "publishing DNSEndpoints; retrying")
		}
	}
}

// publish makes the hub's DNSEndpoints what the last pass wants.
func (p *dnsPublisher) publish(ctx context.Context) error {
	p.mu.Lock()
	d := p.desired
	p.mu.Unlock()
	if d == nil {
		return nil
	}
	list, err := p.list(ctx)
	if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) || isMissingKind(err) {
		verdicts := p.crdAbsent(d)
		if p.o.Sync == nil {
			p.setVerdicts(verdicts)
			return nil
		}
		// The embedded publishers need no DNSEndpoints: they get the owners' records as built,
		// and keep what an owner without an address published before (nil: unknown).
		held := make(map[string][]*endpoint.Endpoint, len(d.owners))
		for i := range d.owners {
			if o := &d.owners[i]; !o.Unaddressed {
				held[o.Key] = o.Endpoints
			} else {
				held[o.Key] = nil
			}
		}
		zoned, err := p.syncZones(ctx, zoneRecords(d.zones, held), d.owners, d.clusters)
		// For a gateway of a class that publishes itself, the DNSEndpoint CRD is beside the point.
		maps.Copy(verdicts, zoned)
		p.setVerdicts(verdicts)
		return err
	}
	if err != nil {
		return err
	}
	p.mu.Lock()
	if p.crdMissing {
		p.log.Info("DNSEndpoint CRD installed: publishing", "crd", dnsEndpointCRD)
		p.crdMissing = false
	}
	p.mu.Unlock()
	// By gateway key, its DNSEndpoints (shards).
	existing := map[string][]*dnsv1a1.DNSEndpoint{}
	for _, obj := range list {
		if key := obj.Annotations[providers.AnnotationGateway]; key != "" {
			existing[key] = append(existing[key], obj)
		}
	}
	if retained := retainedRecords(existing, d); !sameRetained(retained, d.retained) {
		// The owners were shared out without knowing of these: have them built again first, so
		// that no record flips from weighted to plain (or takes a name) and back.
		p.mu.Lock()
		p.retained = retained
		p.mu.Unlock()
		if p.changed != nil {
			p.changed()
		}
		return nil
	}
	verdicts := make(map[string]dnsVerdict, len(d.owners))
	held := map[string][]*endpoint.Endpoint{}
	var errs []error
	for i := range d.owners {
		o := &d.owners[i]
		cur := existing[o.Key]
		delete(existing, o.Key)
		v, eps, err := p.publishOwner(ctx, o, cur, d.hubNamespaces)
		if err != nil {
			errs = append(errs, err)
			v = dnsVerdict{status: metav1.ConditionFalse, reason: ReasonDNSWriteFailed, message: err.Error()}
		}
		verdicts[o.Key] = v
		if len(eps) > 0 {
			held[o.Key] = eps
		}
	}
	// The rest belong to owners the pass did not find: gone when every cluster of theirs was read.
	for key, objs := range existing {
		if !allRead(objs[0].Annotations[annotationDNSClusters], d.clusters) {
			held[key] = endpointsOf(objs)
			continue
		}
		for _, cur := range objs {
			if err := p.writer.Delete(ctx, cur); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("deleting DNSEndpoint %s/%s of gone gateway %s: %w", cur.Namespace, cur.Name, key, err))
				continue
			}
			p.log.Info("deleted the DNSEndpoint of a gateway that went", "gateway", key, "namespace", cur.Namespace, "name", cur.Name)
		}
	}
	if p.o.Sync != nil {
		zoned, err := p.syncZones(ctx, zoneRecords(d.zones, held), d.owners, d.clusters)
		errs = append(errs, err)
		for key, v := range zoned {
			verdicts[key] = withDNSEndpoint(v, verdicts[key])
		}
	}
	p.setVerdicts(verdicts)
	return errors.Join(errs...)
}

// list returns fleetgate's DNSEndpoints. It lists their metadata and reads in full only those
// whose resourceVersion it has not seen (external-dns stamped its status, someone edited it):
// listing them whole decoded every record of every gateway on every pass, 1.4 MB at 20,000 names,
// which the API server encoded each time.
func (p *dnsPublisher) list(ctx context.Context) ([]*dnsv1a1.DNSEndpoint, error) {
	var list metav1.PartialObjectMetadataList
	list.SetGroupVersionKind(dnsv1a1.GroupVersion.WithKind("DNSEndpointList"))
	if err := p.live.List(ctx, &list, client.MatchingLabels{providers.LabelManagedBy: providers.ManagedBy}); err != nil {
		return nil, fmt.Errorf("listing DNSEndpoints: %w", err)
	}
	seen := make(map[types.NamespacedName]*dnsv1a1.DNSEndpoint, len(list.Items))
	out := make([]*dnsv1a1.DNSEndpoint, 0, len(list.Items))
	for _, m := range list.Items {
		key := types.NamespacedName{Namespace: m.Namespace, Name: m.Name}
		obj := p.seen[key]
		if obj == nil || obj.ResourceVersion != m.ResourceVersion {
			obj = &dnsv1a1.DNSEndpoint{}
			err := p.live.Get(ctx, key, obj)
			if apierrors.IsNotFound(err) {
				continue // deleted since the list
			}
			if err != nil {
				return nil, fmt.Errorf("reading DNSEndpoint %s: %w", key, err)
			}
		}
		seen[key] = obj
		out = append(out, obj)
	}
	p.seen = seen
	return out, nil
}

// remember keeps obj (as a write returned it, or as read) for the next list; its records, when
// they are those of eps, as eps: the pipeline keeps those anyway (records.Memo), where decoded
// copies of every shard held ~10 MB at 20,000 names.
func (p *dnsPublisher) remember(obj *dnsv1a1.DNSEndpoint, eps []*endpoint.Endpoint) {
	if p.seen == nil {
		p.seen = map[types.NamespacedName]*dnsv1a1.DNSEndpoint{}
	}
	if sameRecords(obj.Spec.Endpoints, eps) {
		shared := *obj
		shared.Spec.Endpoints = eps
		obj = &shared
	}
	p.seen[types.NamespacedName{Namespace: obj.Namespace, Name: obj.Name}] = obj
}

// retainedRecords are, by name, the records of the DNSEndpoints whose owners d does not have but
// which are in clusters d's pass did not read: they stay, and still hold their names.
func retainedRecords(existing map[string][]*dnsv1a1.DNSEndpoint, d *dnsDesired) map[string][]records.Retained {
	desired := make(map[string]bool, len(d.owners))
	for _, o := range d.owners {
		desired[o.Key] = true
	}
	out := map[string][]records.Retained{}
	for _, key := range slices.Sorted(maps.Keys(existing)) {
		objs := existing[key]
		if desired[key] || allRead(objs[0].Annotations[annotationDNSClusters], d.clusters) {
			continue
		}
		for _, ep := range endpointsOf(objs) {
			r := records.Retained{Key: key, Weighted: ep.SetIdentifier != ""}
			if !slices.Contains(out[ep.DNSName], r) {
				out[ep.DNSName] = append(out[ep.DNSName], r)
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// publishOwner writes one owner's DNSEndpoints (cur are those that exist) and returns its verdict
// and the records it holds.
func (p *dnsPublisher) publishOwner(ctx context.Context, o *records.Owner, cur []*dnsv1a1.DNSEndpoint, hubNamespaces map[string]bool) (dnsVerdict, []*endpoint.Endpoint, error) {
	if o.Unaddressed {
		// Never publish an empty record set: the last published records stay until it has one.
		if len(cur) == 0 {
			return dnsVerdict{status: metav1.ConditionFalse, reason: ReasonDNSNoAddress,
				message: "the gateway has no address yet; nothing is published for " + records.Describe(o.Names)}, nil, nil
		}
		eps := endpointsOf(cur)
		return dnsVerdict{status: metav1.ConditionFalse, reason: ReasonDNSNoAddress,
			message: fmt.Sprintf("the gateway has no address; the %d records last published are kept", len(eps))}, eps, nil
	}
	ns, base := p.namespaceOf(o, hubNamespaces), dnsEndpointName(o)
	have := map[string]*dnsv1a1.DNSEndpoint{} // by name, those in ns
	shards := 1
	for _, c := range cur {
		if i, ok := shardIndex(c.Name, base); ok && c.Namespace == ns {
			have[c.Name] = c
			shards = max(shards, i+1)
		}
	}
	// With every name held by an older owner, none is wanted.
	var want []*dnsv1a1.DNSEndpoint
	if len(o.Endpoints) > 0 {
		for i, eps := range shardEndpoints(o.Endpoints, shards, dnsShardBounds{records: p.o.ShardRecords, bytes: p.o.ShardBytes}) {
			if len(eps) > 0 {
				want = append(want, dnsEndpointObject(o, ns, shardName(base, i), eps))
			}
		}
	}
	// A name moves between shards only when their count changes or the namespace does: into shards
	// created then (or updated, as the count shrinks) and out of shards updated (as it grows) or
	// deleted. New shards are written first, updates next, deletions last, so that a name moving
	// is never in none.
	ordered := make([]*dnsv1a1.DNSEndpoint, 0, len(want))
	for _, existed := range []bool{false, true} {
		for _, w := range want {
			if (have[w.Name] != nil) == existed {
				ordered = append(ordered, w)
			}
		}
	}
	read, kept := true, map[*dnsv1a1.DNSEndpoint]bool{}
	for _, w := range ordered {
		c, eps := have[w.Name], w.Spec.Endpoints
		kept[c] = c != nil
		// Copies: the client decodes its answer into the object, and o's records belong to the pipeline.
		switch {
		case c == nil:
			w.Spec.Endpoints = copyEndpoints(eps)
			if err := p.writer.Create(ctx, w); err != nil {
				return dnsVerdict{}, nil, fmt.Errorf("creating DNSEndpoint %s/%s: %w", w.Namespace, w.Name, err)
			}
			p.remember(w, eps)
			read = false
		case !sameDNSEndpoint(c, w):
			w.Spec.Endpoints = copyEndpoints(eps)
			w.ResourceVersion = c.ResourceVersion
			if err := p.writer.Update(ctx, w); err != nil {
				return dnsVerdict{}, nil, fmt.Errorf("updating DNSEndpoint %s/%s: %w", w.Namespace, w.Name, err)
			}
			p.remember(w, eps)
			read = false
		default:
			p.remember(c, eps)
			read = read && c.Status.ObservedGeneration == c.Generation
		}
	}
	for _, c := range cur {
		if kept[c] {
			continue
		}
		if err := p.writer.Delete(ctx, c); err != nil && !apierrors.IsNotFound(err) {
			return dnsVerdict{}, nil, fmt.Errorf("deleting DNSEndpoint %s/%s no longer needed: %w", c.Namespace, c.Name, err)
		}
	}
	v := ownerVerdict(o)
	if len(o.Endpoints) > 0 {
		if len(want) > 1 {
			v.message += fmt.Sprintf(" in %d DNSEndpoints", len(want))
		}
		// external-dns's CRD source stamps the generation it read: the records reach DNS in the
		// same loop of it.
		if read {
			v.message += "; external-dns has read them"
		} else {
			v.message += "; external-dns has not read them yet"
		}
	}
	return v, o.Endpoints, nil
}

// ownerVerdict is the verdict of an owner whose records were written.
func ownerVerdict(o *records.Owner) dnsVerdict {
	published := o.Names // all of them, unless some were lost: a copy of 20,000 names per publication otherwise
	if len(o.Conflicts) > 0 {
		published = nil
		for _, n := range o.Names {
			if _, lost := o.Conflicts[n]; !lost {
				published = append(published, n)
			}
		}
	}
	if len(o.Conflicts) == 0 {
		msg := "published " + records.Describe(published)
		if o.Weighted {
			msg += " (weighted with other gateways serving the same names)"
		}
		return dnsVerdict{status: metav1.ConditionTrue, reason: ReasonDNSPublished, message: msg}
	}
	lost := slices.Sorted(maps.Keys(o.Conflicts))
	conflicts := make(map[string]string, len(lost))
	var b strings.Builder
	for i, n := range lost {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s is published by gateway %s", n, o.Conflicts[n])
		conflicts[n] = "gateway " + o.Conflicts[n] + " publishes it"
	}
	if len(published) > 0 {
		fmt.Fprintf(&b, "; published %s", records.Describe(published))
	}
	return dnsVerdict{status: metav1.ConditionFalse, reason: ReasonDNSConflicted, message: b.String(), conflicts: conflicts}
}

// crdAbsent returns every owner unpublished, logging the absence once.
func (p *dnsPublisher) crdAbsent(d *dnsDesired) map[string]dnsVerdict {
	p.mu.Lock()
	if !p.crdMissing {
		p.log.Info("DNSEndpoint CRD not installed: no DNS records are published until it is", "crd", dnsEndpointCRD)
		p.crdMissing = true
	}
	p.mu.Unlock()
	verdicts := make(map[string]dnsVerdict, len(d.owners))
	for _, o := range d.owners {
		verdicts[o.Key] = dnsVerdict{status: metav1.ConditionFalse, reason: ReasonDNSCRDNotInstalled,
			message: "the hub lacks the CRD " + dnsEndpointCRD + " (external-dns); " + records.Describe(o.Names) + " will be published once it is installed"}
	}
	return verdicts
}

const dnsEndpointCRD = "dnsendpoints.externaldns.k8s.io"

// isMissingKind catches a REST mapper that still knows no externaldns.k8s.io group.
func isMissingKind(err error) bool {
	var d *meta.NoResourceMatchError
	return errors.As(err, &d)
}

func (p *dnsPublisher) setVerdicts(v map[string]dnsVerdict) {
	p.mu.Lock()
	changed := !maps.EqualFunc(p.verdicts, v, func(a, b dnsVerdict) bool {
		return a.status == b.status && a.reason == b.reason && a.message == b.message
	})
	p.verdicts = v
	p.mu.Unlock()
	if changed && p.changed != nil {
		p.changed()
	}
}

// namespaceOf is the owner's namespace when the hub has it, so that its records sit beside the
// gateway (and tenants scoped to a namespace see them); else the operator's.
func (p *dnsPublisher) namespaceOf(o *records.Owner, hubNamespaces map[string]bool) string {
	if o.Namespace != "" && hubNamespaces[o.Namespace] {
		return o.Namespace
	}
	return p.o.Namespace
}

// dnsEndpointName is the name of the owner's DNSEndpoint (its first shard).
func dnsEndpointName(o *records.Owner) string {
	sum := sha256.Sum256([]byte(o.Key))
	return "fleetgate-" + dnsLabel(o.Name, 40) + "-" + hex.EncodeToString(sum[:4])
}

// dnsEndpointObject is the DNSEndpoint named name of one owner in namespace ns, holding eps (not
// copied).
func dnsEndpointObject(o *records.Owner, ns, name string, eps []*endpoint.Endpoint) *dnsv1a1.DNSEndpoint {
	obj := &dnsv1a1.DNSEndpoint{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: name,
			Labels: map[string]string{providers.LabelManagedBy: providers.ManagedBy, providers.LabelGateway: providers.GatewayID(o.Key)},
			Annotations: map[string]string{providers.AnnotationGateway: o.Key,
				annotationDNSClusters: strings.Join(o.Clusters, ",")},
		},
		Spec: dnsv1a1.DNSEndpointSpec{Endpoints: eps},
	}
	// Owned only when every object of the gateway can own it: the garbage collector would delete
	// it with the hub's copy of a fleet gateway that other members still serve.
	for _, ob := range o.Objects {
		if ob.Cluster != v1alpha1.HubCluster || ob.Namespace != ns || ob.UID == "" {
			obj.OwnerReferences = nil
			break
		}
		obj.OwnerReferences = append(obj.OwnerReferences, metav1.OwnerReference{
			APIVersion: ownerAPIVersion(ob.Kind), Kind: ob.Kind, Name: ob.Name, UID: ob.UID})
	}
	return obj
}

func ownerAPIVersion(kind string) string {
	switch kind {
	case "Gateway":
		return gwv1.GroupVersion.String()
	case "Ingress":
		return "networking.k8s.io/v1"
	}
	return "v1"
}

// dnsLabel makes s a readable part of an object name: lower case, [a-z0-9-], at most n characters.
func dnsLabel(s string, n int) string {
	b := []byte(strings.ToLower(s))
	for i, c := range b {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			b[i] = '-'
		}
	}
	return strings.Trim(string(b[:min(len(b), n)]), "-")
}

// sameDNSEndpoint tells whether cur already is want, so that an unchanged owner costs no write.
func sameDNSEndpoint(cur, want *dnsv1a1.DNSEndpoint) bool {
	js := func(v any) string {
		b, _ := json.Marshal(v)
		return string(b)
	}
	return sameRecords(cur.Spec.Endpoints, want.Spec.Endpoints) && maps.Equal(cur.Labels, want.Labels) && maps.Equal(cur.Annotations, want.Annotations) &&
		js(cur.OwnerReferences) == js(want.OwnerReferences)
}

func copyEndpoints(eps []*endpoint.Endpoint) []*endpoint.Endpoint {
	out := make([]*endpoint.Endpoint, len(eps))
	for i, ep := range eps {
		out[i] = ep.DeepCopy()
	}
	return out
}

// allRead tells whether every cluster of a comma-separated list was read by the pass.
func allRead(list string, read []string) bool {
	if list == "" {
		return false
	}
	for c := range strings.SplitSeq(list, ",") {
		if !slices.Contains(read, c) {
			return false
		}
	}
	return true
}

// setDNSPublished merges the publisher's verdicts into the Gateways of res, with a Warning
// notice on each Gateway of an owner that lost a name.
func setDNSPublished(res *translate.Result, verdicts map[string]dnsVerdict) {
	for i := range res.Gateways {
		gs := &res.Gateways[i]
		v, ok := verdicts[gs.Gateway]
		if !ok {
			continue
		}
		// Clipped: the conditions may share their array with the last translation's (Applied).
		gs.Conditions = append(slices.Clip(gs.Conditions), metav1.Condition{Type: ConditionDNSPublished, Status: v.status,
			ObservedGeneration: gs.Generation, Reason: v.reason, Message: v.message})
		for _, n := range slices.Sorted(maps.Keys(v.conflicts)) {
			res.Notices = append(res.Notices, translate.Notice{Ref: gs.Ref, Type: "Warning", Reason: ReasonDNSConflict,
				Message: fmt.Sprintf("hostname %s is not published for this Gateway: %s", n, v.conflicts[n])})
		}
	}
}
