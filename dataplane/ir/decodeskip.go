package ir

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
)

// DecodeJSONSkipping is DecodeJSON for a caller that already holds most of the virtual hosts: it
// hands each host's JSON (a slice of data), with the index of its listener, to skip, and leaves out
// of the config, undecoded, every host skip returns true for. Finding a host's extent is a plain
// byte scan, so a file of 100k hosts of which a few changed costs a scan of it, not a decode.
// Hosts skip takes are not checked beyond their extent: the caller holds them, so it decoded the
// same bytes before. The others decode with DecodeHost, everything else as json.Unmarshal decodes
// it. It does not fall back to json.Unmarshal: input of another shape than an object with a
// "listeners" array of objects is an error, after which DecodeJSON can still decode it whole.
func DecodeJSONSkipping(data []byte, tick func(), skip func(listener int, raw []byte) bool) (*Config, error) {
	return decodeSkipping(&skipDecoder{data: data, keep: -1}, tick, HostFilter{Skip: skip})
}

// DecodeJSONSkippingReader is DecodeJSONSkipping reading r as it goes, so that a large file is
// never in memory whole (the raw JSON the filter gets is valid only until it returns), and
// skipping the hosts the filter expects without scanning them.
func DecodeJSONSkippingReader(r io.Reader, tick func(), f HostFilter) (*Config, error) {
	buf := make([]byte, 0, readBuffer)
	return decodeSkipping(&skipDecoder{data: buf, r: r, keep: -1}, tick, f)
}

// HostFilter says which virtual hosts DecodeJSONSkippingReader leaves out of the config.
type HostFilter struct {
	// Skip is given each host's JSON, with the index of its listener; true leaves the host out.
	Skip func(listener int, raw []byte) bool
	// Expect, if set, returns the length of the JSON the next host of the listener is expected to
	// have (0: none). If the next that many bytes are an object (start with '{', end with '}'),
	// they go to SkipExpected first: true leaves them out as that host, unscanned; false must have
	// no effect, and the host is then scanned and given to Skip. A caller that holds a host's
	// JSON (by a hash of it) can so find it again at the cost of hashing it: bytes that are a
	// whole JSON object, read where a host starts, are that host.
	Expect       func(listener int) int
	SkipExpected func(listener int, raw []byte) bool
	// Hosts, if set, is how many hosts the listener is expected to hold (a capacity, not a
	// check): 100k hosts appended one by one were ~5× their size in copies. It is taken once
	// growHosts hosts are decoded, so that a reload that decodes a few allocates for a few.
	Hosts func(listener int) int
	// Memory, if set, is what the decoded hosts' arrays are cut from, overwriting those of the
	// config the decode before into it gave (DecodeMemory).
	Memory *DecodeMemory
}

// growHosts is how many hosts a listener's slice grows to by appending before it takes the
// capacity HostFilter.Hosts gives.
const growHosts = 1024

// readBuffer is what DecodeJSONSkippingReader reads at a time; it grows for a longer value.
const readBuffer = 256 << 10

func decodeSkipping(d *skipDecoder, tick func(), f HostFilter) (*Config, error) {
	cfg := &Config{}
	hd := newReusedHostDecoder(f.Memory)
	li := -1
	seen := false
	skipped := false // whether Skip took the last host it was given
	err := d.object(cfg, func(key string) error {
		if !strings.EqualFold(key, "listeners") {
			return errNotMine
		}
		if seen {
			return errShape // twice
		}
		seen = true
		if d.null() {
			return nil
		}
		cfg.Listeners = []Listener{}
		return d.array(func() error {
			li++
			cfg.Listeners = append(cfg.Listeners, Listener{})
			l := &cfg.Listeners[li]
			seen := false
			return d.object(l, func(key string) error {
				if !strings.EqualFold(key, "virtualHosts") {
					return errNotMine
				}
				if seen {
					return errShape // twice
				}
				seen = true
				if d.null() {
					return nil
				}
				l.VirtualHosts = []VirtualHost{}
				hint := 0
				if f.Hosts != nil {
					hint = f.Hosts(li)
				}
				add := func(vh VirtualHost) {
					if len(l.VirtualHosts) == growHosts && hint > growHosts {
						l.VirtualHosts = slices.Grow(l.VirtualHosts, hint-growHosts)
					}
					l.VirtualHosts = append(l.VirtualHosts, vh)
				}
				return d.array(func() error {
					if f.Expect != nil {
						if n := f.Expect(li); n > 0 {
							if raw := d.peek(n); raw != nil && raw[0] == '{' && raw[n-1] == '}' && f.SkipExpected(li, raw) {
								d.i += n
								if tick != nil {
									tick()
								}
								return nil
							}
						}
					}
					if !skipped {
						// Decoding finds the host's extent as it goes: the bytes are read once.
						// Skip may still take the host (one in service that moved); then
						// the next is scanned first, as a run of moved hosts will be.
						if vh, n, ok := hd.decodeAt(d.data[d.i:]); ok {
							raw := d.data[d.i : d.i+n]
							d.i += n
							if skipped = f.Skip(li, raw); !skipped {
								add(vh)
							}
							if tick != nil {
								tick()
							}
							return nil
						}
					}
					raw, err := d.value()
					if err != nil {
						return err
					}
					if skipped = f.Skip(li, raw); !skipped {
						vh, err := hd.decode(raw)
						if err != nil {
							return err
						}
						add(vh)
					}
					if tick != nil {
						tick()
					}
					return nil
				})
			})
		})
	})
	if err == nil {
		if d.space(); d.i != len(d.data) {
			err = errShape // trailing data
		}
	}
	if d.rerr != nil && d.rerr != io.EOF {
		return nil, d.rerr // what was read was not the whole input
	}
	if err != nil {
		return nil, err
	}
	return cfg, nil
}

