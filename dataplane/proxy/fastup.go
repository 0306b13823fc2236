package proxy

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/net/http/httpguts"
)

// upConn is a pooled keepalive connection to one endpoint, used by the fast path.
type upConn struct {
	ep        string
	c         net.Conn
	br        *bufio.Reader
	bw        *bufio.Writer
	idleSince time.Time
	// deadline is the read deadline set on c (zero: none), see awaitAnswer.
	deadline time.Time
	// probe tells whether the connection, idle in the pool, is still usable (probe_unix.go).
	probe connProbe
}

// upPool keeps idle fast-path upstream connections per endpoint ("host:port").
type upPool struct {
	mu   sync.Mutex
	idle map[string][]*upConn
	// idleTimeout closes connections idle this long (Options.UpstreamIdleTimeout): below the
	// keepalive timeouts of common backends (Node.js 5s), so that the pool rarely hands out a
	// connection the backend is closing.
	idleTimeout time.Duration
}

const upIdleMax = 512

// get returns an idle connection to ep that still looks usable, or nil.
func (p *upPool) get(ep string) *upConn {
	for {
		uc := p.pop(ep)
		if uc == nil {
			return nil
		}
		// A backend that closed the connection (or wrote to it unasked) while it sat idle is
		// found here, before the request is written to it.
		if uc.probe.idleOK() {
			return uc
		}
		uc.c.Close()
	}
}

func (p *upPool) pop(ep string) *upConn {
	p.mu.Lock()
	defer p.mu.Unlock()
	for list := p.idle[ep]; len(list) > 0; list = p.idle[ep] {
		uc := list[len(list)-1]
		p.idle[ep] = list[:len(list)-1]
		if time.Since(uc.idleSince) < p.idleTimeout {
			return uc
		}
		uc.c.Close()
	}
	return nil
}

// put pools uc, unless the backend sent more than its answer: those bytes would be taken for the
// answer to the next request, from any client.
func (p *upPool) put(ep string, uc *upConn) {
	if uc.br.Buffered() > 0 {
		uc.c.Close()
		return
	}
	uc.idleSince = time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.idle == nil {
		p.idle = map[string][]*upConn{}
	}
	if len(p.idle[ep]) >= upIdleMax {
		uc.c.Close()
		return
	}
	p.idle[ep] = append(p.idle[ep], uc)
}

// prune closes connections idle too long, and all of them when all is set.
func (p *upPool) prune(all bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for ep, list := range p.idle {
		keep := list[:0]
		for _, uc := range list {
			if all || time.Since(uc.idleSince) >= p.idleTimeout {
				uc.c.Close()
				continue
			}
			keep = append(keep, uc)
		}
		if len(keep) == 0 {
			delete(p.idle, ep)
		} else {
			p.idle[ep] = keep
		}
	}
}

func (s *Server) dialUp(ep string) (*upConn, error) {
	if err := s.checkEndpoint(ep); err != nil {
		return nil, err
	}
	c, err := net.DialTimeout("tcp", ep, s.opts.DialTimeout)
	if err != nil {
		return nil, err
	}
	uc := &upConn{ep: ep, c: c, br: bufio.NewReaderSize(c, 16<<10), bw: bufio.NewWriterSize(c, 16<<10)}
	uc.probe.init(c)
	return uc, nil
}

// serveFast relays one request; it reports whether the client connection may be reused.
func (s *Server) serveFast(lt *listenerTable, rt *route, r *http.Request, fc *fastConn, cr *bufio.Reader, cw *bufio.Writer) bool {
	start := time.Now()
	code, be, keep := s.relay(lt, rt, r, fc, cr, cw)
	if rt != nil {
		rt.stats.observe(time.Since(start))
	}
	if s.accessOn {
		s.logAccess(lt, rt, be, r, code, start)
	}
	return keep
}

