package proxy

import (
	"bufio"
	"errors"
	"io"
	"net/http"
	"os"
	"runtime"
	"time"
)

// HTTP/2 streams on the fast path's upstream side. A stream without a request body, or with one of
// declared length, whose route the
// HTTP/1.1 fast path could serve (route.fast: no CORS, redirect, mirrors, timeouts or retries,
// HTTP/1.1 backends) is relayed over the pooled raw upstream connections (upPool) with the fast
// path's own framing and checks (writeUpstreamHead, readAnswer), instead of ReverseProxy and
// net/http's Transport: no request copy, no Transport goroutines and channel hand-offs. Every other
// stream goes through serveHTTP's full path.

// h2Exchange is what a stream reuses from an earlier one: its request (in fc, with the URL,
// header map and value array that newRequest fills), the request's context, the writer and its
// header map, and the fast relay's state. Streams relayed on the fast path give it back when
// they end; nothing keeps any of it past the relay (see fastConn).
type h2Exchange struct {
	fc   fastConn
	ctx  h2Ctx
	w    h2Writer
	whdr http.Header
	// blank is an empty request bound to ctx: each stream's request starts as a copy of it.
	blank http.Request
}

func (s *Server) getExchange() *h2Exchange {
	if ex, ok := s.h2ex.Get().(*h2Exchange); ok {
		return ex
	}
	ex := &h2Exchange{fc: fastConn{hits: &s.metrics.hits}}
	ex.blank = *new(http.Request).WithContext(&ex.ctx)
	return ex
}

// putExchange recycles ex once its stream's handler returned, without what would pin a stream,
// a connection or a large answer.
func (s *Server) putExchange(ex *h2Exchange) {
	fc := &ex.fc
	fc.req, fc.answer, fc.tls, fc.lim = ex.blank, answer{conn: fc.answer.conn[:0]}, nil, nil
	clear(fc.resp)
	buf := ex.w.buf[:0]
	if cap(buf) > h2DataChunk {
		buf = nil // a large answer's buffer is not pinned to the pool
	}
	ex.ctx.st, ex.w = nil, h2Writer{buf: buf}
	if cap(fc.vals) > fastMapMax {
		fc.vals = nil
	}
	s.h2ex.Put(ex)
}

// relayH2 relays r, already screened and routed to rt, and ends its stream; start is when the
// request's handling began.
func (s *Server) relayH2(lt *listenerTable, rt *route, w *h2Writer, r *http.Request, start time.Time) {
	fc := &w.ex.fc
	fc.lim, fc.tls = lt.lim, r.TLS
	w.idle = lt.lim.responseWriteIdleTimeout
	fc.ip = w.cc.ip
	// A bodiless POST, PUT or PATCH still says so upstream, as net/http's Transport does.
	fc.hasLength = r.ContentLength > 0 || r.Method == http.MethodPost || r.Method == http.MethodPut || r.Method == http.MethodPatch
	code, be, err := s.relayStream(lt, rt, r, fc, w)
	if err == nil {
		err = w.end()
	}
	if err != nil {
		w.err = err
	}
	if err != nil && r.Context().Err() != nil {
		// Reset by the client before its answer: it counts against the rapid-reset limit.
		s.clientReset(w, r)
	}
	w.closeIfAsked()
	// The header map is fc's, reused by its next exchange.
	w.hdr, w.answer = nil, nil
	rt.stats.observe(time.Since(start))
	if s.accessOn {
		s.logAccess(lt, rt, be, r, code, start)
	}
	w.relayed = true
}

