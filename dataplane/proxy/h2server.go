package proxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// The proxy's own HTTP/2 server, for h2 over TLS (ALPN) and h2c with prior knowledge. net/http's
// bundled server costs, per response, two flushes (HEADERS and DATA written separately: two TLS
// records, two syscalls, two goroutine starts), a new goroutine per stream whose stack grows on
// every request, and channel hand-offs between handler and serve loop (tests/bench/results/h2.md);
// none of it has a knob. Here one goroutine per connection reads frames with x/net's Framer (its
// parsing, HPACK decoding, header list bound and frame-order checks kept), each stream runs on a
// pooled worker whose stack is already grown, and a response's HEADERS, DATA and END_STREAM are
// encoded into the connection's write buffer and written together, with the frames of every
// other stream that became ready meanwhile (one write per batch instead of one per frame).
// Requests are served by the same handler as net/http's path (tcpPort.ServeHTTP), so routing,
// filters, limits, metrics and access logs are the same; Options.DisableHTTP2Server goes back to
// net/http's server.

const (
	// h2MaxStreams is the SETTINGS_MAX_CONCURRENT_STREAMS announced, as net/http's path had it.
	h2MaxStreams = 250
	// h2MaxReadFrame is the largest frame accepted (SETTINGS_MAX_FRAME_SIZE), as before.
	h2MaxReadFrame = 1 << 20
	// h2StreamWindow and h2ConnWindow are the receive windows announced: a request body may have
	// this much in flight per stream and per connection (x/net's server defaults). They bound the
	// memory a connection's request bodies can take.
	h2StreamWindow = 1 << 20
	h2ConnWindow   = 1 << 20
	// h2WindowRefresh is how much consumed body is credited back at once (WINDOW_UPDATE).
	h2WindowRefresh = 32 << 10
	// h2WriteBufMax bounds what waits in a connection's write buffer while a write is under way;
	// a writer past it waits, so a client that reads slowly slows its streams down.
	h2WriteBufMax = 64 << 10
	// h2DataChunk is the most a response buffers before sending DATA (and the HEADERS) on its own.
	h2DataChunk = 16 << 10
)

var (
	errH2StreamClosed = errors.New("http2: stream closed")
	errH2ConnClosed   = errors.New("http2: connection closed")
)

// h2Conn is one HTTP/2 client connection.
type h2Conn struct {
	p      *tcpPort
	s      *Server
	c      net.Conn
	br     *bufio.Reader
	fr     *http2.Framer
	tls    *tls.ConnectionState
	remote string
	// ip is the client's address without port (X-Forwarded-For on the fast path).
	ip string
	// base is the parent of every stream's context: it carries the connection's connGuard.
	base   context.Context
	cancel context.CancelFunc
	guard  *connGuard
	// canon caches canonical header names (read side only), bounded by h2CanonMax.
	canon map[string]string
	// deadline is the read deadline set on c (reader only).
	deadline time.Time
	workers  sync.WaitGroup
	// recvWin is the connection's receive window left (taken by the reader, credited by bodies).
	recvWin atomic.Int32

	mu        sync.Mutex
	streams   map[uint32]*h2Stream
	maxID     uint32 // the highest stream the client opened
	running   int    // handlers running, reset streams included
	goingAway bool   // GOAWAY sent: no new streams
	idleSince time.Time

	// The write side, under wmu: the frames waiting to be written (out), the HPACK encoder (its
	// state follows the order of HEADERS on the wire), send windows and the peer's settings.
	wmu      sync.Mutex
	wcond    sync.Cond
	out      frameSink
	spare    []byte
	wfr      *http2.Framer
	henc     *hpack.Encoder
	hbuf     frameSink
	flushing bool
	werr     error
	wdl      time.Time
	sendWin  int32
	peerWin  int32  // the peer's SETTINGS_INITIAL_WINDOW_SIZE
	peerMax  uint32 // the peer's SETTINGS_MAX_FRAME_SIZE
	credit   int32  // connection receive window consumed and not yet given back
	lower    map[string]string
	date     []byte
	dateSec  int64
}

// frameSink is the writer frames are encoded into.
type frameSink struct{ b []byte }

func (s *frameSink) Write(p []byte) (int, error) {
	s.b = append(s.b, p...)
	return len(p), nil
}

// h2CanonMax bounds the header name caches of a connection.
const h2CanonMax = 128