// relay does the work of serveFast: it returns the status sent, the backend chosen and whether the
// client connection may carry another request.
func (s *Server) relay(lt *listenerTable, rt *route, r *http.Request, fc *fastConn, cr *bufio.Reader, cw *bufio.Writer) (int, *backend, bool) {
	if rt == nil {
		lt.notFound.count(http.StatusNotFound)
		return http.StatusNotFound, nil, discardBody(cr, r) && writeSimple(cw, fc.lim.server.line, http.StatusNotFound, "no route matched\n", r)
	}
	clientHost := r.Host
	be, bs, ep, code := pickUpstream(rt, r)
	if code != 0 {
		bs.count(code)
		return code, be, discardBody(cr, r) && writeSimple(cw, fc.lim.server.line, code, "", r)
	}
	// A pooled connection may have been closed by the backend meanwhile; a request is retried once
	// on a fresh connection when the reused one fails before answering and its body, if any, is
	// still in the client buffer (exchangeFast), POST included.
	for try := 0; ; try++ {
		// The retry dials: the pool may hold more connections the backend has closed meanwhile.
		var uc *upConn
		if try == 0 {
			uc = s.fastPool.get(ep)
		}
		reused := uc != nil
		if uc == nil {
			var err error
			if uc, err = s.dialUp(ep); err != nil {
				bs.count(http.StatusBadGateway)
				return http.StatusBadGateway, be, discardBody(cr, r) && writeSimple(cw, fc.lim.server.line, http.StatusBadGateway, "", r)
			}
		}
		code, keepClient, sent, err := s.exchangeFast(uc, r, fc, clientHost, rt, be, cr, cw)
		if err == nil {
			bs.count(code)
			return code, be, keepClient
		}
		uc.c.Close()
		switch {
		case errors.Is(err, errBodyIdle):
			// The rest of the body may still come: the connection cannot carry another request.
			bs.count(http.StatusRequestTimeout)
			r.Close = true
			writeSimple(cw, fc.lim.server.line, http.StatusRequestTimeout, "", r)
			return http.StatusRequestTimeout, be, false
		case errors.Is(err, errBackendTimeout) && !sent:
			// Not retried: the backend may be working on it.
			fc.hits.backendResponse.Inc()
			bs.count(http.StatusGatewayTimeout)
			return http.StatusGatewayTimeout, be, writeSimple(cw, fc.lim.server.line, http.StatusGatewayTimeout, "", r)
		}
		var unanswered unansweredError
		if !sent && reused && try == 0 && errors.As(err, &unanswered) {
			continue
		}
		if sent {
			// The answer broke off midway: all that can be done is closing the connection.
			bs.count(code)
			return code, be, false
		}
		bs.count(http.StatusBadGateway)
		r.Close = true
		writeSimple(cw, fc.lim.server.line, http.StatusBadGateway, "", r)
		return http.StatusBadGateway, be, false
	}
}

// pickUpstream applies rt's request filters to r and picks its backend and endpoint, for the fast
// paths of both protocols. code is the answer when there is none to send r to (500 for a rule
// without valid backends, as the Gateway API says; 503 for a backend without endpoints), counted in
// bs by the caller.
func pickUpstream(rt *route, r *http.Request) (be *backend, bs *backendStats, ep string, code int) {
	if x := rt.rare; x != nil {
		x.reqHdr.applyRequest(r)
		if x.rewrite != nil {
			x.rewrite.apply(rt, r)
		}
	}
	be, bs = rt.backends.pick()
	if be == nil || be.invalid {
		if bs == nil {
			bs = rt.stats.local
		}
		return be, bs, "", http.StatusInternalServerError
	}
	ep, ok := be.endpoint()
	if !ok {
		return be, bs, "", http.StatusServiceUnavailable
	}
	be.reqHdr.applyRequest(r)
	return be, bs, ep, 0
}

// unansweredError is a failure before the backend answered anything while the request can be sent
// again as it was: on a reused connection, the mark of a backend that closed it while it was idle.
type unansweredError struct{ error }

func (e unansweredError) Unwrap() error { return e.error }

