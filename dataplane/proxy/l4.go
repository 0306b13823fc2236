package proxy

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

const helloTimeout = 10 * time.Second

// serveTLSConn routes a TLS connection by the SNI of its ClientHello: passed through untouched, or
// terminated with the listener's certificates and forwarded as plain TCP.
func (s *Server) serveTLSConn(c net.Conn, lt *listenerTable) {
	defer c.Close()
	sni, pc, err := peekClientHello(c, helloTimeout)
	if err != nil {
		s.opts.Log.V(1).Info("TLS connection without a readable hello", "listener", lt.name, "err", err)
		return
	}
	sr, ok := lt.sni.lookup(normalizeHost(sni))
	if !ok {
		lt.notFound.conn()
		return
	}
	if sr.terminate {
		tc := tls.Server(pc, lt.tls)
		ctx, cancel := context.WithTimeout(context.Background(), helloTimeout)
		err := tc.HandshakeContext(ctx)
		cancel()
		if err != nil {
			s.opts.Log.V(1).Info("TLS handshake failed", "listener", lt.name, "sni", sni, "err", err)
			return
		}
		pc = tc
	}
	s.forward(pc, lt, sr.name, &sr.backends, sr.stats, "")
}

func (s *Server) serveTCPConn(c net.Conn, lt *listenerTable, r *l4Route) {
	defer c.Close()
	if r == nil {
		lt.notFound.conn()
		return
	}
	client := ""
	if r.affinity {
		if ap, err := netip.ParseAddrPort(c.RemoteAddr().String()); err == nil {
			client = ap.Addr().Unmap().String()
		}
	}
	s.forward(c, lt, r.name, &r.backends, r.stats, client)
}

// forward connects c to an endpoint of a weighted backend and copies both ways until both sides
// are done, passing half-closes through. A client address keeps it on one endpoint (affinity);
// "" picks at random by weight.
func (s *Server) forward(c net.Conn, lt *listenerTable, route string, bs *backendSet, rs *routeStats, client string) {
	start := time.Now()
	be, st := bs.pickFor(client)
	if be == nil || be.invalid {
		rs.local.conn()
		return
	}
	st.conn()
	ep, ok := be.endpointFor(client)
	if !ok {
		return
	}
	if err := s.checkEndpoint(ep); err != nil {
		s.opts.Log.V(1).Info("backend dial refused", "listener", lt.name, "route", route, "backend", be.name, "err", err)
		return
	}
	up, err := net.DialTimeout("tcp", ep, s.opts.DialTimeout)
	if err != nil {
		s.opts.Log.V(1).Info("backend dial failed", "listener", lt.name, "route", route, "backend", be.name, "err", err)
		return
	}
	defer up.Close()
	// A passthrough conn replays the ClientHello; send it first so the copy below can splice.
	if p, ok := c.(*prefixConn); ok {
		if _, err := up.Write(p.prefix); err != nil {
			return
		}
		c = p.Conn
	}
	var wg sync.WaitGroup
	var rx, tx int64
	wg.Go(func() { rx = pipe(up, c, st.counter(statRx)) })
	tx = pipe(c, up, st.counter(statTx))
	wg.Wait()
	if s.accessOn {
		s.opts.AccessLog.Info("l4", "listener", lt.name, "route", route, "backend", be.name, "endpoint", ep,
			"remote", c.RemoteAddr().String(), "rx", rx, "tx", tx, "duration", time.Since(start))
	}
}

// pipe copies src to dst, then half-closes dst so the other side sees EOF.
func pipe(dst, src net.Conn, bytes prometheus.Counter) int64 {
	n, _ := io.Copy(dst, src)
	bytes.Add(float64(n))
	if cw, ok := dst.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	} else {
		dst.Close()
	}
	return n
}

