package proxy

import (
	"crypto/tls"
	"errors"
	"io"
	"sync/atomic"
	"time"
)

// HTTPS on the fast path. The accept loop no longer gives HTTPS connections straight to the
// http.Server: the handshake is done here, as net/http does it (the same certificate selection
// and deadline, the same answer to a client speaking plain HTTP), and a connection that chose
// HTTP/1.1 (or no ALPN) is then served by the fast path like a plain one. h2 goes to net/http,
// which sees an ordinary *tls.Conn with its handshake done.

// serveHTTPS completes tc's handshake and serves it; it owns tc until it closes it or hands it to
// the http.Server.
func (p *tcpPort) serveHTTPS(tc *tls.Conn, listener string, idle *atomic.Bool) {
	s := p.s
	// net/http bounds the handshake by the smallest of its read and write timeouts, of which the
	// proxy sets ReadHeaderTimeout only.
	_ = tc.SetDeadline(time.Now().Add(s.opts.ReadHeaderTimeout))
	if err := tc.Handshake(); err != nil {
		reason := err.Error()
		var re tls.RecordHeaderError
		if errors.As(err, &re) && re.Conn != nil && recordLooksLikeHTTP(re.RecordHeader) {
			_, _ = io.WriteString(re.Conn, "HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n")
			reason = "client sent an HTTP request to an HTTPS server"
		}
		s.opts.Log.V(1).Info("TLS handshake failed", "listener", listener, "remote", tc.RemoteAddr().String(), "err", reason)
		tc.Close()
		return
	}
	_ = tc.SetDeadline(time.Time{})
	st := tc.ConnectionState()
	if st.NegotiatedProtocol == "h2" && !s.opts.DisableHTTP2Server {
		br := s.bufs.reader(tc)
		defer s.bufs.putReader(br)
		p.serveH2(tc, br, &st, idle)
		return
	}
	if st.NegotiatedProtocol != "" && st.NegotiatedProtocol != "http/1.1" {
		p.hl.push(tc)
		return
	}
	p.serveHTTP1(tc, idle, &st)
}

// recordLooksLikeHTTP reports whether a TLS record header is the start of a plain HTTP request,
// as net/http tells it.
func recordLooksLikeHTTP(hdr [5]byte) bool {
	switch string(hdr[:]) {
	case "GET /", "HEAD ", "POST ", "PUT /", "OPTIO":
		return true
	}
	return false
}

// tlsPrefixConn is a TLS connection handed from the fast path to the http.Server with the bytes
// already read of it. ConnectionState makes the server treat it as the TLS connection it is:
// requests get Request.TLS (X-Forwarded-Proto, redirects, the 421 check) and an HTTP/2 preface
// on it is no h2c.
type tlsPrefixConn struct {
	prefixConn
	tc *tls.Conn
}

func (c *tlsPrefixConn) ConnectionState() tls.ConnectionState { return c.tc.ConnectionState() }
