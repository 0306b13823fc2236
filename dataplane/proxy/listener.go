package proxy

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// tcpPort is one bound TCP port. Its protocol comes from the current listener table at accept time,
// so a port can change from HTTP to TLS to TCP across configs without being rebound.
type tcpPort struct {
	s    *Server
	ln   net.Listener
	cur  atomic.Pointer[listenerTable]
	http *http.Server
	// hl hands accepted (and, for HTTPS, TLS-wrapped) connections to the http.Server.
	hl   *chanListener
	raw  connSet
	loop sync.WaitGroup
	// open counts the port's client connections against limits.maxConnsPerListener.
	open connCount
}

func (s *Server) listenTCP(addr string) (*tcpPort, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("binding %s: %w", addr, err)
	}
	p := &tcpPort{s: s, ln: ln, hl: newChanListener(ln.Addr())}
	protos := new(http.Protocols)
	protos.SetHTTP1(true)
	protos.SetHTTP2(true)
	protos.SetUnencryptedHTTP2(true)
	p.http = &http.Server{
		Handler:           p,
		Protocols:         protos,
		ReadHeaderTimeout: s.opts.ReadHeaderTimeout,
		IdleTimeout:       s.opts.IdleTimeout,
		MaxHeaderBytes:    s.opts.MaxHeaderBytes,
		HTTP2: &http.HTTP2Config{
			MaxConcurrentStreams: 250,
			MaxReadFrameSize:     1 << 20,
		},
		ErrorLog:    log.New(logWriter{s.opts.Log}, "", 0),
		ConnContext: guardConn,
	}
	return p, nil
}

func (p *tcpPort) start() {
	p.loop.Add(2)
	go func() {
		defer p.loop.Done()
		// Serve returns when hl is closed by Shutdown.
		_ = p.http.Serve(p.hl)
	}()
	go func() {
		defer p.loop.Done()
		p.acceptLoop()
	}()
}

func (p *tcpPort) acceptLoop() {
	var backoff time.Duration
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors and the like: wait a little instead of spinning.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		lt := p.cur.Load()
		if !lt.sources.allowsConn(c) {
			c.Close()
			continue
		}
		// Past the cap a connection is closed at once: a flood of idle connections must not take
		// the file descriptors and memory every other listener and tenant needs.
		if !p.open.acquire(lt.lim.maxConnsPerListener) {
			// Counted before the close, so that the refusal is in the metrics by the time the
			// client sees it.
			p.s.metrics.hits.maxConns.Inc()
			c.Close()
			continue
		}
		switch lt.proto {
		case ir.ProtocolHTTP:
			if p.s.opts.DisableFastPath {
				p.hl.push(&countedConn{Conn: c, open: &p.open})
				continue
			}
			idle := new(atomic.Bool)
			if !p.raw.addIdle(c, idle) {
				c.Close()
				p.open.release()
				continue
			}
			go func() {
				defer p.open.release()
				defer p.raw.done(c)
				p.serveHTTP1(c, idle, nil)
			}()
		case ir.ProtocolHTTPS:
			// The TLS layer sits on the counted conn: whoever closes it, the fast path or the
			// http.Server it is handed to, gives the slot back.
			tc := tls.Server(&countedConn{Conn: c, open: &p.open}, lt.tls)
			if p.s.opts.DisableFastPath {
				p.hl.push(tc)
				continue
			}
			idle := new(atomic.Bool)
			if !p.raw.addIdle(c, idle) {
				tc.Close()
				continue
			}
			go func() {
				defer p.raw.done(c)
				p.serveHTTPS(tc, lt.name, idle)
			}()
		case ir.ProtocolTLS, ir.ProtocolTCP:
			if !p.raw.add(c) {
				c.Close()
				p.open.release()
				continue
			}
			go func() {
				defer p.open.release()
				defer p.raw.done(c)
				if lt.proto == ir.ProtocolTLS {
					p.s.serveTLSConn(c, lt)
				} else {
					p.s.serveTCPConn(c, lt, lt.l4)
				}
			}()
		default:
			c.Close()
			p.open.release()
		}
	}
}

// handOff gives a fast-path connection, with the bytes already read of it, to the net/http
// server. The connection keeps its place under the cap: a plain one's slot is given back by the
// fast path when it returns, so the handed-off conn takes one until it is closed; a TLS one holds
// its slot in the countedConn under the TLS layer.
func (p *tcpPort) handOff(c net.Conn, read []byte) {
	_ = c.SetWriteDeadline(time.Time{}) // the fast path's (idleWriter); net/http sets its own
	if tc, ok := c.(*tls.Conn); ok {
		p.hl.push(&tlsPrefixConn{prefixConn: prefixConn{Conn: tc, prefix: read}, tc: tc})
		return
	}
	p.open.n.Add(1)
	p.hl.push(handedOff(&countedConn{Conn: c, open: &p.open}, read))
}

// h2cPreface starts what an HTTP/2 client with prior knowledge sends first.
const h2cPreface = "PRI * HTTP/2.0\r\n"

// handedOff is the conn a plain connection is handed to net/http as. An h2c connection gets a
// read buffer: net/http's HTTP/2 server reads frames straight from the conn, a frame header and
// its payload in two reads, which on a plain socket is two system calls per frame (a TLS
// connection buffers its records itself). HTTP/1.1 is read through the http.Server's own buffer.
func handedOff(c net.Conn, read []byte) net.Conn {
	pc := &prefixConn{Conn: c, prefix: read}
	if !bytes.HasPrefix(read, []byte(h2cPreface)) {
		return pc
	}
	return &bufferedConn{prefixConn: pc, br: bufio.NewReaderSize(pc, 4<<10)}
}

