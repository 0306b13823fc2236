package xds

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"sync/atomic"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/go-logr/logr"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"

	"github.com/fleetgate/fleetgate/dataplane/ir"
	"github.com/fleetgate/fleetgate/dataplane/pace"
)

// maxConfigSize bounds one message: a response carrying a whole config, or a reconnecting proxy's
// list of what it holds.
const maxConfigSize = 256 << 20

// ClientOptions configure a Client.
type ClientOptions struct {
	// Address is the config server's host:port.
	Address string
	// TLS presents the proxy's client certificate and trusts the operator's CA; see ClientTLSConfig.
	TLS *tls.Config
	// Gateway is the key of the gateway to serve, which the client certificate must name.
	Gateway string
	// Node identifies this proxy replica, e.g. its pod name.
	Node string
	// Apply validates and installs an update of the config in service (the first carries a base);
	// an error rejects (NACKs) it and the previous config stays in service.
	Apply  func(*ir.Update) error
	Logger logr.Logger
	// WireVersions are the wire versions announced to the server; nil means every version this
	// build speaks (WireVersions). Tests set it to play a proxy of another release.
	WireVersions []WireVersion
	// MinBackoff and MaxBackoff bound the exponential delay between reconnection attempts;
	// zero means 250ms and 30s.
	MinBackoff time.Duration
	MaxBackoff time.Duration
}

// Client receives the configs of one gateway and ACKs or NACKs each. It runs in the proxy.
type Client struct {
	opts    ClientOptions
	log     logr.Logger
	applied atomic.Uint64 // version of the config in service, 0 before the first
	// wire is the wire version of the config in service, 0 before the first.
	wire atomic.Int64
	// held are the versions of the resources in service, by name; used only by Run.
	held map[string]string
}

// NewClient checks opts and returns a Client; start it with Run.
func NewClient(opts ClientOptions) (*Client, error) {
	switch {
	case opts.Address == "":
		return nil, errors.New("xds client: no address")
	case opts.TLS == nil:
		return nil, errors.New("xds client: no TLS configuration")
	case opts.Gateway == "":
		return nil, errors.New("xds client: no gateway")
	case opts.Node == "":
		return nil, errors.New("xds client: no node")
	case opts.Apply == nil:
		return nil, errors.New("xds client: no Apply function")
	}
	wire, err := checkWireVersions(opts.WireVersions)
	if err != nil {
		return nil, fmt.Errorf("xds client: %w", err)
	}
	opts.WireVersions = wire
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = 250 * time.Millisecond
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = 30 * time.Second
	}
	if opts.MaxBackoff < opts.MinBackoff {
		opts.MaxBackoff = opts.MinBackoff
	}
	return &Client{opts: opts, log: opts.Logger.WithValues("gateway", opts.Gateway, "node", opts.Node), held: map[string]string{}}, nil
}

// Version returns the version of the config in service, 0 before the first was applied.
func (c *Client) Version() uint64 { return c.applied.Load() }

// WireVersion returns the wire version the config in service came in, 0 before the first.
func (c *Client) WireVersion() WireVersion { return WireVersion(c.wire.Load()) }

