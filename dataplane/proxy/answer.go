package proxy

import (
	"bufio"
	"errors"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// answer is a backend's response head on the fast path. Its header lines stay as they came and
// are relayed verbatim (less hop-by-hop headers): building a header map and writing it back out
// cost more than a third of the proxy's own CPU per request. A map is built only for a rule or
// backend that modifies response headers (header).
type answer struct {
	code   int
	reason string
	// lines are the header lines, each with its CRLF, without the blank line ending the head.
	lines string
	// length is the Content-Length, -1 when there is none (or chunked framing overrides it).
	length  int64
	chunked bool
	// keep says the backend connection may carry another request.
	keep bool
	// conn holds the Connection header's values: the headers they name are hop-by-hop too.
	// connNames says one of them names more than close or keep-alive.
	conn      []string
	connNames bool
}

var (
	errStatusLine = errors.New("malformed status line from backend")
	errStatusCode = errors.New("malformed status code from backend")
	errHeaderLine = errors.New("malformed header from backend")
	errLength     = errors.New("bad Content-Length from backend")
	errLengths    = errors.New("conflicting Content-Length from backend")
	errEncoding   = errors.New("unsupported Transfer-Encoding from backend")
)

// readAnswer reads a backend's response head into a, viewing it through buf (headText).
func readAnswer(br *bufio.Reader, buf *[]byte, a *answer) error {
	b, err := peekHead(br)
	if err != nil {
		return err
	}
	// Nothing of the answer's head is logged or kept past the exchange.
	head := headText(buf, b, true)
	_, _ = br.Discard(len(b))
	return a.parse(head)
}

// parse fills a from a complete response head (status line to blank line).
func (a *answer) parse(head string) error {
	line, rest, _ := nextLine(head)
	// "HTTP/1.1 200 OK": the code sits at bytes 9–11.
	if !strings.HasPrefix(line, "HTTP/1.") || len(line) < 12 || line[8] != ' ' || (len(line) > 12 && line[12] != ' ') {
		return errStatusLine
	}
	code, err := strconv.Atoi(line[9:12])
	if err != nil || code < 100 || code > 999 {
		return errStatusCode
	}
	// A CR (or other control byte) in the reason phrase could end the status line early for the
	// client; net/http's Transport refuses such a line too.
	if !httpguts.ValidHeaderFieldValue(line) {
		return errStatusLine
	}
	*a = answer{code: code, length: -1, conn: a.conn[:0], lines: rest[:len(rest)-2]}
	if len(line) > 13 {
		a.reason = line[13:]
	}
	// Lines end in CRLF (nextLine), so one CR per line means none inside a value, where a client
	// could take it for a line end; with NULs, the control characters that matter for framing.
	if strings.Count(a.lines, "\r") != strings.Count(a.lines, "\n") || strings.IndexByte(a.lines, 0) >= 0 {
		return errHeaderLine
	}
	closes, keepAlive, encodings := false, false, 0
	lengthText := ""
	for ls := a.lines; ls != ""; {
		l, rest, ok := nextLine(ls)
		if !ok {
			return errHeaderLine
		}
		ls = rest
		k, v, ok := strings.Cut(l, ":")
		v = trimOWS(v)
		if !ok || !validToken(k) {
			return errHeaderLine
		}
		switch hopKind(k) {
		case hopConnection:
			a.conn = append(a.conn, v)
			for ts := v; ts != ""; {
				var t string
				t, ts, _ = strings.Cut(ts, ",")
				switch t = trimOWS(t); {
				case foldEqual(t, "close"):
					closes = true
				case foldEqual(t, "keep-alive"):
					keepAlive = true
				case t != "":
					a.connNames = true
				}
			}
		case hopTransferEncoding:
			// Only "chunked" alone can be re-framed; anything else (gzip, chunked; a repeated
			// line) is refused as net/http's Transport does.
			encodings++
			if encodings > 1 || !foldEqual(v, "chunked") {
				return errEncoding
			}
			a.chunked = true
		case hopContentLength:
			if lengthText == "" {
				n, ok := parseLength(v)
				if !ok {
					return errLength
				}
				lengthText, a.length = v, n
			} else if v != lengthText {
				return errLengths
			}
		}
	}
	if a.chunked {
		// Chunked framing wins (RFC 9112 §6.3); never pass both on, or the client could be desynchronised.
		a.length = -1
	}
	// An HTTP/1.0 backend closes unless it says keep-alive.
	a.keep = !closes && (line[7] != '0' || keepAlive)
	return nil
}

// relayed reports whether a header line named k, of kind hk, goes on to the client. Framing
// (Content-Length, Transfer-Encoding) never does: the proxy writes its own from what it parsed, so
// that no Connection token or odd spelling can leave the client with other framing than the body.
func (a *answer) relayed(k string, hk hop) bool {
	switch hk {
	case hopOther:
	case hopTrailer:
		if !a.chunked {
			return false
		}
	default:
		return false
	}
	if a.connNames {
		for _, v := range a.conn {
			if hasToken(v, k) {
				return false
			}
		}
	}
	return true
}

// writeLines writes the header lines the client gets, verbatim, without framing (writeFraming),
// and without the backend's Server header if dropServer.
func (a *answer) writeLines(w *bufio.Writer, dropServer bool) {
	for ls := a.lines; ls != ""; {
		i := strings.IndexByte(ls, '\n') + 1 // parse saw every line end in CRLF
		l := ls[:i]
		ls = ls[i:]
		k, _, _ := strings.Cut(l, ":")
		if dropServer && len(k) == len("Server") && strings.EqualFold(k, "Server") {
			continue
		}
		if a.relayed(k, hopKind(k)) {
			w.WriteString(l)
		}
	}
}

// header builds the map of the headers the client gets into h (cleared first), for response
// header modifiers; vals is the reused backing array of its values.
func (a *answer) header(h http.Header, vals []string) []string {
	clear(h)
	vals = vals[:0]
	for ls := a.lines; ls != ""; {
		l, rest, _ := nextLine(ls)
		ls = rest
		k, v, _ := strings.Cut(l, ":")
		if !a.relayed(k, hopKind(k)) {
			continue
		}
		key := textproto.CanonicalMIMEHeaderKey(k)
		v = trimOWS(v)
		if prev, ok := h[key]; ok {
			h[key] = append(prev, v)
			continue
		}
		// Capacity-limited slices of one backing array: a repeated name or a filter copies.
		vals = append(vals, v)
		h[key] = vals[len(vals)-1 : len(vals) : len(vals)]
	}
	return vals
}

// nextLine splits off the first line of ls, which must end in CRLF: a bare LF is refused, as a
// client that splits on it would see other headers than the proxy.
func nextLine(ls string) (line, rest string, ok bool) {
	i := strings.IndexByte(ls, '\n')
	if i < 1 || ls[i-1] != '\r' {
		return "", "", false
	}
	return ls[:i-1], ls[i+1:], true
}

type hop uint8

const (
	hopOther hop = iota
	hopConnection
	hopTransferEncoding
	hopTrailer
	hopContentLength
	hopDropped // Keep-Alive, Proxy-Authenticate, Proxy-Authorization, Proxy-Connection, Te, Upgrade, HTTP2-Settings
)

// hopKind classifies a header name without allocating or canonicalising it: by length first, so
// that the usual header costs one comparison at most. Every kind but hopOther and hopContentLength
// is hop-by-hop and dropped when relaying, as httputil.ReverseProxy does (Trailer is kept with
// chunked framing).
func hopKind(k string) hop {
	eq := func(name string) bool { return foldEqual(k, name) }
	switch len(k) {
	case 2:
		if eq("Te") {
			return hopDropped
		}
	case 7:
		if eq("Trailer") {
			return hopTrailer
		}
		if eq("Upgrade") {
			return hopDropped
		}
	case 10:
		if eq("Connection") {
			return hopConnection
		}
		if eq("Keep-Alive") {
			return hopDropped
		}
	case 14:
		if eq("Content-Length") {
			return hopContentLength
		}
		if eq("HTTP2-Settings") {
			// Half of an h2c upgrade, which never passes (h2c.go).
			return hopDropped
		}
	case 16:
		if eq("Proxy-Connection") {
			return hopDropped
		}
	case 17:
		if eq("Transfer-Encoding") {
			return hopTransferEncoding
		}
	case 18:
		if eq("Proxy-Authenticate") {
			return hopDropped
		}
	case 19:
		if eq("Proxy-Authorization") {
			return hopDropped
		}
	}
	return hopOther
}

// foldEqual is strings.EqualFold for header names and tokens, which are ASCII: a byte loop, without
// the Unicode case folding that made EqualFold the largest cost of relaying a head.
func foldEqual(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if x == y {
			continue
		}
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// trimOWS trims the optional whitespace (spaces and tabs) around a header value or list element.
func trimOWS(v string) string {
	for v != "" && (v[0] == ' ' || v[0] == '\t') {
		v = v[1:]
	}
	for v != "" && (v[len(v)-1] == ' ' || v[len(v)-1] == '\t') {
		v = v[:len(v)-1]
	}
	return v
}

// parseLength parses a Content-Length value: decimal digits only, as RFC 9110 has it ("+5", " 5",
// "5,5" or an empty value are refused, where strconv would take some), at most 18 of them.
func parseLength(v string) (int64, bool) {
	if v == "" || len(v) > 18 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// hasToken reports whether a comma-separated header value lists token, case-insensitively.
func hasToken(v, token string) bool {
	for v != "" {
		var t string
		t, v, _ = strings.Cut(v, ",")
		if foldEqual(trimOWS(t), token) {
			return true
		}
	}
	return false
}
