package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/textproto"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// h2Stream is one request stream of an h2Conn.
type h2Stream struct {
	cc   *h2Conn
	id   uint32
	body *h2Body // nil when the request ended with its headers
	// declared is the request's content-length (-1: none), received what DATA brought (reader only).
	declared, received int64
	recvWin            atomic.Int32
	// remoteDone: the client ended its side (END_STREAM); localDone (under cc.mu): the answer is complete.
	remoteDone atomic.Bool
	localDone  bool
	// Under cc.wmu: the send window, the stream closed (reset or connection gone), the receive
	// window consumed and not yet given back.
	sendWin int32
	closed  bool
	credit  int32
	// up is the upstream connection a fast-path relay waits on (h2fast.go), under upMu; a
	// reset of the stream cuts the wait (cut), and the connection is then not pooled.
	upMu sync.Mutex
	up   *upConn
	cut  bool
	// The stream's context (h2Ctx), under upMu: cancelled once the stream is reset or its
	// handler returned; done is made only when someone waits on it, afters are AfterFunc's.
	cancelled atomic.Bool
	done      chan struct{}
	afters    []*func()
}

// h2Ctx is the context of a stream's request. A context.WithCancel per stream cost six
// allocations and a registration with the connection's context; this one is reused with its
// exchange (h2Exchange) and allocates only what a waiter asks for (Done, AfterFunc). Values
// are the connection's (its connGuard, the server); the connection's end cancels every
// stream still running (close), so the stream's cancellation is all it needs to follow.
type h2Ctx struct{ st *h2Stream }

func (c *h2Ctx) Deadline() (time.Time, bool) { return time.Time{}, false }

func (c *h2Ctx) Done() <-chan struct{} {
	st := c.st
	st.upMu.Lock()
	defer st.upMu.Unlock()
	if st.done == nil {
		st.done = make(chan struct{})
		if st.cancelled.Load() {
			close(st.done)
		}
	}
	return st.done
}

func (c *h2Ctx) Err() error {
	if c.st.cancelled.Load() {
		return context.Canceled
	}
	return nil
}

func (c *h2Ctx) Value(k any) any { return c.st.cc.base.Value(k) }

// AfterFunc runs f in its own goroutine once the stream is cancelled: context.WithCancel and
// context.AfterFunc on a stream's context use it instead of a goroutine waiting on Done.
func (c *h2Ctx) AfterFunc(f func()) (stop func() bool) {
	st := c.st
	st.upMu.Lock()
	defer st.upMu.Unlock()
	if st.cancelled.Load() {
		go f()
		return func() bool { return false }
	}
	e := &f
	st.afters = append(st.afters, e)
	return func() bool {
		st.upMu.Lock()
		defer st.upMu.Unlock()
		for i, x := range st.afters {
			if x == e {
				st.afters = append(st.afters[:i], st.afters[i+1:]...)
				return true
			}
		}
		return false
	}
}

// cancel cancels the stream's context (once).
func (st *h2Stream) cancel() {
	st.upMu.Lock()
	if st.cancelled.Load() {
		st.upMu.Unlock()
		return
	}
	st.cancelled.Store(true)
	if st.done != nil {
		close(st.done)
	}
	fs := st.afters
	st.afters = nil
	st.upMu.Unlock()
	for _, f := range fs {
		go (*f)()
	}
}

// watchUp makes a reset of st cut the wait for uc's answer.
func (st *h2Stream) watchUp(uc *upConn) {
	st.upMu.Lock()
	defer st.upMu.Unlock()
	st.up = uc
	if st.cut {
		_ = uc.c.SetReadDeadline(time.Now())
	}
}

// unwatchUp ends watchUp; it reports whether the wait was cut (uc must not be pooled).
func (st *h2Stream) unwatchUp() bool {
	st.upMu.Lock()
	defer st.upMu.Unlock()
	st.up = nil
	return st.cut
}

