package ir

import (
	"encoding/base64"
	"math"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// The JSON reading under hostDecoder: objects and their field names (matched as encoding/json
// matches them), literals, numbers, strings and skipped values, each checked as encoding/json checks
// them.

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

func (d *hostDecoder) str(s *string) error { return d.string(s, d.pool != nil) }

// strOwn is str for a string no other host has (a hostname): not worth looking up.
func (d *hostDecoder) strOwn(s *string) error { return d.string(s, false) }

// string decodes a string into *s, shared through the pool's intern cache if intern is set.
func (d *hostDecoder) string(s *string, intern bool) error {
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
	if intern {
		*s = d.pool.strs.get(b)
	} else {
		*s = string(b)
	}
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

func (d *hostDecoder) int64(p *int64) error { return signedInto(d, p, math.MinInt64, math.MaxInt64) }

func (d *hostDecoder) int(p *int) error { return signedInto(d, p, math.MinInt, math.MaxInt) }

func (d *hostDecoder) int32(p *int32) error { return signedInto(d, p, math.MinInt32, math.MaxInt32) }

// signedInto decodes a signed integer within [lo, hi] into *p; null leaves it alone.
func signedInto[T int | int32 | int64](d *hostDecoder, p *T, lo, hi int64) error {
	if d.null() {
		return nil
	}
	v, err := d.signed(lo, hi)
	if err != nil {
		return err
	}
	*p = T(v)
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