// relayStream does the work of relayH2 (as relay does for HTTP/1.1): it returns the status
// answered, the backend chosen and an error when the answer could not be completed.
func (s *Server) relayStream(lt *listenerTable, rt *route, r *http.Request, fc *fastConn, w *h2Writer) (int, *backend, error) {
	clientHost := r.Host
	be, bs, ep, code := pickUpstream(rt, r)
	if code != 0 {
		return answerStatus(bs, w, code), be, nil
	}
	for try := 0; ; try++ {
		var uc *upConn
		if try == 0 {
			uc = s.fastPool.get(ep)
		}
		reused := uc != nil
		if uc == nil {
			var err error
			if uc, err = s.dialUp(ep); err != nil {
				return answerStatus(bs, w, http.StatusBadGateway), be, nil
			}
		}
		code, sent, err := s.exchangeH2(uc, r, fc, clientHost, rt, be, w)
		if err == nil {
			bs.count(code)
			return code, be, nil
		}
		uc.c.Close()
		var unanswered unansweredError
		switch {
		case r.Context().Err() != nil:
			// Reset by the client (cutUp): nothing more to answer.
			return 0, be, errH2StreamClosed
		case sent:
			// The answer broke off midway: the stream is reset.
			bs.count(code)
			return code, be, err
		case errors.Is(err, errBodyIdle):
			// The client stalled its body: 408, as on the other paths.
			return answerStatus(bs, w, http.StatusRequestTimeout), be, nil
		case isClientBodyError(err):
			return answerStatus(bs, w, http.StatusBadRequest), be, nil
		case errors.Is(err, errBackendTimeout):
			fc.hits.backendResponse.Inc()
			return answerStatus(bs, w, http.StatusGatewayTimeout), be, nil
		case reused && try == 0 && errors.As(err, &unanswered):
			continue
		}
		return answerStatus(bs, w, http.StatusBadGateway), be, nil
	}
}

// answerStatus answers the proxy's own status and counts it.
func answerStatus(bs *backendStats, w *h2Writer, code int) int {
	bs.count(code)
	w.WriteHeader(code)
	return code
}

// exchangeH2 sends r's head on uc and relays the answer to w. sent reports whether the answer's
// head was given to the stream; on success uc is back in the pool or closed.
func (s *Server) exchangeH2(uc *upConn, r *http.Request, fc *fastConn, clientHost string, rt *route, be *backend, w *h2Writer) (code int, sent bool, err error) {
	writeUpstreamHead(uc.bw, r, fc, clientHost)
	if r.ContentLength > 0 {
		// A body streams from the stream to the backend; it cannot be sent again, so a failure
		// from here on is not retried.
		if err := copyStreamBody(uc.bw, r.Body, w.st, r.ContentLength, fc.lim.requestBodyIdleTimeout); err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				fc.hits.bodyIdle.Inc()
				return 0, false, errBodyIdle
			}
			return 0, false, clientBodyError{err}
		}
		if err := uc.bw.Flush(); err != nil {
			return 0, false, err
		}
	} else if err := uc.bw.Flush(); err != nil {
		return 0, false, unansweredError{err}
	}
	uc.awaitAnswer(fc.lim.backendResponseTimeout)
	// After the deadline is set: a reset that came before it must not be overridden by it.
	w.st.watchUp(uc)
	if w.cc.inFlight() > 1 {
		// Other streams of the connection are ready to run: they go first, and the answer,
		// read after them, is usually there by then (no read that finds nothing and parks).
		runtime.Gosched()
	}
	a := &fc.answer
	for {
		if err := readAnswerKept(uc.br, a); err != nil {
			err = answerErr(err)
			if uc.br.Buffered() == 0 && !errors.Is(err, errBackendTimeout) {
				return 0, false, unansweredError{err}
			}
			return 0, false, err
		}
		if a.code == http.StatusSwitchingProtocols {
			return 0, false, errors.New("unexpected 101 from backend")
		}
		if a.code >= 200 {
			break
		}
		// Informational answers (103 Early Hints) are relayed as they come.
		s.answerHeader(fc, rt, be, w)
		w.WriteHeader(a.code)
	}
	noBody := r.Method == http.MethodHead || a.code == http.StatusNoContent || a.code == http.StatusNotModified
	upKeep := a.keep
	s.answerHeader(fc, rt, be, w)
	if a.length >= 0 && !a.chunked && a.code != http.StatusNoContent {
		// The proxy's own, from the framing it read; on HEAD and 304 the length a GET would have had.
		w.length, w.ownLength = a.length, true
	}
	w.WriteHeader(a.code)
	if !noBody && (a.length < 0 || a.length > int64(uc.br.Buffered())) {
		uc.bodyUnbounded()
		w.st.watchUp(uc) // again: the body's reads are cut by a reset too
	}
	switch {
	case noBody:
	case a.chunked:
		err = copyDechunked(w, uc.br)
	case a.length >= 0:
		err = copyNTo(w, uc.br, a.length)
	default:
		_, err = io.Copy(w, uc.br)
		upKeep = false
		if err == nil {
			// The backend's close ended the body: no connection to keep.
			uc.c.Close()
			return a.code, true, nil
		}
	}
	if err != nil {
		return a.code, true, err
	}
	if cut := w.st.unwatchUp(); upKeep && !cut {
		s.fastPool.put(uc.ep, uc)
	} else {
		uc.c.Close()
	}
	return a.code, true, nil
}