// cutUp ends a fast-path relay's wait for its backend: the client reset the stream, and an
// upstream request the client no longer waits for must not hold a connection and a worker.
func (st *h2Stream) cutUp() {
	st.upMu.Lock()
	defer st.upMu.Unlock()
	st.cut = true
	if st.up != nil {
		_ = st.up.c.SetReadDeadline(time.Now())
	}
}

// processHeaders opens a stream, or takes the trailers of an open one.
func (cc *h2Conn) processHeaders(f *http2.MetaHeadersFrame) error {
	id := f.StreamID
	if id%2 != 1 {
		return http2.ConnectionError(http2.ErrCodeProtocol)
	}
	cc.mu.Lock()
	st := cc.streams[id]
	if st == nil && id <= cc.maxID {
		cc.mu.Unlock()
		// New streams' identifiers only go up (RFC 9113 §5.1.1), and a closed stream takes no
		// header block; as x/net's server, the connection ends.
		return http2.ConnectionError(http2.ErrCodeProtocol)
	}
	if st != nil {
		cc.mu.Unlock()
		return cc.processTrailers(st, f)
	}
	cc.maxID = id
	refuse := cc.goingAway
	full := len(cc.streams) >= h2MaxStreams || cc.running >= h2MaxStreams
	cc.mu.Unlock()
	switch {
	case refuse:
		return nil // past our GOAWAY: ignored, the client may retry elsewhere
	case full:
		cc.resetStream(id, http2.ErrCodeRefusedStream)
		return nil
	case f.HasPriority() && f.Priority.StreamDep == id:
		cc.resetStream(id, http2.ErrCodeProtocol)
		return nil
	case f.Truncated:
		// Over MaxHeaderBytes: answered 431, as net/http does.
		cc.answerAlone(id, http.StatusRequestHeaderFieldsTooLarge, !f.StreamEnded())
		return nil
	}
	ex := cc.s.getExchange()
	req, declared, err := cc.newRequest(f, ex)
	if err != nil {
		cc.s.h2ex.Put(ex)
		cc.resetStream(id, http2.ErrCodeProtocol)
		return nil
	}
	st = &h2Stream{cc: cc, id: id, declared: declared}
	ex.ctx.st = st
	st.recvWin.Store(h2StreamWindow)
	if !f.StreamEnded() {
		st.body = &h2Body{st: st, trailer: req.Trailer}
		st.body.cond.L = &st.body.mu
		req.Body = st.body
	} else {
		st.remoteDone.Store(true)
	}
	cc.mu.Lock()
	cc.wmu.Lock()
	st.sendWin = cc.peerWin
	cc.wmu.Unlock()
	cc.streams[id] = st
	cc.running++
	cc.mu.Unlock()
	cc.workers.Add(1)
	cc.s.h2Workers.run(func() { cc.serveStream(st, ex) })
	return nil
}

// processTrailers takes a header block on an open stream: it must end the stream and carry no
// pseudo-header (RFC 9113 §8.1).
func (cc *h2Conn) processTrailers(st *h2Stream, f *http2.MetaHeadersFrame) error {
	if st.remoteDone.Load() || st.body == nil {
		cc.resetStream(st.id, http2.ErrCodeStreamClosed)
		return nil
	}
	if !f.StreamEnded() || len(f.PseudoFields()) > 0 || f.Truncated {
		cc.resetStream(st.id, http2.ErrCodeProtocol)
		return nil
	}
	if st.declared >= 0 && st.received != st.declared {
		cc.resetStream(st.id, http2.ErrCodeProtocol)
		return nil
	}
	st.body.pushTrailers(f.RegularFields(), cc.canonical)
	cc.remoteEnded(st)
	return nil
}

