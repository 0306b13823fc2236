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

	"golang.org/x/net/http/httpguts"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// h2Stream is one request stream of an h2Conn.
type h2Stream struct {
	cc     *h2Conn
	id     uint32
	ctx    context.Context
	cancel context.CancelFunc
	body   *h2Body // nil when the request ended with its headers
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
	req, declared, err := cc.newRequest(f)
	if err != nil {
		cc.resetStream(id, http2.ErrCodeProtocol)
		return nil
	}
	st = &h2Stream{cc: cc, id: id, declared: declared}
	st.ctx, st.cancel = context.WithCancel(cc.base)
	st.recvWin.Store(h2StreamWindow)
	if !f.StreamEnded() {
		st.body = &h2Body{st: st, trailer: req.Trailer}
		st.body.cond.L = &st.body.mu
		req.Body = st.body
	} else {
		st.remoteDone.Store(true)
	}
	req = req.WithContext(st.ctx)
	cc.mu.Lock()
	cc.wmu.Lock()
	st.sendWin = cc.peerWin
	cc.wmu.Unlock()
	cc.streams[id] = st
	cc.running++
	cc.mu.Unlock()
	cc.workers.Add(1)
	cc.s.h2Workers.run(func() { cc.serveStream(st, req) })
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
	if c, ok := cc.canon[k]; ok {
		return c
	}
	c := textproto.CanonicalMIMEHeaderKey(k)
	if len(cc.canon) < h2CanonMax {
		cc.canon[k] = c
	}
	return c
}

// newRequest builds the request of a HEADERS frame, refusing a malformed one (RFC 9113 §8.1.1,
// §8.2, §8.3): unknown or missing pseudo-headers, connection-specific fields, a TE other than
// "trailers", a content-length that is not one number or disagrees with an ended stream, a Host
// that differs from :authority. It returns the declared content-length (-1: none).
func (cc *h2Conn) newRequest(f *http2.MetaHeadersFrame) (*http.Request, int64, error) {
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
	h := make(http.Header, len(regular))
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
		h[k] = append(h[k], hf.Value)
	}
	if len(cookies) > 0 {
		h["Cookie"] = []string{strings.Join(cookies, "; ")}
	}
	if f.StreamEnded() && declared > 0 {
		return nil, 0, errors.New("content-length with an empty body")
	}
	var u *url.URL
	switch {
	case connect:
		u = &url.URL{Host: authority}
		path = authority
	case path == "*" && method == http.MethodOptions:
		u = &url.URL{Path: "*"}
	default:
		if path[0] != '/' {
			return nil, 0, errors.New("bad :path")
		}
		var err error
		if u, err = url.ParseRequestURI(path); err != nil {
			return nil, 0, err
		}
	}
	req := &http.Request{
		Method: method, URL: u, Proto: "HTTP/2.0", ProtoMajor: 2, Header: h, Host: authority,
		RequestURI: path, RemoteAddr: cc.remote, TLS: cc.tls, ContentLength: declared, Body: http.NoBody,
	}
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
func (cc *h2Conn) serveStream(st *h2Stream, req *http.Request) {
	w := &h2Writer{cc: cc, st: st, hdr: http.Header{}, head: req.Method == http.MethodHead}
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
	trailer http.Header // the request's Trailer, filled when the trailers come
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
			b.trailer[k] = append(b.trailer[k], hf.Value)
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

// h2Writer is a stream's http.ResponseWriter. The answer is buffered until the handler returns,
// flushes or has written h2DataChunk, so that a small answer goes out as HEADERS and DATA with
// END_STREAM in one write.
type h2Writer struct {
	cc   *h2Conn
	st   *h2Stream
	hdr  http.Header
	head bool // a HEAD request: no body
	code int
	// sent: the HEADERS are encoded; noBody: the status allows none.
	sent, noBody bool
	buf          []byte
	written      int64
	length       int64 // the Content-Length set by the handler, -1: none
	trailers     []string
	dl           time.Time // under cc.wmu
	// idle bounds each wait for a window on the fast path (responseWriteIdleTimeout); the
	// full path's statusWriter sets dl instead.
	idle  time.Duration
	err   error // a failed write: the stream ends in RST_STREAM
	ended bool  // END_STREAM sent before the handler returned (end)
}

func (w *h2Writer) Header() http.Header { return w.hdr }

func (w *h2Writer) WriteHeader(code int) {
	if w.code != 0 {
		return
	}
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("invalid WriteHeader code %v", code))
	}
	if code < 200 && code != http.StatusSwitchingProtocols {
		// Informational answers go out as they come (103 Early Hints).
		_ = w.send(false, code)
		return
	}
	w.code = code
	w.noBody = w.head || code == http.StatusNoContent || code == http.StatusNotModified
	w.length = -1
	if v := w.hdr.Get("Content-Length"); v != "" {
		if n, ok := parseLength(v); ok {
			w.length = n
		}
	}
	for _, v := range w.hdr["Trailer"] {
		for k := range strings.SplitSeq(v, ",") {
			if k = textproto.CanonicalMIMEHeaderKey(textproto.TrimString(k)); k != "" {
				w.trailers = append(w.trailers, k)
			}
		}
	}
}

