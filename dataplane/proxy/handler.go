package proxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

const mirrorTimeout = 30 * time.Second

// serveHTTP routes one request of an HTTP or HTTPS listener.
func (s *Server) serveHTTP(lt *listenerTable, w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	if v := lt.lim.server.value; v != nil {
		w.Header()["Server"] = v // the proxy's own answers carry it too; modifyResponse may take it back
	}
	if p := normalizePath(r.URL.Path); p != r.URL.Path {
		r.URL.Path, r.URL.RawPath = p, ""
	}
	if misdirected(lt, r) {
		lt.notFound.count(http.StatusMisdirectedRequest)
		http.Error(w, "misdirected request", http.StatusMisdirectedRequest)
		return
	}
	var rt *route
	if vh, ok := lt.hosts.lookup(normalizeHost(r.Host)); ok {
		rt = vh.match(r)
	}
	if rt == nil {
		lt.notFound.count(http.StatusNotFound)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, "no route matched\n")
		if s.accessOn {
			s.logAccess(lt, nil, nil, r, http.StatusNotFound, start)
		}
		return
	}
	if w2, ok := w.(*h2Writer); ok && rt.fast && (r.Body == http.NoBody || r.ContentLength > 0) {
		s.relayH2(lt, rt, w2, r, start)
		return
	}
	ex := s.exPool.Get().(*exchange)
	ex.lt, ex.rt, ex.x = lt, rt, rt.rare
	if ex.x == nil {
		ex.x = &ex.none
	}
	ex.sw.ResponseWriter, ex.sw.code = w, 0
	ex.sw.rc = *http.NewResponseController(w)
	ex.sw.idle, ex.sw.hit = lt.lim.responseWriteIdleTimeout, s.metrics.hits.writeIdle
	ex.serve(r)
	if ex.body != nil {
		ex.body.finish()
	}
	if !ex.sw.dl.IsZero() {
		// An HTTP/1.1 connection keeps its deadline for the next request, which sets its own.
		_ = ex.sw.rc.SetWriteDeadline(time.Time{})
	}
	code := ex.sw.code
	if code == 0 {
		code = http.StatusOK
		if r.Header.Get("Upgrade") != "" {
			code = http.StatusSwitchingProtocols
		}
	}
	bs := ex.bs
	if bs == nil {
		bs = rt.stats.local
	}
	bs.count(code)
	rt.stats.observe(time.Since(start))
	if s.accessOn {
		s.logAccess(lt, rt, ex.be, r, code, start)
	}
	*ex = exchange{s: s, rp: ex.rp}
	s.exPool.Put(ex)
}

// exchange is the per-request state of a proxied request. Exchanges are pooled together with their
// ReverseProxy, whose callbacks are bound to the exchange once, so a request allocates neither.
type exchange struct {
	s  *Server
	rp httputil.ReverseProxy
	lt *listenerTable
	rt *route
	// x is rt's rare part, or none (all zero) for a route without one, so that the uses below
	// need no nil check.
	x      *routeRare
	none   routeRare
	be     *backend
	bs     *backendStats
	origin string
	// clientHost is the Host the client sent.
	clientHost string
	sw         statusWriter
	// body is the request body under requestBodyIdleTimeout, nil without a body.
	body *idleBody
}

func (s *Server) newExchange() *exchange {
	ex := &exchange{s: s}
	ex.rp = httputil.ReverseProxy{
		Rewrite:        ex.rewrite,
		Transport:      ex,
		ModifyResponse: ex.modifyResponse,
		ErrorHandler:   ex.errorHandler,
		BufferPool:     &s.bufPool,
		ErrorLog:       log.New(logWriter{s.opts.Log}, "", 0),
	}
	return ex
}