// serveH2 serves an HTTP/2 connection whose preface is still to be read from br; st is the TLS
// state of an h2 connection over TLS, nil for h2c. It returns when the connection is closed.
func (p *tcpPort) serveH2(c net.Conn, br *bufio.Reader, st *tls.ConnectionState, idle *atomic.Bool) {
	s := p.s
	// Between frames the connection counts as idle for a drain: the drain's deadline wakes the
	// reader, which answers with a GOAWAY and lets the streams in flight finish.
	idle.Store(true)
	cc := &h2Conn{p: p, s: s, c: c, br: br, tls: st, remote: c.RemoteAddr().String(),
		streams: map[uint32]*h2Stream{}, canon: map[string]string{}, lower: map[string]string{},
		sendWin: 65535, peerWin: 65535, peerMax: 16 << 10, idleSince: time.Now()}
	cc.ip, _, _ = net.SplitHostPort(cc.remote)
	cc.guard = &connGuard{c: c}
	ctx := context.WithValue(context.Background(), connGuardKey{}, cc.guard)
	// ReverseProxy aborts (panics with http.ErrAbortHandler) on a broken copy only under a
	// server: the stream is then reset instead of ending as if the answer were complete.
	ctx = context.WithValue(ctx, http.ServerContextKey, p.http)
	ctx = context.WithValue(ctx, http.LocalAddrContextKey, c.LocalAddr())
	cc.base, cc.cancel = context.WithCancel(ctx)
	cc.wcond.L = &cc.wmu
	cc.recvWin.Store(h2ConnWindow)
	cc.wfr = http2.NewFramer(&cc.out, nil)
	cc.henc = hpack.NewEncoder(&cc.hbuf)
	cc.fr = http2.NewFramer(io.Discard, br)
	cc.fr.SetReuseFrames()
	cc.fr.SetMaxReadFrameSize(h2MaxReadFrame)
	cc.fr.MaxHeaderListSize = uint32(s.opts.MaxHeaderBytes)
	cc.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	defer cc.close()
	if err := cc.handshake(); err != nil {
		cc.fail(err)
		return
	}
	cc.fail(cc.readLoop())
}

// handshake reads the client preface and its SETTINGS, and sends the server's.
func (cc *h2Conn) handshake() error {
	_ = cc.c.SetReadDeadline(time.Now().Add(cc.s.opts.ReadHeaderTimeout))
	var pre [len(http2.ClientPreface)]byte
	if _, err := io.ReadFull(cc.br, pre[:]); err != nil || string(pre[:]) != http2.ClientPreface {
		return errPreface
	}
	err := cc.write(func(fr *http2.Framer) {
		_ = fr.WriteSettings(
			http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: h2MaxStreams},
			http2.Setting{ID: http2.SettingMaxFrameSize, Val: h2MaxReadFrame},
			http2.Setting{ID: http2.SettingInitialWindowSize, Val: h2StreamWindow},
			http2.Setting{ID: http2.SettingMaxHeaderListSize, Val: uint32(cc.s.opts.MaxHeaderBytes)},
		)
		_ = fr.WriteWindowUpdate(0, h2ConnWindow-65535)
	})
	if err != nil {
		return err
	}
	f, err := cc.fr.ReadFrame()
	if err != nil {
		return err
	}
	sf, ok := f.(*http2.SettingsFrame)
	if !ok || sf.IsAck() {
		return http2.ConnectionError(http2.ErrCodeProtocol)
	}
	return cc.processSettings(sf)
}

// errPreface: the connection did not start with the HTTP/2 client preface; it is closed without
// a word, as net/http does.
var errPreface = errors.New("http2: bad client preface")

