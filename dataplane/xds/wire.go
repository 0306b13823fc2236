// Package xds delivers versioned dataplane configs (ir.Config) from the operator to its proxies and
// reports which versions each proxy replica accepted or rejected.
//
// The transport is the incremental (delta) variant of the xDS aggregated discovery service
// (envoy.service.discovery.v3 DeltaAggregatedResources) over gRPC with mutual TLS, so that a change
// of one virtual host sends that host only. Each stream subscribes to exactly one gateway: the first
// request's resource_names_subscribe holds the gateway key alone, and its type_url is TypeURL. A
// gateway's config is split into resources, each a JSON document wrapped in a
// google.protobuf.BytesValue (no protobuf code generation is needed):
//
//   - "base": the ir.Config without version and without virtual hosts (ir.BaseOf);
//   - "host/<listener>/<hostname>": one ir.VirtualHost of that listener.
//
// A resource's version is a hash of its bytes. Each response carries one config version in
// system_version_info, the resources changed since what the proxy holds and the names of those it
// must drop; a response without either only restamps the version. The server sends the next
// response only once the proxy answered the last: an ACK echoes the response nonce, a NACK adds
// error_detail, and the proxy then keeps serving what it had. A reconnecting proxy lists what it
// holds in initial_resource_versions, resource by resource, and under the gateway key the config
// version it serves; the server sends the difference, and continues above that version if it is
// behind.
//
// # Wire versions
//
// A wire version (WireVersion) names both the JSON schema of the resources and the rules above, so
// that an operator and proxies one release apart interoperate during a rolling upgrade, in either
// order. Every build speaks the current version N and the previous one N-1 (WireVersions):
//
//   - WireV1 is the protocol of the releases before wire versions existed, frozen in
//     testdata/wire/v1 and internal/wirev1: the proxy announces nothing, and the subscription, every
//     response and every resource have type TypeURL.
//   - WireV2 has WireV1's schema and rules; what it adds is the negotiation below. Its resources
//     have type TypeURLV2.
//
// A proxy announces every version it speaks in its first request's node.client_features, as
// "fleetgate.dev/wire/v<N>"; a node announcing none speaks WireV1. The announcement goes there, not
// into the subscription's type_url, because a proxy can announce several versions there in one
// request, and because a server that predates versions ignores client features: a new proxy then
// subscribes exactly as an old one does and is served WireV1, which it still speaks. (A new
// type_url would be refused by that server, and one stream subscribes with one type_url.)
//
// The server serves each stream the newest version that both it and the proxy speak, fixed for the
// stream's life. Subscription, ACKs and responses keep type_url TypeURL (it names the stream's
// content, a gateway's config); the type URL of each resource's Any names the version its JSON is
// encoded in, so a proxy decodes by it and NACKs a resource of a version it did not announce.
//
// When they have no version in common (two releases apart), the server refuses the stream with
// codes.FailedPrecondition and a message naming both sides' versions and which side to upgrade,
// logs it and counts it (fleetgate_xds_wire_refusals_total, see Server.Collector). The proxy logs
// the refusal as an error and keeps retrying with backoff, since the other side may be upgraded
// next. The server reports the refused replica in Status (ReplicaStatus.Refused) until the same
// node subscribes with a common version, or for RefusalTTL after its last attempt; meanwhile
// Programmed and Acknowledged refuse the gateway (rejected, as for a NACK), so the Gateway's
// Programmed condition says Invalid with that message, through the same path as a NACK.
//
// # Changing the schema
//
// The proxy decodes resources with encoding/json (ir has no strict decoding: ir.DecodeJSON
// decodes as json.Unmarshal does), which ignores unknown fields. So:
//
//   - A field that a proxy of N-1 may safely ignore (a hint, something only the operator or a cloud
//     provider reads) is added to ir without a new wire version. It must be omitted when unset
//     (omitempty or omitzero), so that a config not using it encodes byte for byte as before (TestWireV1ProxyOnCurrentServer
//     holds that to the frozen recording): resource hashes stay valid across an upgrade.
//   - A field whose being ignored changes what the proxy serves (a new match, filter, security
//     setting, or a default that changes meaning when absent) needs a new wire version N+1. For a
//     stream of N, the server down-converts: it encodes the config in N's schema when the config
//     does not use the field (its absence keeps N's behaviour), and otherwise refuses that proxy
//     the config as if it had NACKed it, with a reason naming the field, instead of letting it
//     serve something else. The encoded resources are then kept per version spoken by a connected
//     proxy (at most two).
//   - Removing or renaming a field, or changing its meaning, is a new version too.
//
// A release drops a version only once the release before it already spoke its successor, so that
// adjacent releases always share one.
//
// A new version adds a WireVersion constant, its type URL and feature, its decoding in the client
// and its encoding in the server; the oldest is dropped from WireVersions, and its frozen fixture
// kept for the tests of the refusal.
package xds

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// TypeURL is the type of a fleetgate config stream (its subscription, ACKs and responses) and of
// the resources of WireV1.
const TypeURL = "type.googleapis.com/fleetgate.dev.ir.Config"