func (ex *exchange) serve(r *http.Request) {
	rt, x, w := ex.rt, ex.x, &ex.sw
	r, ex.body = watchBody(r, ex.lt.lim, ex.sw.rc, ex.s.metrics.hits.bodyIdle)
	if x.timeout > 0 {
		ctx, cancel := context.WithTimeout(r.Context(), x.timeout)
		defer cancel()
		r = r.WithContext(ctx)
		if ex.body != nil {
			// The request timeout covers a body still arriving: a read blocked on the client
			// would otherwise hold the handler (and its 504) until the client sends more.
			defer context.AfterFunc(ctx, func() {
				if ctx.Err() == context.DeadlineExceeded {
					ex.body.expire()
				}
			})()
		}
	}
	if c := x.cors; c != nil {
		if c.preflight(w, r) {
			return
		}
		ex.origin = r.Header.Get("Origin")
	}
	if rd := x.redirect; rd != nil {
		w.Header().Set("Location", rd.location(rt, r, ex.lt.port))
		w.WriteHeader(rd.code)
		return
	}
	// X-Forwarded-Host tells the backend the host the client asked for, before any rewrite.
	ex.clientHost = r.Host
	x.reqHdr.applyRequest(r)
	if x.rewrite != nil {
		x.rewrite.apply(rt, r)
	}
	var body []byte
	if rt.buffer {
		var err error
		if body, err = ex.s.bufferBody(r); err != nil {
			ex.bodyError(w, r, http.StatusBadRequest)
			return
		}
	}
	for _, m := range x.mirrors {
		ex.s.mirror(r, m, body)
	}
	be, bs := rt.backends.pick()
	ex.be, ex.bs = be, bs
	if be == nil || be.invalid {
		// Gateway API: requests for a rule without valid backends get a 500.
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	ex.rp.ServeHTTP(w, r)
}

func (ex *exchange) rewrite(pr *httputil.ProxyRequest) {
	out := pr.Out
	out.URL.Scheme = ex.be.scheme
	// Keep the client's chain: ReverseProxy dropped it from Out, SetXForwarded appends the peer.
	if xff := pr.In.Header["X-Forwarded-For"]; len(xff) > 0 {
		out.Header["X-Forwarded-For"] = xff[:len(xff):len(xff)]
	}
	pr.SetXForwarded()
	out.Header["X-Forwarded-Host"] = []string{ex.clientHost}
	out.Host = pr.In.Host
	ex.be.reqHdr.applyRequest(out)
}

func (ex *exchange) modifyResponse(res *http.Response) error {
	if ex.lt.lim.server.drop {
		delete(res.Header, "Server")
	}
	ex.x.respHdr.apply(res.Header)
	ex.be.respHdr.apply(res.Header)
	if ex.x.cors != nil {
		ex.x.cors.decorate(res.Header, ex.origin)
	}
	if _, set := res.Header["Server"]; set {
		// The backend's, passed through, or a route filter's: ReverseProxy would add it to ours.
		delete(ex.sw.Header(), "Server")
	}
	return nil
}

func (ex *exchange) errorHandler(w http.ResponseWriter, r *http.Request, err error) {
	code := http.StatusBadGateway
	var ne net.Error
	switch {
	case ex.body != nil && (ex.body.idled() || ex.body.expired()):
		ex.bodyError(w, r, code)
		return
	case isClientBodyError(err):
		// The client's body was malformed or cut short: its fault, not the backend's.
		code = http.StatusBadRequest
	case errors.Is(err, errNoEndpoint):
		code = http.StatusServiceUnavailable
	case r.ProtoMajor == 2 && errors.Is(r.Context().Err(), context.Canceled):
		ex.s.clientReset(w, r)
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout(),
		errors.Is(r.Context().Err(), context.DeadlineExceeded):
		code = http.StatusGatewayTimeout
		if ex.x.timeout > 0 && errors.Is(r.Context().Err(), context.DeadlineExceeded) {
			ex.s.metrics.hits.requestTimeout.Inc()
		}
	}
	w.WriteHeader(code)
}

// bodyError answers a request whose body could not be read: 408 when the client stalled, 504
// when the request timeout ended it, else code. The connection closes after the answer, as the
// rest of the body may still be on its way.
func (ex *exchange) bodyError(w http.ResponseWriter, r *http.Request, code int) {
	switch b := ex.body; {
	case b != nil && b.expired():
		code = http.StatusGatewayTimeout
		ex.s.metrics.hits.requestTimeout.Inc()
	case b != nil && b.idled():
		code = http.StatusRequestTimeout
	}
	if r.ProtoMajor == 1 {
		w.Header().Set("Connection", "close")
	}
	w.WriteHeader(code)
}

// RoundTrip sends one request to the chosen backend, picking an endpoint per attempt and retrying
// per the route's policy when the body can be replayed and the backend's retry budget allows.
func (ex *exchange) RoundTrip(req *http.Request) (*http.Response, error) {
	x, be := ex.x, ex.be
	tries := 1
	if x.retry != nil && (req.Body == nil || req.Body == http.NoBody || req.GetBody != nil) && req.Header.Get("Upgrade") == "" {
		tries += x.retry.attempts
	}
	be.inflight.Add(1)
	defer be.inflight.Add(-1)
	// retrying says this request holds a share of the backend's retry budget, from the decision
	// to retry until the retry's answer (or failure) is in.
	retrying := false
	defer func() {
		if retrying {
			be.doneRetry()
		}
	}()
	parent := req.Context()
	var failed []string
	for n := 0; ; n++ {
		ep, ok := be.retryEndpoint(failed)
		if !ok {
			return nil, errNoEndpoint
		}
		out := req
		if n > 0 {
			out = retryRequest(req)
			if out == nil {
				return nil, errors.New("request body cannot be replayed")
			}
		}
		out.URL.Host = ep
		var att, head *attempt
		switch {
		case x.beTimeout > 0:
			att = newAttempt(parent, x.beTimeout)
			out = out.WithContext(att.ctx)
		case x.timeout == 0:
			// A route without timeouts still waits for the answer head at most
			// backendResponseTimeout; the body then streams unbounded.
			head = newAttempt(parent, ex.lt.lim.backendResponseTimeout)
			out = out.WithContext(head.ctx)
		}
		res, err := be.rt.RoundTrip(out)
		if retrying {
			be.doneRetry()
			retrying = false
		}
		if head != nil {
			switch {
			case !head.timer.Stop():
				ex.s.metrics.hits.backendResponse.Inc()
				if err == nil {
					res.Body.Close()
					res, err = nil, context.DeadlineExceeded
				}
				head.end()
			case err != nil:
				head.end()
			case res.StatusCode != http.StatusSwitchingProtocols:
				res.Body = &attemptBody{ReadCloser: res.Body, att: head}
			}
		}
		last := n+1 >= tries || parent.Err() != nil
		// An error is a failed connection or an attempt that hit the backendRequest timeout
		// (HTTPRouteRetryConnectionError, HTTPRouteRetryBackendTimeout); both are retried.
		if !last && (err != nil || x.retry.codes[res.StatusCode]) && ex.takeRetry(be) {
			retrying = true
			failed = append(failed, ep)
			if res != nil {
				_, _ = io.CopyN(io.Discard, res.Body, 4<<10)
				res.Body.Close()
			}
			att.end()
			if !sleepCtx(parent, x.retry.wait(n+1)) {
				return nil, parent.Err()
			}
			continue
		}
		switch {
		case att == nil:
		case err != nil:
			att.end()
		case res.StatusCode == http.StatusSwitchingProtocols:
			// An upgraded stream lives as long as the client wants; the timeout covered the handshake.
			att.timer.Stop()
		default:
			res.Body = &attemptBody{ReadCloser: res.Body, att: att}
		}
		return res, err
	}
}

// takeRetry asks the backend's retry budget, under the limits of the table in service, for one
// retry; a refusal is counted, and the request gets the answer (or error) it has.
func (ex *exchange) takeRetry(be *backend) bool {
	if be.takeRetry(ex.s.retryBudget()) {
		return true
	}
	if m := ex.s.metrics; m != nil {
		m.retryBudgetRefused.Inc()
	}
	return false
}

// retryBudget is the retry budget of the table in service (percent of the requests in flight to a
// backend, and the retries always allowed); a request holds no table, so a swap applies at once.
func (s *Server) retryBudget() (percent, minConcurrent int) {
	if t := s.cur.Load(); t != nil && t.limits != nil {
		return t.limits.retryBudgetPercent, t.limits.retryBudgetMinConcurrent
	}
	return s.opts.RetryBudgetPercent, s.opts.RetryBudgetMinConcurrent
}

func retryRequest(req *http.Request) *http.Request {
	out := *req
	u := *req.URL
	out.URL = &u
	if req.Body != nil && req.Body != http.NoBody {
		if req.GetBody == nil {
			return nil
		}
		b, err := req.GetBody()
		if err != nil {
			return nil
		}
		out.Body = b
	}
	return &out
}

// attempt bounds one try at a backend: the timer covers sending the request and reading the whole
// response, so it is stopped when the response body is closed.
type attempt struct {
	ctx    context.Context
	cancel context.CancelFunc
	timer  *time.Timer
}

func newAttempt(parent context.Context, d time.Duration) *attempt {
	ctx, cancel := context.WithCancelCause(parent)
	a := &attempt{ctx: ctx}
	a.cancel = func() { cancel(context.DeadlineExceeded) }
	a.timer = time.AfterFunc(d, func() { cancel(context.DeadlineExceeded) })
	a.ctx = contextWithDeadlineErr{ctx}
	return a
}

func (a *attempt) end() {
	if a != nil {
		a.timer.Stop()
		a.cancel()
	}
}

// contextWithDeadlineErr reports the cancellation cause as the error so that a backend timeout
// surfaces as context.DeadlineExceeded (and a 504) rather than context.Canceled.
type contextWithDeadlineErr struct{ context.Context }

func (c contextWithDeadlineErr) Err() error {
	if c.Context.Err() == nil {
		return nil
	}
	return context.Cause(c.Context)
}

type attemptBody struct {
	io.ReadCloser
	att *attempt
}

func (b *attemptBody) Close() error {
	err := b.ReadCloser.Close()
	b.att.end()
	return err
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// bufferBody keeps a small request body in memory so it can be replayed for retries and mirrors.
// Larger or unknown-length bodies stream through; they are neither retried nor mirrored.
func (s *Server) bufferBody(r *http.Request) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength <= 0 || r.ContentLength > s.opts.MaxBufferedBody {
		return nil, nil
	}
	b := make([]byte, r.ContentLength)
	if _, err := io.ReadFull(r.Body, b); err != nil {
		return nil, err
	}
	r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(b))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	return b, nil
}

