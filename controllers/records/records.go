// Package records computes the DNS records of every gateway from a translation and the apply
// results: which hostnames each gateway serves, the addresses they resolve to, and, for a name
// served by several gateways, the weighted records (set identifier + weight) or the conflict. It
// is pure: no client, no clock.
package records

import (
	"cmp"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/external-dns/endpoint"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/controllers/snapshot"
	"github.com/fleetgate/fleetgate/controllers/translate"
	"github.com/fleetgate/fleetgate/dataplane/ir"
	"github.com/fleetgate/fleetgate/providers"
)

const (
	// AnnotationHostname is external-dns's annotation naming a Service's hostnames (comma-separated).
	AnnotationHostname = "external-dns.alpha.kubernetes.io/hostname"
	// AnnotationWeight is a gateway's DNS weight (spec.infrastructure.annotations on a Gateway, an
	// annotation on an Ingress or Service), multiplied by its member's MemberCluster weight. Setting
	// it also lets differently named gateways share a hostname as weighted records.
	AnnotationWeight = "fleetgate.dev/dns-weight"
	// WeightProperty is the provider-specific property external-dns reads a record's weight from.
	WeightProperty = "aws/weight"
)

// Object is one Kubernetes object a gateway is made of.
type Object struct {
	Cluster, Kind, Namespace, Name string
	UID                            types.UID
}

// Owner is the DNS publication of one gateway key.
type Owner struct {
	Key string
	// Namespace and Name are those of the objects the gateway is made of (for an Ingress group,
	// of its oldest Ingress).
	Namespace, Name string
	// Clusters hold the gateway's objects, sorted: the owner is gone only when every one of them
	// was read and it was not found.
	Clusters []string
	// Objects are the gateway's objects (Gateways, Ingresses, Services), sorted.
	Objects []Object
	// Names are the hostnames the gateway serves, sorted; Endpoints the records of those it
	// publishes (not lost to another owner), sorted by name and type.
	Names     []string
	Endpoints []*endpoint.Endpoint
	// Conflicts maps each name lost to an older owner to that owner's key.
	Conflicts map[string]string
	// Unaddressed: the gateway has names but no address yet, so it has no Endpoints; the last
	// published ones are to be kept.
	Unaddressed bool
	// Weighted tells that some of its names are shared with other owners as weighted records.
	Weighted bool
}

// Equal tells whether o and p publish the same: every field equal, records compared by content,
// nil and empty alike. Passes compare their owners on every route change; this costs no
// allocation, where encoding both to JSON did.
func (o *Owner) Equal(p *Owner) bool {
	return o.Key == p.Key && o.Namespace == p.Namespace && o.Name == p.Name &&
		slices.Equal(o.Clusters, p.Clusters) && slices.Equal(o.Objects, p.Objects) && slices.Equal(o.Names, p.Names) &&
		slices.EqualFunc(o.Endpoints, p.Endpoints, sameEndpoint) && maps.Equal(o.Conflicts, p.Conflicts) &&
		o.Unaddressed == p.Unaddressed && o.Weighted == p.Weighted
}

// sameEndpoint compares the exported (published) fields of two records.
func sameEndpoint(a, b *endpoint.Endpoint) bool {
	if a == b {
		return true // shared between passes (Memo)
	}
	if a == nil || b == nil {
		return false
	}
	return a.DNSName == b.DNSName && slices.Equal(a.Targets, b.Targets) && a.RecordType == b.RecordType &&
		a.SetIdentifier == b.SetIdentifier && a.RecordTTL == b.RecordTTL && maps.Equal(a.Labels, b.Labels) &&
		slices.Equal(a.ProviderSpecific, b.ProviderSpecific)
}

// Retained is a record set another pass published for an owner this pass could not see (its
// member cluster was not read): it still holds its names, as a weighted record or not.
type Retained struct {
	Key      string
	Weighted bool
}