// errNotMine tells skipDecoder.object to decode a field with encoding/json.
var errNotMine = errors.New("not decoded by the field function")

// skipDecoder walks JSON text by hand, as far as DecodeJSONSkipping needs. With a reader, data
// is a window of the input that more slides and fills.
type skipDecoder struct {
	data []byte
	i    int
	r    io.Reader
	rerr error // the reader's, io.EOF at its end
	// keep is the start of the value being read, which more keeps in the window; -1 for none.
	keep int
}

// more reads more input into the window, keeping what is from d.keep (or d.i) on; false when
// there is none.
func (d *skipDecoder) more() bool {
	if d.r == nil || d.rerr != nil {
		return false
	}
	from := min(d.i, len(d.data))
	if d.keep >= 0 {
		from = min(from, d.keep)
		d.keep -= from
	}
	d.i -= from
	n := copy(d.data[:cap(d.data)], d.data[from:])
	buf := d.data[:cap(d.data)]
	if n == len(buf) { // a value longer than the window
		buf = make([]byte, 2*len(buf))
		copy(buf, d.data[:n])
	}
	kept := n
	for n == kept && d.rerr == nil {
		var m int
		m, d.rerr = d.r.Read(buf[n:])
		n += m
	}
	d.data = buf[:n]
	return n > kept
}

// peek returns the next n bytes, or nil if the input ends before.
func (d *skipDecoder) peek(n int) []byte {
	for len(d.data)-d.i < n && d.more() {
	}
	if len(d.data)-d.i < n {
		return nil
	}
	return d.data[d.i : d.i+n]
}

func (d *skipDecoder) space() {
	for d.i < len(d.data) || d.more() {
		switch d.data[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// null consumes a null literal, if that comes next.
func (d *skipDecoder) null() bool {
	d.space()
	for len(d.data)-d.i < 4 && d.more() {
	}
	if bytes.HasPrefix(d.data[d.i:], []byte("null")) {
		d.i += 4
		return true
	}
	return false
}

// expect consumes c after optional white space.
func (d *skipDecoder) expect(c byte) bool {
	d.space()
	if (d.i < len(d.data) || d.more()) && d.data[d.i] == c {
		d.i++
		return true
	}
	return false
}

// object reads an object into v: field decodes the value of the keys it takes, the others are
// unmarshalled into v, all at once at the end and in their order.
func (d *skipDecoder) object(v any, field func(key string) error) error {
	if !d.expect('{') {
		return errShape
	}
	rest := []byte{'{'}
	if !d.expect('}') {
		for {
			d.space()
			k, err := d.value()
			if err != nil || len(k) == 0 || k[0] != '"' {
				return errShape
			}
			k = bytes.Clone(k) // the window may slide before it is used
			var key string
			if err := json.Unmarshal(k, &key); err != nil {
				return err
			}
			if !d.expect(':') {
				return errShape
			}
			if err := field(key); err != errNotMine {
				if err != nil {
					return err
				}
			} else {
				d.space()
				val, err := d.value()
				if err != nil {
					return err
				}
				if len(rest) > 1 {
					rest = append(rest, ',')
				}
				rest = append(append(append(rest, k...), ':'), val...)
			}
			if d.expect('}') {
				break
			}
			if !d.expect(',') {
				return errShape
			}
		}
	}
	if len(rest) == 1 {
		return nil
	}
	return json.Unmarshal(append(rest, '}'), v)
}

// array reads an array, calling elem for each element with d at its start.
func (d *skipDecoder) array(elem func() error) error {
	if !d.expect('[') {
		return errShape
	}
	if d.expect(']') {
		return nil
	}
	for {
		d.space()
		if err := elem(); err != nil {
			return err
		}
		if d.expect(']') {
			return nil
		}
		if !d.expect(',') {
			return errShape
		}
	}
}

// value returns the extent of the value at d.i and moves past it. It finds where strings,
// objects and arrays end without checking what is inside: json.Unmarshal or DecodeHost does that
// for what is decoded. The extent is valid until the window next slides.
func (d *skipDecoder) value() ([]byte, error) {
	d.keep = d.i
	defer func() { d.keep = -1 }()
	depth := 0
	for d.i < len(d.data) || d.more() {
		switch d.data[d.i] {
		case '"':
			if !d.skipString() {
				return nil, errShape
			}
			if depth == 0 {
				return d.data[d.keep:d.i], nil
			}
		case '{', '[':
			depth++
			d.i++
		case '}', ']':
			if depth == 0 {
				return d.scalar()
			}
			depth--
			d.i++
			if depth == 0 {
				return d.data[d.keep:d.i], nil
			}
		case ',', ':', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return d.scalar()
			}
			d.i++
		default:
			d.i++
		}
	}
	if depth != 0 {
		return nil, errShape
	}
	return d.scalar()
}

// scalar returns a number or literal ending at d.i.
func (d *skipDecoder) scalar() ([]byte, error) {
	if d.i == d.keep {
		return nil, errShape
	}
	return d.data[d.keep:d.i], nil
}

// skipString moves past the string whose opening quote is at d.i; false if it does not end.
func (d *skipDecoder) skipString() bool {
	d.i++
	for {
		data, i := d.data, d.i
		for i < len(data) {
			switch data[i] {
			case '"':
				d.i = i + 1
				return true
			case '\\':
				i += 2 // the next byte cannot end the string
			default:
				i++
			}
		}
		d.i = i
		if !d.more() {
			return false
		}
	}
}