// exchangeFast sends r on uc and relays the answer. sent reports whether anything reached the client;
// on success uc is back in the pool or closed.
func (s *Server) exchangeFast(uc *upConn, r *http.Request, fc *fastConn, clientHost string, rt *route, be *backend, cr *bufio.Reader, cw *bufio.Writer) (code int, keep, sent bool, err error) {
	w := uc.bw
	writeUpstreamHead(w, r, fc, clientHost)
	// A body already in the client buffer (the usual small one) stays there until the backend
	// answers, so that it can be sent again on a fresh connection; a larger one streams.
	pending := 0
	if n := r.ContentLength; n > 0 {
		if n <= int64(cr.Buffered()) {
			b, _ := cr.Peek(int(n))
			_, _ = w.Write(b)
			pending = int(n)
		} else if err := fc.copyBody(w, cr, n, fc.lim.requestBodyIdleTimeout); err != nil {
			return 0, false, false, err
		}
	}
	replayable := pending > 0 || r.ContentLength == 0
	uc.awaitAnswer(fc.lim.backendResponseTimeout)
	if err := uc.probe.sendThenWait(w); err != nil {
		if replayable {
			err = unansweredError{err}
		}
		return 0, false, false, err
	}
	// The request is sent from inside the backend connection's read callback and the answer read
	// once the connection is readable (connProbe.sendThenWait): a read right after the flush found
	// nothing yet on nearly every request, an EAGAIN read and a park that nginx, waiting on epoll
	// first, does not pay. Measured on one box (s17–s18, the proxy's CPU and rps under wrk -c32,
	// order alternated): ahead in 21 of 28 rounds, median +4–6% rps and −4–7% CPU per request
	// (ab-http.sh beside nginx: see tests/bench/results/issue22.md). Not done for the client's next
	// request: a pipelining client may send it before any readiness reset, whose wake-up would be
	// lost. No runtime.Gosched either: a yielded goroutine waits in the global run queue, which
	// the scheduler visits for one goroutine per 61 rounds while others are runnable (p99 3.4 ms
	// instead of 1.5 ms at half of nginx's max rate); yielding only while other requests were in
	// relay (s16) gave +2–4% rps for a p99 4–8% longer, and was not kept.
	a := &fc.answer
	for {
		if err := readAnswer(uc.br, &fc.rhead, a); err != nil {
			err = answerErr(err)
			if replayable && uc.br.Buffered() == 0 && !errors.Is(err, errBackendTimeout) {
				return 0, false, false, unansweredError{err}
			}
			// Not sent again: the body must not stay in the client buffer to be read as a request.
			if pending > 0 {
				_, _ = cr.Discard(pending)
			}
			return 0, false, false, err
		}
		if pending > 0 {
			_, _ = cr.Discard(pending)
			pending, replayable = 0, false
		}
		if a.code == http.StatusSwitchingProtocols {
			return 0, false, false, errors.New("unexpected 101 from backend")
		}
		if a.code < 200 {
			// Informational answers (103 Early Hints, 100 Continue) are relayed as they come.
			writeStatus(cw, a.code, a.reason)
			a.writeLines(cw, fc.lim.server.drop)
			cw.WriteString("\r\n")
			continue
		}
		return s.relayBody(uc, r, fc, rt, be, cw)
	}
}

// writeUpstreamHead writes the head of r as the fast path sends it upstream. The framing is the
// proxy's own, from what it read (RFC 9112 §6): the client's Content-Length, Transfer-Encoding and
// Connection lines never pass, whatever its Connection header names.
func writeUpstreamHead(w *bufio.Writer, r *http.Request, fc *fastConn, clientHost string) {
	w.WriteString(r.Method)
	w.WriteByte(' ')
	w.WriteString(r.URL.RequestURI())
	w.WriteString(" HTTP/1.1\r\nHost: ")
	w.WriteString(r.Host)
	w.WriteString("\r\n")
	writeHeaders(w, r.Header, "Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto")
	if r.ContentLength > 0 || fc.hasLength {
		writeLength(w, r.ContentLength)
	}
	w.WriteString("X-Forwarded-For: ")
	for _, v := range r.Header["X-Forwarded-For"] {
		w.WriteString(v)
		w.WriteString(", ")
	}
	w.WriteString(fc.ip)
	w.WriteString("\r\nX-Forwarded-Host: ")
	w.WriteString(clientHost)
	if fc.tls != nil {
		w.WriteString("\r\nX-Forwarded-Proto: https\r\n\r\n")
	} else {
		w.WriteString("\r\nX-Forwarded-Proto: http\r\n\r\n")
	}
}

// writeLength writes a Content-Length line, digit by digit (see writeStatus).
func writeLength(w *bufio.Writer, n int64) {
	w.WriteString("Content-Length: ")
	d := int64(1)
	for d <= n/10 {
		d *= 10
	}
	for ; d > 0; d /= 10 {
		w.WriteByte(byte('0' + n/d%10))
	}
	w.WriteString("\r\n")
}