// readLoop reads and processes frames until the connection ends; it returns why.
func (cc *h2Conn) readLoop() error {
	s := cc.s
	for {
		now := time.Now()
		// The deadline goes before the drain check (see serveHTTP1).
		if dl, ok := refresh(&cc.deadline, now, s.opts.IdleTimeout); ok {
			_ = cc.c.SetReadDeadline(dl)
		}
		if cc.p.raw.isDraining() {
			cc.goAway(http2.ErrCodeNo)
		}
		if cc.doneGoingAway() {
			return nil
		}
		if _, err := cc.br.Peek(1); err != nil {
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				return err
			}
			cc.deadline = time.Time{} // in the past: set anew
			if cc.idleFor(now) >= s.opts.IdleTimeout {
				cc.goAway(http2.ErrCodeNo)
				return nil
			}
			continue
		}
		f, err := cc.fr.ReadFrame()
		if err != nil {
			var se http2.StreamError
			if errors.As(err, &se) {
				// A malformed header block (invalid field, pseudo-header misuse): the stream is
				// refused; the connection goes on.
				cc.mu.Lock()
				if se.StreamID > cc.maxID && se.StreamID%2 == 1 {
					cc.maxID = se.StreamID
				}
				cc.mu.Unlock()
				cc.resetStream(se.StreamID, se.Code)
				continue
			}
			return err
		}
		if err := cc.processFrame(f); err != nil {
			return err
		}
	}
}

// idleFor reports how long the connection has had no stream.
func (cc *h2Conn) idleFor(now time.Time) time.Duration {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if len(cc.streams) > 0 || cc.running > 0 {
		return 0
	}
	return now.Sub(cc.idleSince)
}

// inFlight reports how many streams' handlers are running.
func (cc *h2Conn) inFlight() int {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.running
}

// doneGoingAway reports whether the connection sent its GOAWAY and has nothing left in flight.
func (cc *h2Conn) doneGoingAway() bool {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.goingAway && len(cc.streams) == 0 && cc.running == 0
}

func (cc *h2Conn) processFrame(f http2.Frame) error {
	switch f := f.(type) {
	case *http2.MetaHeadersFrame:
		return cc.processHeaders(f)
	case *http2.DataFrame:
		return cc.processData(f)
	case *http2.SettingsFrame:
		if f.IsAck() {
			return nil
		}
		return cc.processSettings(f)
	case *http2.PingFrame:
		if f.IsAck() {
			return nil
		}
		return cc.write(func(fr *http2.Framer) { _ = fr.WritePing(true, f.Data) })
	case *http2.WindowUpdateFrame:
		return cc.processWindowUpdate(f)
	case *http2.RSTStreamFrame:
		cc.mu.Lock()
		idle := f.StreamID > cc.maxID
		st := cc.streams[f.StreamID]
		cc.mu.Unlock()
		if idle {
			return http2.ConnectionError(http2.ErrCodeProtocol)
		}
		if st != nil {
			cc.closeStream(st, errH2StreamClosed)
		}
		return nil
	case *http2.PriorityFrame:
		if f.StreamID == f.StreamDep {
			cc.resetStream(f.StreamID, http2.ErrCodeProtocol)
		}
		return nil
	case *http2.GoAwayFrame:
		// The client opens no more streams; those in flight finish.
		cc.mu.Lock()
		cc.goingAway = true
		cc.mu.Unlock()
		return nil
	case *http2.PushPromiseFrame:
		return http2.ConnectionError(http2.ErrCodeProtocol)
	default:
		// Unknown frame types are ignored (RFC 9113 §5.5); CONTINUATION outside a header block
		// is refused by the Framer already.
		return nil
	}
}

