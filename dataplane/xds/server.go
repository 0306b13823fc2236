package xds

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sort"
	"strconv"
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
	// WireVersions are the wire versions served; nil means every version this build speaks
	// (WireVersions). Tests set it to play an operator of another release.
	WireVersions []WireVersion
	// RefusalTTL overrides the package's RefusalTTL (tests).
	RefusalTTL time.Duration
}

// Server serves configs to proxies and tracks what each replica acknowledged. It runs in the
// operator; its state lives in memory and is rebuilt after a restart from SetConfig calls and what
// reconnecting proxies report.
type Server struct {
	opts ServerOptions
	log  logr.Logger

	mu       sync.Mutex
	gateways map[string]*gatewayState

	metrics *metrics
	now     func() time.Time // time.Now; tests replace it to expire refusals
}

// gatewayState is one gateway's current config, split into resources, and its streams.
type gatewayState struct {
	// set serialises SetConfig and RemoveGateway. They write base and hosts holding both set and
	// Server.mu, so SetConfig may read them holding set alone while it works out what changed.
	set sync.Mutex
	// version is the highest version stamped here or reported by a proxy; the next config gets
	// version+1 so that versions never go backwards for a proxy, even across operator restarts.
	version uint64
	// current is the version of the current config, 0 when there is none.
	current uint64
	base    *baseResource
	// hosts are the virtual hosts by listener and hostname; count says how many.
	hosts map[string]map[string]*hostResource
	count int
	// order holds each listener's hosts in the order the current config lists them: the next
	// config lists most of them at the same places, where a cursor finds them without hashing
	// their names (a map lookup per host was two thirds of SetConfig at 20,000 hosts). The next
	// order is made in spare, the order before, cleared.
	order, spare map[string][]*hostResource
	subs         map[*subscription]struct{}
	// refused are the replicas refused for want of a common wire version, by node; expiry fires
	// when the oldest of them expires.
	refused map[string]refusal
	expiry  *time.Timer
	// stamp numbers SetConfig calls, to find the hosts a config no longer has.
	stamp uint64
}

type baseResource struct {
	cfg *ir.Config // as given to SetConfig (ir.BaseOf), compared with ir.Config.BaseEqual
	enc encoded
}

type hostResource struct {
	// vh is as given to SetConfig, compared with ir.VirtualHost.Equal; only SetConfig reads it,
	// and it swaps in an equal route list holding set alone (diff).
	vh  ir.VirtualHost
	enc encoded
	// seen is the stamp of the last SetConfig whose config has the host; only SetConfig uses it.
	seen uint64
	// place is its index in its listener's order (gatewayState.order); only SetConfig uses it.
	place int
}

// subscription is one proxy stream; its fields are guarded by Server.mu.
type subscription struct {
	gateway string
	node    string
	wire    WireVersion   // fixed for the stream's life
	notify  chan struct{} // capacity 1: "a newer config may be available"
	evicted chan struct{} // closed when a newer stream of the same node replaces this one
	acked   uint64
	nacked  uint64
	reason  string

	// known are the resources the proxy holds, by name, with their versions.
	known map[string]string
	// dirty are the names of resources that may differ from what the proxy holds.
	dirty map[string]struct{}
	// sent is the version last sent, or the one the proxy held when it subscribed.
	sent uint64
	// pending is the response awaiting the proxy's answer.
	pending *pendingResponse
	seq     uint64
}

// pendingResponse is a response sent and not yet answered.
type pendingResponse struct {
	nonce   string
	version uint64
	// changes are the resource versions the proxy holds once it ACKs; "" for removed.
	changes map[string]string
}

// NewServer returns a Server with no configs. Serve it with Serve.
func NewServer(opts ServerOptions) *Server {
	if opts.RefusalTTL <= 0 {
		opts.RefusalTTL = RefusalTTL
	}
	return &Server{opts: opts, log: opts.Logger, gateways: make(map[string]*gatewayState), metrics: newMetrics(), now: time.Now}
}