// TypeURLV2 is the type of the resources of WireV2.
const TypeURLV2 = "type.googleapis.com/fleetgate.dev.ir.v2.Config"

// WireVersion is a version of the protocol between operator and proxy: the JSON schema of the
// resources and the transport's rules (see the package documentation).
type WireVersion int

const (
	// WireV1 is the protocol of the releases before wire versions: nothing announced, type TypeURL.
	WireV1 WireVersion = 1
	// WireV2 is WireV1 with version negotiation; its resources have type TypeURLV2.
	WireV2 WireVersion = 2
)

// WireVersions returns the versions this build speaks, newest first.
func WireVersions() []WireVersion { return []WireVersion{WireV2, WireV1} }

// wireFeature prefixes the client feature announcing a wire version: "fleetgate.dev/wire/v2".
const wireFeature = "fleetgate.dev/wire/v"

func (v WireVersion) String() string { return "v" + strconv.Itoa(int(v)) }

// typeURL is the type of v's resources; "" for a version this build does not speak.
func (v WireVersion) typeURL() string {
	switch v {
	case WireV1:
		return TypeURL
	case WireV2:
		return TypeURLV2
	}
	return ""
}

// checkWireVersions returns the versions to speak: every version this build speaks when vs is
// empty, else vs, which must hold only such versions.
func checkWireVersions(vs []WireVersion) ([]WireVersion, error) {
	if len(vs) == 0 {
		return WireVersions(), nil
	}
	for _, v := range vs {
		if v.typeURL() == "" {
			return nil, fmt.Errorf("wire version %s is not one this build speaks (%s)", v, formatWireVersions(WireVersions()))
		}
	}
	return vs, nil
}

// clientFeatures announces vs in a node's client_features.
func clientFeatures(vs []WireVersion) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = wireFeature + strconv.Itoa(int(v))
	}
	return out
}

// maxAnnounced bounds the versions taken from one proxy's announcement; a proxy speaks two.
const maxAnnounced = 4

// announcedWireVersions returns the versions a proxy's client features announce, unknown ones
// included (to name them in a refusal); a proxy announcing none speaks WireV1.
func announcedWireVersions(features []string) []WireVersion {
	var out []WireVersion
	for _, f := range features {
		n, ok := strings.CutPrefix(f, wireFeature)
		if !ok {
			continue
		}
		if v, err := strconv.Atoi(n); err == nil && v > 0 && !slices.Contains(out, WireVersion(v)) {
			out = append(out, WireVersion(v))
		}
		if len(out) == maxAnnounced {
			break // the list ends up in a refusal, hence in the Gateway's status
		}
	}
	if len(out) == 0 {
		return []WireVersion{WireV1}
	}
	return out
}

// negotiate returns the newest version both sides speak; otherwise why there is none, telling
// which side to upgrade.
func negotiate(server, proxy []WireVersion) (WireVersion, error) {
	best := WireVersion(0)
	for _, v := range proxy {
		if v > best && slices.Contains(server, v) {
			best = v
		}
	}
	if best != 0 {
		return best, nil
	}
	advice := "upgrade the proxy"
	if slices.Max(proxy) > slices.Max(server) {
		advice = "upgrade the operator or roll the proxy back"
	}
	return 0, fmt.Errorf("no common wire version: the proxy speaks %s, this operator %s; %s",
		formatWireVersions(proxy), formatWireVersions(server), advice)
}

func formatWireVersions(vs []WireVersion) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = v.String()
	}
	return strings.Join(s, ", ")
}

const (
	baseName   = "base"
	hostPrefix = "host/"
)

// hostName is the resource name of a virtual host. Hostnames hold no "/", so the last one splits.
func hostName(listener, hostname string) string {
	return hostPrefix + listener + "/" + hostname
}

func parseHostName(name string) (ir.HostKey, bool) {
	rest, ok := strings.CutPrefix(name, hostPrefix)
	i := strings.LastIndexByte(rest, '/')
	if !ok || i < 0 {
		return ir.HostKey{}, false
	}
	return ir.HostKey{Listener: rest[:i], Hostname: rest[i+1:]}, true
}

// encoded is one resource ready to send.
type encoded struct {
	version string // hash of value
	value   []byte // the BytesValue wrapping the JSON
}

