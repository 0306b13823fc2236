package ir

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"math"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// DecodeHost decodes one virtual host's JSON as json.Unmarshal into a zero VirtualHost does:
// the same values, and an error for the same inputs. A 100k-host table swap decodes every host,
// and encoding/json's reflection costs ~25 µs a host there; this walks the JSON once by hand.
// Whatever the hand-written decoder refuses (malformed JSON, a value of the wrong type, a
// []byte given as an array of numbers, deep nesting) goes to json.Unmarshal, which decides and
// gives its own error: the fast path only ever has to be right about what it accepts
// (FuzzDecodeHost holds it to that).
func DecodeHost(data []byte) (VirtualHost, error) {
	var d hostDecoder
	return d.decode(data)
}

// decode is DecodeHost; a decoder kept for many hosts (newReusedHostDecoder) decodes the
// routes, backends and endpoints of each into slices of their exact length.
func (d *hostDecoder) decode(data []byte) (VirtualHost, error) {
	d.data, d.i, d.depth = data, 0, 0
	var vh VirtualHost
	if d.top(&vh) == nil {
		return vh, nil
	}
	vh = VirtualHost{}
	if err := json.Unmarshal(data, &vh); err != nil {
		return VirtualHost{}, err
	}
	return vh, nil
}

var (
	// errSyntax and errType only send DecodeHost to json.Unmarshal, which words the real error.
	errSyntax = errors.New("not valid JSON")
	errType   = errors.New("a JSON value of another type than its field's")
)

// maxDepth bounds the nesting the decoder follows; deeper input, which encoding/json takes up
// to 10000 levels, goes to json.Unmarshal.
const maxDepth = 200

// hostDecoder decodes JSON into a VirtualHost with encoding/json's semantics: field names
// matched exactly, else case-folded as bytes.EqualFold; unknown fields skipped (but checked);
// null leaves strings, numbers, booleans and structs alone and clears pointers and slices; a
// field given twice decodes into what the first left, slices element by element.
type hostDecoder struct {
	data  []byte
	i     int
	depth int
	// Arrays of these element types are decoded here first, when set, and then copied to a
	// slice of their length: growing a slice element by element, as encoding/json does, was a
	// third of the decoder's time at 100k hosts. None of the three can hold an array of itself
	// (a mirror's backend is no slice), so each is used by one array at a time.
	routes    *[]Route
	backends  *[]Backend
	endpoints *[]Endpoint
}

// newReusedHostDecoder returns a decoder for many hosts, one after the other.
func newReusedHostDecoder() *hostDecoder {
	return &hostDecoder{routes: new([]Route), backends: new([]Backend), endpoints: new([]Endpoint)}
}

func (d *hostDecoder) top(vh *VirtualHost) error {
	d.space()
	if err := d.virtualHost(vh); err != nil {
		return err
	}
	if d.space(); d.i != len(d.data) {
		return errSyntax
	}
	return nil
}

func (d *hostDecoder) virtualHost(vh *VirtualHost) error {
	return d.object([]string{"hostname", "singleLabelWildcard", "routes"}, func(f int) error {
		switch f {
		case 0:
			return d.str(&vh.Hostname)
		case 1:
			return d.boolean(&vh.SingleLabelWildcard)
		default:
			return exact(d, &vh.Routes, d.routes, d.route)
		}
	})
}

func (d *hostDecoder) route(r *Route) error {
	return d.object([]string{"name", "match", "filters", "backends", "timeouts", "retry"}, func(f int) error {
		switch f {
		case 0:
			return d.str(&r.Name)
		case 1:
			return d.match(&r.Match)
		case 2:
			return d.filters(&r.Filters)
		case 3:
			return exact(d, &r.Backends, d.backends, d.backend)
		case 4:
			return d.timeouts(&r.Timeouts)
		default:
			return pointer(d, &r.Retry, d.retry)
		}
	})
}

func (d *hostDecoder) match(m *Match) error {
	return d.object([]string{"path", "method", "headers", "queryParams"}, func(f int) error {
		switch f {
		case 0:
			return pointer(d, &m.Path, d.stringMatch)
		case 1:
			return d.str(&m.Method)
		case 2:
			return slice(d, &m.Headers, d.keyMatch)
		default:
			return slice(d, &m.QueryParams, d.keyMatch)
		}
	})
}

