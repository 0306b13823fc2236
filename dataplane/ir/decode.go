package ir

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
)

// DecodeJSON decodes a Config exactly as json.Unmarshal would, calling tick after each virtual host.
// A config of 100k hostnames takes seconds of CPU to decode; tick lets the caller pace that work
// (dataplane/pace) so that a proxy keeps serving on its one core meanwhile. tick may be nil.
func DecodeJSON(data []byte, tick func()) (*Config, error) {
	if cfg, err := decodeStreamed(data, tick); err == nil {
		return cfg, nil
	}
	// Anything the streamed decoder does not take — malformed input, odd shapes such as a null
	// listener — goes through json.Unmarshal, which also gives the canonical error.
	var cfg Config
	if err := json.Unmarshal(data, &cfg); err != nil {
		return nil, err
	}
	return &cfg, nil
}

var errShape = errors.New("not the shape the streamed decoder takes")

// decodeStreamed walks the config and its listeners token by token and decodes every virtual host
// on its own; every other field goes through json.Unmarshal, so it decodes the same. Each byte is
// scanned twice, as json.Unmarshal does (once to find a value's end, once to decode it).
func decodeStreamed(data []byte, tick func()) (*Config, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	cfg := &Config{}
	err := decodeObject(dec, cfg, func(key string) (bool, error) {
		// encoding/json matches keys as bytes.EqualFold does.
		if !strings.EqualFold(key, "listeners") {
			return false, nil
		}
		return true, decodeArray(dec, &cfg.Listeners, func(l *Listener) error {
			return decodeObject(dec, l, func(key string) (bool, error) {
				if !strings.EqualFold(key, "virtualHosts") {
					return false, nil
				}
				return true, decodeArray(dec, &l.VirtualHosts, func(vh *VirtualHost) error {
					if err := dec.Decode(vh); err != nil {
						return err
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
	if _, err := dec.Token(); err != io.EOF {
		return nil, errShape // trailing data
	}
	return cfg, nil
}

// decodeObject reads a JSON object into v: field decides the keys it decodes itself, the rest are
// unmarshalled into v one by one.
func decodeObject(dec *json.Decoder, v any, field func(key string) (bool, error)) error {
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return errShape
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, ok := tok.(string)
		if !ok {
			return errShape
		}
		if done, err := field(key); err != nil || done {
			if err != nil {
				return err
			}
			continue
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return err
		}
		k, err := json.Marshal(key)
		if err != nil {
			return err
		}
		obj := make([]byte, 0, len(k)+len(raw)+3)
		obj = append(append(append(append(append(obj, '{'), k...), ':'), raw...), '}')
		if err := json.Unmarshal(obj, v); err != nil {
			return err
		}
	}
	_, err := dec.Token()
	return err
}

// decodeArray reads null (a nil slice) or an array whose elements elem decodes into *s as
// json.Unmarshal does: into the elements already there, then into new zero ones.
func decodeArray[T any](dec *json.Decoder, s *[]T, elem func(*T) error) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok == nil {
		*s = nil
		return nil
	}
	if tok != json.Delim('[') {
		return errShape
	}
	out, n := *s, 0
	for ; dec.More(); n++ {
		if n < cap(out) {
			out = out[:n+1]
		} else {
			var zero T
			out = append(out[:n], zero)
		}
		if err := elem(&out[n]); err != nil {
			return err
		}
	}
	if n == 0 {
		out = []T{}
	}
	*s = out[:n]
	_, err = dec.Token()
	return err
}