// claim is one owner's view before names are shared out.
type claim struct {
	owner    *Owner
	created  time.Time
	identity string // kind/namespace/name: per-cluster copies of one gateway share it
	explicit bool   // has AnnotationWeight
	weight   int64
	targets  []*endpoint.Endpoint // per name template: DNSName empty
	// last are the owner's records of the last pass (Memo), sorted by name as share makes them;
	// the ones before at were passed by.
	last []*endpoint.Endpoint
	at   int
	// weightText is weight as a record's property, once it is asked for.
	weightText string
	// fixed are the names of the gateways' listeners and Services and of SNI routes, hosts the
	// virtual hosts of each routing listener: gather makes owner.Names of them. multi is the
	// sorted names with repeats when a name came twice (several listeners), for Memo.
	fixed []string
	hosts [][]ir.VirtualHost
	multi []string
}

// weightValue is the claim's weight as a record's WeightProperty value.
func (c *claim) weightValue() string {
	if c.weightText == "" {
		c.weightText = strconv.FormatInt(c.weight, 10)
	}
	return c.weightText
}

// reuse returns the owner's record of the last pass for name and template t, weighted or not,
// if it had exactly that record; names come in sorted order.
func (c *claim) reuse(name string, t *endpoint.Endpoint, weighted bool) *endpoint.Endpoint {
	for c.at < len(c.last) && c.last[c.at].DNSName < name {
		c.at++
	}
	if c.at == len(c.last) {
		return nil
	}
	ep := c.last[c.at]
	if ep.DNSName != name || ep.RecordType != t.RecordType || !slices.Equal(ep.Targets, t.Targets) || ep.RecordTTL != t.RecordTTL || len(ep.Labels) != 0 {
		return nil
	}
	if weighted {
		if ep.SetIdentifier != c.owner.Key || len(ep.ProviderSpecific) != 1 ||
			ep.ProviderSpecific[0] != (endpoint.ProviderSpecificProperty{Name: WeightProperty, Value: c.weightValue()}) {
			return nil
		}
	} else if ep.SetIdentifier != "" || len(ep.ProviderSpecific) != 0 {
		return nil
	}
	c.at++
	return ep
}

// Build returns the owners of every gateway in res that serves at least one hostname, sorted by
// key. programmed holds apply's verdict per gateway key; snap is the snapshot res came from;
// retained are, by name, the records kept for owners in clusters the pass did not read.
func Build(snap *snapshot.Snapshot, res *translate.Result, programmed map[string]translate.Programmed, retained map[string][]Retained) []Owner {
	return build(claimsOf(snap, res, programmed), retained, nil)
}

// Memo builds owners as Build does, handing on the records of the last call's owners that are the
// same instead of making them again: a pass after one route change made a new record (about ten
// allocations) for every name of every gateway, 40,000 at 20,000 names in two members. Records
// are shared between calls' owners, so they must not be modified (the DNS publishers copy them).
// When a call has a single owner and nothing retained (one gateway, or one fleet gateway: the
// common case), the next call takes its names and records from the last ones with only the virtual
// hosts that changed put in or taken out (singleOwner.splice): gathering, sorting and comparing every
// name was a cache miss per name, ~3 ms per route change at 20,000 names in the operator.
// The zero Memo is ready to use.
type Memo struct {
	mu   sync.Mutex
	last map[string][]*endpoint.Endpoint // by owner key
	// single is what the last call's one owner was made of; nil after a call with another count
	// of owners or with retained records.
	single *singleOwner
}

// Build is Build with the records of the last call reused.
func (m *Memo) Build(snap *snapshot.Snapshot, res *translate.Result, programmed map[string]translate.Programmed, retained map[string][]Retained) []Owner {
	m.mu.Lock()
	defer m.mu.Unlock()
	claims := claimsOf(snap, res, programmed)
	if len(claims) == 1 && len(retained) == 0 && m.single != nil {
		if o, ok := m.single.splice(claims[0]); ok {
			m.remember(claims[0], o)
			if len(o.Names) == 0 {
				return []Owner{}
			}
			return []Owner{*o}
		}
	}
	out := build(claims, retained, m.last)
	m.last = make(map[string][]*endpoint.Endpoint, len(out))
	for _, o := range out {
		m.last[o.Key] = o.Endpoints
	}
	m.single = nil
	if len(claims) == 1 && len(retained) == 0 && len(out) == 1 {
		m.remember(claims[0], &out[0])
	}
	return out
}

