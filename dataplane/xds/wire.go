// Package xds delivers versioned dataplane configs (ir.Config) from the operator to its proxies and
// reports which versions each proxy replica accepted or rejected.
//
// The transport is the xDS aggregated discovery service (envoy.service.discovery.v3, state of the
// world) over gRPC with mutual TLS. Each stream subscribes to exactly one gateway: the single resource
// name is the gateway key and the resource type is TypeURL, whose payload is the JSON of ir.Config
// wrapped in a google.protobuf.BytesValue, so no protobuf code generation is needed. ACK and NACK
// follow xDS: the proxy echoes the response nonce, with version_info set to the version it applied,
// and error_detail set when it rejected the config.
package xds

import (
	"bytes"
	"fmt"
	"strconv"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// TypeURL is the xDS resource type of a fleetgate gateway config.
const TypeURL = "type.googleapis.com/fleetgate.dev.ir.Config"

// encodeConfig wraps the JSON of a config, unversioned (as SetConfig's key holds it), stamped with
// version v, into the Any carried in a DiscoveryResponse. Stamping edits the JSON instead of
// encoding the whole config a second time: configs of thousands of routes take milliseconds to
// encode, and this runs for every change.
func encodeConfig(unversioned []byte, v uint64) (*anypb.Any, error) {
	raw, err := stampVersion(unversioned, v)
	if err != nil {
		return nil, err
	}
	value, err := proto.Marshal(wrapperspb.Bytes(raw))
	if err != nil {
		return nil, fmt.Errorf("wrap config: %w", err)
	}
	return &anypb.Any{TypeUrl: TypeURL, Value: value}, nil
}

// versionZero is how the JSON of an unversioned ir.Config starts its version field. The first
// occurrence is that field: the only member before it is the gateway string, inside which every
// quote is escaped.
var versionZero = []byte(`"version":0`)

// stampVersion returns the JSON of an unversioned ir.Config with its version set to v.
func stampVersion(unversioned []byte, v uint64) ([]byte, error) {
	i := bytes.Index(unversioned, versionZero)
	if i < 0 {
		return nil, fmt.Errorf("encoded config has no version field")
	}
	out := make([]byte, 0, len(unversioned)+20)
	out = append(out, unversioned[:i]...)
	out = append(out, `"version":`...)
	out = strconv.AppendUint(out, v, 10)
	return append(out, unversioned[i+len(versionZero):]...), nil
}

// decodeResponse extracts the single config of a DiscoveryResponse for gateway; tick (may be nil)
// paces the decoding (ir.DecodeJSON).
func decodeResponse(resp *discoveryv3.DiscoveryResponse, gateway string, tick func()) (*ir.Config, error) {
	if resp.GetTypeUrl() != TypeURL {
		return nil, fmt.Errorf("unexpected type %q", resp.GetTypeUrl())
	}
	if n := len(resp.GetResources()); n != 1 {
		return nil, fmt.Errorf("want exactly one resource, got %d", n)
	}
	res := resp.GetResources()[0]
	if res.GetTypeUrl() != TypeURL {
		return nil, fmt.Errorf("unexpected resource type %q", res.GetTypeUrl())
	}
	var wrapped wrapperspb.BytesValue
	if err := proto.Unmarshal(res.GetValue(), &wrapped); err != nil {
		return nil, fmt.Errorf("unwrap config: %w", err)
	}
	cfg, err := ir.DecodeJSON(wrapped.GetValue(), tick)
	if err != nil {
		return nil, fmt.Errorf("decode config: %w", err)
	}
	if cfg.Gateway != gateway {
		return nil, fmt.Errorf("config is for gateway %q, subscribed to %q", cfg.Gateway, gateway)
	}
	v, err := parseVersion(resp.GetVersionInfo())
	if err != nil {
		return nil, err
	}
	if v != cfg.Version {
		return nil, fmt.Errorf("version_info %d does not match config version %d", v, cfg.Version)
	}
	return cfg, nil
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
		return 0, fmt.Errorf("parse version_info %q: %w", s, err)
	}
	return v, nil
}
