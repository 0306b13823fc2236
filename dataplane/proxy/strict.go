package proxy

import (
	"errors"
	"io"
	"net/http"
	"net/netip"
	"strings"
)

// What every HTTP path refuses or strips from a client's request before routing it, so that the
// fast path and net/http (HTTP/1.1 handed off, HTTPS, HTTP/2) treat hostile requests alike.

// maxTarget bounds a request target; a longer one gets 414, as from nginx (whose default is 8 KiB).
const maxTarget = fastHeadMax

// screen answers a request net/http parsed that the fast path would not have served either, and
// strips what must not reach a backend; it reports whether r may go on to routing. lt is the
// listener the request came in on.
func (s *Server) screen(w http.ResponseWriter, r *http.Request, lt *listenerTable) bool {
	switch {
	case r.URL.User != nil, r.Host != "" && !validHost(r.Host):
		// Userinfo in an absolute-form target (nginx: 400); a Host that no wildcard may route.
		// (No Host at all is net/http's to refuse on HTTP/1.1; HTTP/1.0 and HTTP/2 may omit it.)
		refuse(w, r, http.StatusBadRequest)
		return false
	case len(r.RequestURI) > maxTarget:
		s.metrics.hits.targetTooLong.Inc()
		refuse(w, r, http.StatusRequestURITooLong)
		return false
	}
	if !lt.lim.allowUnderscores {
		for k := range r.Header {
			if strings.IndexByte(k, '_') >= 0 {
				delete(r.Header, k)
			}
		}
	}
	// An h2c upgrade, once a backend accepted it, would be a tunnel for HTTP/2 requests that no
	// route or filter sees: only WebSocket upgrades pass (ReverseProxy forwards an Upgrade only
	// while the header is there).
	delete(r.Header, "Http2-Settings")
	if up := r.Header["Upgrade"]; len(up) > 0 && (len(up) > 1 || !foldEqual(trimOWS(up[0]), "websocket")) {
		delete(r.Header, "Upgrade")
	}
	if r.ProtoMajor == 1 && len(r.TransferEncoding) > 0 {
		// net/http drops the Content-Length of a request that also has Transfer-Encoding before a
		// handler sees it, so every chunked HTTP/1 request closes its connection after the answer
		// (RFC 9112 §6.3 asks it for CL+TE): whatever a front proxy made of the framing, nothing
		// more is read from that connection.
		w.Header().Set("Connection", "close")
	}
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = &clientBody{ReadCloser: r.Body}
	}
	return true
}

func refuse(w http.ResponseWriter, r *http.Request, code int) {
	if r.ProtoMajor == 1 {
		w.Header().Set("Connection", "close")
	}
	http.Error(w, http.StatusText(code), code)
}

// clientBody marks the errors of reading a client's request body (a malformed chunk, a short
// body), so that they are answered 400 rather than 502 as if the backend had failed.
type clientBody struct {
	io.ReadCloser
}

// clientBodyError is an error reading the client's request body.
type clientBodyError struct{ error }

func (e clientBodyError) Unwrap() error { return e.error }

func (b *clientBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		err = clientBodyError{err}
	}
	return n, err
}

// isClientBodyError reports whether err came from reading the client's request body.
func isClientBodyError(err error) bool {
	var ce clientBodyError
	return errors.As(err, &ce)
}

// validHost reports whether h is an RFC 3986 host with an optional port: a reg-name (unreserved,
// percent-encoded and sub-delims characters), an IPv4 address or a bracketed IPv6 literal. It
// allocates nothing, for the fast path.
func validHost(h string) bool {
	host, port := h, ""
	if strings.HasPrefix(h, "[") {
		i := strings.IndexByte(h, ']')
		if i < 0 {
			return false
		}
		host, port = h[1:i], h[i+1:]
		if port != "" {
			if port[0] != ':' {
				return false
			}
			port = port[1:]
		}
		a, err := netip.ParseAddr(host)
		if err != nil || !a.Is6() || a.Zone() != "" {
			return false
		}
	} else {
		if i := strings.IndexByte(h, ':'); i >= 0 {
			host, port = h[:i], h[i+1:]
		}
		if host == "" {
			return false
		}
		for i := 0; i < len(host); i++ {
			c := host[i]
			switch {
			case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
			case strings.IndexByte("-._~!$&'()*+,;=", c) >= 0:
			case c == '%' && i+2 < len(host) && isHex(host[i+1]) && isHex(host[i+2]):
				i += 2
			default:
				return false
			}
		}
	}
	if len(port) > 5 {
		return false
	}
	for i := 0; i < len(port); i++ {
		if port[i] < '0' || port[i] > '9' {
			return false
		}
	}
	return true
}

func isHex(c byte) bool {
	_, ok := hexDigit(c)
	return ok
}