// claimsOf returns the claim of every gateway in res, names not yet gathered.
func claimsOf(snap *snapshot.Snapshot, res *translate.Result, programmed map[string]translate.Programmed) []*claim {
	idx := newIndex(snap, res)
	var claims []*claim
	for i := range res.LoadBalancers {
		lb := &res.LoadBalancers[i]
		if c := idx.claim(res, lb, programmed[lb.Gateway]); c != nil {
			claims = append(claims, c)
		}
	}
	return claims
}

func build(all []*claim, retained map[string][]Retained, last map[string][]*endpoint.Endpoint) []Owner {
	var claims []*claim
	for _, c := range all {
		c.gather()
		if len(c.owner.Names) > 0 {
			c.last = last[c.owner.Key]
			claims = append(claims, c)
		}
	}
	share(claims, retained)
	out := make([]Owner, 0, len(claims))
	for _, c := range claims {
		out = append(out, *c.owner)
	}
	slices.SortFunc(out, func(a, b Owner) int { return cmp.Compare(a.Key, b.Key) })
	return out
}

// share gives each name to the oldest owner claiming it and to the owners that may share it with
// that one as weighted records; the others lose it. Older means created earlier, then smaller key.
// A name retained for an unseen owner stays as it is: a plain record keeps the name (no one else
// may publish it beside), weighted ones keep the sharers weighted, so that nothing flips while a
// member is unreachable.
func share(claims []*claim, retained map[string][]Retained) {
	for _, c := range claims {
		c.owner.Endpoints = make([]*endpoint.Endpoint, 0, len(c.owner.Names)*len(c.targets))
	}
	var sharers []*claim // reused from name to name
	eachName(claims, func(name string, cs []*claim) {
		slices.SortFunc(cs, func(a, b *claim) int {
			return cmp.Or(a.created.Compare(b.created), cmp.Compare(a.owner.Key, b.owner.Key))
		})
		first := cs[0]
		holder, others := "", 0
		for _, r := range retained[name] {
			if !r.Weighted {
				holder = r.Key
			}
			others++
		}
		sharers = sharers[:0]
		for _, c := range cs {
			if holder == "" && (c == first || c.identity == first.identity || (c.explicit && first.explicit)) {
				sharers = append(sharers, c)
				continue
			}
			if c.owner.Conflicts == nil {
				c.owner.Conflicts = map[string]string{}
			}
			c.owner.Conflicts[name] = cmp.Or(holder, first.owner.Key)
		}
		weighted := len(sharers)+others > 1
		for _, c := range sharers {
			for _, t := range c.targets {
				ep := c.reuse(name, t, weighted)
				if ep == nil {
					ep = endpoint.NewEndpoint(name, t.RecordType, t.Targets...)
					if weighted {
						ep = ep.WithSetIdentifier(c.owner.Key).WithProviderSpecific(WeightProperty, c.weightValue())
					}
				}
				c.owner.Weighted = c.owner.Weighted || weighted
				c.owner.Endpoints = append(c.owner.Endpoints, ep)
			}
		}
	})
}

// eachName calls fn with each name claimed and its claimants, in name order. Every claim's names
// are sorted: merged, they give each name's claimants without a map of every name or a sort of
// them all. A single claim (one gateway: the common case) needs no merge. cs is reused between
// calls.
func eachName(claims []*claim, fn func(name string, cs []*claim)) {
	if len(claims) == 1 {
		cs := claims[:1:1]
		for _, n := range claims[0].owner.Names {
			fn(n, cs)
		}
		return
	}
	lists := make([][]nameClaim, len(claims))
	for i, c := range claims {
		lists[i] = make([]nameClaim, len(c.owner.Names))
		for j, n := range c.owner.Names {
			lists[i][j] = nameClaim{n, c}
		}
	}
	all := mergeNames(lists)
	var cs []*claim
	for i := 0; i < len(all); {
		name := all[i].name
		cs = cs[:0]
		for ; i < len(all) && all[i].name == name; i++ {
			cs = append(cs, all[i].c)
		}
		fn(name, cs)
	}
}