// udpPort forwards datagrams. Each client address gets a session: a connected socket to one chosen
// endpoint, kept while traffic flows in either direction.
type udpPort struct {
	s        *Server
	conn     *net.UDPConn
	cur      atomic.Pointer[listenerTable]
	mu       sync.Mutex
	sessions map[netip.AddrPort]*udpSession
	closed   bool
	wg       sync.WaitGroup
}

type udpSession struct {
	up       *net.UDPConn
	stats    *backendStats
	lastSeen atomic.Int64
}

const maxUDPSessions = 16384

func (s *Server) listenUDP(addr string) (*udpPort, error) {
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("resolving %s: %w", addr, err)
	}
	c, err := net.ListenUDP("udp", ua)
	if err != nil {
		return nil, fmt.Errorf("binding udp %s: %w", addr, err)
	}
	return &udpPort{s: s, conn: c, sessions: map[netip.AddrPort]*udpSession{}}, nil
}

func (p *udpPort) start() {
	p.wg.Go(p.readLoop)
}

func (p *udpPort) readLoop() {
	buf := make([]byte, 64<<10)
	for {
		n, from, err := p.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		if !p.cur.Load().sources.allows(from.Addr()) {
			continue
		}
		sess := p.session(from)
		if sess == nil {
			continue
		}
		sess.lastSeen.Store(time.Now().UnixNano())
		if _, err := sess.up.Write(buf[:n]); err == nil {
			sess.stats.counter(statRx).Add(float64(n))
		}
	}
}

func (p *udpPort) session(from netip.AddrPort) *udpSession {
	p.mu.Lock()
	defer p.mu.Unlock()
	if sess := p.sessions[from]; sess != nil {
		return sess
	}
	lt := p.cur.Load()
	if p.closed || lt.l4 == nil || len(p.sessions) >= maxUDPSessions {
		return nil
	}
	client := ""
	if lt.l4.affinity {
		client = from.Addr().Unmap().String()
	}
	be, st := lt.l4.backends.pickFor(client)
	if be == nil || be.invalid {
		lt.l4.stats.local.conn()
		return nil
	}
	ep, ok := be.endpointFor(client)
	if !ok {
		return nil
	}
	if err := p.s.checkEndpoint(ep); err != nil {
		p.s.opts.Log.V(1).Info("udp backend dial refused", "listener", lt.name, "backend", be.name, "err", err)
		return nil
	}
	ua, err := net.ResolveUDPAddr("udp", ep)
	if err != nil {
		return nil
	}
	up, err := net.DialUDP("udp", nil, ua)
	if err != nil {
		p.s.opts.Log.V(1).Info("udp backend dial failed", "listener", lt.name, "backend", be.name, "err", err)
		return nil
	}
	sess := &udpSession{up: up, stats: st}
	sess.lastSeen.Store(time.Now().UnixNano())
	st.conn()
	p.sessions[from] = sess
	p.wg.Go(func() { p.replyLoop(from, sess) })
	return sess
}

// replyLoop returns the backend's datagrams to the client until the session idles out.
func (p *udpPort) replyLoop(client netip.AddrPort, sess *udpSession) {
	defer func() {
		p.mu.Lock()
		delete(p.sessions, client)
		p.mu.Unlock()
		sess.up.Close()
	}()
	idle := p.s.opts.UDPSessionTimeout
	buf := make([]byte, 64<<10)
	for {
		_ = sess.up.SetReadDeadline(time.Now().Add(idle))
		n, err := sess.up.Read(buf)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				if time.Since(time.Unix(0, sess.lastSeen.Load())) < idle {
					continue
				}
			}
			return
		}
		sess.lastSeen.Store(time.Now().UnixNano())
		if _, err := p.conn.WriteToUDPAddrPort(buf[:n], client); err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		sess.stats.counter(statTx).Add(float64(n))
	}
}

// drain closes the port. UDP has no connection to finish, so sessions end at once.
func (p *udpPort) drain(context.Context) error {
	p.mu.Lock()
	p.closed = true
	p.conn.Close()
	for _, sess := range p.sessions {
		sess.up.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return nil
}