// Serve serves the aggregated discovery service on lis until ctx is done, then closes every stream
// and returns nil.
func (s *Server) Serve(ctx context.Context, lis net.Listener) error {
	if s.opts.TLS == nil {
		return errors.New("serve xds: no TLS configuration")
	}
	if _, err := checkWireVersions(s.opts.WireVersions); err != nil {
		return fmt.Errorf("serve xds: %w", err)
	}
	gs := grpc.NewServer(
		grpc.Creds(credentials.NewTLS(s.opts.TLS)),
		// Pings find proxies that vanished without closing their connection, so that they stop
		// counting as connected replicas.
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: 30 * time.Second, Timeout: 10 * time.Second}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second, PermitWithoutStream: true}),
		// A reconnecting proxy lists every resource it holds: 100k hosts take more than gRPC's
		// default 4 MiB.
		grpc.MaxRecvMsgSize(maxConfigSize),
		// Stop returns only after every stream handler did, so nothing outlives Serve.
		grpc.WaitForHandlers(true),
	)
	discoveryv3.RegisterAggregatedDiscoveryServiceServer(gs, ads{s: s})
	errc := make(chan error, 1)
	go func() { errc <- gs.Serve(lis) }()
	select {
	case <-ctx.Done():
		gs.Stop()
		s.stopExpiries()
		return <-errc // nil once stopped
	case err := <-errc:
		return fmt.Errorf("serve xds: %w", err)
	}
}

// SetConfig makes cfg the current config of gateway and pushes what changed to the gateway's
// proxies. It returns the version stamped on it; a config equal to the current one keeps the
// current version and is not pushed again. cfg must not be modified afterwards: the server keeps
// its virtual hosts to compare the next config with, and takes hosts whose routes share their
// backing array as unchanged (ir.VirtualHost.Equal). Its Gateway and Version fields are ignored.
//
// Only the hosts that differ from the current config's are encoded, so a change of one host costs
// a comparison per host and the encoding of that host; the base (listeners and their certificates)
// is compared field by field and encoded only when it changed.
//
// The current version may later rise without a SetConfig call: when a proxy reports a version from
// an earlier operator instance, the same config is restamped above it. Versions only grow, so
// Programmed(gateway, v) for the returned v stays meaningful.
func (s *Server) SetConfig(gateway string, cfg *ir.Config) uint64 {
	s.mu.Lock()
	g := s.gatewayLocked(gateway)
	s.mu.Unlock()
	g.set.Lock()
	defer g.set.Unlock()
	d, err := g.diff(gateway, cfg)
	if err != nil {
		// Translation makes neither configs that cannot be encoded nor duplicate hosts.
		s.log.Error(err, "Cannot publish config", "gateway", gateway)
		return 0
	}
	s.mu.Lock()
	if s.gateways[gateway] != g {
		// Forgotten (RemoveGateway) and dropped meanwhile: start again.
		s.mu.Unlock()
		return s.SetConfig(gateway, cfg)
	}
	if g.current != 0 && d.empty() {
		g.setOrder(d.order) // the same hosts, perhaps listed in another order
		v := g.current
		s.mu.Unlock()
		return v
	}
	g.install(d)
	g.version++
	g.current = g.version
	for sub := range g.subs {
		for _, name := range d.names {
			sub.dirty[name] = struct{}{}
		}
		wake(sub.notify)
	}
	v := g.current
	s.mu.Unlock()
	s.log.V(1).Info("New config", "gateway", gateway, "version", v, "changed", len(d.names))
	return v
}

// configDiff is what a config changes of the current one.
type configDiff struct {
	base    *baseResource // nil: unchanged
	hosts   []changedHost
	removed []ir.HostKey
	names   []string // of every changed resource
	// order is every listener's hosts in the config's order (gatewayState.order).
	order map[string][]*hostResource
}

type changedHost struct {
	listener string
	r        *hostResource
}

func (d *configDiff) empty() bool { return len(d.names) == 0 }