// nameClaim is one claim on one name.
type nameClaim struct {
	name string
	c    *claim
}

// mergeNames merges lists sorted by name into one, halves first: O(n log k) for k lists.
func mergeNames(lists [][]nameClaim) []nameClaim {
	switch len(lists) {
	case 0:
		return nil
	case 1:
		return lists[0]
	}
	a, b := mergeNames(lists[:len(lists)/2]), mergeNames(lists[len(lists)/2:])
	out := make([]nameClaim, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if b[0].name < a[0].name {
			out, b = append(out, b[0]), b[1:]
		} else {
			out, a = append(out, a[0]), a[1:]
		}
	}
	return append(append(out, a...), b...)
}

// sortRuns returns names sorted. Those of virtual hosts come in runs already sorted (a listener's
// hosts are ordered by labels and length, then by name), which it merges instead of sorting them
// all, pass after pass between names and one buffer. It may sort in place or into a new slice.
func sortRuns(names []string) []string {
	var ends []int // of the runs
	for i := 1; i <= len(names); i++ {
		if i == len(names) || names[i] < names[i-1] {
			ends = append(ends, i)
			if len(ends) > 64 {
				slices.Sort(names) // no runs to speak of
				return names
			}
		}
	}
	src, dst := names, make([]string, len(names))
	for len(ends) > 1 {
		merged := ends[:0]
		start := 0
		for i := 0; i < len(ends); i += 2 {
			if i+1 == len(ends) {
				copy(dst[start:], src[start:ends[i]])
				merged = append(merged, ends[i])
				continue
			}
			mergeInto(dst[start:ends[i+1]], src[start:ends[i]], src[ends[i]:ends[i+1]])
			merged = append(merged, ends[i+1])
			start = ends[i+1]
		}
		ends = merged
		src, dst = dst, src
	}
	return src
}

// mergeInto merges the sorted a and b into out, of their length together.
func mergeInto(out, a, b []string) {
	k := 0
	for len(a) > 0 && len(b) > 0 {
		if b[0] < a[0] {
			out[k], b = b[0], b[1:]
		} else {
			out[k], a = a[0], a[1:]
		}
		k++
	}
	k += copy(out[k:], a)
	copy(out[k:], b)
}

// targets are the record templates of a gateway's addresses: A and AAAA records of its IP
// addresses, or, when it has none, a CNAME to its first hostname (a CNAME has one target and
// cannot sit beside other records of its name).
func targets(addrs []gwv1.GatewayStatusAddress) []*endpoint.Endpoint {
	var v4, v6, hosts []string
	for _, a := range addrs {
		if a.Type != nil && *a.Type == gwv1.HostnameAddressType {
			hosts = append(hosts, strings.ToLower(strings.TrimSuffix(a.Value, ".")))
			continue
		}
		ip, err := netip.ParseAddr(a.Value)
		switch {
		case err != nil:
		case ip.Is4() || ip.Is4In6():
			v4 = append(v4, ip.Unmap().String())
		default:
			v6 = append(v6, ip.String())
		}
	}
	var out []*endpoint.Endpoint
	if len(v4) > 0 {
		out = append(out, endpoint.NewEndpoint("", endpoint.RecordTypeA, sortedSet(v4)...))
	}
	if len(v6) > 0 {
		out = append(out, endpoint.NewEndpoint("", endpoint.RecordTypeAAAA, sortedSet(v6)...))
	}
	if len(out) == 0 && len(hosts) > 0 {
		out = append(out, endpoint.NewEndpoint("", endpoint.RecordTypeCNAME, sortedSet(hosts)[0]))
	}
	return out
}

func sortedSet(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}