func (d *hostDecoder) stringMatch(m *StringMatch) error {
	return d.object([]string{"type", "value"}, func(f int) error {
		if f == 0 {
			return d.str((*string)(&m.Type))
		}
		return d.str(&m.Value)
	})
}

func (d *hostDecoder) keyMatch(m *KeyMatch) error {
	return d.object([]string{"name", "type", "value"}, func(f int) error {
		switch f {
		case 0:
			return d.str(&m.Name)
		case 1:
			return d.str((*string)(&m.Type))
		default:
			return d.str(&m.Value)
		}
	})
}

func (d *hostDecoder) filters(fs *Filters) error {
	return d.object([]string{"requestHeaders", "responseHeaders", "redirect", "rewrite", "mirrors", "cors"}, func(f int) error {
		switch f {
		case 0:
			return pointer(d, &fs.RequestHeaders, d.headerModifier)
		case 1:
			return pointer(d, &fs.ResponseHeaders, d.headerModifier)
		case 2:
			return pointer(d, &fs.Redirect, d.redirect)
		case 3:
			return pointer(d, &fs.Rewrite, d.rewrite)
		case 4:
			return slice(d, &fs.Mirrors, d.mirror)
		default:
			return pointer(d, &fs.CORS, d.cors)
		}
	})
}

func (d *hostDecoder) header(h *Header) error {
	return d.object([]string{"name", "value"}, func(f int) error {
		if f == 0 {
			return d.str(&h.Name)
		}
		return d.str(&h.Value)
	})
}

func (d *hostDecoder) headerModifier(m *HeaderModifier) error {
	return d.object([]string{"set", "add", "remove"}, func(f int) error {
		switch f {
		case 0:
			return slice(d, &m.Set, d.header)
		case 1:
			return slice(d, &m.Add, d.header)
		default:
			return slice(d, &m.Remove, d.str)
		}
	})
}

func (d *hostDecoder) pathModifier(m *PathModifier) error {
	return d.object([]string{"type", "value"}, func(f int) error {
		if f == 0 {
			return d.str((*string)(&m.Type))
		}
		return d.str(&m.Value)
	})
}

func (d *hostDecoder) redirect(r *Redirect) error {
	return d.object([]string{"scheme", "hostname", "port", "path", "statusCode"}, func(f int) error {
		switch f {
		case 0:
			return d.str(&r.Scheme)
		case 1:
			return d.str(&r.Hostname)
		case 2:
			return d.uint32(&r.Port)
		case 3:
			return pointer(d, &r.Path, d.pathModifier)
		default:
			return d.int(&r.StatusCode)
		}
	})
}

func (d *hostDecoder) rewrite(r *Rewrite) error {
	return d.object([]string{"hostname", "path"}, func(f int) error {
		if f == 0 {
			return d.str(&r.Hostname)
		}
		return pointer(d, &r.Path, d.pathModifier)
	})
}

func (d *hostDecoder) mirror(m *Mirror) error {
	return d.object([]string{"backend", "numerator", "denominator"}, func(f int) error {
		switch f {
		case 0:
			return d.backend(&m.Backend)
		case 1:
			return d.int32(&m.Numerator)
		default:
			return d.int32(&m.Denominator)
		}
	})
}

func (d *hostDecoder) cors(c *CORS) error {
	return d.object([]string{"allowOrigins", "allowCredentials", "allowMethods", "allowHeaders", "exposeHeaders", "maxAge"}, func(f int) error {
		switch f {
		case 0:
			return slice(d, &c.AllowOrigins, d.str)
		case 1:
			return d.boolean(&c.AllowCredentials)
		case 2:
			return slice(d, &c.AllowMethods, d.str)
		case 3:
			return slice(d, &c.AllowHeaders, d.str)
		case 4:
			return slice(d, &c.ExposeHeaders, d.str)
		default:
			return d.int32(&c.MaxAge)
		}
	})
}

func (d *hostDecoder) timeouts(t *Timeouts) error {
	return d.object([]string{"request", "backendRequest"}, func(f int) error {
		if f == 0 {
			return d.int64((*int64)(&t.Request))
		}
		return d.int64((*int64)(&t.BackendRequest))
	})
}