// bufferedConn reads its conn through a buffer; reads as large as the buffer bypass it.
type bufferedConn struct {
	*prefixConn
	br *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.br.Read(p) }

// connCount counts a port's open client connections.
type connCount struct{ n atomic.Int64 }

// acquire takes a slot unless max are taken.
func (cc *connCount) acquire(max int) bool {
	if cc.n.Add(1) > int64(max) {
		cc.n.Add(-1)
		return false
	}
	return true
}

func (cc *connCount) release() { cc.n.Add(-1) }

// countedConn is a connection served by the http.Server: it gives its slot back when closed,
// whoever closes it (the server, a hijacker, a drain).
type countedConn struct {
	net.Conn
	open   *connCount
	closed atomic.Bool
}

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	if c.closed.CompareAndSwap(false, true) {
		c.open.release()
	}
	return err
}

// CloseWrite lets the http.Server half-close the connection before closing it.
func (c *countedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

func (p *tcpPort) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	lt := p.cur.Load()
	if lt.hosts == nil {
		// The port changed protocol while this connection stayed open.
		w.Header().Set("Connection", "close")
		w.WriteHeader(http.StatusMisdirectedRequest)
		return
	}
	if !p.s.screen(w, r, lt) {
		return
	}
	if r.ProtoMajor == 2 {
		if g := guardOf(r); g != nil {
			g.streams.Add(1)
		}
		if r.Context().Err() != nil {
			// Reset by the client before its handler ran: nothing to proxy, but it counts.
			p.s.clientReset(w, r)
			return
		}
	}
	if r.ProtoMajor == 1 && r.Header.Get("Upgrade") != "" {
		// An upgraded connection (WebSocket) is hijacked, and http.Server.Shutdown forgets it.
		w = &upgradeWriter{ResponseWriter: w, conns: &p.raw}
	}
	p.s.serveHTTP(lt, w, r)
}

// upgradeWriter hands the connection ReverseProxy hijacks for an upgrade to the port's connSet, so
// that a drain waits for it until its deadline and then closes it.
type upgradeWriter struct {
	http.ResponseWriter
	conns *connSet
}

func (w *upgradeWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	if !w.conns.add(c) {
		c.Close()
		return nil, nil, errors.New("listener is draining")
	}
	return &upgradedConn{Conn: c, conns: w.conns}, brw, nil
}

func (w *upgradeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// upgradedConn leaves its connSet when closed.
type upgradedConn struct {
	net.Conn
	conns *connSet
	once  sync.Once
}

func (c *upgradedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.conns.done(c.Conn) })
	return err
}

// drain stops accepting, lets HTTP requests and raw connections finish, and cuts them when ctx ends.
func (p *tcpPort) drain(ctx context.Context) error {
	p.ln.Close()
	herr := p.http.Shutdown(ctx)
	if herr != nil {
		p.http.Close()
	}
	rerr := p.raw.drain(ctx)
	p.loop.Wait()
	// Connections accepted but never picked up by the closed http.Server.
	for {
		select {
		case c := <-p.hl.ch:
			c.Close()
		default:
			return errors.Join(herr, rerr)
		}
	}
}

// logWriter routes the http.Server's own complaints (TLS handshake errors from scanners and the
// like) to the operational log at debug level.
type logWriter struct{ log logr.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	w.log.V(1).Info(strings.TrimSpace(string(p)))
	return len(p), nil
}

// connSet tracks the connections the port serves itself (L4 and the HTTP/1.1 fast path) so they
// can be drained and, past the deadline, closed.
type connSet struct {
	mu    sync.Mutex
	conns map[net.Conn]*atomic.Bool // the flag, if any, says the conn waits for its next request
	// closed is set under mu and read without it by connections between requests.
	closed atomic.Bool
	wg     sync.WaitGroup
}

func (cs *connSet) add(c net.Conn) bool { return cs.addIdle(c, nil) }

func (cs *connSet) addIdle(c net.Conn, idle *atomic.Bool) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.closed.Load() {
		return false
	}
	if cs.conns == nil {
		cs.conns = map[net.Conn]*atomic.Bool{}
	}
	cs.conns[c] = idle
	cs.wg.Add(1)
	return true
}

func (cs *connSet) isDraining() bool { return cs.closed.Load() }

func (cs *connSet) done(c net.Conn) {
	cs.mu.Lock()
	delete(cs.conns, c)
	cs.mu.Unlock()
	cs.wg.Done()
}

func (cs *connSet) drain(ctx context.Context) error {
	cs.mu.Lock()
	cs.closed.Store(true)
	// Wake keepalive connections waiting for a request so they close now; busy ones finish first.
	for c, idle := range cs.conns {
		if idle != nil && idle.Load() {
			_ = c.SetReadDeadline(time.Now())
		}
	}
	cs.mu.Unlock()
	done := make(chan struct{})
	go func() { cs.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	cs.mu.Lock()
	for c := range cs.conns {
		c.Close()
	}
	cs.mu.Unlock()
	<-done
	return ctx.Err()
}

// chanListener is the net.Listener an http.Server serves; the port's accept loop feeds it.
type chanListener struct {
	addr net.Addr
	ch   chan net.Conn
	done chan struct{}
	once sync.Once
}

func newChanListener(addr net.Addr) *chanListener {
	return &chanListener{addr: addr, ch: make(chan net.Conn, 64), done: make(chan struct{})}
}

func (l *chanListener) push(c net.Conn) {
	select {
	case l.ch <- c:
	case <-l.done:
		c.Close()
	}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *chanListener) Addr() net.Addr { return l.addr }