func (s *Server) relayBody(uc *upConn, r *http.Request, fc *fastConn, rt *route, be *backend, cw *bufio.Writer) (int, bool, bool, error) {
	a := &fc.answer
	noBody := r.Method == http.MethodHead || a.code == http.StatusNoContent || a.code == http.StatusNotModified
	closeDelimited := !noBody && !a.chunked && a.length < 0
	keepClient := !r.Close && !closeDelimited
	upKeep := a.keep
	writeStatus(cw, a.code, a.reason)
	server := &fc.lim.server
	if rt.respMod() == nil && be.respHdr == nil {
		a.writeLines(cw, server.drop)
		cw.WriteString(server.line)
	} else {
		if fc.resp == nil || len(fc.resp) > fastMapMax {
			fc.resp = make(http.Header, 8)
		}
		fc.rvals = a.header(fc.resp, fc.rvals)
		if server.drop {
			delete(fc.resp, "Server")
		}
		rt.respMod().apply(fc.resp)
		be.respHdr.apply(fc.resp)
		writeHeaders(cw, fc.resp)
		if _, set := fc.resp["Server"]; !set { // a route's filter may set its own
			cw.WriteString(server.line)
		}
	}
	switch {
	case a.chunked && !noBody:
		cw.WriteString("Transfer-Encoding: chunked\r\n")
	case a.length >= 0 && !a.chunked && a.code != http.StatusNoContent:
		// On HEAD and 304 the length is the one a GET would have had, relayed as information.
		writeLength(cw, a.length)
	}
	if !keepClient {
		cw.WriteString("Connection: close\r\n")
	}
	cw.WriteString("\r\n")
	if !noBody && (a.length < 0 || a.length > int64(uc.br.Buffered())) {
		uc.bodyUnbounded()
	}
	var err error
	switch {
	case noBody:
	case a.chunked:
		err = copyChunked(cw, uc.br)
	case a.length >= 0:
		err = copyN(cw, uc.br, a.length)
	default:
		_, err = io.Copy(cw, uc.br)
		upKeep = false
	}
	if err != nil {
		return a.code, false, true, err
	}
	if ferr := cw.Flush(); ferr != nil {
		// The client went away; the backend answer was read completely, so uc stays usable.
		keepClient = false
	}
	if upKeep {
		s.fastPool.put(uc.ep, uc) // closed instead when the backend sent more than its answer
	} else {
		uc.c.Close()
	}
	return a.code, keepClient, true, nil
}

// copyN copies n bytes, straight from the reader's buffer when they are all there already (the
// common small body), without the allocation of io.CopyN.
func copyN(w *bufio.Writer, r *bufio.Reader, n int64) error {
	if n <= int64(r.Buffered()) {
		b, _ := r.Peek(int(n))
		if _, err := w.Write(b); err != nil {
			return err
		}
		_, err := r.Discard(int(n))
		return err
	}
	_, err := io.CopyN(w, r, n)
	return err
}

func writeStatus(w *bufio.Writer, code int, reason string) {
	w.WriteString("HTTP/1.1 ")
	if 100 <= code && code <= 999 {
		// Digit by digit: strconv into a local buffer would make that buffer escape to the heap.
		w.WriteByte(byte('0' + code/100))
		w.WriteByte(byte('0' + code/10%10))
		w.WriteByte(byte('0' + code%10))
	} else {
		w.WriteString(strconv.Itoa(code))
	}
	w.WriteByte(' ')
	w.WriteString(reason)
	w.WriteString("\r\n")
}

// writeHeaders writes h less every hop-by-hop and framing header and those the Connection header
// names, which the proxy writes itself when it must.
func writeHeaders(w *bufio.Writer, h http.Header, skip ...string) {
	conn := h["Connection"]
outer:
	for k, vs := range h {
		if hopKind(k) != hopOther {
			continue
		}
		for _, sk := range skip {
			if k == sk {
				continue outer
			}
		}
		for _, c := range conn {
			if hasToken(c, k) {
				continue outer
			}
		}
		for _, v := range vs {
			w.WriteString(k)
			w.WriteString(": ")
			w.WriteString(v)
			w.WriteString("\r\n")
		}
	}
}

