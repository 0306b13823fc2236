package proxy

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/net/http/httpguts"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// The HTTP/1.1 fast path. HTTP listeners, and HTTPS ones once the TLS handshake chose HTTP/1.1
// (fasttls.go), read requests themselves and relay them over raw pooled upstream connections: per
// request that is one read and one write on each side (each answer one Write, so one TLS record
// when it fits the buffer) and no goroutine hand-offs, where net/http's server, ReverseProxy and
// Transport cost several. It covers the common case only: an HTTP/1.1 request with a
// Content-Length (or no) body to a route without CORS, redirect, mirrors, timeouts or retries and
// with HTTP/1.1 backends. Anything else — h2c preface, Upgrade, Expect, chunked request bodies,
// odd framing, other routes — is handed to the net/http server together with the bytes already
// read, which then owns the connection.

const fastHeadMax = 16 << 10

var errHeadTooLarge = errors.New("request head larger than the fast path buffer")

type bufPools struct{ r, w sync.Pool }

func (p *bufPools) reader(c net.Conn) *bufio.Reader {
	if br, ok := p.r.Get().(*bufio.Reader); ok {
		br.Reset(c)
		return br
	}
	return bufio.NewReaderSize(c, fastHeadMax)
}

func (p *bufPools) writer(c io.Writer) *bufio.Writer {
	if bw, ok := p.w.Get().(*bufio.Writer); ok {
		bw.Reset(c)
		return bw
	}
	return bufio.NewWriterSize(c, 16<<10)
}

func (p *bufPools) put(br *bufio.Reader, bw *bufio.Writer) {
	p.putReader(br)
	bw.Reset(nil)
	p.w.Put(bw)
}

func (p *bufPools) putReader(br *bufio.Reader) {
	br.Reset(nil)
	p.r.Put(br)
}

// fastConn is what one fast-path connection reuses from request to request: the parsed request,
// its URL and header map, the backend's response header and the buffers both heads are parsed
// from, so that a request allocates nothing. Nothing keeps a request past its exchange (the fast
// path has no mirrors and logs synchronously), which is what makes the reuse safe.
type fastConn struct {
	req  http.Request
	url  url.URL
	hdr  http.Header
	vals []string
	// answer is the backend's response head; resp and rvals its header map, built only for
	// response header modifiers.
	answer answer
	resp   http.Header
	rvals  []string
	// remote is the client's address, ip its host part for X-Forwarded-For.
	remote, ip string
	// tls is the connection's TLS state, nil on a plain listener; requests carry it as Request.TLS.
	tls *tls.ConnectionState
	// deadline is the read deadline currently set on the client connection (zero: none).
	deadline time.Time
	// conn is the client connection, out the writer its answers go through (fastlimits.go).
	conn net.Conn
	out  idleWriter
	hits *limitHits
	// lim are the limits of the current request's table.
	lim *limits
	// head and rhead hold the current request's and backend answer's heads (headText).
	head, rhead []byte
	// hasLength says the request came with a Content-Length (0 included), which goes upstream.
	hasLength bool
	// underscores keeps header names with underscores (limits.allowUnderscores); else they are
	// dropped, as nginx does, so that "Content_Length" cannot reach a backend that folds "_" to "-".
	underscores bool
}

// headReuseMax is the largest head copied into a connection's reused buffer; a larger one gets a
// string of its own, so that one odd request does not pin a large buffer to a keepalive connection.
const headReuseMax = 4 << 10

// headText returns b as a string for parsing. A small head is copied into *buf, which the
// connection reuses for every exchange, and viewed in place: no allocation per request, which
// keeps the fast path from triggering GC cycles (with a 100k table, each one marks hundreds of MB).
// The string and everything parsed from it are valid only for the current exchange, which holds
// as nothing on the fast path keeps a request past it (see fastConn); reuse=false (an access-log
// sink might keep values) copies as usual.
func headText(buf *[]byte, b []byte, reuse bool) string {
	if !reuse || len(b) > headReuseMax {
		return string(b)
	}
	*buf = append((*buf)[:0], b...)
	return unsafe.String(unsafe.SliceData(*buf), len(b))
}

// lingerMax bounds what lingerClose reads after its answer.
const lingerMax = 4 << 20