// diff works out what cfg changes, encoding the changed resources only. It reads g.base and
// g.hosts, and needs g.set held.
func (g *gatewayState) diff(gateway string, cfg *ir.Config) (*configDiff, error) {
	d := &configDiff{}
	base := ir.BaseOf(cfg)
	base.Gateway, base.Version = gateway, 0
	// The base holds every listener's certificates: compared, not encoded, unless it changed.
	if g.base == nil || !g.base.cfg.BaseEqual(base) {
		enc, err := encode(base)
		if err != nil {
			return nil, err
		}
		if g.base == nil || enc.version != g.base.enc.version {
			d.base = &baseResource{cfg: base, enc: enc}
			d.names = append(d.names, baseName)
		}
	}
	g.stamp++
	seen := 0
	var added map[ir.HostKey]bool // hosts new to the config, to find duplicates among them
	d.order = make(map[string][]*hostResource, len(cfg.Listeners))
	for i := range cfg.Listeners {
		l := &cfg.Listeners[i]
		have, last := g.hosts[l.Name], g.order[l.Name]
		next := slices.Grow(g.spare[l.Name][:0], len(l.VirtualHosts))
		at := 0 // the place in last where the next host is looked for first
		for j := range l.VirtualHosts {
			vh := &l.VirtualHosts[j]
			var r *hostResource
			if at < len(last) && last[at].vh.Hostname == vh.Hostname {
				r = last[at] // the current resource of that name: last is the current config's order
			} else if r = have[vh.Hostname]; r != nil {
				at = r.place // the order goes on from there
			}
			at++
			k := ir.HostKey{Listener: l.Name, Hostname: vh.Hostname}
			if r != nil && r.seen == g.stamp || added[k] {
				// Hosts are resources named by listener and hostname: a duplicate has no name of
				// its own. ir.Config.Validate refuses it too.
				return nil, fmt.Errorf("listener %q: duplicate host %q", l.Name, vh.Hostname)
			}
			if r != nil {
				r.seen = g.stamp
				seen++
				if r.vh.Equal(vh) {
					next = append(next, r)
					// Keep the list just given: translation hands on the same list while the host is
					// unchanged, so the next comparison is the backing-array check. Holding on to an
					// equal older one (after a pass that rebuilt every host, e.g. the route memo
					// dropped on a backend or member change) compared every route of every host on
					// every later call.
					r.vh.Routes = vh.Routes
					// And its hostname: after a rebuild, the cursor's comparison above read every
					// host's bytes (a cache miss each) where equal pointers need no read.
					r.vh.Hostname = vh.Hostname
					continue
				}
			} else {
				if added == nil {
					added = map[ir.HostKey]bool{}
				}
				added[k] = true
			}
			enc, err := encode(vh)
			if err != nil {
				return nil, err
			}
			nr := &hostResource{vh: *vh, enc: enc, seen: g.stamp}
			next = append(next, nr)
			d.hosts = append(d.hosts, changedHost{listener: l.Name, r: nr})
			d.names = append(d.names, hostName(l.Name, vh.Hostname))
		}
		d.order[l.Name] = next
	}
	if seen == g.count {
		return d, nil // every current host is still there: no need to look for those that are not
	}
	for l, hosts := range g.hosts {
		for h, r := range hosts {
			if r.seen != g.stamp {
				d.removed = append(d.removed, ir.HostKey{Listener: l, Hostname: h})
				d.names = append(d.names, hostName(l, h))
			}
		}
	}
	return d, nil
}

// install makes d part of the current config; it needs g.set and Server.mu held.
func (g *gatewayState) install(d *configDiff) {
	if d.base != nil {
		g.base = d.base
	}
	if g.hosts == nil {
		g.hosts = map[string]map[string]*hostResource{}
	}
	for _, c := range d.hosts {
		hosts := g.hosts[c.listener]
		if hosts == nil {
			hosts = map[string]*hostResource{}
			g.hosts[c.listener] = hosts
		}
		if hosts[c.r.vh.Hostname] == nil {
			g.count++
		}
		hosts[c.r.vh.Hostname] = c.r
	}
	for _, k := range d.removed {
		g.count--
		delete(g.hosts[k.Listener], k.Hostname)
		if len(g.hosts[k.Listener]) == 0 {
			delete(g.hosts, k.Listener)
		}
	}
	g.setOrder(d.order)
}