func (cc *h2Conn) processSettings(f *http2.SettingsFrame) error {
	if err := f.ForeachSetting(func(s http2.Setting) error { return s.Valid() }); err != nil {
		return err
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.wmu.Lock()
	err := f.ForeachSetting(func(s http2.Setting) error {
		switch s.ID {
		case http2.SettingInitialWindowSize:
			delta := int64(s.Val) - int64(cc.peerWin)
			cc.peerWin = int32(s.Val)
			for _, st := range cc.streams {
				n := int64(st.sendWin) + delta
				if n > 1<<31-1 {
					return http2.ConnectionError(http2.ErrCodeFlowControl)
				}
				st.sendWin = int32(n)
			}
		case http2.SettingMaxFrameSize:
			cc.peerMax = s.Val
		case http2.SettingHeaderTableSize:
			cc.henc.SetMaxDynamicTableSize(s.Val)
		}
		return nil
	})
	if err == nil {
		_ = cc.wfr.WriteSettingsAck()
		cc.wcond.Broadcast()
		err = cc.flushLocked()
	}
	cc.wmu.Unlock()
	return err
}

func (cc *h2Conn) processWindowUpdate(f *http2.WindowUpdateFrame) error {
	var st *h2Stream
	if f.StreamID != 0 {
		cc.mu.Lock()
		idle := f.StreamID > cc.maxID
		st = cc.streams[f.StreamID]
		cc.mu.Unlock()
		if idle {
			return http2.ConnectionError(http2.ErrCodeProtocol)
		}
		if st == nil {
			return nil // a stream closed meanwhile
		}
	}
	cc.wmu.Lock()
	defer cc.wmu.Unlock()
	win := &cc.sendWin
	if st != nil {
		win = &st.sendWin
	}
	if int64(*win)+int64(f.Increment) > 1<<31-1 {
		if st != nil {
			cc.wmu.Unlock()
			cc.resetStream(st.id, http2.ErrCodeFlowControl)
			cc.wmu.Lock()
			return nil
		}
		return http2.ConnectionError(http2.ErrCodeFlowControl)
	}
	*win += int32(f.Increment)
	cc.wcond.Broadcast()
	return nil
}

// processData takes a DATA frame's payload into its stream's body, under both receive windows.
func (cc *h2Conn) processData(f *http2.DataFrame) error {
	id, n := f.StreamID, int32(f.Length)
	if n > cc.recvWin.Load() {
		return http2.ConnectionError(http2.ErrCodeFlowControl)
	}
	cc.recvWin.Add(-n)
	cc.mu.Lock()
	idle := id > cc.maxID
	st := cc.streams[id]
	cc.mu.Unlock()
	if idle {
		return http2.ConnectionError(http2.ErrCodeProtocol)
	}
	data := f.Data()
	if st == nil || st.body == nil || st.remoteDone.Load() {
		// A stream closed already (or one that had ended its request): its window is the
		// connection's again.
		cc.giveBack(nil, n)
		cc.resetStream(id, http2.ErrCodeStreamClosed)
		return nil
	}
	if n > st.recvWin.Load() {
		cc.giveBack(nil, n)
		cc.resetStream(id, http2.ErrCodeFlowControl)
		return nil
	}
	st.recvWin.Add(-n)
	// Padding is credited back at once; the data when the handler reads it.
	if pad := n - int32(len(data)); pad > 0 {
		cc.giveBack(st, pad)
	}
	st.received += int64(len(data))
	if st.declared >= 0 && (st.received > st.declared || f.StreamEnded() && st.received != st.declared) {
		// RFC 9113 §8.1.1: a body that differs from its content-length is malformed.
		cc.giveBack(nil, int32(len(data)))
		cc.resetStream(id, http2.ErrCodeProtocol)
		return nil
	}
	if !st.body.push(data, f.StreamEnded()) {
		cc.giveBack(nil, int32(len(data)))
	}
	if f.StreamEnded() {
		cc.remoteEnded(st)
	}
	return nil
}

// remoteEnded records the client's END_STREAM on st.
func (cc *h2Conn) remoteEnded(st *h2Stream) {
	cc.mu.Lock()
	st.remoteDone.Store(true)
	done := st.localDone
	cc.mu.Unlock()
	if done {
		cc.forget(st)
	}
}

// forget removes st from the open streams.
func (cc *h2Conn) forget(st *h2Stream) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.streams[st.id] == st {
		delete(cc.streams, st.id)
		cc.noteIdleLocked()
	}
}

// noteIdleLocked starts the idle clock when the last stream went, and wakes the reader of a
// connection going away so that it closes.
func (cc *h2Conn) noteIdleLocked() {
	if len(cc.streams) > 0 || cc.running > 0 {
		return
	}
	cc.idleSince = time.Now()
	if cc.goingAway {
		_ = cc.c.SetReadDeadline(time.Now())
	}
}

// closeStream ends st at once (reset by the client, or by the proxy): its handler's context is
// cancelled, its body and writes fail with err.
func (cc *h2Conn) closeStream(st *h2Stream, err error) {
	cc.forget(st)
	st.cancel()
	st.cutUp()
	if st.body != nil {
		st.body.fail(err)
	}
	cc.wmu.Lock()
	st.closed = true
	cc.wcond.Broadcast()
	cc.wmu.Unlock()
}

// resetStream sends RST_STREAM for id and closes the stream if it is open.
func (cc *h2Conn) resetStream(id uint32, code http2.ErrCode) {
	cc.mu.Lock()
	st := cc.streams[id]
	cc.mu.Unlock()
	if st != nil {
		cc.closeStream(st, errH2StreamClosed)
	}
	_ = cc.write(func(fr *http2.Framer) { _ = fr.WriteRSTStream(id, code) })
}