func (w *h2Writer) Write(p []byte) (int, error) {
	if w.code == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.err != nil {
		return 0, w.err
	}
	if w.noBody {
		if w.head {
			return len(p), nil
		}
		return 0, http.ErrBodyNotAllowed
	}
	if w.length >= 0 && w.written+int64(len(p)) > w.length {
		return 0, http.ErrContentLength
	}
	w.written += int64(len(p))
	w.buf = append(w.buf, p...)
	if len(w.buf) >= h2DataChunk {
		if err := w.send(false, 0); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// FlushError sends what is buffered (http.ResponseController's Flush).
func (w *h2Writer) FlushError() error {
	if w.code == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.err != nil {
		return w.err
	}
	return w.send(false, 0)
}

func (w *h2Writer) Flush() { _ = w.FlushError() }

func (w *h2Writer) SetWriteDeadline(dl time.Time) error {
	w.cc.wmu.Lock()
	w.dl = dl
	w.cc.wmu.Unlock()
	return nil
}

func (w *h2Writer) SetReadDeadline(dl time.Time) error {
	if w.st.body != nil {
		w.st.body.setDeadline(dl)
	}
	return nil
}

// EnableFullDuplex: HTTP/2 streams are full duplex already.
func (w *h2Writer) EnableFullDuplex() error { return nil }

// finish ends the stream when the handler returned: with END_STREAM, or RST_STREAM when the
// handler failed (panicked, or a write failed) so that a cut answer never looks complete.
func (w *h2Writer) finish(failed error) {
	if w.ended && failed == nil {
		return
	}
	if failed == nil {
		failed = w.err
	}
	w.closeIfAsked()
	if failed != nil {
		if !errors.Is(failed, http.ErrAbortHandler) && !errors.Is(failed, errH2StreamClosed) && !errors.Is(failed, errH2ConnClosed) {
			w.cc.s.opts.Log.V(1).Info("HTTP/2 stream failed", "remote", w.cc.remote, "err", failed.Error())
		}
		w.cc.resetStream(w.st.id, http2.ErrCodeInternal)
		return
	}
	if w.code == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if err := w.send(true, 0); err != nil {
		w.cc.resetStream(w.st.id, http2.ErrCodeInternal)
	}
}

// closeIfAsked answers a handler's "Connection: close" (the rapid-reset guard's) with a GOAWAY,
// ending the connection gracefully.
func (w *h2Writer) closeIfAsked() {
	if v := w.hdr["Connection"]; len(v) > 0 && hasToken(v[0], "close") {
		code := http2.ErrCodeNo
		if w.cc.guard.isTripped() {
			code = http2.ErrCodeEnhanceYourCalm
		}
		w.cc.goAway(code)
	}
}

// end completes the answer before the handler returns.
func (w *h2Writer) end() error {
	if w.code == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.err != nil {
		return w.err
	}
	err := w.send(true, 0)
	w.ended = err == nil
	return err
}

// send encodes what the answer has ready — HEADERS if not sent yet, the buffered body in DATA
// frames as the windows allow, and with end the trailers or END_STREAM — and writes it. With
// info, it sends that informational status alone.
func (w *h2Writer) send(end bool, info int) error {
	cc, st := w.cc, w.st
	cc.wmu.Lock()
	defer cc.wmu.Unlock()
	if err := w.writable(); err != nil {
		return err
	}
	if info != 0 {
		w.encodeHeader(info, false)
		cc.writeBlock(st.id, false)
		return w.flushed(cc.flushLocked())
	}
	trailers := end && w.hasTrailers()
	if !w.sent {
		w.sent = true
		w.encodeHeader(w.code, end && !trailers)
		cc.writeBlock(st.id, end && len(w.buf) == 0 && !trailers)
		if end && len(w.buf) == 0 && !trailers {
			return w.flushed(cc.flushLocked())
		}
	}
	data := w.buf
	for len(data) > 0 || end && !trailers {
		n := int32(0)
		if len(data) > 0 {
			n = min(int32(len(data)), cc.sendWin, st.sendWin, int32(cc.peerMax))
		}
		if n <= 0 && len(data) > 0 {
			if err := w.awaitWindow(); err != nil {
				return w.flushed(err)
			}
			continue
		}
		last := end && !trailers && int(n) == len(data)
		_ = cc.wfr.WriteData(st.id, last, data[:n])
		cc.sendWin -= n
		st.sendWin -= n
		data = data[n:]
		if len(cc.out.b) >= h2WriteBufMax {
			if err := cc.flushLocked(); err != nil {
				return w.flushed(err)
			}
			if err := w.writable(); err != nil {
				return err
			}
		}
		if last {
			break
		}
	}
	w.buf = w.buf[:0]
	if trailers {
		w.encodeTrailers()
		cc.writeBlock(st.id, true)
	}
	return w.flushed(cc.flushLocked())
}

// flushed records a failed write of the answer.
func (w *h2Writer) flushed(err error) error {
	if err != nil && w.err == nil {
		w.err = err
	}
	return err
}

// writable reports why the stream cannot be written to, with wmu held.
func (w *h2Writer) writable() error {
	switch {
	case w.cc.werr != nil:
		return w.flushed(w.cc.werr)
	case w.st.closed:
		return w.flushed(errH2StreamClosed)
	}
	return nil
}

// awaitWindow waits, with wmu held, until the windows let more DATA through, the stream or the
// connection ends, or the write deadline passes.
func (w *h2Writer) awaitWindow() error {
	cc, st := w.cc, w.st
	if err := cc.flushLocked(); err != nil {
		return err
	}
	var t *time.Timer
	defer func() {
		if t != nil {
			t.Stop()
		}
	}()
	for {
		if err := w.writable(); err != nil {
			return err
		}
		if cc.sendWin > 0 && st.sendWin > 0 {
			return nil
		}
		dl := w.dl
		if w.idle > 0 && t == nil {
			// The fast path's own write idle bound: no window for idle ends the answer.
			dl = time.Now().Add(w.idle)
			w.dl = dl
		}
		if !dl.IsZero() {
			left := time.Until(dl)
			if left <= 0 {
				if w.idle > 0 {
					cc.s.metrics.hits.writeIdle.Inc()
				}
				return os.ErrDeadlineExceeded
			}
			if t == nil {
				t = time.AfterFunc(left, func() {
					cc.wmu.Lock()
					cc.wcond.Broadcast()
					cc.wmu.Unlock()
				})
			}
		}
		cc.wcond.Wait()
	}
}

func (w *h2Writer) hasTrailers() bool {
	if len(w.trailers) > 0 {
		return true
	}
	for k := range w.hdr {
		if strings.HasPrefix(k, http.TrailerPrefix) {
			return true
		}
	}
	return false
}

// encodeHeader HPACK-encodes the answer head into cc.hbuf, with wmu held. A complete answer
// without a Content-Length gets one, as net/http does for a handler that wrote all at once.
func (w *h2Writer) encodeHeader(code int, complete bool) {
	cc := w.cc
	cc.hbuf.b = cc.hbuf.b[:0]
	_ = cc.henc.WriteField(hpack.HeaderField{Name: ":status", Value: statusText(code)})
	for k, vs := range w.hdr {
		if !w.encodable(k) {
			continue
		}
		lk := cc.lowerName(k)
		for _, v := range vs {
			if !httpguts.ValidHeaderFieldValue(v) {
				continue
			}
			_ = cc.henc.WriteField(hpack.HeaderField{Name: lk, Value: v})
		}
	}
	if code >= 200 && complete && !w.noBody && w.hdr["Content-Length"] == nil {
		_ = cc.henc.WriteField(hpack.HeaderField{Name: "content-length", Value: strconv.Itoa(len(w.buf))})
	}
	if w.hdr["Date"] == nil {
		_ = cc.henc.WriteField(hpack.HeaderField{Name: "date", Value: cc.httpDate()})
	}
}

func (w *h2Writer) encodable(k string) bool {
	return !connHeader(k) && k != "Trailer" && !strings.HasPrefix(k, http.TrailerPrefix) && httpguts.ValidHeaderFieldName(k)
}

// encodeTrailers encodes the trailers as ReverseProxy sets them: the declared names' values in
// the header map after the body, and undeclared ones under http.TrailerPrefix.
func (w *h2Writer) encodeTrailers() {
	cc := w.cc
	cc.hbuf.b = cc.hbuf.b[:0]
	enc := func(k string, vs []string) {
		if connHeader(k) || !httpguts.ValidHeaderFieldName(k) {
			return
		}
		lk := cc.lowerName(k)
		for _, v := range vs {
			if httpguts.ValidHeaderFieldValue(v) {
				_ = cc.henc.WriteField(hpack.HeaderField{Name: lk, Value: v})
			}
		}
	}
	for _, k := range w.trailers {
		enc(k, w.hdr[k])
	}
	for k, vs := range w.hdr {
		if t, ok := strings.CutPrefix(k, http.TrailerPrefix); ok {
			enc(textproto.CanonicalMIMEHeaderKey(t), vs)
		}
	}
}

// writeBlock writes the header block in hbuf as HEADERS and CONTINUATION frames, with wmu held.
func (cc *h2Conn) writeBlock(id uint32, end bool) {
	block := cc.hbuf.b
	max := int(cc.peerMax)
	first := block[:min(len(block), max)]
	block = block[len(first):]
	_ = cc.wfr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: first, EndStream: end, EndHeaders: len(block) == 0})
	for len(block) > 0 {
		frag := block[:min(len(block), max)]
		block = block[len(frag):]
		_ = cc.wfr.WriteContinuation(id, len(block) == 0, frag)
	}
}

// lowerName returns a header name in lower case, cached per connection (under wmu).
func (cc *h2Conn) lowerName(k string) string {
	if l, ok := cc.lower[k]; ok {
		return l
	}
	l := strings.ToLower(k)
	if len(cc.lower) < h2CanonMax {
		cc.lower[k] = l
	}
	return l
}

// httpDate is the Date header's value, formatted once a second (under wmu).
func (cc *h2Conn) httpDate() string {
	now := time.Now()
	if sec := now.Unix(); sec != cc.dateSec || cc.date == nil {
		cc.dateSec = sec
		cc.date = now.UTC().AppendFormat(cc.date[:0], http.TimeFormat)
	}
	return string(cc.date)
}

func statusText(code int) string {
	if code == http.StatusOK {
		return "200"
	}
	return strconv.Itoa(code)
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