// index finds the snapshot objects a result refers to, and the statuses of each gateway key.
type index struct {
	snap     *snapshot.Snapshot
	gateways map[translate.ObjectRef]*gwv1.Gateway
	ingress  map[translate.ObjectRef]*networkingv1.Ingress
	services map[translate.ObjectRef]*corev1.Service
	// byKey holds the indexes in res.Gateways, res.Ingresses and res.Services of each key's statuses.
	byKey map[string]*keyStatuses
}

type keyStatuses struct{ gateways, ingresses, services []int }

func newIndex(s *snapshot.Snapshot, res *translate.Result) *index {
	idx := &index{snap: s, gateways: map[translate.ObjectRef]*gwv1.Gateway{},
		ingress: map[translate.ObjectRef]*networkingv1.Ingress{}, services: map[translate.ObjectRef]*corev1.Service{},
		byKey: map[string]*keyStatuses{}}
	of := func(key string) *keyStatuses {
		k := idx.byKey[key]
		if k == nil {
			k = &keyStatuses{}
			idx.byKey[key] = k
		}
		return k
	}
	for i := range res.Gateways {
		k := of(res.Gateways[i].Gateway)
		k.gateways = append(k.gateways, i)
	}
	for i := range res.Ingresses {
		k := of(res.Ingresses[i].Gateway)
		k.ingresses = append(k.ingresses, i)
	}
	for i := range res.Services {
		k := of(res.Services[i].Gateway)
		k.services = append(k.services, i)
	}
	for _, o := range s.Gateways {
		idx.gateways[translate.ObjectRef{Cluster: o.Cluster, Kind: "Gateway", Namespace: o.Obj.Namespace, Name: o.Obj.Name}] = o.Obj
	}
	for _, o := range s.Ingresses {
		idx.ingress[translate.ObjectRef{Cluster: o.Cluster, Kind: "Ingress", Namespace: o.Obj.Namespace, Name: o.Obj.Name}] = o.Obj
	}
	for _, o := range s.Services {
		idx.services[translate.ObjectRef{Cluster: o.Cluster, Kind: "Service", Namespace: o.Obj.Namespace, Name: o.Obj.Name}] = o.Obj
	}
	return idx
}