// giveBack credits n consumed bytes to the connection's receive window and, with st, to the
// stream's, sending WINDOW_UPDATE once enough has gathered.
func (cc *h2Conn) giveBack(st *h2Stream, n int32) {
	cc.wmu.Lock()
	defer cc.wmu.Unlock()
	cc.credit += n
	if cc.credit >= h2WindowRefresh {
		_ = cc.wfr.WriteWindowUpdate(0, uint32(cc.credit))
		cc.recvWin.Add(cc.credit)
		cc.credit = 0
	}
	if st != nil && !st.closed && !st.remoteDone.Load() {
		st.credit += n
		if st.credit >= h2WindowRefresh {
			_ = cc.wfr.WriteWindowUpdate(st.id, uint32(st.credit))
			st.recvWin.Add(st.credit)
			st.credit = 0
		}
	}
	_ = cc.flushLocked()
}

// goAway sends GOAWAY (once) and stops taking new streams.
func (cc *h2Conn) goAway(code http2.ErrCode) {
	cc.mu.Lock()
	if cc.goingAway && code == http2.ErrCodeNo {
		cc.mu.Unlock()
		return
	}
	cc.goingAway = true
	last := cc.maxID
	cc.noteIdleLocked()
	cc.mu.Unlock()
	_ = cc.write(func(fr *http2.Framer) { _ = fr.WriteGoAway(last, code, nil) })
}

// fail ends the connection for err: a protocol error gets its GOAWAY first.
func (cc *h2Conn) fail(err error) {
	var ce http2.ConnectionError
	switch {
	case errors.As(err, &ce):
		cc.goAway(http2.ErrCode(ce))
	case errors.Is(err, http2.ErrFrameTooLarge):
		cc.goAway(http2.ErrCodeFrameSize)
	}
}

// close tears the connection down: every stream is cancelled, and the handlers still running are
// waited for.
func (cc *h2Conn) close() {
	cc.mu.Lock()
	cc.goingAway = true
	open := make([]*h2Stream, 0, len(cc.streams))
	for _, st := range cc.streams {
		open = append(open, st)
	}
	cc.mu.Unlock()
	for _, st := range open {
		cc.closeStream(st, errH2ConnClosed)
	}
	cc.wmu.Lock()
	for cc.flushing {
		cc.wcond.Wait()
	}
	if cc.werr == nil {
		cc.werr = errH2ConnClosed
	}
	cc.wcond.Broadcast()
	cc.wmu.Unlock()
	cc.c.Close()
	cc.cancel()
	cc.workers.Wait()
}

// write encodes frames with fn and sends them (or leaves them to the write under way).
func (cc *h2Conn) write(fn func(*http2.Framer)) error {
	cc.wmu.Lock()
	defer cc.wmu.Unlock()
	if cc.werr != nil {
		return cc.werr
	}
	fn(cc.wfr)
	return cc.flushLocked()
}

// flushLocked writes what waits in out, with wmu held (released during the write). When another
// goroutine is writing, the frames go with its next write; the caller waits only while the
// buffer is over h2WriteBufMax. All streams' frames that gather during one write go out in the
// next: a busy connection pays one write for many frames.
func (cc *h2Conn) flushLocked() error {
	for {
		if cc.werr != nil {
			return cc.werr
		}
		if len(cc.out.b) == 0 {
			return nil
		}
		if cc.flushing {
			if len(cc.out.b) < h2WriteBufMax {
				return nil
			}
			cc.wcond.Wait()
			continue
		}
		cc.flushing = true
		b := cc.out.b
		cc.out.b = cc.spare[:0]
		d := cc.p.cur.Load().lim.responseWriteIdleTimeout
		var dl time.Time
		set := false
		if d > 0 {
			dl, set = refresh(&cc.wdl, time.Now(), d)
		}
		cc.wmu.Unlock()
		if set {
			_ = cc.c.SetWriteDeadline(dl)
		}
		_, err := cc.c.Write(b)
		cc.wmu.Lock()
		cc.flushing = false
		if cap(b) <= 4*h2WriteBufMax {
			cc.spare = b[:0]
		}
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				cc.s.metrics.hits.writeIdle.Inc()
			}
			cc.werr = err
			// The reader is woken and tears the connection down.
			_ = cc.c.Close()
		}
		cc.wcond.Broadcast()
	}
}
