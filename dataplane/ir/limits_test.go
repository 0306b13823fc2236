package ir

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDeniedEndpointCIDRsWire: an empty list (deny nothing) and an unset one (the proxy's own
// list) must stay apart through the JSON the config server sends.
func TestDeniedEndpointCIDRsWire(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []string
	}{
		{"unset", nil},
		{"empty", []string{}},
		{"set", []string{"169.254.0.0/16"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			js, err := json.Marshal(Limits{DeniedEndpointCIDRs: tc.in})
			if err != nil {
				t.Fatal(err)
			}
			var out Limits
			if err := json.Unmarshal(js, &out); err != nil {
				t.Fatal(err)
			}
			// And inside a config, through the proxy's streamed decoder.
			cfg, err := json.Marshal(Config{Gateway: "g", Limits: &Limits{DeniedEndpointCIDRs: tc.in}})
			if err != nil {
				t.Fatal(err)
			}
			dec, err := DecodeJSON(cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			if (dec.Limits.DeniedEndpointCIDRs == nil) != (tc.in == nil) {
				t.Errorf("%s: nil-ness lost through DecodeJSON (%s)", tc.name, cfg)
			}
			if (out.DeniedEndpointCIDRs == nil) != (tc.in == nil) {
				t.Errorf("%s: nil-ness lost on the wire (%s)", tc.name, js)
			}
			if diff := cmp.Diff(tc.in, out.DeniedEndpointCIDRs); diff != "" {
				t.Errorf("(-sent +received):\n%s", diff)
			}
		})
	}
}