// readAnswerKept is readAnswer for an answer relayed over HTTP/2: the head is a string of its
// own, not a view of a reused buffer (headText), because the connection's HPACK encoder keeps the
// fields it indexes, and its name caches the names, past the exchange.
func readAnswerKept(br *bufio.Reader, a *answer) error {
	b, err := peekHead(br)
	if err != nil {
		return err
	}
	head := string(b)
	_, _ = br.Discard(len(b))
	return a.parse(head)
}

// answerHeader puts the backend answer's header fields, less hop-by-hop and framing ones, with
// the route's and backend's response modifiers and the Server header policy applied, as the
// stream's header.
func (s *Server) answerHeader(fc *fastConn, rt *route, be *backend, w *h2Writer) {
	if rt.respMod() == nil && be.respHdr == nil {
		// Nothing to modify: the answer's lines are encoded as they are (encodeLines), no map.
		w.answer, w.dropServer = &fc.answer, fc.lim.server.drop
		return
	}
	if fc.resp == nil || len(fc.resp) > fastMapMax {
		fc.resp = make(http.Header, 8)
	}
	ours := w.hdr["Server"]
	fc.rvals = fc.answer.header(fc.resp, fc.rvals)
	h := fc.resp
	server := &fc.lim.server
	if server.drop {
		delete(h, "Server")
	}
	rt.respMod().apply(h)
	be.respHdr.apply(h)
	if _, set := h["Server"]; !set && ours != nil {
		h["Server"] = ours
	}
	w.hdr = h
}

// copyNTo copies n bytes of r to w.
func copyNTo(w io.Writer, r *bufio.Reader, n int64) error {
	for n > 0 {
		b, err := r.Peek(int(min(n, int64(max(r.Buffered(), 1)), int64(r.Size()))))
		if len(b) == 0 && err != nil {
			return err
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
		_, _ = r.Discard(len(b))
		n -= int64(len(b))
	}
	return nil
}

// copyDechunked relays a chunked body's data, each chunk size parsed strictly (parseChunkSize);
// its trailers are dropped (the HTTP/1.1 fast path relays them in the chunked framing, which an
// HTTP/2 answer has not).
func copyDechunked(w io.Writer, r *bufio.Reader) error {
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return err
		}
		n, ok := parseChunkSize(line)
		if !ok {
			return errChunkSize
		}
		if n == 0 {
			for {
				l, err := r.ReadSlice('\n')
				if err != nil {
					return err
				}
				if len(l) == 2 && l[0] == '\r' {
					return nil
				}
				if !validTrailerLine(l) {
					return errTrailer
				}
			}
		}
		if err := copyNTo(w, r, n); err != nil {
			return err
		}
		if end, err := r.Peek(2); err != nil || end[0] != '\r' || end[1] != '\n' {
			return errChunkEnd
		}
		_, _ = r.Discard(2)
		// Each chunk goes out as it comes, for streamed answers.
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
}

// copyStreamBody copies n bytes of a stream's request body to w; every wait for the client may
// last at most idle (requestBodyIdleTimeout).
func copyStreamBody(w *bufio.Writer, body io.Reader, st *h2Stream, n int64, idle time.Duration) error {
	var dl time.Time
	for n > 0 {
		if idle > 0 && st.body != nil {
			if d, ok := refresh(&dl, time.Now(), idle); ok {
				st.body.setDeadline(d)
			}
		}
		buf := w.AvailableBuffer()
		if len(buf) == 0 {
			if err := w.Flush(); err != nil {
				return err
			}
			buf = w.AvailableBuffer()
		}
		k, err := body.Read(buf[:min(int64(cap(buf)), n)])
		_, _ = w.Write(buf[:k])
		n -= int64(k)
		if err != nil && (n > 0 || err != io.EOF) {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
	}
	return nil
}