// encode wraps the JSON of v (plain data: encoding cannot fail but for a programming error).
func encode(v any) (encoded, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return encoded{}, fmt.Errorf("encode resource: %w", err)
	}
	value, err := proto.Marshal(wrapperspb.Bytes(raw))
	if err != nil {
		return encoded{}, fmt.Errorf("wrap resource: %w", err)
	}
	sum := sha256.Sum256(raw)
	return encoded{version: hex.EncodeToString(sum[:16]), value: value}, nil
}

// resource is e as a resource of wire version v. Every version this build speaks has the same
// schema, so only the type differs.
func (e encoded) resource(name string, v WireVersion) *discoveryv3.Resource {
	return &discoveryv3.Resource{Name: name, Version: e.version, Resource: &anypb.Any{TypeUrl: v.typeURL(), Value: e.value}}
}

// wireOf returns the version of the resource type t among those a proxy speaks.
func wireOf(t string, speaks []WireVersion) (WireVersion, bool) {
	for _, v := range speaks {
		if v.typeURL() == t {
			return v, true
		}
	}
	return 0, false
}

// decodeResponse turns a response for gateway into an ir.Update, taking resources of the wire
// versions speaks only, and returns the version they had (0 when the response has none); tick (may
// be nil) is called after each virtual host, to pace the decoding.
func decodeResponse(resp *discoveryv3.DeltaDiscoveryResponse, gateway string, speaks []WireVersion, tick func()) (*ir.Update, WireVersion, error) {
	if resp.GetTypeUrl() != TypeURL {
		return nil, 0, fmt.Errorf("unexpected type %q", resp.GetTypeUrl())
	}
	v, err := parseVersion(resp.GetSystemVersionInfo())
	if err != nil {
		return nil, 0, err
	}
	if v == 0 {
		return nil, 0, errors.New("response without a version")
	}
	u := &ir.Update{Gateway: gateway, Version: v}
	var wire WireVersion
	for _, r := range resp.GetResources() {
		t := r.GetResource().GetTypeUrl()
		rv, ok := wireOf(t, speaks)
		switch {
		case !ok:
			return nil, 0, fmt.Errorf("resource %q: type %q is of no wire version this proxy speaks (%s)", r.GetName(), t, formatWireVersions(speaks))
		case wire != 0 && rv != wire:
			return nil, 0, fmt.Errorf("resource %q: wire version %s in a response of %s", r.GetName(), rv, wire)
		}
		wire = rv
		var wrapped wrapperspb.BytesValue
		if err := proto.Unmarshal(r.GetResource().GetValue(), &wrapped); err != nil {
			return nil, 0, fmt.Errorf("resource %q: unwrap: %w", r.GetName(), err)
		}
		raw := wrapped.GetValue()
		if r.GetName() == baseName {
			var base ir.Config
			if err := json.Unmarshal(raw, &base); err != nil {
				return nil, 0, fmt.Errorf("resource %q: %w", baseName, err)
			}
			if base.Gateway != gateway {
				return nil, 0, fmt.Errorf("config is for gateway %q, subscribed to %q", base.Gateway, gateway)
			}
			for _, l := range base.Listeners {
				if len(l.VirtualHosts) > 0 {
					return nil, 0, fmt.Errorf("resource %q: listener %q holds virtual hosts", baseName, l.Name)
				}
			}
			u.Base = &base
			continue
		}
		k, ok := parseHostName(r.GetName())
		if !ok {
			return nil, 0, fmt.Errorf("unknown resource %q", r.GetName())
		}
		host, err := ir.DecodeHost(raw)
		if err != nil {
			return nil, 0, fmt.Errorf("resource %q: %w", r.GetName(), err)
		}
		h := ir.ListenerHost{Listener: k.Listener, Host: host}
		if h.Host.Hostname != k.Hostname {
			return nil, 0, fmt.Errorf("resource %q holds host %q", r.GetName(), h.Host.Hostname)
		}
		u.Hosts = append(u.Hosts, h)
		if tick != nil {
			tick()
		}
	}
	for _, name := range resp.GetRemovedResources() {
		k, ok := parseHostName(name)
		if !ok {
			return nil, 0, fmt.Errorf("cannot remove resource %q", name)
		}
		u.Removed = append(u.Removed, k)
	}
	return u, wire, nil
}

// formatVersion renders a config version as xDS version_info; 0 (nothing applied) is "".
func formatVersion(v uint64) string {
	if v == 0 {
		return ""
	}
	return strconv.FormatUint(v, 10)
}

func parseVersion(s string) (uint64, error) {
	if s == "" {
		return 0, nil
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse version %q: %w", s, err)
	}
	return v, nil
}
