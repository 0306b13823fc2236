// Package xds delivers versioned dataplane configs (ir.Config) from the operator to its proxies and
// reports which versions each proxy replica accepted or rejected.
//
// The transport is the incremental (delta) variant of the xDS aggregated discovery service
// (envoy.service.discovery.v3 DeltaAggregatedResources) over gRPC with mutual TLS, so that a change
// of one virtual host sends that host only. Each stream subscribes to exactly one gateway: the first
// request's resource_names_subscribe holds the gateway key alone, and its type_url is TypeURL. A
// gateway's config is split into resources of that type, each a JSON document wrapped in a
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
package xds

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// TypeURL is the xDS resource type of the pieces of a fleetgate gateway config.
const TypeURL = "type.googleapis.com/fleetgate.dev.ir.Config"

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

func (e encoded) resource(name string) *discoveryv3.Resource {
	return &discoveryv3.Resource{Name: name, Version: e.version, Resource: &anypb.Any{TypeUrl: TypeURL, Value: e.value}}
}

// decodeResponse turns a response for gateway into an ir.Update; tick (may be nil) is called after
// each virtual host, to pace the decoding.
func decodeResponse(resp *discoveryv3.DeltaDiscoveryResponse, gateway string, tick func()) (*ir.Update, error) {
	if resp.GetTypeUrl() != TypeURL {
		return nil, fmt.Errorf("unexpected type %q", resp.GetTypeUrl())
	}
	v, err := parseVersion(resp.GetSystemVersionInfo())
	if err != nil {
		return nil, err
	}
	if v == 0 {
		return nil, errors.New("response without a version")
	}
	u := &ir.Update{Gateway: gateway, Version: v}
	for _, r := range resp.GetResources() {
		if t := r.GetResource().GetTypeUrl(); t != TypeURL {
			return nil, fmt.Errorf("resource %q: unexpected type %q", r.GetName(), t)
		}
		var wrapped wrapperspb.BytesValue
		if err := proto.Unmarshal(r.GetResource().GetValue(), &wrapped); err != nil {
			return nil, fmt.Errorf("resource %q: unwrap: %w", r.GetName(), err)
		}
		raw := wrapped.GetValue()
		if r.GetName() == baseName {
			var base ir.Config
			if err := json.Unmarshal(raw, &base); err != nil {
				return nil, fmt.Errorf("resource %q: %w", baseName, err)
			}
			if base.Gateway != gateway {
				return nil, fmt.Errorf("config is for gateway %q, subscribed to %q", base.Gateway, gateway)
			}
			for _, l := range base.Listeners {
				if len(l.VirtualHosts) > 0 {
					return nil, fmt.Errorf("resource %q: listener %q holds virtual hosts", baseName, l.Name)
				}
			}
			u.Base = &base
			continue
		}
		k, ok := parseHostName(r.GetName())
		if !ok {
			return nil, fmt.Errorf("unknown resource %q", r.GetName())
		}
		h := ir.ListenerHost{Listener: k.Listener}
		if err := json.Unmarshal(raw, &h.Host); err != nil {
			return nil, fmt.Errorf("resource %q: %w", r.GetName(), err)
		}
		if h.Host.Hostname != k.Hostname {
			return nil, fmt.Errorf("resource %q holds host %q", r.GetName(), h.Host.Hostname)
		}
		u.Hosts = append(u.Hosts, h)
		if tick != nil {
			tick()
		}
	}
	for _, name := range resp.GetRemovedResources() {
		k, ok := parseHostName(name)
		if !ok {
			return nil, fmt.Errorf("cannot remove resource %q", name)
		}
		u.Removed = append(u.Removed, k)
	}
	return u, nil
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