var (
	errChunkSize = errors.New("malformed chunk size from backend")
	errChunkEnd  = errors.New("malformed chunk end from backend")
	errTrailer   = errors.New("malformed trailer from backend")
)

// copyChunked relays a chunked body re-framed: each chunk size is parsed strictly (hex digits, as
// net/http reads them: no sign, no prefix) and written anew without extensions, each chunk's CRLF
// and each trailer line is checked, so that the client reads the same body as the proxy did.
func copyChunked(w *bufio.Writer, r *bufio.Reader) error {
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return err
		}
		n, ok := parseChunkSize(line)
		if !ok {
			return errChunkSize
		}
		writeHex(w, n)
		w.WriteString("\r\n")
		if n == 0 {
			// Trailers, then the final blank line.
			for {
				l, err := r.ReadSlice('\n')
				if err != nil {
					return err
				}
				if len(l) == 2 && l[0] == '\r' {
					w.WriteString("\r\n")
					return nil
				}
				if !validTrailerLine(l) {
					return errTrailer
				}
				if _, err := w.Write(l); err != nil {
					return err
				}
			}
		}
		if _, err := io.CopyN(w, r, n); err != nil {
			return err
		}
		if end, err := r.Peek(2); err != nil || end[0] != '\r' || end[1] != '\n' {
			return errChunkEnd
		}
		_, _ = r.Discard(2)
		w.WriteString("\r\n")
		// Flush per chunk so streamed responses reach the client as they come.
		if err := w.Flush(); err != nil {
			return err
		}
	}
}

// parseChunkSize parses a chunk-size line (with its CRLF): 1–15 hex digits, optional whitespace,
// then an optional extension free of control bytes.
func parseChunkSize(line []byte) (int64, bool) {
	l := len(line)
	if l < 3 || line[l-2] != '\r' {
		return 0, false
	}
	line = line[:l-2]
	var n int64
	i := 0
	for ; i < len(line); i++ {
		d, ok := hexDigit(line[i])
		if !ok {
			break
		}
		n = n<<4 | int64(d)
		if i == 15 {
			return 0, false // 16 digits and more: beyond int64, as net/http refuses
		}
	}
	if i == 0 {
		return 0, false
	}
	rest := line[i:]
	for len(rest) > 0 && (rest[0] == ' ' || rest[0] == '\t') {
		rest = rest[1:]
	}
	if len(rest) > 0 && (rest[0] != ';' || !httpguts.ValidHeaderFieldValue(string(rest))) {
		return 0, false
	}
	return n, true
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// validTrailerLine checks a trailer field line (with its CRLF) as a header line is checked.
func validTrailerLine(l []byte) bool {
	n := len(l)
	if n < 3 || l[n-2] != '\r' {
		return false
	}
	k, v, ok := bytes.Cut(l[:n-2], []byte(":"))
	return ok && validToken(string(k)) && httpguts.ValidHeaderFieldValue(string(v))
}

// writeHex writes n in lower-case hex, digit by digit.
func writeHex(w *bufio.Writer, n int64) {
	shift := 0
	for n>>(shift+4) > 0 {
		shift += 4
	}
	for ; shift >= 0; shift -= 4 {
		w.WriteByte("0123456789abcdef"[n>>shift&0xf])
	}
}

// discardBody consumes the request body so the connection can carry the next request.
func discardBody(cr *bufio.Reader, r *http.Request) bool {
	if r.ContentLength <= 0 {
		return true
	}
	if r.ContentLength > 1<<20 {
		return false
	}
	_, err := io.CopyN(io.Discard, cr, r.ContentLength)
	return err == nil
}

// writeSimple writes the proxy's own answer, with the Server header line server (may be empty).
func writeSimple(w *bufio.Writer, server string, code int, body string, r *http.Request) bool {
	writeStatus(w, code, http.StatusText(code))
	w.WriteString(server)
	w.WriteString("Content-Type: text/plain; charset=utf-8\r\nContent-Length: ")
	w.WriteString(strconv.Itoa(len(body)))
	w.WriteString("\r\n")
	if r.Close {
		w.WriteString("Connection: close\r\n")
	}
	w.WriteString("\r\n")
	w.WriteString(body)
	return w.Flush() == nil && !r.Close
}