// answerAlone answers a stream the proxy does not serve with a bare status.
func (cc *h2Conn) answerAlone(id uint32, code int, open bool) {
	cc.wmu.Lock()
	defer cc.wmu.Unlock()
	if cc.werr != nil {
		return
	}
	cc.hbuf.b = cc.hbuf.b[:0]
	_ = cc.henc.WriteField(hpack.HeaderField{Name: ":status", Value: strconv.Itoa(code)})
	cc.writeBlock(id, true)
	if open {
		_ = cc.wfr.WriteRSTStream(id, http2.ErrCodeNo)
	}
	_ = cc.flushLocked()
}

// connHeaders are the connection-specific fields that make an HTTP/2 request malformed and that
// are never sent in an HTTP/2 answer (RFC 9113 §8.2.2).
func connHeader(k string) bool {
	switch k {
	case "Connection", "Keep-Alive", "Proxy-Connection", "Transfer-Encoding", "Upgrade":
		return true
	}
	return false
}

// canonical returns the canonical form of a lower-case header name, cached per connection.
func (cc *h2Conn) canonical(k string) string {
	return cachedName(cc.canon, k, textproto.CanonicalMIMEHeaderKey)
}

// cachedName returns f(k), remembered in m while it holds fewer than h2CanonMax names.
func cachedName(m map[string]string, k string, f func(string) string) string {
	if v, ok := m[k]; ok {
		return v
	}
	v := f(k)
	if len(m) < h2CanonMax {
		m[k] = v
	}
	return v
}

// newRequest builds the request of a HEADERS frame, refusing a malformed one (RFC 9113 §8.1.1,
// §8.2, §8.3): unknown or missing pseudo-headers, connection-specific fields, a TE other than
// "trailers", a content-length that is not one number or disagrees with an ended stream, a Host
// that differs from :authority. It returns the declared content-length (-1: none).
//
// The request, its URL and header map are ex's, reused from stream to stream (as the HTTP/1.1
// fast path reuses its connection's): a stream relayed on the fast path allocates none of them.
func (cc *h2Conn) newRequest(f *http2.MetaHeadersFrame, ex *h2Exchange) (*http.Request, int64, error) {
	var method, scheme, path, authority string
	for _, hf := range f.PseudoFields() {
		switch hf.Name {
		case ":method":
			method = hf.Value
		case ":scheme":
			scheme = hf.Value
		case ":path":
			path = hf.Value
		case ":authority":
			authority = hf.Value
		default:
			return nil, 0, fmt.Errorf("pseudo-header %s not allowed in a request", hf.Name)
		}
	}
	connect := method == http.MethodConnect
	switch {
	case method == "" || !validToken(method):
		return nil, 0, errors.New("bad :method")
	case connect && (scheme != "" || path != "" || authority == ""):
		return nil, 0, errors.New("bad CONNECT request")
	case !connect && (scheme == "" || path == ""):
		return nil, 0, errors.New("missing :scheme or :path")
	}
	regular := f.RegularFields()
	fc := &ex.fc
	h := reuseHeader(&fc.hdr, 8)
	// One backing array for all values; capacity-limited slices of it copy on a repeated name.
	vals := fc.vals[:0]
	defer func() { fc.vals = vals }()
	declared := int64(-1)
	var cookies []string
	for _, hf := range regular {
		k := cc.canonical(hf.Name)
		switch {
		case connHeader(k):
			return nil, 0, fmt.Errorf("connection-specific field %s", k)
		case k == "Te" && hf.Value != "trailers":
			return nil, 0, errors.New(`TE other than "trailers"`)
		case k == "Content-Length":
			n, ok := parseLength(hf.Value)
			if !ok || declared >= 0 && n != declared {
				return nil, 0, errors.New("bad content-length")
			}
			declared = n
		case k == "Host":
			if authority == "" {
				authority = hf.Value
			} else if hf.Value != authority {
				return nil, 0, errors.New("host differs from :authority")
			}
			continue
		case k == "Cookie":
			// RFC 9113 §8.2.3: split cookie fields are joined again for HTTP/1.1.
			cookies = append(cookies, hf.Value)
			continue
		}
		if prev, ok := h[k]; ok {
			h[k] = append(prev, hf.Value)
			continue
		}
		vals = append(vals, hf.Value)
		h[k] = vals[len(vals)-1 : len(vals) : len(vals)]
	}
	if len(cookies) > 0 {
		vals = append(vals, strings.Join(cookies, "; "))
		h["Cookie"] = vals[len(vals)-1 : len(vals) : len(vals)]
	}
	if f.StreamEnded() && declared > 0 {
		return nil, 0, errors.New("content-length with an empty body")
	}
	u := &fc.url
	switch {
	case connect:
		*u = url.URL{Host: authority}
		path = authority
	case path == "*" && method == http.MethodOptions:
		*u = url.URL{Path: "*"}
	default:
		if path[0] != '/' {
			return nil, 0, errors.New("bad :path")
		}
		// The HTTP/1.1 fast path's parser, where it applies, fills u as url.ParseRequestURI does.
		if !parseTarget(path, u) {
			pu, err := url.ParseRequestURI(path)
			if err != nil {
				return nil, 0, err
			}
			*u = *pu
		}
	}
	// ex.blank carries the stream's context (ex.ctx): copying it sets that without the copy of
	// the request that WithContext makes.
	fc.req = ex.blank
	req := &fc.req
	req.Method, req.URL, req.Proto, req.ProtoMajor, req.Header, req.Host = method, u, "HTTP/2.0", 2, h, authority
	req.RequestURI, req.RemoteAddr, req.TLS, req.ContentLength, req.Body = path, cc.remote, cc.tls, declared, http.NoBody
	if f.StreamEnded() {
		req.ContentLength = 0
	}
	for _, v := range h["Trailer"] {
		for k := range strings.SplitSeq(v, ",") {
			k = textproto.CanonicalMIMEHeaderKey(textproto.TrimString(k))
			if k == "" || connHeader(k) || k == "Content-Length" || k == "Trailer" || k == "Host" {
				continue
			}
			if req.Trailer == nil {
				req.Trailer = http.Header{}
			}
			req.Trailer[k] = nil
		}
	}
	delete(h, "Trailer")
	return req, declared, nil
}