func (d *hostDecoder) retry(r *Retry) error {
	return d.object([]string{"attempts", "codes", "backoff"}, func(f int) error {
		switch f {
		case 0:
			return d.int(&r.Attempts)
		case 1:
			return slice(d, &r.Codes, d.int)
		default:
			return d.int64((*int64)(&r.Backoff))
		}
	})
}

func (d *hostDecoder) backend(b *Backend) error {
	return d.object([]string{"name", "weight", "invalid", "appProtocol", "endpoints", "filters", "tls"}, func(f int) error {
		switch f {
		case 0:
			return d.str(&b.Name)
		case 1:
			return d.uint32(&b.Weight)
		case 2:
			return d.boolean(&b.Invalid)
		case 3:
			return d.str((*string)(&b.AppProtocol))
		case 4:
			return exact(d, &b.Endpoints, d.endpoints, d.endpoint)
		case 5:
			return d.filters(&b.Filters)
		default:
			return pointer(d, &b.TLS, d.backendTLS)
		}
	})
}

func (d *hostDecoder) backendTLS(t *BackendTLS) error {
	return d.object([]string{"hostname", "caCertPEM", "systemRoots", "subjectAltNames"}, func(f int) error {
		switch f {
		case 0:
			return d.str(&t.Hostname)
		case 1:
			return d.bytes(&t.CACertPEM)
		case 2:
			return d.boolean(&t.SystemRoots)
		default:
			return slice(d, &t.SubjectAltNames, d.subjectAltName)
		}
	})
}

func (d *hostDecoder) subjectAltName(s *SubjectAltName) error {
	return d.object([]string{"type", "value"}, func(f int) error {
		if f == 0 {
			return d.str((*string)(&s.Type))
		}
		return d.str(&s.Value)
	})
}

func (d *hostDecoder) endpoint(e *Endpoint) error {
	return d.object([]string{"address", "port", "cluster", "weight", "zone", "node"}, func(f int) error {
		switch f {
		case 0:
			return d.str(&e.Address)
		case 1:
			return d.uint32(&e.Port)
		case 2:
			return d.str(&e.Cluster)
		case 3:
			return d.uint32(&e.Weight)
		case 4:
			return d.str(&e.Zone)
		default:
			return d.str(&e.Node)
		}
	})
}

// pointer decodes an object into *p, allocating it if nil; null sets it to nil.
func pointer[T any](d *hostDecoder, p **T, decode func(*T) error) error {
	if d.null() {
		*p = nil
		return nil
	}
	if d.i >= len(d.data) || d.data[d.i] != '{' {
		return errType
	}
	if *p == nil {
		*p = new(T)
	}
	return decode(*p)
}

// slice decodes an array into *s as encoding/json does: into the elements already there (up to
// the capacity), then into new zero ones; an empty array gives an empty slice, null a nil one.
func slice[T any](d *hostDecoder, s *[]T, decode func(*T) error) error {
	if d.null() {
		*s = nil
		return nil
	}
	if d.i >= len(d.data) || d.data[d.i] != '[' {
		return errType
	}
	if d.depth++; d.depth > maxDepth {
		return errSyntax
	}
	d.i++
	out, n := *s, 0
	if d.space(); d.next(']') {
		*s = []T{}
		d.depth--
		return nil
	}
	for {
		if n < cap(out) {
			out = out[:max(len(out), n+1)]
		} else {
			var zero T
			out = append(out[:n], zero)
		}
		d.space()
		if err := decode(&out[n]); err != nil {
			return err
		}
		n++
		if d.space(); d.next(']') {
			break
		}
		if !d.next(',') {
			return errSyntax
		}
	}
	*s = out[:n]
	d.depth--
	return nil
}

// exact is slice for an empty *s, decoding into scratch (zeroed first, as new elements would be)
// and then allocating *s at its length. Without scratch, or with elements in *s, it is slice.
func exact[T any](d *hostDecoder, s *[]T, scratch *[]T, decode func(*T) error) error {
	if scratch == nil || cap(*s) > 0 {
		return slice(d, s, decode)
	}
	tmp := (*scratch)[:cap(*scratch)]
	clear(tmp)
	tmp = tmp[:0]
	if err := slice(d, &tmp, decode); err != nil {
		return err
	}
	if cap(tmp) > cap(*scratch) {
		*scratch = tmp[:0]
	}
	if tmp == nil {
		*s = nil
		return nil
	}
	*s = append(make([]T, 0, len(tmp)), tmp...)
	return nil
}

