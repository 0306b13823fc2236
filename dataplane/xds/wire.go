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
	"encoding/json"
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

// encodeConfig marshals cfg into the Any carried in a DiscoveryResponse.
func encodeConfig(cfg *ir.Config) (*anypb.Any, error) {
	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("encode config of gateway %q: %w", cfg.Gateway, err)
	}
	value, err := proto.Marshal(wrapperspb.Bytes(raw))
	if err != nil {
		return nil, fmt.Errorf("wrap config of gateway %q: %w", cfg.Gateway, err)
	}
	return &anypb.Any{TypeUrl: TypeURL, Value: value}, nil
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
