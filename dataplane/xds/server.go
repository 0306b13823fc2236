package xds

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"strings"
	"sync"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/go-logr/logr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// ServerOptions configure a Server.
type ServerOptions struct {
	// TLS must present the server certificate and require client certificates signed by the
	// operator's CA; see ServerTLSConfig.
	TLS    *tls.Config
	Logger logr.Logger
	// OnChange, when set, is called after anything that may change Status(gateway) behind its
	// caller's back: an ACK, a NACK, a replica connecting or leaving, a version restamped for a
	// reconnecting proxy. SetConfig and RemoveGateway do not call it: their caller knows, and
	// re-running a whole reconcile for its own change would double the work of every change. It is
	// called without locks held from the goroutine that caused the change, so it must return
	// quickly (e.g. enqueue a reconcile).
	OnChange func(gateway string)
}

// Server serves configs to proxies and tracks what each replica acknowledged. It runs in the
// operator; its state lives in memory and is rebuilt after a restart from SetConfig calls and the
// versions reconnecting proxies report.
type Server struct {
	opts ServerOptions
	log  logr.Logger
	// epoch identifies this server instance in nonces, so that a proxy reconnecting to the same
	// instance with the current version need not be sent it again.
	epoch string

	mu       sync.Mutex
	gateways map[string]*gatewayState
}

type gatewayState struct {
	// version is the highest version stamped here or reported by a proxy; the next config gets
	// version+1 so that versions never go backwards for a proxy, even across operator restarts.
	version uint64
	cfg     *ir.Config // current config (cfg.Version <= version), nil when none
	res     *anypb.Any // cfg encoded
	key     []byte     // JSON of cfg without its version, to skip unchanged configs
	subs    map[*subscription]struct{}
}

// subscription is one proxy stream; its fields are guarded by Server.mu.
type subscription struct {
	gateway string
	node    string
	notify  chan struct{} // capacity 1: "a newer config may be available"
	evicted chan struct{} // closed when a newer stream of the same node replaces this one
	acked   uint64
	nacked  uint64
	reason  string
}

// ReplicaStatus is what one connected proxy replica last did with the configs sent to it.
type ReplicaStatus struct {
	Node  string
	Acked uint64
	// Nacked and NackReason describe the replica's latest rejection of a version newer than Acked;
	// both are cleared once the replica ACKs a version at least as new.
	Nacked     uint64
	NackReason string
}

// GatewayStatus is the delivery state of one gateway.
type GatewayStatus struct {
	// Version is the version of the current config, 0 when there is none.
	Version uint64
	// Replicas are the connected proxy replicas, sorted by node.
	Replicas []ReplicaStatus
}

// Programmed reports whether the gateway is programmed at version v: at least one replica is
// connected and every connected replica ACKed v or newer. Otherwise reason says why, suitable for a
// condition message; a NACK's reason is quoted from the proxy.
func (st GatewayStatus) Programmed(v uint64) (ok bool, reason string) {
	if v == 0 {
		return false, "no configuration has been generated yet"
	}
	if len(st.Replicas) == 0 {
		return false, "no proxy replica is connected"
	}
	waiting := 0
	for _, r := range st.Replicas {
		if r.Acked >= v {
			continue
		}
		if r.Nacked >= v {
			return false, fmt.Sprintf("proxy %s rejected version %d: %s", r.Node, r.Nacked, r.NackReason)
		}
		waiting++
	}
	if waiting > 0 {
		return false, fmt.Sprintf("waiting for %d of %d proxy replicas to acknowledge version %d", waiting, len(st.Replicas), v)
	}
	return true, ""
}

// NewServer returns a Server with no configs. Serve it with Serve.
func NewServer(opts ServerOptions) *Server {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return &Server{
		opts:     opts,
		log:      opts.Logger,
		epoch:    hex.EncodeToString(b[:]),
		gateways: make(map[string]*gatewayState),
	}
}

