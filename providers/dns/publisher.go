// Package dns publishes the DNS records of a class's gateways into a zone itself, for platforms
// without external-dns: external-dns's plan computes the changes, its TXT registry marks the
// records fleetgate owns (so that no other record is ever touched), and its providers (RFC 2136,
// Route53) carry them out. On top of that it bounds the blast radius of one pass: see README.md.
package dns

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/external-dns/endpoint"
	"sigs.k8s.io/external-dns/plan"
	"sigs.k8s.io/external-dns/provider"
	"sigs.k8s.io/external-dns/registry"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/providers"
)

// Defaults of DNSOptions.
const (
	DefaultTTL               = 300
	DefaultMaxDeletesPerPass = 10
	DefaultDeleteGracePeriod = 10 * time.Minute
)

// managedTypes are the record types a publisher writes (and so the only ones it may delete).
var managedTypes = []string{endpoint.RecordTypeA, endpoint.RecordTypeAAAA, endpoint.RecordTypeCNAME}

// Options are what New needs: the class's DNS section and the operator's pieces.
type Options struct {
	// DNS is the class's spec.dns.
	DNS v1alpha1.DNSOptions
	// Class names the GatewayClassConfig whose spec.dns this is: for logs, the metrics' class label
	// and the default owner ID.
	Class string
	// Except are domains left out of DNS.Zones: a retirement leaves alone the zones its class
	// still publishes into.
	Except []string
	// FleetID is the operator's fleet ID; with Class, the owner ID when DNS.OwnerID is unset.
	FleetID string
	// Secrets reads a Secret's data (the TSIG secret).
	Secrets func(ctx context.Context, namespace, name string) (map[string][]byte, error)
	Log     logr.Logger
	// Metrics registers the publisher's metrics when set.
	Metrics prometheus.Registerer
	// Now is the clock of the delete grace period; time.Now when nil.
	Now func() time.Time
}

// Publisher keeps one zone (or set of zones) in line with the desired records of a class's
// gateways. Sync calls are serialised; its memory (when owners went away, since when deletions
// have been held) lives as long as the Publisher, so keep one per class.
type Publisher struct {
	reg        registry.Registry
	filter     *endpoint.DomainFilter
	ownerID    string
	ttl        endpoint.TTL
	weighted   bool // whether the provider has weighted records (set identifiers)
	guard      guard
	log        logr.Logger
	metrics    *metrics
	providerID v1alpha1.DNSProvider

	mu sync.Mutex
}

// New builds the publisher of a class: it reads the credentials the provider needs, but calls no
// DNS server yet.
func New(ctx context.Context, o Options) (*Publisher, error) {
	if len(o.DNS.Zones) == 0 {
		return nil, errors.New("dns: no zones")
	}
	ownerID := o.DNS.OwnerID
	if ownerID == "" {
		if o.FleetID == "" {
			return nil, errors.New("dns: no owner ID (neither spec.dns.ownerID nor a fleet ID)")
		}
		ownerID = DefaultOwnerID(o.FleetID, o.Class)
	}
	filter := endpoint.NewDomainFilterWithExclusions(o.DNS.Zones, o.Except)
	prov, weighted, err := newProvider(ctx, o, filter)
	if err != nil {
		return nil, err
	}
	return newPublisher(o, prov, weighted, filter, ownerID)
}

func newPublisher(o Options, prov provider.Provider, weighted bool, filter *endpoint.DomainFilter, ownerID string) (*Publisher, error) {
	reg, err := newRegistry(prov, ownerID)
	if err != nil {
		return nil, fmt.Errorf("dns: TXT registry: %w", err)
	}
	m, err := newMetrics(o.Metrics, o.Class)
	if err != nil {
		return nil, err
	}
	p := &Publisher{
		reg:        reg,
		filter:     filter,
		ownerID:    ownerID,
		ttl:        endpoint.TTL(DefaultTTL),
		weighted:   weighted,
		log:        o.Log.WithValues("class", o.Class, "dnsProvider", o.DNS.Provider),
		metrics:    m,
		providerID: o.DNS.Provider,
		guard: guard{
			maxDeletes: DefaultMaxDeletesPerPass,
			grace:      DefaultDeleteGracePeriod,
			now:        o.Now,
			goneSince:  map[string]time.Time{},
			heldSince:  map[string]time.Time{},
		},
	}
	if p.guard.now == nil {
		p.guard.now = time.Now
	}
	if o.DNS.TTL != nil {
		p.ttl = endpoint.TTL(*o.DNS.TTL)
	}
	if o.DNS.MaxDeletesPerPass != nil {
		p.guard.maxDeletes = int(*o.DNS.MaxDeletesPerPass)
	}
	if o.DNS.DeleteGracePeriod != nil {
		p.guard.grace = o.DNS.DeleteGracePeriod.Duration
	}
	return p, nil
}