// object decodes an object, null leaving the value alone: field decodes the value of the key
// that matches names[f], with d at the value; values of other keys are skipped.
func (d *hostDecoder) object(names []string, field func(f int) error) error {
	if d.null() {
		return nil
	}
	if !d.next('{') {
		return errType
	}
	if d.depth++; d.depth > maxDepth {
		return errSyntax
	}
	if d.space(); d.next('}') {
		d.depth--
		return nil
	}
	for {
		if d.space(); d.i >= len(d.data) || d.data[d.i] != '"' {
			return errSyntax
		}
		key, err := d.stringBytes()
		if err != nil {
			return err
		}
		if d.space(); !d.next(':') {
			return errSyntax
		}
		d.space()
		if f := fieldIndex(names, key); f >= 0 {
			err = field(f)
		} else {
			err = d.skip()
		}
		if err != nil {
			return err
		}
		if d.space(); d.next('}') {
			break
		}
		if !d.next(',') {
			return errSyntax
		}
	}
	d.depth--
	return nil
}

// fieldIndex returns the index of the name key matches, as encoding/json matches field names:
// exactly, else after case folding (names are ASCII), or -1.
func fieldIndex(names []string, key []byte) int {
	for f, name := range names {
		if string(key) == name {
			return f
		}
	}
	var arr [32]byte
	folded := appendFoldedName(arr[:0], key)
	for f, name := range names {
		if len(folded) != len(name) {
			continue
		}
		same := true
		for j := range len(name) {
			c := name[j]
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			if folded[j] != c {
				same = false
				break
			}
		}
		if same {
			return f
		}
	}
	return -1
}

// appendFoldedName is encoding/json's (fold.go): ASCII letters upper-cased, other runes mapped
// to the smallest rune of their fold set, so that "ſ" (U+017F) matches "s" and "K" (U+212A) "k".
func appendFoldedName(out, in []byte) []byte {
	for i := 0; i < len(in); {
		if c := in[i]; c < utf8.RuneSelf {
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			out = append(out, c)
			i++
			continue
		}
		r, n := utf8.DecodeRune(in[i:])
		out = utf8.AppendRune(out, foldRune(r))
		i += n
	}
	return out
}

func foldRune(r rune) rune {
	for {
		r2 := unicode.SimpleFold(r)
		if r2 <= r {
			return r2
		}
		r = r2
	}
}

