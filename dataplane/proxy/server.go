// Package proxy is the fleetgate data plane: it serves an ir.Config on real sockets. Configs are
// compiled into immutable tables and swapped atomically; an ir.Update compiles only the virtual
// hosts it changes into a new table that shares the rest with the one in service. Listeners are
// bound and released as ports come and go, and connections on released ports drain gracefully.
package proxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// Options tune a Server. The zero value is usable.
type Options struct {
	// Address is the IP listeners bind to; empty means every interface.
	Address string
	// PortMap maps an IR port to the port actually bound, e.g. to run unprivileged; nil binds the IR port.
	PortMap func(port uint32) uint32
	// Registry receives the proxy's metrics; nil keeps them private.
	Registry prometheus.Registerer
	// Log receives operational messages; AccessLog, when set, one structured line per request or
	// L4 connection. Both default to discarding.
	Log       logr.Logger
	AccessLog logr.Logger
	// DrainTimeout bounds how long connections of a removed listener may finish (default 30s).
	DrainTimeout time.Duration
	// Limits against slow or hostile clients (defaults 10s, 64 KiB, 120s).
	ReadHeaderTimeout time.Duration
	MaxHeaderBytes    int
	IdleTimeout       time.Duration
	// DialTimeout bounds connecting to a backend (default 5s).
	DialTimeout time.Duration
	// UDPSessionTimeout ends a UDP flow idle this long (default 60s).
	UDPSessionTimeout time.Duration
	// MaxMirrors bounds mirrored requests in flight; beyond it mirrors are dropped (default 256).
	MaxMirrors int
	// MaxBufferedBody is the largest request body kept in memory for retries and mirrors (default 64 KiB).
	MaxBufferedBody int64
	// Defaults of the limits a config may set (ir.Limits): the wait for a backend's response
	// headers on routes without timeouts (30s), a stalled request body (30s), a client that
	// reads nothing (60s), client connections per listener (10000), retries in flight per
	// backend (20% of its requests, at least 3). DeniedEndpointCIDRs are never dialled (none by
	// default here; the proxy command's flag denies loopback, link-local and cloud metadata).
	BackendResponseTimeout    time.Duration
	RequestBodyIdleTimeout    time.Duration
	ResponseWriteIdleTimeout  time.Duration
	MaxConnectionsPerListener int
	RetryBudgetPercent        int
	RetryBudgetMinConcurrent  int
	DeniedEndpointCIDRs       []string
	AllowUnderscoresInHeaders bool
	AllowCBCCipherSuites      bool
	// HTTP2MaxResetsPerSecond bounds the rate at which an HTTP/2 client may cancel its streams
	// before their answers (rapid reset); past it the connection gets a GOAWAY and is closed
	// (default 100, with a burst of as many).
	HTTP2MaxResetsPerSecond int
	// LingerTimeout bounds how long a connection answered 414 while its client still sends is
	// read and discarded before it is closed (default 2s; lingerClose).
	LingerTimeout time.Duration
	// UpstreamIdleTimeout closes idle keepalive connections to backends (default 4s): below the
	// idle timeouts of common backends (Node.js 5s), which would otherwise close a connection
	// just as the proxy sends on it.
	UpstreamIdleTimeout time.Duration
	// DisableFastPath serves every HTTP/1.1 request, plain or over TLS, through net/http instead of
	// the HTTP/1.1 fast path (for comparison and as an escape hatch).
	DisableFastPath bool
	// DisableHTTP2Server serves HTTP/2 (h2 over TLS, h2c) through net/http's HTTP/2 server instead
	// of the proxy's own (h2server.go), as an escape hatch; DisableFastPath implies it.
	DisableHTTP2Server bool
}