// DefaultOwnerID is a class's owner ID in the TXT registry: one per class, because a publisher
// deletes the records of its owner ID that none of its gateways wants, so two classes sharing a
// zone under one owner ID would delete each other's names. At most 63 characters.
func DefaultOwnerID(fleet, class string) string {
	id := fleet + "-" + class
	if len(id) <= 63 {
		return id
	}
	sum := sha256.Sum256([]byte(fleet + "/" + class))
	return id[:50] + "-" + hex.EncodeToString(sum[:6])
}

// Record names one record set.
type Record struct {
	Name string
	Type string
	// SetIdentifier tells the records of one weighted name apart; "" for a plain record.
	SetIdentifier string `json:",omitempty"`
}

// Reasons a desired record was not published.
const (
	// ReasonNoTargets: the desired record has no targets (fleetgate never publishes an empty set).
	ReasonNoTargets = "NoTargets"
	// ReasonOutsideZones: the name is under none of the class's zones.
	ReasonOutsideZones = "OutsideZones"
	// ReasonNoWeights: the record has a set identifier and the provider has no weighted records.
	ReasonNoWeights = "WeightsUnsupported"
	// ReasonOwnedElsewhere (a conflict): the name is held by a record fleetgate did not create (no
	// TXT ownership record, or one of another owner ID). It is never overwritten.
	ReasonOwnedElsewhere = "OwnedElsewhere"
	// ReasonOtherGateway (a conflict): another gateway of the class publishes the name (with the
	// same set identifier); the one that holds it keeps it, else the first by key.
	ReasonOtherGateway = "PublishedByAnotherGateway"
)

// Skip is a desired record that was not published, and why.
type Skip struct {
	Record
	Reason  string
	Message string
}

// OwnerResult is what one Sync did for one owner (gateway).
type OwnerResult struct {
	Created, Updated, Deleted []Record `json:",omitempty"`
	// Held are records this owner no longer wants that the delete budget kept.
	Held []Record `json:",omitempty"`
	// Conflicts are names held by someone else (Reason OwnedElsewhere or OtherGateway).
	Conflicts []Skip `json:",omitempty"`
	// Refused are desired records that cannot be published (NoTargets, OutsideZones, NoWeights).
	Refused []Skip `json:",omitempty"`
	// Unserved are records this pass wrote that the zone, read back, does not hold as written
	// (the provider accepted the change and dropped or altered it).
	Unserved []Record `json:",omitempty"`
}

// Result is what one Sync did, per owner key. Owners with nothing to say are absent.
type Result struct {
	Owners map[string]*OwnerResult
}

// Outcomes are, by owner, the names not published as desired; owners without any are absent.
func (r Result) Outcomes() map[string]providers.DNSOwnerOutcome {
	out := map[string]providers.DNSOwnerOutcome{}
	for key, o := range r.Owners {
		var oc providers.DNSOwnerOutcome
		for _, c := range o.Conflicts {
			if oc.Lost == nil {
				oc.Lost = map[string]string{}
			}
			oc.Lost[c.Name] = c.Message
		}
		for _, s := range o.Refused {
			if oc.Refused == nil {
				oc.Refused = map[string]string{}
			}
			oc.Refused[s.Name] = s.Message
		}
		for _, u := range o.Unserved {
			if !slices.Contains(oc.Unserved, u.Name) {
				oc.Unserved = append(oc.Unserved, u.Name)
			}
		}
		if oc.Lost != nil || oc.Refused != nil || oc.Unserved != nil {
			out[key] = oc
		}
	}
	return out
}