func (d *hostDecoder) space() {
	for d.i < len(d.data) {
		switch d.data[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// next consumes c if it comes next.
func (d *hostDecoder) next(c byte) bool {
	if d.i < len(d.data) && d.data[d.i] == c {
		d.i++
		return true
	}
	return false
}

// null consumes a null literal if one comes next.
func (d *hostDecoder) null() bool {
	if len(d.data)-d.i >= 4 && string(d.data[d.i:d.i+4]) == "null" {
		d.i += 4
		return true
	}
	return false
}

func (d *hostDecoder) literal(lit string) bool {
	if len(d.data)-d.i >= len(lit) && string(d.data[d.i:d.i+len(lit)]) == lit {
		d.i += len(lit)
		return true
	}
	return false
}

func (d *hostDecoder) str(s *string) error {
	if d.null() {
		return nil
	}
	if d.i >= len(d.data) || d.data[d.i] != '"' {
		return errType
	}
	b, err := d.stringBytes()
	if err != nil {
		return err
	}
	*s = string(b)
	return nil
}

// bytes decodes base64 as encoding/json does (StdEncoding, which skips \r and \n).
func (d *hostDecoder) bytes(p *[]byte) error {
	if d.null() {
		*p = nil
		return nil
	}
	if d.i >= len(d.data) || d.data[d.i] != '"' {
		return errType // an array of numbers too: json.Unmarshal takes that
	}
	s, err := d.stringBytes()
	if err != nil {
		return err
	}
	b := make([]byte, base64.StdEncoding.DecodedLen(len(s)))
	n, err := base64.StdEncoding.Decode(b, s)
	if err != nil {
		return errType
	}
	*p = b[:n]
	return nil
}

func (d *hostDecoder) boolean(b *bool) error {
	switch {
	case d.literal("true"):
		*b = true
	case d.literal("false"):
		*b = false
	case d.null():
	default:
		return errType
	}
	return nil
}

func (d *hostDecoder) uint32(p *uint32) error {
	if d.null() {
		return nil
	}
	neg, u, err := d.integer()
	if err != nil {
		return err
	}
	if neg || u > math.MaxUint32 { // strconv.ParseUint refuses "-0" too
		return errType
	}
	*p = uint32(u)
	return nil
}

func (d *hostDecoder) int64(p *int64) error {
	if d.null() {
		return nil
	}
	v, err := d.signed(math.MinInt64, math.MaxInt64)
	if err != nil {
		return err
	}
	*p = v
	return nil
}

func (d *hostDecoder) int(p *int) error {
	if d.null() {
		return nil
	}
	v, err := d.signed(math.MinInt, math.MaxInt)
	if err != nil {
		return err
	}
	*p = int(v)
	return nil
}

func (d *hostDecoder) int32(p *int32) error {
	if d.null() {
		return nil
	}
	v, err := d.signed(math.MinInt32, math.MaxInt32)
	if err != nil {
		return err
	}
	*p = int32(v)
	return nil
}

func (d *hostDecoder) signed(lo, hi int64) (int64, error) {
	neg, u, err := d.integer()
	if err != nil {
		return 0, err
	}
	var v int64
	switch {
	case !neg && u <= math.MaxInt64:
		v = int64(u)
	case neg && u <= 1<<63:
		v = -int64(u) // 1<<63 converts to MinInt64, which negates to itself
	default:
		return 0, errType
	}
	if v < lo || v > hi {
		return 0, errType
	}
	return v, nil
}

// integer reads a JSON number that is an integer: digits, no fraction or exponent (which
// encoding/json refuses for integer fields). Overflowing uint64 is an error.
func (d *hostDecoder) integer() (neg bool, u uint64, err error) {
	i := d.i
	if i < len(d.data) && d.data[i] == '-' {
		neg = true
		i++
	}
	switch {
	case i >= len(d.data):
		return false, 0, errType
	case d.data[i] == '0':
		i++
	case '1' <= d.data[i] && d.data[i] <= '9':
		for ; i < len(d.data) && '0' <= d.data[i] && d.data[i] <= '9'; i++ {
			if u > (math.MaxUint64-9)/10 {
				return false, 0, errType // or close to it: json.Unmarshal decides
			}
			u = u*10 + uint64(d.data[i]-'0')
		}
	default:
		return false, 0, errType
	}
	if i < len(d.data) {
		switch d.data[i] {
		case '.', 'e', 'E':
			return false, 0, errType
		}
	}
	d.i = i
	return neg, u, nil
}

// stringBytes reads the string at d.i (its opening quote) and returns its content unquoted as
// encoding/json unquotes it: escapes decoded, invalid UTF-8 and lone surrogates replaced by
// U+FFFD. Without escapes or non-ASCII bytes the content is a slice of the input.
func (d *hostDecoder) stringBytes() ([]byte, error) {
	start := d.i + 1
	i := start
	for i < len(d.data) && d.data[i] >= ' ' && d.data[i] != '"' && d.data[i] != '\\' && d.data[i] < utf8.RuneSelf {
		i++
	}
	if i < len(d.data) && d.data[i] == '"' {
		d.i = i + 1
		return d.data[start:i], nil
	}
	simple := true
	for ; i < len(d.data); i++ {
		switch c := d.data[i]; {
		case c == '"':
			d.i = i + 1
			if simple {
				return d.data[start:i], nil
			}
			return unquote(d.data[start:i]), nil
		case c == '\\':
			simple = false
			if i++; i >= len(d.data) {
				return nil, errSyntax
			}
			switch d.data[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(d.data) {
					return nil, errSyntax
				}
				for _, h := range d.data[i+1 : i+5] {
					if !isHex(h) {
						return nil, errSyntax
					}
				}
				i += 4
			default:
				return nil, errSyntax
			}
		case c < ' ':
			return nil, errSyntax
		case c >= utf8.RuneSelf:
			simple = false
		}
	}
	return nil, errSyntax
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// unquote is encoding/json's unquoteBytes for content whose escapes stringBytes checked.
func unquote(s []byte) []byte {
	b := make([]byte, 0, len(s)+utf8.UTFMax)
	for r := 0; r < len(s); {
		switch c := s[r]; {
		case c == '\\':
			r++
			switch s[r] {
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				rr := hex4(s[r+1:])
				r += 5
				if utf16.IsSurrogate(rr) {
					if r+6 <= len(s) && s[r] == '\\' && s[r+1] == 'u' {
						if dec := utf16.DecodeRune(rr, hex4(s[r+2:])); dec != unicode.ReplacementChar {
							b = utf8.AppendRune(b, dec)
							r += 6
							continue
						}
					}
					rr = unicode.ReplacementChar
				}
				b = utf8.AppendRune(b, rr)
				continue
			default: // '"', '\\', '/'
				b = append(b, s[r])
			}
			r++
		case c < utf8.RuneSelf:
			b = append(b, c)
			r++
		default:
			rr, size := utf8.DecodeRune(s[r:])
			r += size
			b = utf8.AppendRune(b, rr)
		}
	}
	return b
}

// hex4 decodes the four hex digits stringBytes checked.
func hex4(s []byte) rune {
	var r rune
	for _, c := range s[:4] {
		switch {
		case c <= '9':
			c -= '0'
		case c <= 'F':
			c -= 'A' - 10
		default:
			c -= 'a' - 10
		}
		r = r*16 + rune(c)
	}
	return r
}

// skip moves past the value at d.i, checking it is valid JSON.
func (d *hostDecoder) skip() error {
	if d.i >= len(d.data) {
		return errSyntax
	}
	switch d.data[d.i] {
	case '{':
		d.i++
		if d.depth++; d.depth > maxDepth {
			return errSyntax
		}
		if d.space(); !d.next('}') {
			for {
				if d.space(); d.i >= len(d.data) || d.data[d.i] != '"' {
					return errSyntax
				}
				if _, err := d.stringBytes(); err != nil {
					return err
				}
				if d.space(); !d.next(':') {
					return errSyntax
				}
				d.space()
				if err := d.skip(); err != nil {
					return err
				}
				if d.space(); d.next('}') {
					break
				}
				if !d.next(',') {
					return errSyntax
				}
			}
		}
		d.depth--
	case '[':
		d.i++
		if d.depth++; d.depth > maxDepth {
			return errSyntax
		}
		if d.space(); !d.next(']') {
			for {
				d.space()
				if err := d.skip(); err != nil {
					return err
				}
				if d.space(); d.next(']') {
					break
				}
				if !d.next(',') {
					return errSyntax
				}
			}
		}
		d.depth--
	case '"':
		_, err := d.stringBytes()
		return err
	case 't':
		if !d.literal("true") {
			return errSyntax
		}
	case 'f':
		if !d.literal("false") {
			return errSyntax
		}
	case 'n':
		if !d.null() {
			return errSyntax
		}
	default:
		return d.skipNumber()
	}
	return nil
}

// skipNumber moves past a number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (d *hostDecoder) skipNumber() error {
	i := d.i
	digits := func() bool {
		start := i
		for i < len(d.data) && '0' <= d.data[i] && d.data[i] <= '9' {
			i++
		}
		return i > start
	}
	if i < len(d.data) && d.data[i] == '-' {
		i++
	}
	switch {
	case i >= len(d.data):
		return errSyntax
	case d.data[i] == '0':
		i++
	case '1' <= d.data[i] && d.data[i] <= '9':
		digits()
	default:
		return errSyntax
	}
	if i < len(d.data) && d.data[i] == '.' {
		i++
		if !digits() {
			return errSyntax
		}
	}
	if i < len(d.data) && (d.data[i] == 'e' || d.data[i] == 'E') {
		i++
		if i < len(d.data) && (d.data[i] == '+' || d.data[i] == '-') {
			i++
		}
		if !digits() {
			return errSyntax
		}
	}
	d.i = i
	return nil
}