// lingerClose ends a connection whose client may still be sending (the rest of a request target
// too long to read) after its answer was written: it half-closes, then reads and discards what
// comes until the client closes too, d passes or lingerMax is read. Closing with unread input
// makes the kernel reset the connection, and a reset can destroy the answer before the client read
// it (nginx's lingering_close). The caller closes c afterwards.
func lingerClose(c net.Conn, d time.Duration) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_ = c.SetReadDeadline(time.Now().Add(d))
	_, _ = io.CopyN(io.Discard, c, lingerMax)
}

// fastMapMax bounds the header maps kept between requests: one request with hundreds of headers
// should not pin a large map for the life of a keepalive connection.
const fastMapMax = 32

// reuseHeader returns *h emptied for the next request, or a new map of size n in *h when there is
// none or the last request left it larger than fastMapMax.
func reuseHeader(h *http.Header, n int) http.Header {
	if *h == nil || len(*h) > fastMapMax {
		*h = make(http.Header, n)
	} else {
		clear(*h)
	}
	return *h
}

// setReadDeadline sets the client's read deadline to now+d unless the one already set lies within
// 1/64 of d of it: at high request rates most requests then touch no timer at all, and a timeout
// still fires between 98.5% and 100% of its nominal length.
func (fc *fastConn) setReadDeadline(c net.Conn, now time.Time, d time.Duration) {
	want := now.Add(d)
	if !fc.deadline.IsZero() && !fc.deadline.After(want) && want.Sub(fc.deadline) < d/64 {
		return
	}
	fc.deadline = want
	_ = c.SetReadDeadline(want)
}

// serveHTTP1 runs the fast path on one connection until it closes or is handed off: a plain one
// (st nil) or a *tls.Conn past its handshake, whose state is st.
func (p *tcpPort) serveHTTP1(c net.Conn, idle *atomic.Bool, st *tls.ConnectionState) {
	s := p.s
	fc := &fastConn{conn: c, out: idleWriter{c: c, hit: s.metrics.hits.writeIdle}, hits: &s.metrics.hits, tls: st}
	// A port may change protocol across configs; its connections stay what they were accepted as.
	proto := ir.ProtocolHTTP
	if st != nil {
		proto = ir.ProtocolHTTPS
	}
	br, bw := s.bufs.reader(c), s.bufs.writer(&fc.out)
	handedOff := false
	defer func() {
		if !handedOff {
			c.Close()
		}
		s.bufs.put(br, bw)
	}()
	timeout := s.opts.ReadHeaderTimeout
	for {
		idle.Store(true)
		// The deadline goes before the drain check: a drain that starts after the check sets its own
		// (immediate) deadline after this one.
		fc.setReadDeadline(c, time.Now(), timeout)
		if p.raw.isDraining() {
			return
		}
		if _, err := br.Peek(1); err != nil {
			return
		}
		idle.Store(false)
		timeout = s.opts.IdleTimeout
		head, err := completeHead(br)
		if head == nil && err == nil {
			// The head did not come in one piece: from its first byte it has ReadHeaderTimeout.
			fc.setReadDeadline(c, time.Now(), s.opts.ReadHeaderTimeout)
			head, err = peekHead(br)
		}
		if err != nil && !errors.Is(err, errHeadTooLarge) {
			return
		}
		if err != nil && targetTooLong(br) {
			// nginx answers 414 too, for a request line beyond its buffers; net/http would say 431.
			fc.req = http.Request{Close: true}
			s.metrics.hits.targetTooLong.Inc()
			writeSimple(bw, p.cur.Load().lim.server.line, http.StatusRequestURITooLong, "", &fc.req)
			if bw.Flush() == nil { // the answer is out (a failed flush stays failed)
				lingerClose(c, s.opts.LingerTimeout)
			}
			return
		}
		lt := p.cur.Load()
		var req *http.Request
		if err == nil && lt.proto == proto {
			fc.underscores = lt.lim.allowUnderscores
			req = fc.parseHead(headText(&fc.head, head, !s.accessOn))
		}
		var rt *route
		if req != nil {
			if fc.remote == "" {
				fc.remote = c.RemoteAddr().String()
				fc.ip, _, _ = net.SplitHostPort(fc.remote)
			}
			req.RemoteAddr, req.TLS = fc.remote, fc.tls
			if misdirected(lt, req) {
				// net/http answers it (421), as for any request it serves.
				req = nil
			} else if vh, ok := lt.hosts.lookup(normalizeHost(req.Host)); ok {
				rt = vh.match(req)
			}
		}
		if req == nil || (rt != nil && !rt.fast) {
			buffered, _ := br.Peek(br.Buffered())
			if st == nil && !s.opts.DisableHTTP2Server && bytes.HasPrefix(buffered, []byte(h2cPreface)) {
				// h2c with prior knowledge: the proxy's own HTTP/2 server reads the preface.
				p.serveH2(c, br, nil, idle)
				return
			}
			// Hand the connection, with what was read of it, to net/http.
			_ = c.SetReadDeadline(time.Time{})
			p.handOff(c, bytes.Clone(buffered))
			handedOff = true
			return
		}
		_, _ = br.Discard(len(head))
		fc.lim, fc.out.d = lt.lim, lt.lim.responseWriteIdleTimeout
		if req.ContentLength > 0 {
			// A body is read while relaying, bounded by the body's idle timeout, not the head's.
			fc.setReadDeadline(c, time.Now(), lt.lim.requestBodyIdleTimeout)
		}
		if !s.serveFast(lt, rt, req, fc, br, bw) || req.Close {
			return
		}
	}
}