// Serve serves the aggregated discovery service on lis until ctx is done, then closes every stream
// and returns nil.
func (s *Server) Serve(ctx context.Context, lis net.Listener) error {
	if s.opts.TLS == nil {
		return errors.New("serve xds: no TLS configuration")
	}
	gs := grpc.NewServer(
		grpc.Creds(credentials.NewTLS(s.opts.TLS)),
		// Pings find proxies that vanished without closing their connection, so that they stop
		// counting as connected replicas.
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: 30 * time.Second, Timeout: 10 * time.Second}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second, PermitWithoutStream: true}),
		// Stop returns only after every stream handler did, so nothing outlives Serve.
		grpc.WaitForHandlers(true),
	)
	discoveryv3.RegisterAggregatedDiscoveryServiceServer(gs, ads{s: s})
	errc := make(chan error, 1)
	go func() { errc <- gs.Serve(lis) }()
	select {
	case <-ctx.Done():
		gs.Stop()
		<-errc
		return nil
	case err := <-errc:
		return fmt.Errorf("serve xds: %w", err)
	}
}

// SetConfig makes cfg the current config of gateway and pushes it to the gateway's proxies. It
// returns the version stamped on it; a config equal to the current one keeps the current version
// and is not pushed again. cfg is copied (shallowly) and must not be modified afterwards; its
// Gateway and Version fields are overwritten in the copy.
//
// The current version may later rise without a SetConfig call: when a proxy reports a version from
// an earlier operator instance, the same config is restamped above it. Versions only grow, so
// Programmed(gateway, v) for the returned v stays meaningful.
func (s *Server) SetConfig(gateway string, cfg *ir.Config) uint64 {
	c := *cfg
	c.Gateway = gateway
	c.Version = 0
	key, err := json.Marshal(&c)
	if err != nil {
		// ir.Config holds only plain data, so this is a programming error.
		s.log.Error(err, "Cannot encode config", "gateway", gateway)
		return 0
	}
	s.mu.Lock()
	g := s.gatewayLocked(gateway)
	if g.cfg != nil && bytes.Equal(g.key, key) {
		v := g.cfg.Version
		s.mu.Unlock()
		return v
	}
	g.version++
	v, err := s.installLocked(g, &c, key)
	s.mu.Unlock()
	if err != nil {
		s.log.Error(err, "Cannot encode config", "gateway", gateway)
		return 0
	}
	s.log.V(1).Info("New config", "gateway", gateway, "version", v)
	return v
}

// RemoveGateway forgets gateway's config and status. Connected proxies stay connected, keep what
// they serve and receive nothing until the next SetConfig.
func (s *Server) RemoveGateway(gateway string) {
	s.mu.Lock()
	g, ok := s.gateways[gateway]
	if ok {
		g.cfg, g.res, g.key = nil, nil, nil
		if len(g.subs) == 0 {
			delete(s.gateways, gateway)
		}
	}
	s.mu.Unlock()
}

// Status returns the delivery state of gateway.
func (s *Server) Status(gateway string) GatewayStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	var st GatewayStatus
	g, ok := s.gateways[gateway]
	if !ok {
		return st
	}
	if g.cfg != nil {
		st.Version = g.cfg.Version
	}
	for sub := range g.subs {
		st.Replicas = append(st.Replicas, ReplicaStatus{Node: sub.node, Acked: sub.acked, Nacked: sub.nacked, NackReason: sub.reason})
	}
	sort.Slice(st.Replicas, func(i, j int) bool { return st.Replicas[i].Node < st.Replicas[j].Node })
	return st
}

// Programmed reports whether gateway is programmed at version v; see GatewayStatus.Programmed.
func (s *Server) Programmed(gateway string, v uint64) (ok bool, reason string) {
	return s.Status(gateway).Programmed(v)
}

func (s *Server) gatewayLocked(gateway string) *gatewayState {
	g, ok := s.gateways[gateway]
	if !ok {
		g = &gatewayState{subs: make(map[*subscription]struct{})}
		s.gateways[gateway] = g
	}
	return g
}