func (r *Result) owner(key string) *OwnerResult {
	if r.Owners == nil {
		r.Owners = map[string]*OwnerResult{}
	}
	o := r.Owners[key]
	if o == nil {
		o = &OwnerResult{}
		r.Owners[key] = o
	}
	return o
}

// Sync makes the zone hold the desired records of every owner of the class. owners maps each
// gateway key to its desired records: every owner the class has, so that the records of the
// others can be told gone. A nil set means "unknown" (translation failed, a member is
// unreachable): that owner's records stay as they are. An empty non-nil set means "publish
// nothing". The endpoints are not modified. With an error, the Result is what the pass meant to
// do; the next pass starts again from what the zone holds.
func (p *Publisher) Sync(ctx context.Context, owners map[string][]*endpoint.Endpoint) (Result, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	start := time.Now()
	res, err := p.sync(ctx, owners)
	p.metrics.observe(res, err, time.Since(start))
	return res, err
}

func (p *Publisher) sync(ctx context.Context, owners map[string][]*endpoint.Endpoint) (Result, error) {
	var res Result
	current, err := p.reg.Records(ctx)
	if err != nil {
		return res, fmt.Errorf("dns: listing the records of zones %v: %w", p.filter.Filters, err)
	}
	desired := p.desired(owners, &res)
	if desired, err = p.reg.AdjustEndpoints(desired); err != nil {
		return res, fmt.Errorf("dns: adjusting endpoints for %s: %w", p.providerID, err)
	}
	// Records of owners whose set is unknown are desired as they are.
	for _, c := range current {
		if key, ok := p.ownedKey(c); ok && owners[key] == nil && hasKey(owners, key) {
			desired = append(desired, c.DeepCopy())
		}
	}
	desired = p.resolveConflicts(current, desired, &res)

	changes := p.plan(current, desired)

	present := map[string]bool{}
	for key := range owners {
		present[key] = true
	}
	var withRecords []string
	for _, c := range current {
		if key, ok := p.ownedKey(c); ok {
			withRecords = append(withRecords, key)
		}
	}
	p.guard.observe(present, withRecords)
	var held []*endpoint.Endpoint
	changes.Delete, held = p.guard.filter(changes.Delete, resourceOf)
	for _, h := range held {
		o := res.owner(resourceOf(h))
		o.Held = append(o.Held, recordOf(h))
	}
	if len(held) > 0 {
		p.log.Info("delete budget held back deletions", "held", len(held), "maxDeletesPerPass", p.guard.maxDeletes, "deleteGracePeriod", p.guard.grace)
	}

	// Read before ApplyChanges: the registry adds the TXT records to these lists.
	for _, e := range changes.Create {
		o := res.owner(resourceOf(e))
		o.Created = append(o.Created, recordOf(e))
	}
	for _, e := range changes.UpdateNew {
		o := res.owner(resourceOf(e))
		o.Updated = append(o.Updated, recordOf(e))
	}
	for _, e := range changes.Delete {
		o := res.owner(resourceOf(e))
		o.Deleted = append(o.Deleted, recordOf(e))
	}
	res.sort()
	if !changes.HasChanges() {
		return res, nil
	}
	for _, c := range chunkChanges(changes, chunkOf(p.providerID)) {
		if err := p.reg.ApplyChanges(ctx, c); err != nil {
			return res, fmt.Errorf("dns: applying %d creates, %d updates and %d deletes to %s: %w",
				len(c.Create), len(c.UpdateNew), len(c.Delete), p.providerID, err)
		}
	}
	return res, p.readBack(ctx, desired, &res)
}

// plan is what makes the zone's records (current) the desired ones.
func (p *Publisher) plan(current, desired []*endpoint.Endpoint) *plan.Changes {
	return (&plan.Plan{
		Current:        current,
		Desired:        desired,
		Policies:       []plan.Policy{&plan.SyncPolicy{}},
		DomainFilter:   endpoint.MatchAllDomainFilters{p.filter},
		ManagedRecords: managedTypes,
		OwnerID:        p.ownerID,
	}).Calculate().Changes
}

