package ir

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
)

// DecodeJSONSkipping is DecodeJSON for a caller that already holds most of the virtual hosts: it
// hands each host's JSON (a slice of data), with the index of its listener, to skip, and leaves out
// of the config, undecoded, every host skip returns true for. Finding a host's extent is a plain
// byte scan, so a file of 100k hosts of which a few changed costs a scan of it, not a decode.
// Hosts skip takes are not checked beyond their extent: the caller holds them, so it decoded the
// same bytes before. The others decode with DecodeHost, everything else as json.Unmarshal decodes
// it. It does not fall back
// to json.Unmarshal: input of another shape than an object with a "listeners" array of objects is
// an error, after which DecodeJSON can still decode it whole.
func DecodeJSONSkipping(data []byte, tick func(), skip func(listener int, raw []byte) bool) (*Config, error) {
	d := &skipDecoder{data: data}
	cfg := &Config{}
	li := -1
	seen := false
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
				return d.array(func() error {
					raw, err := d.value()
					if err != nil {
						return err
					}
					if !skip(li, raw) {
						vh, err := DecodeHost(raw)
						if err != nil {
							return err
						}
						l.VirtualHosts = append(l.VirtualHosts, vh)
					}
					if tick != nil {
						tick()
					}
					return nil
				})
			})
		})
	})
	if err != nil {
		return nil, err
	}
	if d.space(); d.i != len(d.data) {
		return nil, errShape // trailing data
	}
	return cfg, nil
}

// errNotMine tells skipDecoder.object to decode a field with encoding/json.
var errNotMine = errors.New("not decoded by the field function")

// skipDecoder walks JSON text by hand, as far as DecodeJSONSkipping needs.
type skipDecoder struct {
	data []byte
	i    int
}

func (d *skipDecoder) space() {
	for d.i < len(d.data) {
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
	if bytes.HasPrefix(d.data[d.i:], []byte("null")) {
		d.i += 4
		return true
	}
	return false
}

// expect consumes c after optional white space.
func (d *skipDecoder) expect(c byte) bool {
	d.space()
	if d.i < len(d.data) && d.data[d.i] == c {
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
// objects and arrays end without checking what is inside: json.Unmarshal does that for what is
// decoded.
func (d *skipDecoder) value() ([]byte, error) {
	start, depth := d.i, 0
	for d.i < len(d.data) {
		switch c := d.data[d.i]; c {
		case '"':
			end := d.stringEnd(d.i + 1)
			if end < 0 {
				return nil, errShape
			}
			d.i = end
		case '{', '[':
			depth++
			d.i++
		case '}', ']':
			if depth == 0 {
				return d.scalar(start)
			}
			depth--
			d.i++
		case ',', ':', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return d.scalar(start)
			}
			d.i++
		default:
			d.i++
		}
		if depth == 0 && d.i > start && (d.data[d.i-1] == '"' || d.data[d.i-1] == '}' || d.data[d.i-1] == ']') {
			return d.data[start:d.i], nil
		}
	}
	if depth != 0 {
		return nil, errShape
	}
	return d.scalar(start)
}

// scalar returns a number or literal ending at d.i.
func (d *skipDecoder) scalar(start int) ([]byte, error) {
	if d.i == start {
		return nil, errShape
	}
	return d.data[start:d.i], nil
}

// stringEnd returns the index after the closing quote of a string whose content starts at i, or -1.
func (d *skipDecoder) stringEnd(i int) int {
	for i < len(d.data) {
		q := bytes.IndexByte(d.data[i:], '"')
		if q < 0 {
			return -1
		}
		e := bytes.IndexByte(d.data[i:i+q], '\\')
		if e < 0 {
			return i + q + 1
		}
		i += e + 2 // an escape: the next byte cannot end the string
	}
	return -1
}