// installLocked makes cfg, stamped with g.version, the current config and wakes the subscribers.
func (s *Server) installLocked(g *gatewayState, cfg *ir.Config, key []byte) (uint64, error) {
	cfg.Version = g.version
	res, err := encodeConfig(key, cfg.Version)
	if err != nil {
		return 0, err
	}
	g.cfg, g.res, g.key = cfg, res, key
	for sub := range g.subs {
		wake(sub.notify)
	}
	return cfg.Version, nil
}

// subscribe registers a stream of node for gateway whose proxy reports it applied version applied,
// under a nonce from the instance in lastNonce. It reports whether the proxy already holds the
// current config.
func (s *Server) subscribe(gateway, node string, applied uint64, lastNonce string) (*subscription, bool) {
	sub := &subscription{gateway: gateway, node: node, notify: make(chan struct{}, 1), evicted: make(chan struct{})}
	s.mu.Lock()
	g := s.gatewayLocked(gateway)
	for old := range g.subs {
		if old.node == node {
			// The old stream is most likely dead and not yet noticed; it must not hold back Programmed.
			s.log.Info("Replacing the stream of a reconnected proxy", "gateway", gateway, "node", node)
			delete(g.subs, old)
			close(old.evicted)
		}
	}
	g.subs[sub] = struct{}{}
	current := false
	switch {
	case applied > g.version:
		// The proxy saw versions from an earlier operator instance: continue above them and restamp
		// the current config so that every proxy sees a newer version.
		g.version = applied
		if g.cfg != nil {
			g.version++
			c := *g.cfg
			if _, err := s.installLocked(g, &c, g.key); err != nil {
				s.log.Error(err, "Cannot encode config", "gateway", gateway)
			}
		}
	case g.cfg != nil && applied == g.cfg.Version && strings.HasPrefix(lastNonce, s.epoch+"-"):
		// Same server instance, same version: the proxy holds exactly this config.
		sub.acked = applied
		current = true
	}
	if g.cfg != nil && !current {
		wake(sub.notify)
	}
	s.mu.Unlock()
	s.changed(gateway)
	return sub, current
}

func (s *Server) unsubscribe(sub *subscription) {
	s.mu.Lock()
	g, ok := s.gateways[sub.gateway]
	if ok {
		delete(g.subs, sub)
		if len(g.subs) == 0 && g.cfg == nil {
			delete(s.gateways, sub.gateway)
		}
	}
	s.mu.Unlock()
	s.changed(sub.gateway)
}

// current returns the config to send to sub.
func (s *Server) current(sub *subscription) (*anypb.Any, uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.gateways[sub.gateway]
	if !ok || g.cfg == nil {
		return nil, 0
	}
	return g.res, g.cfg.Version
}

// record stores a replica's ACK or NACK of version.
func (s *Server) record(sub *subscription, version uint64, nack string, isNack bool) {
	s.mu.Lock()
	if isNack {
		sub.nacked, sub.reason = version, nack
	} else if version > sub.acked {
		sub.acked = version
	}
	if sub.acked >= sub.nacked {
		sub.nacked, sub.reason = 0, ""
	}
	s.mu.Unlock()
	s.changed(sub.gateway)
}

func (s *Server) changed(gateway string) {
	if s.opts.OnChange != nil {
		s.opts.OnChange(gateway)
	}
}

