package proxy

import (
	"errors"
	"fmt"
	"net/http"
	"net/textproto"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

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
	// ex is the stream's exchange; relayed says the fast path served it (ex can be reused).
	ex      *h2Exchange
	relayed bool
	// answer, on the fast path, is the backend's head whose lines are encoded as the answer's
	// fields before hdr's (no map built from them); dropServer drops its Server lines.
	answer     *answer
	dropServer bool
	// ownLength: length is the answer's Content-Length, set by the fast relay (not in hdr).
	ownLength bool
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
	if !w.ownLength {
		w.length = -1
		if v := w.hdr.Get("Content-Length"); v != "" {
			if n, ok := parseLength(v); ok {
				w.length = n
			}
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
	// A complete answer while other streams run waits for them once (lastFlush): their answers
	// then go out in the same write, one TLS record and one syscall for several streams.
	batch := end && cc.inFlight() > 1
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
			return w.flushed(cc.lastFlush(batch))
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
	return w.flushed(cc.lastFlush(batch))
}

// lastFlush is flushLocked for the end of an answer; with batch, the other goroutines ready to
// run (streams finishing their answers) run first, adding their frames to the same write.
func (cc *h2Conn) lastFlush(batch bool) error {
	if batch && !cc.flushing {
		cc.wmu.Unlock()
		runtime.Gosched()
		cc.wmu.Lock()
	}
	return cc.flushLocked()
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
	server, date := false, false
	if w.answer != nil {
		server, date = w.encodeLines()
	}
	for k, vs := range w.hdr {
		// The fast relay's length is the framing it read, whatever a filter set.
		if !w.encodable(k) || server && k == "Server" || w.ownLength && k == "Content-Length" {
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
	switch {
	case code < 200:
	case w.ownLength:
		_ = cc.henc.WriteField(hpack.HeaderField{Name: "content-length", Value: strconv.FormatInt(w.length, 10)})
	case complete && !w.noBody && w.hdr["Content-Length"] == nil:
		_ = cc.henc.WriteField(hpack.HeaderField{Name: "content-length", Value: strconv.Itoa(len(w.buf))})
	}
	if w.hdr["Date"] == nil && !date {
		_ = cc.henc.WriteField(hpack.HeaderField{Name: "date", Value: cc.httpDate()})
	}
}

// encodeLines encodes the backend answer's header lines that go on to the client: those
// answer.relayed lets through, less Trailer (no HTTP/2 field) and, with dropServer, Server; names
// in lower case, values checked as encodeHeader checks hdr's. It reports whether a Server and a
// Date field came with the answer (the proxy's own then stay out).
func (w *h2Writer) encodeLines() (server, date bool) {
	a, cc := w.answer, w.cc
	for ls := a.lines; ls != ""; {
		l, rest, _ := nextLine(ls) // parse saw every line end in CRLF
		ls = rest
		k, v, _ := strings.Cut(l, ":")
		hk := hopKind(k)
		if hk == hopTrailer || !a.relayed(k, hk) {
			continue
		}
		if foldEqual(k, "Server") {
			if w.dropServer {
				continue
			}
			server = true
		}
		date = date || foldEqual(k, "Date")
		if v = trimOWS(v); httpguts.ValidHeaderFieldValue(v) {
			_ = cc.henc.WriteField(hpack.HeaderField{Name: cc.lowerName(k), Value: v})
		}
	}
	return server, date
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
func (cc *h2Conn) lowerName(k string) string { return cachedName(cc.lower, k, strings.ToLower) }

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