// Run keeps a subscription open until ctx is done, reconnecting with capped exponential backoff
// after any failure, and returns nil then. It must not be called twice at the same time.
func (c *Client) Run(ctx context.Context) error {
	conn, err := grpc.NewClient(c.opts.Address,
		grpc.WithTransportCredentials(credentials.NewTLS(c.opts.TLS)),
		// Keep gRPC's own reconnection within our bounds: its default backoff grows to two minutes.
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff: backoff.Config{
				BaseDelay:  c.opts.MinBackoff,
				Multiplier: 1.6,
				Jitter:     0.2,
				MaxDelay:   c.opts.MaxBackoff,
			},
			MinConnectTimeout: 5 * time.Second,
		}),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 30 * time.Second, Timeout: 10 * time.Second, PermitWithoutStream: true}),
		// A config carries every route and certificate of a gateway; gRPC's default 4 MiB is too small.
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxConfigSize)),
	)
	if err != nil {
		return fmt.Errorf("xds client for %s: %w", c.opts.Address, err)
	}
	defer conn.Close()
	ads := discoveryv3.NewAggregatedDiscoveryServiceClient(conn)

	delay := c.opts.MinBackoff
	for {
		received, err := c.stream(ctx, ads)
		if ctx.Err() != nil {
			return nil
		}
		if received {
			delay = c.opts.MinBackoff // the server was healthy: retry promptly
		}
		wait := jitter(delay)
		if status.Code(err) == codes.FailedPrecondition {
			// Refused, e.g. for want of a common wire version: nothing to retry promptly for, but the
			// server may be upgraded or rolled back meanwhile.
			c.log.Error(err, "Config server refused this proxy, retrying", "after", wait, "wireVersions", formatWireVersions(c.opts.WireVersions))
		} else {
			c.log.Info("Config stream ended, reconnecting", "error", err, "after", wait)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		delay = min(delay*2, c.opts.MaxBackoff)
	}
}

// stream runs one subscription until it fails. received reports whether any response arrived.
func (c *Client) stream(ctx context.Context, ads discoveryv3.AggregatedDiscoveryServiceClient) (received bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := ads.DeltaAggregatedResources(ctx)
	if err != nil {
		return false, fmt.Errorf("open stream: %w", err)
	}
	// What the proxy holds lets the server send only the difference, and its version lets the
	// server continue above it after a restart.
	initial := make(map[string]string, len(c.held)+1)
	maps.Copy(initial, c.held)
	if v := c.applied.Load(); v != 0 {
		initial[c.opts.Gateway] = formatVersion(v)
	}
	sub := &discoveryv3.DeltaDiscoveryRequest{
		Node:                    &corev3.Node{Id: c.opts.Node, Cluster: c.opts.Gateway, ClientFeatures: clientFeatures(c.opts.WireVersions)},
		TypeUrl:                 TypeURL,
		ResourceNamesSubscribe:  []string{c.opts.Gateway},
		InitialResourceVersions: initial,
	}
	if err := stream.Send(sub); err != nil {
		return false, fmt.Errorf("subscribe: %w", err)
	}
	for {
		resp, err := stream.Recv()
		if err != nil {
			return received, fmt.Errorf("receive: %w", err)
		}
		received = true
		ack := &discoveryv3.DeltaDiscoveryRequest{TypeUrl: TypeURL, ResponseNonce: resp.GetNonce()}
		if err := c.apply(resp); err != nil {
			c.log.Info("Rejected config", "version", resp.GetSystemVersionInfo(), "reason", err.Error())
			ack.ErrorDetail = &statuspb.Status{Code: int32(codes.InvalidArgument), Message: err.Error()}
		} else {
			c.log.V(1).Info("Applied config", "version", resp.GetSystemVersionInfo(),
				"resources", len(resp.GetResources()), "removed", len(resp.GetRemovedResources()))
		}
		if err := stream.Send(ack); err != nil {
			return received, fmt.Errorf("acknowledge: %w", err)
		}
	}
}

func (c *Client) apply(resp *discoveryv3.DeltaDiscoveryResponse) error {
	// Once a config is served, decoding the next shares the proxy's core with its requests.
	var tick func()
	if c.applied.Load() != 0 {
		tick = pace.New().Tick
	}
	u, wire, err := decodeResponse(resp, c.opts.Gateway, c.opts.WireVersions, tick)
	if err != nil {
		return err
	}
	if u.Version <= c.applied.Load() {
		return fmt.Errorf("version %d does not follow %d", u.Version, c.applied.Load())
	}
	if err := c.opts.Apply(u); err != nil {
		return err
	}
	for _, r := range resp.GetResources() {
		c.held[r.GetName()] = r.GetVersion()
	}
	for _, name := range resp.GetRemovedResources() {
		delete(c.held, name)
	}
	if wire != 0 {
		c.wire.Store(int64(wire)) // first: whoever sees the version sees its wire version
	}
	c.applied.Store(u.Version)
	return nil
}

// jitter spreads reconnections of many replicas by ±20%.
func jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}
