// Package wirev1 plays both ends of fleetgate's wire version 1, the xDS protocol of the releases
// before wire versions existed, frozen as fleetgate commit 3c9e286 spoke it: a proxy (Subscribe,
// Stream.Receive) that subscribes and decodes exactly as that release's dataplane/xds.Client did,
// and a server (Server) that replays a response recorded from that release's dataplane/xds.Server.
// Tests use it to prove that the current operator serves proxies of that release and that the
// current proxy gets its config from an operator of that release.
//
// Nothing here may change with the current code: it is copied, not imported (the JSON schema in
// schema.go included), so that a change of dataplane/xds or dataplane/ir cannot change what the
// old release does.
package wirev1

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// TypeURL is the only type wire version 1 knows: the subscription's, every response's and every
// resource's.
const TypeURL = "type.googleapis.com/fleetgate.dev.ir.Config"

const (
	baseName   = "base"
	hostPrefix = "host/"
)

// Update is one decoded response, as ir.Update was in that release.
type Update struct {
	Gateway string
	Version uint64
	Base    *Config
	Hosts   []ListenerHost
	Removed []HostKey
}

// HostKey names one virtual host of a config.
type HostKey struct {
	Listener string
	Hostname string
}

// ListenerHost is a virtual host of the named listener.
type ListenerHost struct {
	Listener string
	Host     VirtualHost
}

// Stream is one old proxy's subscription.
type Stream struct {
	// Last is the last response received, to compare with a recording.
	Last    *discoveryv3.DeltaDiscoveryResponse
	gateway string
	s       discoveryv3.AggregatedDiscoveryService_DeltaAggregatedResourcesClient
}

// Subscribe opens a stream on conn and subscribes to gateway as node, holding initial (resource
// versions, and the config version under the gateway key), as the old client's first request did.
func Subscribe(ctx context.Context, conn grpc.ClientConnInterface, gateway, node string, initial map[string]string) (*Stream, error) {
	s, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).DeltaAggregatedResources(ctx)
	if err != nil {
		return nil, fmt.Errorf("open stream: %w", err)
	}
	sub := &discoveryv3.DeltaDiscoveryRequest{
		Node:                    &corev3.Node{Id: node, Cluster: gateway},
		TypeUrl:                 TypeURL,
		ResourceNamesSubscribe:  []string{gateway},
		InitialResourceVersions: initial,
	}
	if err := s.Send(sub); err != nil {
		return nil, fmt.Errorf("subscribe: %w", err)
	}
	return &Stream{gateway: gateway, s: s}, nil
}

// Receive waits for the next response and decodes it with the old rules; check (nil for none)
// stands for the old proxy's validation. The response is ACKed, or NACKed with the decoding or
// check error, which Receive then returns with the update (nil when decoding failed). A stream
// error (the server ending the stream) is returned as is.
func (s *Stream) Receive(check func(*Update) error) (*Update, error) {
	resp, err := s.s.Recv()
	if err != nil {
		return nil, fmt.Errorf("receive: %w", err)
	}
	s.Last = resp
	ack := &discoveryv3.DeltaDiscoveryRequest{TypeUrl: TypeURL, ResponseNonce: resp.GetNonce()}
	u, rejected := decodeResponse(resp, s.gateway)
	if rejected == nil && check != nil {
		rejected = check(u)
	}
	if rejected != nil {
		ack.ErrorDetail = &statuspb.Status{Code: int32(codes.InvalidArgument), Message: rejected.Error()}
	}
	if err := s.s.Send(ack); err != nil {
		return u, fmt.Errorf("acknowledge: %w", err)
	}
	return u, rejected
}

// decodeResponse is the old release's, into the frozen schema.
func decodeResponse(resp *discoveryv3.DeltaDiscoveryResponse, gateway string) (*Update, error) {
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
	u := &Update{Gateway: gateway, Version: v}
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
			var base Config
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
		h := ListenerHost{Listener: k.Listener}
		if err := json.Unmarshal(raw, &h.Host); err != nil {
			return nil, fmt.Errorf("resource %q: %w", r.GetName(), err)
		}
		if h.Host.Hostname != k.Hostname {
			return nil, fmt.Errorf("resource %q holds host %q", r.GetName(), h.Host.Hostname)
		}
		u.Hosts = append(u.Hosts, h)
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

func parseHostName(name string) (HostKey, bool) {
	rest, ok := strings.CutPrefix(name, hostPrefix)
	i := strings.LastIndexByte(rest, '/')
	if !ok || i < 0 {
		return HostKey{}, false
	}
	return HostKey{Listener: rest[:i], Hostname: rest[i+1:]}, true
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

// Config is the config a proxy holds after applying u as its first update: the base with the
// hosts in their listeners, as the old proxy's Patch made it.
func (u *Update) Config() (*Config, error) {
	if u.Base == nil {
		return nil, fmt.Errorf("update to version %d has no base", u.Version)
	}
	cfg := *u.Base
	cfg.Gateway, cfg.Version = u.Gateway, u.Version
	cfg.Listeners = append([]Listener(nil), u.Base.Listeners...)
	for _, h := range u.Hosts {
		i := slices.IndexFunc(cfg.Listeners, func(l Listener) bool { return l.Name == h.Listener })
		if i < 0 {
			return nil, fmt.Errorf("listener %q: hosts for a listener the config does not have", h.Listener)
		}
		cfg.Listeners[i].VirtualHosts = append(cfg.Listeners[i].VirtualHosts, h.Host)
	}
	return &cfg, nil
}
