package controllers

import (
	"maps"
	"math/bits"
	"slices"
	"strconv"
	"strings"

	dnsv1a1 "sigs.k8s.io/external-dns/apis/v1alpha1"
	"sigs.k8s.io/external-dns/endpoint"
)

// Defaults of the bounds of one DNSEndpoint (DNSOptions): etcd refuses a request over 1.5 MiB,
// which one object holding every record of a gateway reached at ~20,000 short names.
const (
	DefaultDNSShardRecords = 1000
	DefaultDNSShardBytes   = 256 << 10
)

// An owner's records are sharded over DNSEndpoints by a hash of the DNS name: shard i of k holds
// the names whose hash is i modulo k, k a power of two. A name's records (every type, every
// weighted set identifier) share the hash, so they are never split over two objects (external-dns's
// plan lets one object own a name, PerResource: records of one name in two would compete). With k
// fixed, adding or removing a name rewrites the one shard holding it. k doubles only when a shard
// is over a bound (each shard splits into i and i+k, nothing else moves), and halves only when the
// shards merged would be at most half full, so that a count near a bound does not flap between two
// k. k starts from the shards that exist, so the same records always give the same objects.

// dnsShardBounds bound one DNSEndpoint.
type dnsShardBounds struct{ records, bytes int }

// shardEndpoints splits eps (an owner's records, sorted) into k groups, k a power of two chosen
// from have (the number of shards that exist) as above; groups keep eps' order and may be empty.
func shardEndpoints(eps []*endpoint.Endpoint, have int, b dnsShardBounds) [][]*endpoint.Endpoint {
	hashes := make([]uint32, len(eps))
	sizes := make([]int, len(eps))
	for i, ep := range eps {
		hashes[i], sizes[i] = nameHash(ep.DNSName), recordBytes(ep)
	}
	// fits tells whether every shard of k holds at most 1/div of the bounds.
	fits := func(k, div int) bool {
		n, size := make([]int, k), make([]int, k)
		for i, h := range hashes {
			s := h & uint32(k-1)
			n[s]++
			size[s] += sizes[i]
			if n[s]*div > b.records || size[s]*div > b.bytes {
				return false
			}
		}
		return true
	}
	k := 1
	if have > 1 {
		k = 1 << bits.Len(uint(have-1)) // have rounded up to a power of two
	}
	// A name whose records alone are over a bound cannot be split: k stops growing at the
	// number of records.
	for k < len(eps) && !fits(k, 1) {
		k *= 2
	}
	for k > 1 && fits(k/2, 2) {
		k /= 2
	}
	out := make([][]*endpoint.Endpoint, k)
	for i, h := range hashes {
		s := h & uint32(k-1)
		out[s] = append(out[s], eps[i])
	}
	return out
}

// nameHash is FNV-1a of a DNS name: stable across releases and processes, as shard assignment
// must be.
func nameHash(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

// recordBytes is about the size of a record encoded as JSON in a DNSEndpoint: field names, quotes
// and separators included, rounded up.
func recordBytes(ep *endpoint.Endpoint) int {
	n := 48 + len(ep.DNSName) + len(ep.RecordType) // {"dnsName":"","targets":[],"recordType":""}
	for _, t := range ep.Targets {
		n += len(t) + 3
	}
	if ep.SetIdentifier != "" {
		n += 19 + len(ep.SetIdentifier)
	}
	if ep.RecordTTL != 0 {
		n += 14 + len(strconv.FormatInt(int64(ep.RecordTTL), 10))
	}
	for k, v := range ep.Labels {
		n += 6 + len(k) + len(v) + 12
	}
	for _, p := range ep.ProviderSpecific {
		n += 24 + len(p.Name) + len(p.Value) + 20
	}
	return n
}

// shardName is the name of shard i of the DNSEndpoints named base: the first keeps base, the
// name of the one DNSEndpoint of an owner before shards were.
func shardName(base string, i int) string {
	if i == 0 {
		return base
	}
	return base + "-" + strconv.Itoa(i)
}

// shardIndex is the shard name's index among those named base, if it is one of them.
func shardIndex(name, base string) (int, bool) {
	if name == base {
		return 0, true
	}
	rest, ok := strings.CutPrefix(name, base+"-")
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(rest)
	if err != nil || i <= 0 || strconv.Itoa(i) != rest {
		return 0, false
	}
	return i, true
}

// sameRecords compares two record lists by their published fields, as JSON would: nil and empty
// alike. Encoding both to compare them took a JSON encoding of every record of the owner per pass.
func sameRecords(a, b []*endpoint.Endpoint) bool {
	return slices.EqualFunc(a, b, func(x, y *endpoint.Endpoint) bool {
		if x == y {
			return true // shared: remembered as the pipeline's records
		}
		if x == nil || y == nil {
			return false
		}
		return x.DNSName == y.DNSName && slices.Equal(x.Targets, y.Targets) && x.RecordType == y.RecordType &&
			x.SetIdentifier == y.SetIdentifier && x.RecordTTL == y.RecordTTL && maps.Equal(x.Labels, y.Labels) &&
			slices.Equal(x.ProviderSpecific, y.ProviderSpecific)
	})
}

// endpointsOf are the records of objs together.
func endpointsOf(objs []*dnsv1a1.DNSEndpoint) []*endpoint.Endpoint {
	if len(objs) == 1 {
		return objs[0].Spec.Endpoints
	}
	var out []*endpoint.Endpoint
	for _, obj := range objs {
		out = append(out, obj.Spec.Endpoints...)
	}
	return out
}