// setOrder makes order the current config's order of hosts, and the last one the spare; it needs
// g.set held.
func (g *gatewayState) setOrder(order map[string][]*hostResource) {
	for _, hosts := range order {
		for i, r := range hosts {
			r.place = i
		}
	}
	for _, hosts := range g.order {
		clear(hosts) // keeps no host of an older config alive
	}
	g.order, g.spare = order, g.order
}

// resource returns the current resource of name, if any; it needs Server.mu held.
func (g *gatewayState) resource(name string) (encoded, bool) {
	if name == baseName {
		if g.base == nil {
			return encoded{}, false
		}
		return g.base.enc, true
	}
	k, ok := parseHostName(name)
	if !ok {
		return encoded{}, false
	}
	r := g.hosts[k.Listener][k.Hostname]
	if r == nil {
		return encoded{}, false
	}
	return r.enc, true
}

// names calls f with the name of every current resource; it needs Server.mu held.
func (g *gatewayState) names(f func(name string, enc encoded)) {
	if g.base != nil {
		f(baseName, g.base.enc)
	}
	for l, hosts := range g.hosts {
		for h, r := range hosts {
			f(hostName(l, h), r.enc)
		}
	}
}

// RemoveGateway forgets gateway's config and status. Connected proxies stay connected, keep what
// they serve and receive nothing until the next SetConfig.
func (s *Server) RemoveGateway(gateway string) {
	s.mu.Lock()
	g, ok := s.gateways[gateway]
	s.mu.Unlock()
	if !ok {
		return
	}
	g.set.Lock()
	defer g.set.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	g.current, g.base, g.hosts, g.count = 0, nil, nil, 0
	for sub := range g.subs {
		// The next config is compared with what the proxy holds, not with this one.
		for name := range sub.known {
			sub.dirty[name] = struct{}{}
		}
	}
	g.refused = nil
	s.scheduleExpiryLocked(gateway, g) // stops the timer
	if len(g.subs) == 0 && s.gateways[gateway] == g {
		delete(s.gateways, gateway)
	}
}

// Status returns the delivery state of gateway; refusals older than RefusalTTL are forgotten.
func (s *Server) Status(gateway string) GatewayStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	var st GatewayStatus
	g, ok := s.gateways[gateway]
	if !ok {
		return st
	}
	st.Version = g.current
	for sub := range g.subs {
		st.Replicas = append(st.Replicas, ReplicaStatus{Node: sub.node, Wire: sub.wire, Acked: sub.acked, Nacked: sub.nacked, NackReason: sub.reason})
	}
	s.expireRefusalsLocked(g)
	for node, r := range g.refused {
		st.Replicas = append(st.Replicas, ReplicaStatus{Node: node, Refused: r.reason})
	}
	s.dropIfUnusedLocked(gateway, g)
	sort.Slice(st.Replicas, func(i, j int) bool { return st.Replicas[i].Node < st.Replicas[j].Node })
	return st
}

// Programmed reports whether gateway is programmed at version v; see GatewayStatus.Programmed.
func (s *Server) Programmed(gateway string, v uint64) (ok bool, reason string) {
	return s.Status(gateway).Programmed(v)
}

// Acknowledged reports whether every connected replica of gateway serves version v and, when
// not, whether one refused it; see GatewayStatus.Acknowledged.
func (s *Server) Acknowledged(gateway string, v uint64) (ok, rejected bool, reason string) {
	return s.Status(gateway).Acknowledged(v)
}

func (s *Server) gatewayLocked(gateway string) *gatewayState {
	g, ok := s.gateways[gateway]
	if !ok {
		g = &gatewayState{subs: make(map[*subscription]struct{})}
		s.gateways[gateway] = g
	}
	return g
}