func (o *Options) defaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&o.DrainTimeout, 30*time.Second)
	def(&o.ReadHeaderTimeout, 10*time.Second)
	def(&o.IdleTimeout, 120*time.Second)
	def(&o.DialTimeout, 5*time.Second)
	def(&o.UpstreamIdleTimeout, 4*time.Second)
	def(&o.LingerTimeout, 2*time.Second)
	def(&o.UDPSessionTimeout, 60*time.Second)
	def(&o.BackendResponseTimeout, 30*time.Second)
	def(&o.RequestBodyIdleTimeout, 30*time.Second)
	def(&o.ResponseWriteIdleTimeout, 60*time.Second)
	if o.MaxConnectionsPerListener == 0 {
		o.MaxConnectionsPerListener = 10000
	}
	if o.HTTP2MaxResetsPerSecond == 0 {
		o.HTTP2MaxResetsPerSecond = 100
	}
	if o.RetryBudgetPercent == 0 {
		o.RetryBudgetPercent = 20
	}
	if o.RetryBudgetMinConcurrent == 0 {
		o.RetryBudgetMinConcurrent = 3
	}
	if o.MaxHeaderBytes == 0 {
		o.MaxHeaderBytes = 64 << 10
	}
	if o.MaxMirrors == 0 {
		o.MaxMirrors = 256
	}
	if o.MaxBufferedBody == 0 {
		o.MaxBufferedBody = 64 << 10
	}
	if o.Registry == nil {
		o.Registry = prometheus.NewRegistry()
	}
}

// Server serves one ir.Config at a time.
type Server struct {
	opts     Options
	metrics  *metrics
	up       upstreams
	accessOn bool
	mirrors  chan struct{}
	exPool   sync.Pool
	bufPool  bufferPool
	bufs     bufPools
	fastPool upPool
	// h2Workers serve the streams of the proxy's own HTTP/2 server.
	h2Workers h2Workers
	// h2ex recycles the per-stream state of HTTP/2 streams relayed on the fast path (h2fast.go).
	h2ex sync.Pool

	cur atomic.Pointer[table]

	// mu serialises Apply and Shutdown; the request path never takes it.
	mu       sync.Mutex
	certs    certCache
	tlsPools tlsTransports
	// base is the config in service without its virtual hosts, which Update patches.
	base     *ir.Config
	tcp      map[uint32]*tcpPort
	udp      map[uint32]*udpPort
	draining sync.WaitGroup
	closed   bool

	// deniedInForce is the deny list of the table in service (denyChanged); guarded by mu.
	deniedInForce []netip.Prefix
}

// New returns a Server that serves nothing until Apply.
func New(opts Options) (*Server, error) {
	opts.defaults()
	m, err := newMetrics(opts.Registry)
	if err != nil {
		return nil, err
	}
	s := &Server{
		opts:     opts,
		metrics:  m,
		fastPool: upPool{idleTimeout: opts.UpstreamIdleTimeout},
		accessOn: opts.AccessLog.GetSink() != nil,
		mirrors:  make(chan struct{}, opts.MaxMirrors),
		certs:    certCache{},
		tlsPools: tlsTransports{},
		tcp:      map[uint32]*tcpPort{},
		udp:      map[uint32]*udpPort{},
	}
	s.up = newUpstreams(s.guardedDialer(&net.Dialer{Timeout: opts.DialTimeout, KeepAlive: 30 * time.Second}), opts.UpstreamIdleTimeout)
	s.exPool.New = func() any { return s.newExchange() }
	return s, nil
}

// Version is the version of the config being served, 0 before the first Apply.
func (s *Server) Version() uint64 {
	if t := s.cur.Load(); t != nil {
		return t.version
	}
	return 0
}

// Addr returns the bound address of the listener on an IR port, or nil.
func (s *Server) Addr(port uint32, udp bool) net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if udp {
		if p := s.udp[port]; p != nil {
			return p.conn.LocalAddr()
		}
		return nil
	}
	if p := s.tcp[port]; p != nil {
		return p.ln.Addr()
	}
	return nil
}

// Apply validates and compiles cfg, binds its new ports and swaps it in. On error nothing changes and
// the previous config keeps being served, so the caller can NACK. Connections on ports that the new
// config drops are drained in the background for up to DrainTimeout.
func (s *Server) Apply(cfg *ir.Config) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("proxy is shut down")
	}
	return s.applyLocked(cfg)
}

func (s *Server) applyLocked(cfg *ir.Config) error {
	certs := certCache{}
	pools := tlsTransports{}
	c := newCompiler(s.compileDeps(), cfg.BackendClientCertificate, pools)
	t, err := c.compileConfig(cfg, certs)
	if err != nil {
		c.abort()
		s.metrics.applies.WithLabelValues("invalid").Inc()
		return err
	}
	old, err := s.install(t)
	if err != nil {
		c.abort()
		return err
	}
	s.certs = certs
	for k, p := range s.tlsPools {
		if pools[k] == nil {
			p.CloseIdleConnections() // in-flight requests finish; the pool is dropped after them
		}
	}
	s.tlsPools = pools
	s.base = ir.BaseOf(cfg)
	if old != nil {
		var drop []*routeStats
		for _, lt := range old.listeners {
			drop = lt.stats(drop)
		}
		s.metrics.release(drop)
	}
	s.applied(t)
	return nil
}