func wake(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// ads adapts Server to the generated service interface, keeping its methods off Server's API.
type ads struct {
	discoveryv3.UnimplementedAggregatedDiscoveryServiceServer
	s *Server
}

// StreamAggregatedResources serves one proxy stream: the first request subscribes, later requests
// ACK or NACK the responses.
func (a ads) StreamAggregatedResources(stream discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesServer) error {
	s := a.s
	ctx := stream.Context()
	allowed, err := peerGateways(ctx)
	if err != nil {
		return status.Error(codes.Unauthenticated, err.Error())
	}
	req, err := stream.Recv()
	if err != nil {
		return nil // the proxy left before subscribing
	}
	gateway, err := subscribedGateway(req)
	if err != nil {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	node := req.GetNode().GetId()
	if node == "" {
		return status.Error(codes.InvalidArgument, "the first request must carry node.id")
	}
	if !allowed[gateway] {
		s.log.Info("Refused subscription: certificate does not name the gateway", "gateway", gateway, "node", node)
		return status.Errorf(codes.PermissionDenied, "client certificate does not allow gateway %q", gateway)
	}
	applied, err := parseVersion(req.GetVersionInfo())
	if err != nil {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	log := s.log.WithValues("gateway", gateway, "node", node)
	sub, current := s.subscribe(gateway, node, applied, req.GetResponseNonce())
	defer s.unsubscribe(sub)
	log.V(1).Info("Proxy subscribed", "applied", applied, "current", current)

	reqs := make(chan *discoveryv3.DiscoveryRequest)
	recvErr := make(chan error, 1)
	go func() {
		for {
			r, err := stream.Recv()
			if err != nil {
				recvErr <- err
				return
			}
			select {
			case reqs <- r:
			case <-ctx.Done():
				return
			}
		}
	}()

	var nonce string
	var seq, sent uint64
	if current {
		sent = applied
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-sub.evicted:
			return status.Error(codes.Aborted, "replaced by a newer stream of the same node")
		case err := <-recvErr:
			if errors.Is(err, io.EOF) || status.Code(err) == codes.Canceled {
				return nil
			}
			return err
		case <-sub.notify:
			res, v := s.current(sub)
			if res == nil || v == sent {
				continue
			}
			seq++
			nonce = fmt.Sprintf("%s-%d", s.epoch, seq)
			resp := &discoveryv3.DiscoveryResponse{
				VersionInfo: formatVersion(v),
				Resources:   []*anypb.Any{res},
				TypeUrl:     TypeURL,
				Nonce:       nonce,
			}
			if err := stream.Send(resp); err != nil {
				return err
			}
			sent = v
			log.V(1).Info("Sent config", "version", v)
		case r := <-reqs:
			if gw, err := subscribedGateway(r); err != nil || gw != gateway {
				return status.Error(codes.InvalidArgument, "a stream subscribes to exactly one gateway, once")
			}
			if nonce == "" || r.GetResponseNonce() != nonce {
				continue // stale: a newer response is on its way and will be answered
			}
			if d := r.GetErrorDetail(); d != nil {
				log.Info("Proxy rejected config", "version", sent, "reason", d.GetMessage())
				s.record(sub, sent, d.GetMessage(), true)
			} else {
				log.V(1).Info("Proxy applied config", "version", sent)
				s.record(sub, sent, "", false)
			}
		}
	}
}

// subscribedGateway checks that req asks for our type and exactly one gateway, and returns it.
func subscribedGateway(req *discoveryv3.DiscoveryRequest) (string, error) {
	if req.GetTypeUrl() != TypeURL {
		return "", fmt.Errorf("unsupported type %q, want %q", req.GetTypeUrl(), TypeURL)
	}
	if names := req.GetResourceNames(); len(names) != 1 || names[0] == "" {
		return "", fmt.Errorf("want exactly one gateway in resource_names, got %q", names)
	}
	return req.GetResourceNames()[0], nil
}

// peerGateways returns the gateways the verified client certificate of the stream allows.
func peerGateways(ctx context.Context) (map[string]bool, error) {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return nil, errors.New("no peer")
	}
	info, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || len(info.State.VerifiedChains) == 0 || len(info.State.VerifiedChains[0]) == 0 {
		return nil, errors.New("no verified client certificate")
	}
	gateways := certGateways(info.State.VerifiedChains[0][0])
	if len(gateways) == 0 {
		return nil, errors.New("client certificate names no gateway")
	}
	return gateways, nil
}