// subscribe registers a stream of node for gateway, speaking wire, whose proxy holds the resources
// known (by name, with their versions) at config version applied.
func (s *Server) subscribe(gateway, node string, wire WireVersion, applied uint64, known map[string]string) *subscription {
	sub := &subscription{gateway: gateway, node: node, wire: wire, notify: make(chan struct{}, 1), evicted: make(chan struct{}),
		known: known, dirty: map[string]struct{}{}, sent: applied}
	s.mu.Lock()
	g := s.gatewayLocked(gateway)
	s.evictLocked(g, node)
	delete(g.refused, node)
	g.subs[sub] = struct{}{}
	for name := range known {
		sub.dirty[name] = struct{}{}
	}
	same := len(known) > 0
	n := 0
	g.names(func(name string, enc encoded) {
		sub.dirty[name] = struct{}{}
		same = same && known[name] == enc.version
		n++
	})
	same = same && n == len(known)
	switch {
	case applied > g.version || applied == g.version && applied != 0 && !same:
		// The proxy saw versions from an earlier operator instance: continue above them and restamp
		// the current config so that every proxy sees a newer version.
		g.version = applied
		if g.current != 0 {
			g.version++
			g.current = g.version
			for other := range g.subs {
				wake(other.notify)
			}
		}
	case g.current != 0 && applied == g.current && same:
		// The proxy holds exactly the current config.
		sub.acked = applied
		clear(sub.dirty)
	}
	wake(sub.notify)
	s.mu.Unlock()
	s.changed(gateway)
	return sub
}

// evictLocked ends the streams of node for gateway: a node that subscribes again most likely lost
// them without either side noticing yet, and they must not hold back Programmed. It needs
// Server.mu held.
func (s *Server) evictLocked(g *gatewayState, node string) {
	for old := range g.subs {
		if old.node == node {
			s.log.Info("Replacing the stream of a reconnected proxy", "gateway", old.gateway, "node", node)
			delete(g.subs, old)
			close(old.evicted)
		}
	}
}

func (s *Server) unsubscribe(sub *subscription) {
	s.mu.Lock()
	g, ok := s.gateways[sub.gateway]
	if ok {
		delete(g.subs, sub)
		s.dropIfUnusedLocked(sub.gateway, g)
	}
	s.mu.Unlock()
	s.changed(sub.gateway)
}

// dropIfUnusedLocked forgets g when it holds nothing: no stream, config or refusal. It needs
// Server.mu held.
func (s *Server) dropIfUnusedLocked(gateway string, g *gatewayState) {
	if len(g.subs) == 0 && g.current == 0 && len(g.refused) == 0 {
		delete(s.gateways, gateway)
	}
}

// next returns the response to send to sub, if one is due: the current config is newer than what
// was last sent, and the proxy answered that.
func (s *Server) next(sub *subscription) *discoveryv3.DeltaDiscoveryResponse {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.gateways[sub.gateway]
	if !ok || g.current == 0 || g.current == sub.sent || sub.pending != nil {
		return nil
	}
	sub.seq++
	p := &pendingResponse{nonce: strconv.FormatUint(sub.seq, 10), version: g.current, changes: make(map[string]string, len(sub.dirty))}
	resp := &discoveryv3.DeltaDiscoveryResponse{SystemVersionInfo: formatVersion(g.current), TypeUrl: TypeURL, Nonce: p.nonce}
	for name := range sub.dirty {
		have, held := sub.known[name]
		enc, ok := g.resource(name)
		switch {
		case ok && (!held || have != enc.version):
			resp.Resources = append(resp.Resources, enc.resource(name, sub.wire))
			p.changes[name] = enc.version
		case !ok && held:
			resp.RemovedResources = append(resp.RemovedResources, name)
			p.changes[name] = ""
		}
	}
	clear(sub.dirty)
	sub.pending, sub.sent = p, g.current
	return resp
}