// serveStream runs on a worker: the request goes through the same handler as on net/http's path.
func (cc *h2Conn) serveStream(st *h2Stream, ex *h2Exchange) {
	req := &ex.fc.req
	hdr := reuseHeader(&ex.whdr, 4)
	w := &ex.w
	*w = h2Writer{cc: cc, st: st, hdr: hdr, head: req.Method == http.MethodHead, ex: ex, buf: w.buf[:0]}
	defer cc.workers.Done()
	defer func() {
		var err error
		if r := recover(); r != nil {
			if err, _ = r.(error); err == nil {
				err = fmt.Errorf("panic: %v", r)
			}
		}
		w.finish(err)
		st.cancel()
		cc.mu.Lock()
		cc.running--
		st.localDone = true
		open, remote := cc.streams[st.id] == st, st.remoteDone.Load()
		cc.mu.Unlock()
		switch {
		case open && remote:
			cc.forget(st)
		case open:
			// The answer is complete while the client still sends: it may stop (RFC 9113 §8.1).
			cc.resetStream(st.id, http2.ErrCodeNo)
		}
		cc.mu.Lock()
		cc.noteIdleLocked()
		cc.mu.Unlock()
		if w.relayed {
			// Nothing holds the request or the writer past a fast relay; the full path's (ReverseProxy,
			// mirrors) might, and its exchange is left to the collector.
			cc.s.putExchange(ex)
		}
	}()
	cc.p.ServeHTTP(w, req)
}

// h2Body is a stream's request body: DATA the reader pushed, read by the handler, credited back
// to the windows as it is read.
type h2Body struct {
	st      *h2Stream
	mu      sync.Mutex
	cond    sync.Cond
	buf     []byte
	off     int
	eof     bool
	err     error
	closed  bool // the handler closed it: what comes is dropped
	dl      time.Time
	timer   *time.Timer
	trailer http.Header // the request's Trailer, filled when the body's reader reaches its end
	// pending are the trailer fields received, under mu: they go into trailer on the reading
	// goroutine, as the request's owner may copy trailer meanwhile (ReverseProxy's Clone).
	pending []hpack.HeaderField
}