// completeHead returns the request head if the reader already holds all of it, the usual case.
func completeHead(br *bufio.Reader) ([]byte, error) {
	buf, _ := br.Peek(br.Buffered())
	if i := bytes.Index(buf, []byte("\r\n\r\n")); i >= 0 {
		return buf[:i+4], nil
	}
	if len(buf) >= fastHeadMax {
		return nil, errHeadTooLarge
	}
	return nil, nil
}

// targetTooLong reports whether the request line does not fit the fast path's buffer, which is
// full: maxTarget bounds request targets on every path (strict.go).
func targetTooLong(br *bufio.Reader) bool {
	buf, _ := br.Peek(br.Buffered())
	return len(buf) >= maxTarget && bytes.IndexByte(buf[:maxTarget], '\n') < 0
}

// peekHead returns the request head up to and including the blank line, without consuming it.
func peekHead(br *bufio.Reader) ([]byte, error) {
	for n := 0; ; {
		buf, err := br.Peek(br.Buffered())
		if i := bytes.Index(buf[max(0, n-3):], []byte("\r\n\r\n")); i >= 0 {
			return buf[:max(0, n-3)+i+4], nil
		}
		if err != nil {
			return nil, err
		}
		if br.Buffered() >= fastHeadMax {
			return nil, errHeadTooLarge
		}
		n = len(buf)
		// Wait for at least one more byte.
		if _, err := br.Peek(n + 1); err != nil {
			return nil, err
		}
	}
}