// answer records the proxy's ACK, or its NACK with reason, of the pending response with nonce;
// answers to anything else are ignored.
func (s *Server) answer(sub *subscription, nonce, nack string, isNack bool) (version uint64, ok bool) {
	s.mu.Lock()
	p := sub.pending
	if p == nil || p.nonce != nonce {
		s.mu.Unlock()
		return 0, false
	}
	sub.pending = nil
	if isNack {
		sub.nacked, sub.reason = p.version, nack
		// The proxy keeps what it had: compare these again for the next version.
		for name := range p.changes {
			sub.dirty[name] = struct{}{}
		}
	} else {
		for name, v := range p.changes {
			if v == "" {
				delete(sub.known, name)
			} else {
				sub.known[name] = v
			}
		}
		sub.acked = max(sub.acked, p.version)
	}
	if sub.acked >= sub.nacked {
		sub.nacked, sub.reason = 0, ""
	}
	s.mu.Unlock()
	s.changed(sub.gateway)
	return p.version, true
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

// DeltaAggregatedResources serves one proxy stream: the first request subscribes, later requests
// ACK or NACK the responses.
func (a ads) DeltaAggregatedResources(stream discoveryv3.AggregatedDiscoveryService_DeltaAggregatedResourcesServer) error {
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
	known := make(map[string]string, len(req.GetInitialResourceVersions()))
	var applied uint64
	for name, v := range req.GetInitialResourceVersions() {
		if name == gateway {
			if applied, err = parseVersion(v); err != nil {
				return status.Error(codes.InvalidArgument, err.Error())
			}
			continue
		}
		known[name] = v
	}
	log := s.log.WithValues("gateway", gateway, "node", node)
	wire, err := negotiate(s.wireVersions(), announcedWireVersions(req.GetNode().GetClientFeatures()))
	if err != nil {
		log.Info("Refused proxy", "reason", err.Error())
		s.refuse(gateway, node, err.Error())
		return status.Error(codes.FailedPrecondition, err.Error())
	}
	sub := s.subscribe(gateway, node, wire, applied, known)
	defer s.unsubscribe(sub)
	s.metrics.subscribed(wire, 1)
	defer s.metrics.subscribed(wire, -1)
	log.V(1).Info("Proxy subscribed", "wire", wire, "applied", applied, "resources", len(known))

	reqs := make(chan *discoveryv3.DeltaDiscoveryRequest)
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

	for {
		if resp := s.next(sub); resp != nil {
			if err := stream.Send(resp); err != nil {
				return err
			}
			log.V(1).Info("Sent config", "version", resp.GetSystemVersionInfo(),
				"resources", len(resp.GetResources()), "removed", len(resp.GetRemovedResources()))
		}
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
		case r := <-reqs:
			if r.GetTypeUrl() != TypeURL || len(r.GetResourceNamesSubscribe()) > 0 || len(r.GetResourceNamesUnsubscribe()) > 0 {
				return status.Error(codes.InvalidArgument, "a stream subscribes to exactly one gateway, once")
			}
			d := r.GetErrorDetail()
			v, ok := s.answer(sub, r.GetResponseNonce(), d.GetMessage(), d != nil)
			switch {
			case !ok:
				// Not an answer to the pending response: ignore it.
			case d != nil:
				log.Info("Proxy rejected config", "version", v, "reason", d.GetMessage())
			default:
				log.V(1).Info("Proxy applied config", "version", v)
			}
		}
	}
}

// wireVersions are the versions served; Serve checked them.
func (s *Server) wireVersions() []WireVersion {
	if len(s.opts.WireVersions) == 0 {
		return WireVersions()
	}
	return s.opts.WireVersions
}

// subscribedGateway checks that req asks for our type and exactly one gateway, and returns it.
func subscribedGateway(req *discoveryv3.DeltaDiscoveryRequest) (string, error) {
	if req.GetTypeUrl() != TypeURL {
		return "", fmt.Errorf("unsupported type %q, want %q", req.GetTypeUrl(), TypeURL)
	}
	if names := req.GetResourceNamesSubscribe(); len(names) != 1 || names[0] == "" {
		return "", fmt.Errorf("want exactly one gateway in resource_names_subscribe, got %q", names)
	}
	return req.GetResourceNamesSubscribe()[0], nil
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