// push adds data; it reports false when the body is closed and the data was dropped.
func (b *h2Body) push(data []byte, end bool) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if end {
		b.eof = true
	}
	b.cond.Broadcast()
	if b.closed || b.err != nil {
		return false
	}
	b.buf = append(b.buf, data...)
	return true
}

func (b *h2Body) pushTrailers(fields []hpack.HeaderField, canon func(string) string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, hf := range fields {
		k := canon(hf.Name)
		if _, declared := b.trailer[k]; declared {
			b.pending = append(b.pending, hpack.HeaderField{Name: k, Value: hf.Value})
		}
	}
	b.eof = true
	b.cond.Broadcast()
}

func (b *h2Body) fail(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err == nil && !b.eof {
		b.err = err
	}
	b.cond.Broadcast()
}

func (b *h2Body) Read(p []byte) (int, error) {
	b.mu.Lock()
	for {
		if b.off < len(b.buf) {
			n := copy(p, b.buf[b.off:])
			b.off += n
			if b.off == len(b.buf) {
				b.buf, b.off = b.buf[:0], 0
			}
			b.mu.Unlock()
			b.st.cc.giveBack(b.st, int32(n))
			return n, nil
		}
		switch {
		case b.err != nil:
			err := b.err
			b.mu.Unlock()
			return 0, err
		case b.eof:
			for _, hf := range b.pending {
				b.trailer[hf.Name] = append(b.trailer[hf.Name], hf.Value)
			}
			b.pending = nil
			b.mu.Unlock()
			return 0, io.EOF
		case b.closed:
			b.mu.Unlock()
			return 0, errors.New("http2: read on closed body")
		case !b.dl.IsZero() && !time.Now().Before(b.dl):
			b.mu.Unlock()
			return 0, os.ErrDeadlineExceeded
		}
		b.cond.Wait()
	}
}

// Close drops what is unread; the connection's window gets it back.
func (b *h2Body) Close() error {
	b.mu.Lock()
	n := len(b.buf) - b.off
	b.closed, b.buf, b.off = true, nil, 0
	b.mu.Unlock()
	if n > 0 {
		b.st.cc.giveBack(nil, int32(n))
	}
	return nil
}

func (b *h2Body) setDeadline(dl time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.dl = dl
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
	if !dl.IsZero() {
		b.timer = time.AfterFunc(time.Until(dl), func() {
			b.mu.Lock()
			b.cond.Broadcast()
			b.mu.Unlock()
		})
	}
	b.cond.Broadcast()
}

// h2Workers is a pool of goroutines that serve streams: a stream's handler runs on a goroutine
// whose stack has grown to what ReverseProxy and the Transport need already, instead of a new one
// growing its stack by copying on every request.
type h2Workers struct {
	mu      sync.Mutex
	idle    []chan func()
	stopped bool
}

// h2IdleWorkers bounds the workers kept waiting.
const h2IdleWorkers = 256

func (p *h2Workers) run(fn func()) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		ch := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		ch <- fn
		return
	}
	p.mu.Unlock()
	ch := make(chan func(), 1)
	ch <- fn
	go p.work(ch)
}

func (p *h2Workers) work(ch chan func()) {
	for fn := range ch {
		fn()
		p.mu.Lock()
		if p.stopped || len(p.idle) >= h2IdleWorkers {
			p.mu.Unlock()
			return
		}
		p.idle = append(p.idle, ch)
		p.mu.Unlock()
	}
}

// stop ends the idle workers (Server.Shutdown); busy ones end after their stream.
func (p *h2Workers) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopped = true
	for _, ch := range p.idle {
		close(ch)
	}
	p.idle = nil
}