// readBack lists the zone after a pass wrote to it and reports, as Unserved, the desired records
// it does not hold as written: what the status says is served is what the zone answers.
func (p *Publisher) readBack(ctx context.Context, desired []*endpoint.Endpoint, res *Result) error {
	after, err := p.reg.Records(ctx)
	if err != nil {
		return fmt.Errorf("dns: reading back the records of zones %v: %w", p.filter.Filters, err)
	}
	again := p.plan(after, desired)
	for _, e := range slices.Concat(again.Create, again.UpdateNew) {
		o := res.owner(resourceOf(e))
		o.Unserved = append(o.Unserved, recordOf(e))
	}
	res.sort()
	return nil
}

// chunkChanges splits changes into pieces of at most n creates, n updates and n deletes. Each
// piece has its own arrays: the registry appends the TXT records to them.
func chunkChanges(c *plan.Changes, n int) []*plan.Changes {
	var out []*plan.Changes
	for i := 0; i < max(len(c.Create), len(c.UpdateNew), len(c.Delete)); i += n {
		part := func(l []*endpoint.Endpoint) []*endpoint.Endpoint {
			return slices.Clone(l[min(i, len(l)):min(i+n, len(l))])
		}
		out = append(out, &plan.Changes{
			Create: part(c.Create), UpdateOld: part(c.UpdateOld), UpdateNew: part(c.UpdateNew), Delete: part(c.Delete),
		})
	}
	return out
}

// desired copies the owners' endpoints that can be published, labelled with their owner and with
// the class's TTL, and reports the others.
func (p *Publisher) desired(owners map[string][]*endpoint.Endpoint, res *Result) []*endpoint.Endpoint {
	var out []*endpoint.Endpoint
	for key, eps := range owners {
		for _, e := range eps {
			rec := recordOf(e)
			refuse := func(reason, msg string) {
				o := res.owner(key)
				o.Refused = append(o.Refused, Skip{Record: rec, Reason: reason, Message: msg})
			}
			switch {
			case len(e.Targets) == 0:
				refuse(ReasonNoTargets, "the record has no targets; an empty record set is never published")
				continue
			case !p.filter.Match(e.DNSName):
				refuse(ReasonOutsideZones, fmt.Sprintf("%s is under none of the zones %s", e.DNSName, strings.Join(p.filter.Filters, ", ")))
				continue
			case e.SetIdentifier != "" && !p.weighted:
				refuse(ReasonNoWeights, fmt.Sprintf("DNS provider %s has no weighted records (set identifier %q)", p.providerID, e.SetIdentifier))
				continue
			}
			c := e.DeepCopy()
			c.DNSName = strings.TrimSuffix(strings.ToLower(c.DNSName), ".")
			// Only the owner goes into the labels: they are serialised into the TXT record.
			c.Labels = endpoint.Labels{endpoint.ResourceLabelKey: key}
			if !c.RecordTTL.IsConfigured() {
				c.RecordTTL = p.ttl
			}
			out = append(out, c)
		}
	}
	return out
}

// planKey is the unit of ownership: a name, or one weighted record of a name.
type planKey struct{ name, setID string }

func keyOf(e *endpoint.Endpoint) planKey {
	return planKey{strings.TrimSuffix(strings.ToLower(e.DNSName), "."), e.SetIdentifier}
}