// install binds the new ports of t and swaps it in, returning the table it replaced. When a port
// cannot be bound nothing changes.
func (s *Server) install(t *table) (*table, error) {
	// Bind every new port before touching the old ones, so a bind failure leaves nothing changed.
	newTCP := map[uint32]*tcpPort{}
	newUDP := map[uint32]*udpPort{}
	undo := func() {
		for _, p := range newTCP {
			p.ln.Close()
		}
		for _, p := range newUDP {
			p.conn.Close()
		}
	}
	for k := range t.listeners {
		addr := net.JoinHostPort(s.opts.Address, strconv.FormatUint(uint64(s.mapPort(k.port)), 10))
		if k.udp {
			if s.udp[k.port] == nil {
				p, err := s.listenUDP(addr)
				if err != nil {
					undo()
					s.metrics.applies.WithLabelValues("bind").Inc()
					return nil, err
				}
				newUDP[k.port] = p
			}
			continue
		}
		if s.tcp[k.port] == nil {
			p, err := s.listenTCP(addr)
			if err != nil {
				undo()
				s.metrics.applies.WithLabelValues("bind").Inc()
				return nil, err
			}
			newTCP[k.port] = p
		}
	}
	for port, p := range newTCP {
		s.tcp[port] = p
	}
	for port, p := range newUDP {
		s.udp[port] = p
	}
	for port, p := range s.tcp {
		if lt := t.listeners[portKey{port, false}]; lt != nil {
			p.cur.Store(lt)
			if newTCP[port] != nil {
				p.start()
			}
			continue
		}
		delete(s.tcp, port)
		// Release the port now so a later config can bind it again; connections drain in the background.
		p.ln.Close()
		s.drainLater(p.drain)
	}
	for port, p := range s.udp {
		if lt := t.listeners[portKey{port, true}]; lt != nil {
			p.cur.Store(lt)
			if newUDP[port] != nil {
				p.start()
			}
			continue
		}
		delete(s.udp, port)
		p.conn.Close()
		s.drainLater(p.drain)
	}
	return s.cur.Swap(t), nil
}

// applied finishes a swap to t.
func (s *Server) applied(t *table) {
	s.fastPool.prune(false)
	s.denyChanged(t)
	s.metrics.version.Set(float64(t.version))
	s.metrics.applies.WithLabelValues("ok").Inc()
	s.opts.Log.V(1).Info("config applied", "version", t.version, "listeners", len(t.listeners))
}

func (s *Server) mapPort(p uint32) uint32 {
	if s.opts.PortMap != nil {
		return s.opts.PortMap(p)
	}
	return p
}

func (s *Server) drainLater(drain func(context.Context) error) {
	s.draining.Add(1)
	go func() {
		defer s.draining.Done()
		ctx, cancel := context.WithTimeout(context.Background(), s.opts.DrainTimeout)
		defer cancel()
		if err := drain(ctx); err != nil {
			s.opts.Log.Info("listener drain cut short", "err", err)
		}
	}()
}

// Shutdown stops accepting, lets in-flight requests and connections finish until ctx ends, then
// closes what is left. It returns ctx's error if connections had to be cut.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	var wg sync.WaitGroup
	errs := make(chan error, len(s.tcp)+len(s.udp))
	for _, p := range s.tcp {
		wg.Go(func() { errs <- p.drain(ctx) })
	}
	for _, p := range s.udp {
		wg.Go(func() { errs <- p.drain(ctx) })
	}
	s.tcp, s.udp = nil, nil
	s.mu.Unlock()
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	done := make(chan struct{})
	go func() { s.draining.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		all = append(all, ctx.Err())
	}
	s.up.close()
	for _, p := range s.tlsPools {
		p.CloseIdleConnections()
	}
	s.fastPool.prune(true)
	s.h2Workers.stop()
	if err := errors.Join(all...); err != nil {
		return fmt.Errorf("proxy shutdown: %w", err)
	}
	return nil
}