// claim gathers what one gateway key serves; nil when none of its objects is in the snapshot.
func (idx *index) claim(res *translate.Result, lb *providers.LoadBalancer, p translate.Programmed) *claim {
	o := &Owner{Key: lb.Gateway, Namespace: lb.Namespace, Name: lb.Name}
	c := &claim{owner: o, weight: 1}
	var names []string
	var annotations map[string]string
	add := func(ref translate.ObjectRef, uid types.UID, created time.Time, ann map[string]string) {
		o.Objects = append(o.Objects, Object{Cluster: ref.Cluster, Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name, UID: uid})
		if c.identity == "" || created.Before(c.created) {
			c.created, c.identity, annotations = created, ref.Kind+"/"+ref.Namespace+"/"+ref.Name, ann
		}
	}
	k := idx.byKey[lb.Gateway]
	if k == nil {
		return nil
	}
	for _, i := range k.gateways {
		gs := res.Gateways[i]
		gw := idx.gateways[gs.Ref]
		if gw == nil {
			continue
		}
		add(gs.Ref, gw.UID, gw.CreationTimestamp.Time, lb.Annotations)
		names = append(names, listenerNames(gw, gs)...)
	}
	for _, i := range k.ingresses {
		ref := res.Ingresses[i].Ref
		if ing := idx.ingress[ref]; ing != nil {
			add(ref, ing.UID, ing.CreationTimestamp.Time, ing.Annotations)
		}
	}
	for _, i := range k.services {
		ss := res.Services[i]
		svc := idx.services[ss.Ref]
		if svc == nil {
			continue
		}
		add(ss.Ref, svc.UID, svc.CreationTimestamp.Time, svc.Annotations)
		for n := range strings.SplitSeq(svc.Annotations[AnnotationHostname], ",") {
			if n = hostname(n); n != "" {
				names = append(names, n)
			}
		}
	}
	if len(o.Objects) == 0 {
		return nil
	}
	// Routes' hostnames, already intersected with their listeners', and Ingress hosts: gather.
	if lb.Routing != nil {
		c.hosts = make([][]ir.VirtualHost, len(lb.Routing.Listeners))
		for i, l := range lb.Routing.Listeners {
			c.hosts[i] = l.VirtualHosts
			for _, sr := range l.SNIRoutes {
				for _, h := range sr.Hostnames {
					if n := hostname(h); n != "" {
						names = append(names, n)
					}
				}
			}
		}
	}
	c.fixed = names
	for _, obj := range o.Objects {
		if !slices.Contains(o.Clusters, obj.Cluster) {
			o.Clusters = append(o.Clusters, obj.Cluster)
		}
	}
	slices.Sort(o.Clusters)
	slices.SortFunc(o.Objects, func(a, b Object) int {
		return cmp.Or(cmp.Compare(a.Cluster, b.Cluster), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	if v, ok := annotations[AnnotationWeight]; ok {
		if w, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32); err == nil && w >= 0 {
			c.explicit, c.weight = true, w
		}
	}
	c.weight *= int64(idx.clusterWeight(o.Clusters))
	c.targets = targets(p.Addresses)
	o.Unaddressed = len(c.targets) == 0
	return c
}

// gather sorts the claim's names into owner.Names, each once: sorted and compacted, which is
// cheaper than a set at 20,000 names.
func (c *claim) gather() {
	n := len(c.fixed)
	for _, hs := range c.hosts {
		n += len(hs)
	}
	names := append(make([]string, 0, n), c.fixed...)
	for _, hs := range c.hosts {
		for _, vh := range hs {
			if n := hostname(vh.Hostname); n != "" {
				names = append(names, n)
			}
		}
	}
	names = sortRuns(names)
	for i := 1; i < len(names); i++ {
		if names[i] == names[i-1] {
			c.multi = slices.Clone(names)
			names = slices.Compact(names)
			break
		}
	}
	c.owner.Names = slices.Clip(names)
}

// clusterWeight is the largest MemberCluster weight among the clusters holding the gateway: a
// fleet gateway's one load balancer is not in any one of them.
func (idx *index) clusterWeight(clusters []string) int32 {
	w := int32(-1)
	for _, cl := range clusters {
		if cw, ok := idx.snap.ClusterWeights[cl]; ok && cw > w {
			w = cw
		}
	}
	if w < 0 {
		return v1alpha1.DefaultClusterWeight
	}
	return w
}

// listenerNames are the hostnames of the Gateway's listeners that translation accepted without
// a conflict.
func listenerNames(gw *gwv1.Gateway, gs translate.GatewayStatus) []string {
	ok := map[gwv1.SectionName]bool{}
	for _, ls := range gs.Listeners {
		if isTrue(ls.Conditions, string(gwv1.ListenerConditionAccepted)) && !isTrue(ls.Conditions, string(gwv1.ListenerConditionConflicted)) {
			ok[ls.Name] = true
		}
	}
	var out []string
	for _, l := range gw.Spec.Listeners {
		if l.Hostname != nil && ok[l.Name] {
			if n := hostname(string(*l.Hostname)); n != "" {
				out = append(out, n)
			}
		}
	}
	return out
}

func isTrue(conds []metav1.Condition, t string) bool {
	for _, c := range conds {
		if c.Type == t {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}

// hostname normalises a DNS name as external-dns takes it: lower case, no trailing dot, a
// leading "*." kept; "" for "*" and empty names, which no record can hold.
func hostname(h string) string {
	if normal(h) {
		return h // as translation gives virtual hosts: one scan, where trimming and lowering were three
	}
	h = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(h), "."))
	if h == "*" {
		return ""
	}
	return h
}

// normal tells whether hostname would return h as it is: neither empty nor "*", ASCII without
// upper case letters or spaces, no trailing dot.
func normal(h string) bool {
	if h == "" || h == "*" || h[len(h)-1] == '.' {
		return false
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; c >= utf8.RuneSelf || c <= ' ' || ('A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

// Describe is a short human summary of an owner's names, for conditions and logs.
func Describe(names []string) string {
	const most = 5
	if len(names) <= most {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:most], ", "), len(names)-most)
}
