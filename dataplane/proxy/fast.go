package proxy

import (
	"bufio"
	"bytes"
	"errors"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// The HTTP/1.1 fast path. Plain HTTP listeners read requests themselves and relay them over raw
// pooled upstream connections: per request that is one read and one write on each side and no
// goroutine hand-offs, where net/http's server, ReverseProxy and Transport cost several. It covers
// the common case only: an HTTP/1.1 request with a Content-Length (or no) body to a route without
// CORS, redirect, mirrors, timeouts or retries and with HTTP/1.1 backends. Anything else — h2c
// preface, Upgrade, Expect, chunked request bodies, odd framing, other routes — is handed to the
// net/http server together with the bytes already read, which then owns the connection.

const fastHeadMax = 16 << 10

var errHeadTooLarge = errors.New("request head larger than the fast path buffer")

// hopHeaders are dropped when relaying, as httputil.ReverseProxy does.
var hopHeaders = [...]string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

type bufPools struct{ r, w sync.Pool }

func (p *bufPools) reader(c net.Conn) *bufio.Reader {
	if br, ok := p.r.Get().(*bufio.Reader); ok {
		br.Reset(c)
		return br
	}
	return bufio.NewReaderSize(c, fastHeadMax)
}

func (p *bufPools) writer(c net.Conn) *bufio.Writer {
	if bw, ok := p.w.Get().(*bufio.Writer); ok {
		bw.Reset(c)
		return bw
	}
	return bufio.NewWriterSize(c, 16<<10)
}

func (p *bufPools) put(br *bufio.Reader, bw *bufio.Writer) {
	br.Reset(nil)
	bw.Reset(nil)
	p.r.Put(br)
	p.w.Put(bw)
}

// serveHTTP1 runs the fast path on one plain connection until it closes or is handed off.
func (p *tcpPort) serveHTTP1(c net.Conn, idle *atomic.Bool) {
	s := p.s
	br, bw := s.bufs.reader(c), s.bufs.writer(c)
	handedOff := false
	defer func() {
		if !handedOff {
			c.Close()
		}
		s.bufs.put(br, bw)
	}()
	timeout := s.opts.ReadHeaderTimeout
	var remote string
	for {
		idle.Store(true)
		if p.raw.isDraining() {
			return
		}
		_ = c.SetReadDeadline(time.Now().Add(timeout))
		if _, err := br.Peek(1); err != nil {
			return
		}
		idle.Store(false)
		timeout = s.opts.IdleTimeout
		_ = c.SetReadDeadline(time.Now().Add(s.opts.ReadHeaderTimeout))
		head, err := peekHead(br)
		if err != nil && !errors.Is(err, errHeadTooLarge) {
			return
		}
		lt := p.cur.Load()
		var req *http.Request
		if err == nil && lt.proto == ir.ProtocolHTTP {
			req = parseHead(string(head))
		}
		var rt *route
		if req != nil {
			if remote == "" {
				remote = c.RemoteAddr().String()
			}
			req.RemoteAddr = remote
			if vh, ok := lt.hosts.lookup(normalizeHost(req.Host)); ok {
				rt = vh.match(req)
			}
		}
		if req == nil || (rt != nil && !rt.fast) {
			// Hand the connection, with what was read of it, to net/http.
			buffered, _ := br.Peek(br.Buffered())
			_ = c.SetReadDeadline(time.Time{})
			p.hl.push(&prefixConn{Conn: c, prefix: bytes.Clone(buffered)})
			handedOff = true
			return
		}
		_, _ = br.Discard(len(head))
		_ = c.SetReadDeadline(time.Time{})
		if !s.serveFast(lt, rt, req, br, bw) || req.Close {
			return
		}
	}
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

// parseHead parses a request head strictly, returning nil for anything the fast path leaves to
// net/http (which also produces the proper error answers for malformed requests). The head is one
// string and every name and value a substring of it, so parsing costs a handful of allocations.
func parseHead(head string) *http.Request {
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
	u, err := url.ParseRequestURI(target)
	if err != nil {
		return nil
	}
	n := strings.Count(rest, "\r\n")
	h := make(http.Header, n)
	// One backing array for all values; capacity-limited slices of it copy on a repeated name.
	vals := make([]string, 0, n)
	var host string
	hosts := 0
	req := &http.Request{Method: m, URL: u, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: h, RequestURI: target}
	for len(rest) > 2 {
		var l string
		l, rest, _ = strings.Cut(rest, "\r\n")
		k, v, ok := strings.Cut(l, ":")
		v = strings.Trim(v, " \t")
		if !ok || !validToken(k) || !httpguts.ValidHeaderFieldValue(v) {
			return nil
		}
		key := textproto.CanonicalMIMEHeaderKey(k)
		switch key {
		case "Host":
			host, hosts = v, hosts+1
			continue
		case "Transfer-Encoding", "Upgrade", "Expect":
			return nil
		case "Content-Length":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 || (req.ContentLength > 0 && n != req.ContentLength) {
				return nil
			}
			req.ContentLength = n
			if _, dup := h[key]; dup {
				continue // identical repeats collapse into one, as net/http does
			}
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
	if hosts != 1 {
		return nil
	}
	req.Host = host
	if p := normalizePath(u.Path); p != u.Path {
		u.Path, u.RawPath = p, ""
	}
	return req
}

func validToken(b string) bool {
	if len(b) == 0 {
		return false
	}
	for i := 0; i < len(b); i++ {
		if c := b[i]; c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// isFast reports whether a compiled route can be served by the fast path.
func (r *route) isFast() bool {
	if r.cors != nil || r.redirect != nil || len(r.mirrors) > 0 || r.timeout > 0 || r.beTimeout > 0 || r.retry != nil {
		return false
	}
	for _, b := range r.backends.list {
		if !b.invalid && !b.h1 {
			return false
		}
	}
	return true
}
