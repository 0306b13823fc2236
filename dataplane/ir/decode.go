package ir

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// DecodeJSON decodes a Config exactly as json.Unmarshal would, calling tick after each virtual host.
// A config of 100k hostnames takes seconds of CPU to decode; tick lets the caller pace that work
// (dataplane/pace) so that a proxy keeps serving on its one core meanwhile. tick may be nil.
func DecodeJSON(data []byte, tick func()) (*Config, error) {
	// The virtual hosts, nearly all of a large config, are left raw by the first pass (the outer
	// field hides the embedded one) and decoded one by one by the second.
	type listener struct {
		Listener
		VirtualHosts json.RawMessage `json:"virtualHosts,omitempty"`
	}
	var outer struct {
		Config
		Listeners []listener `json:"listeners,omitempty"`
	}
	if err := json.Unmarshal(data, &outer); err != nil {
		return nil, err
	}
	cfg := outer.Config
	cfg.Listeners = nil
	if outer.Listeners != nil {
		cfg.Listeners = make([]Listener, len(outer.Listeners))
	}
	for i := range outer.Listeners {
		l := &outer.Listeners[i]
		cfg.Listeners[i] = l.Listener
		vhs, err := decodeVirtualHosts(l.VirtualHosts, tick)
		if err != nil {
			return nil, fmt.Errorf("listener %q: %w", l.Name, err)
		}
		cfg.Listeners[i].VirtualHosts = vhs
	}
	return &cfg, nil
}

func decodeVirtualHosts(raw json.RawMessage, tick func()) ([]VirtualHost, error) {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		// What json.Unmarshal says about a non-array.
		var vhs []VirtualHost
		return nil, json.Unmarshal(raw, &vhs)
	}
	vhs := []VirtualHost{}
	for dec.More() {
		vhs = append(vhs, VirtualHost{})
		if err := dec.Decode(&vhs[len(vhs)-1]); err != nil {
			return nil, err
		}
		if tick != nil {
			tick()
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	return vhs, nil
}