// mirror sends a copy of r to the mirror's backend in the background, for its fraction of requests,
// bounded by MaxMirrors in flight; the answer is discarded.
func (s *Server) mirror(r *http.Request, m *mirror, body []byte) {
	if m.den > 0 && rand.Int32N(m.den) >= m.num {
		return
	}
	be := m.backend
	ep, ok := be.endpoint()
	if be.invalid || !ok {
		return
	}
	select {
	case s.mirrors <- struct{}{}:
	default:
		s.metrics.mirrorDrops.Inc()
		return
	}
	h := r.Header.Clone()
	be.reqHdr.apply(h)
	u := &url.URL{Scheme: be.scheme, Host: ep, Path: r.URL.Path, RawPath: r.URL.RawPath, RawQuery: r.URL.RawQuery}
	method, host := r.Method, r.Host
	go func() {
		defer func() { <-s.mirrors }()
		ctx, cancel := context.WithTimeout(context.Background(), mirrorTimeout)
		defer cancel()
		var rd io.Reader
		if body != nil {
			rd = bytes.NewReader(body)
		}
		req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
		if err != nil {
			return
		}
		req.Header, req.Host = h, host
		res, err := be.rt.RoundTrip(req)
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 1<<20))
		res.Body.Close()
	}()
}

// statusWriter remembers the status for metrics and logs, and bounds each write by the
// responseWriteIdleTimeout: a client that reads nothing is disconnected (ReverseProxy then aborts
// the request and closes the upstream connection). Unwrap keeps Flush and Hijack reachable
// through http.ResponseController.
type statusWriter struct {
	http.ResponseWriter
	code int
	rc   http.ResponseController
	idle time.Duration
	dl   time.Time
	hit  prometheus.Counter
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 && code >= 200 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	if w.idle > 0 {
		if dl, ok := refresh(&w.dl, time.Now(), w.idle); ok {
			_ = w.rc.SetWriteDeadline(dl)
		}
	}
	n, err := w.ResponseWriter.Write(b)
	if err != nil && w.idle > 0 && !w.dl.IsZero() && !time.Now().Before(w.dl) {
		w.hit.Inc()
	}
	return n, err
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (s *Server) logAccess(lt *listenerTable, rt *route, be *backend, r *http.Request, code int, start time.Time) {
	var route, backend string
	if rt != nil {
		route = rt.name
	}
	if be != nil {
		backend = be.name
	}
	s.opts.AccessLog.Info("http", "listener", lt.name, "route", route, "backend", backend,
		"method", r.Method, "host", r.Host, "path", r.URL.Path, "proto", r.Proto, "code", code,
		"duration", time.Since(start), "remote", r.RemoteAddr)
}

// bufferPool recycles the ReverseProxy's copy buffers.
type bufferPool struct{ p sync.Pool }

func (b *bufferPool) Get() []byte {
	if v, ok := b.p.Get().(*[]byte); ok {
		return *v
	}
	return make([]byte, 32<<10)
}

func (b *bufferPool) Put(buf []byte) { b.p.Put(&buf) }