// parseHead parses a request head strictly into fc's request, returning nil for anything the fast
// path leaves to net/http (which, with strict.go, also produces the proper error answers for
// malformed requests): differing Content-Lengths, any Transfer-Encoding, an Upgrade, a Host that
// is no RFC 3986 host[:port]. Header names with underscores are dropped unless fc.underscores.
// The head is one string and every name and value a substring of it; with fc's maps and slices
// reused, parsing allocates nothing more.
func (fc *fastConn) parseHead(head string) *http.Request {
	line, rest, _ := strings.Cut(head, "\r\n")
	m, rest1, ok := strings.Cut(line, " ")
	if !ok {
		return nil
	}
	target, proto, ok := strings.Cut(rest1, " ")
	if !ok || proto != "HTTP/1.1" || len(target) == 0 || target[0] != '/' || !validToken(m) {
		return nil
	}
	if m == http.MethodConnect {
		return nil
	}
	u := &fc.url
	if !parseTarget(target, u) {
		pu, err := url.ParseRequestURI(target)
		if err != nil {
			return nil
		}
		*u = *pu
	}
	h := reuseHeader(&fc.hdr, 8)
	// One backing array for all values; capacity-limited slices of it copy on a repeated name.
	vals := fc.vals[:0]
	defer func() { fc.vals = vals }()
	var host, length string
	hosts := 0
	fc.hasLength = false
	fc.req = http.Request{Method: m, URL: u, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: h, RequestURI: target}
	req := &fc.req
	for len(rest) > 2 {
		var l string
		l, rest, _ = strings.Cut(rest, "\r\n")
		k, v, ok := strings.Cut(l, ":")
		v = trimOWS(v)
		if !ok || !validToken(k) || !httpguts.ValidHeaderFieldValue(v) {
			return nil
		}
		if !fc.underscores && strings.IndexByte(k, '_') >= 0 {
			continue
		}
		key := "Host"
		if !foldEqual(k, key) {
			// Host, in every request, is spared canonicalising: lower-case names (HTTP/2 tools
			// speaking HTTP/1.1 send them) cost a map probe each.
			key = textproto.CanonicalMIMEHeaderKey(k)
		}
		switch key {
		case "Host":
			host, hosts = v, hosts+1
			continue
		case "Transfer-Encoding", "Upgrade", "Expect":
			return nil
		case "Content-Length":
			// Lines with differing values are net/http's to refuse (400); identical repeats
			// collapse into one, as there. What goes upstream is the parsed length (fastup.go).
			if fc.hasLength {
				if v != length {
					return nil
				}
				continue
			}
			n, ok := parseLength(v)
			if !ok {
				return nil
			}
			req.ContentLength, length, fc.hasLength = n, v, true
		case "Connection":
			for tokens := v; tokens != ""; {
				var tok string
				tok, tokens, _ = strings.Cut(tokens, ",")
				switch tok = strings.TrimSpace(tok); {
				case strings.EqualFold(tok, "close"):
					req.Close = true
				case strings.EqualFold(tok, "upgrade"):
					return nil
				}
			}
		}
		if prev, ok := h[key]; ok {
			h[key] = append(prev, v)
			continue
		}
		vals = append(vals, v)
		h[key] = vals[len(vals)-1 : len(vals) : len(vals)]
	}
	if hosts != 1 || !validHost(host) {
		return nil
	}
	req.Host = host
	if p := normalizePath(u.Path); p != u.Path {
		u.Path, u.RawPath = p, ""
	}
	return req
}

// parseTarget parses an origin-form request target without allocating, when its path needs no
// unescaping and has no character url.URL would escape; it then fills u exactly as
// url.ParseRequestURI would. It reports false for every other target.
func parseTarget(target string, u *url.URL) bool {
	p, q, hasQuery := strings.Cut(target, "?")
	if len(p) == 0 || p[0] != '/' {
		return false
	}
	for i := 0; i < len(p); i++ {
		if !pathByteVerbatim(p[i]) {
			return false
		}
	}
	for i := 0; i < len(q); i++ {
		if c := q[i]; c < 0x20 || c == 0x7f {
			return false
		}
	}
	*u = url.URL{Path: p, RawQuery: q, ForceQuery: hasQuery && q == ""}
	return true
}

// pathByteVerbatim reports whether c stands for itself in a URL path: RFC 3986 unreserved
// characters and the sub-delimiters that net/url leaves unescaped in paths.
func pathByteVerbatim(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	switch c {
	case '-', '_', '.', '~', '$', '&', '+', ',', '/', ':', ';', '=', '@':
		return true
	}
	return false
}

// validToken reports whether b is an RFC 9110 token (a method or header name), by table lookup.
func validToken(b string) bool { return httpguts.ValidHeaderFieldName(b) }

// isFast reports whether a compiled route can be served by the fast path: only when every field
// the fast path does not implement is at its zero value. TestIsFastClassifiesEveryField holds
// this list to route's fields: a field added to route fails it until classified, one classified
// as not implemented fails it until checked here. (Checked by hand, not by reflection: this runs
// once per route of a 100k-route compile.)
func (r *route) isFast() bool {
	if r.buffer {
		return false
	}
	if x := r.rare; x != nil && (x.cors != nil || x.redirect != nil || len(x.mirrors) > 0 || x.timeout != 0 || x.beTimeout != 0 || x.retry != nil) {
		return false
	}
	for _, b := range r.backends.list {
		if !b.invalid && !b.h1 {
			return false
		}
	}
	return true
}