// resolveConflicts keeps one owner per name (and set identifier): never one whose name is held
// by a record of someone else; among fleetgate's gateways the one that holds it, else the first
// by key. A name is either plain or weighted: when gateways disagree, the side that holds the
// name keeps it, else the side of the first gateway by key. The others are reported and dropped.
func (p *Publisher) resolveConflicts(current, desired []*endpoint.Endpoint, res *Result) []*endpoint.Endpoint {
	holder := map[planKey]string{}              // the gateway of ours holding the name now
	foreign := map[planKey]*endpoint.Endpoint{} // a record of someone else at the name
	for _, c := range current {
		if !slices.Contains(managedTypes, c.RecordType) {
			continue
		}
		k := keyOf(c)
		if key, ok := p.ownedKey(c); ok {
			holder[k] = key
		} else {
			foreign[k] = c
		}
	}
	wanted := map[planKey][]string{}
	for _, d := range desired {
		k := keyOf(d)
		if key := resourceOf(d); !slices.Contains(wanted[k], key) {
			wanted[k] = append(wanted[k], key)
		}
	}
	winner := map[planKey]string{}
	for k, keys := range wanted {
		if _, taken := foreign[k]; taken {
			continue
		}
		slices.Sort(keys)
		winner[k] = keys[0]
		if h, ok := holder[k]; ok && slices.Contains(keys, h) {
			winner[k] = h
		}
	}
	weighted := weightedNames(holder, winner)
	reported := map[planKey]map[string]bool{}
	return slices.DeleteFunc(desired, func(d *endpoint.Endpoint) bool {
		k, key := keyOf(d), resourceOf(d)
		w, mixed := weighted[k.name]
		if winner[k] == key && (!mixed || w == (k.setID != "")) {
			return false
		}
		if reported[k] == nil {
			reported[k] = map[string]bool{}
		}
		if !reported[k][key] {
			reported[k][key] = true
			o := res.owner(key)
			s := Skip{Record: Record{Name: k.name, SetIdentifier: k.setID, Type: d.RecordType}, Reason: ReasonOtherGateway}
			switch f, ok := foreign[k]; {
			case ok:
				s.Reason = ReasonOwnedElsewhere
				s.Message = fmt.Sprintf("%s is held by a %s record fleetgate did not create (owner %q); it is left alone", k.name, f.RecordType, f.Labels[endpoint.OwnerLabelKey])
			case winner[k] != key:
				s.Message = fmt.Sprintf("%s is published by gateway %s", k.name, winner[k])
			case w:
				s.Message = fmt.Sprintf("%s is published as weighted records (with set identifiers) by other gateways", k.name)
			default:
				s.Message = fmt.Sprintf("%s is published without set identifiers by another gateway", k.name)
			}
			o.Conflicts = append(o.Conflicts, s)
		}
		return true
	})
}

// weightedNames settles the names that gateways want both plain and weighted: whether each is
// to be weighted (the side holding the name, else the side of the first gateway by key).
func weightedNames(holder, winner map[planKey]string) map[string]bool {
	type side struct {
		first string
		held  bool
	}
	sides := map[string]*[2]*side{} // name → [plain, weighted]
	for k, key := range winner {
		if sides[k.name] == nil {
			sides[k.name] = &[2]*side{}
		}
		i := 0
		if k.setID != "" {
			i = 1
		}
		sd := sides[k.name][i]
		if sd == nil {
			sd = &side{first: key}
			sides[k.name][i] = sd
		}
		sd.first = min(sd.first, key)
		sd.held = sd.held || holder[k] == key
	}
	out := map[string]bool{}
	for name, s := range sides {
		plain, w := s[0], s[1]
		if plain == nil || w == nil {
			continue
		}
		switch {
		case plain.held != w.held:
			out[name] = w.held
		default:
			out[name] = w.first < plain.first
		}
	}
	return out
}

// ownedKey returns the gateway a current record belongs to, when fleetgate (this owner ID) owns it.
func (p *Publisher) ownedKey(e *endpoint.Endpoint) (string, bool) {
	if e.Labels[endpoint.OwnerLabelKey] != p.ownerID || !slices.Contains(managedTypes, e.RecordType) {
		return "", false
	}
	return resourceOf(e), true
}

func resourceOf(e *endpoint.Endpoint) string { return e.Labels[endpoint.ResourceLabelKey] }

func recordOf(e *endpoint.Endpoint) Record {
	return Record{Name: strings.TrimSuffix(e.DNSName, "."), Type: e.RecordType, SetIdentifier: e.SetIdentifier}
}

func hasKey[V any](m map[string]V, k string) bool {
	_, ok := m[k]
	return ok
}

func (r *Result) sort() {
	byRecord := func(a, b Record) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Type, b.Type), cmp.Compare(a.SetIdentifier, b.SetIdentifier))
	}
	bySkip := func(a, b Skip) int { return byRecord(a.Record, b.Record) }
	for _, o := range r.Owners {
		for _, l := range [][]Record{o.Created, o.Updated, o.Deleted, o.Held, o.Unserved} {
			slices.SortFunc(l, byRecord)
		}
		slices.SortFunc(o.Conflicts, bySkip)
		slices.SortFunc(o.Refused, bySkip)
	}
}
