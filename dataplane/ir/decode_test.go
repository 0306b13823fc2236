package ir

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestDecodeJSON(t *testing.T) {
	full := Config{Gateway: "default/gw", Version: 7, Listeners: []Listener{
		{Name: "http", Port: 80, Protocol: ProtocolHTTP, SourceRanges: []string{"10.0.0.0/8"}, VirtualHosts: []VirtualHost{
			{Hostname: "a.example.com", Routes: []Route{{
				Name:     "r",
				Match:    Match{Path: &StringMatch{Type: MatchPrefix, Value: "/x"}, Headers: []KeyMatch{{Name: "X", Type: MatchExact, Value: "1"}}},
				Filters:  Filters{Redirect: &Redirect{Scheme: "https", StatusCode: 301}},
				Backends: []Backend{{Name: "b", Weight: 1, Endpoints: []Endpoint{{Address: "10.0.0.1", Port: 8080}}}},
				Timeouts: Timeouts{Request: time.Second},
			}}},
			{Hostname: "*.example.com", SingleLabelWildcard: true},
		}},
		{Name: "https", Port: 443, Protocol: ProtocolHTTPS, Certificates: []Certificate{{Name: "c", CertPEM: []byte("x"), KeyPEM: []byte("y")}},
			VirtualHosts: []VirtualHost{}},
		{Name: "tcp", Port: 5432, Protocol: ProtocolTCP, L4: &L4Route{Name: "db", Backends: []Backend{{Name: "db", Weight: 1}}}},
	}}
	raw, err := json.Marshal(full)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{
		string(raw),
		`{"gateway":"g","version":1}`,
		`{"gateway":"g","listeners":null}`,
		`{"gateway":"g","listeners":[{"name":"l","virtualHosts":null}]}`,
		`{"gateway":"g","listeners":[{"name":"l","virtualHosts":[],"unknown":1}]}`,
		`{"gateway":"g","listeners":[{"name":"l","VIRTUALHOSTS":[{"hostname":"h"}]}]}`,
	} {
		var want Config
		if err := json.Unmarshal([]byte(in), &want); err != nil {
			t.Fatal(err)
		}
		ticks := 0
		got, err := DecodeJSON([]byte(in), func() { ticks++ })
		if err != nil {
			t.Fatalf("DecodeJSON(%s): %v", in, err)
		}
		if diff := cmp.Diff(&want, got); diff != "" {
			t.Errorf("DecodeJSON(%s) (-json.Unmarshal +DecodeJSON):\n%s", in, diff)
		}
		n := 0
		for _, l := range want.Listeners {
			n += len(l.VirtualHosts)
		}
		if ticks != n {
			t.Errorf("DecodeJSON(%s) ticked %d times for %d virtual hosts", in, ticks, n)
		}
	}
	for _, bad := range []string{
		`{"gateway":1}`,
		`{"listeners":[{"virtualHosts":{}}]}`,
		`{"listeners":[{"virtualHosts":[{"hostname":2}]}]}`,
		`{"listeners":[{"virtualHosts":[1]}]}`,
		`[`,
	} {
		if _, err := DecodeJSON([]byte(bad), nil); err == nil {
			t.Errorf("DecodeJSON(%s) accepted what json.Unmarshal rejects", bad)
		}
	}
}

// FuzzDecodeJSON holds DecodeJSON to json.Unmarshal on any input.
func FuzzDecodeJSON(f *testing.F) {
	f.Add([]byte(`{"gateway":"g","version":3,"listeners":[{"name":"l","port":80,"protocol":"HTTP","virtualHosts":[{"hostname":"a","routes":[{"name":"r","match":{"path":{"type":"Prefix","value":"/"}}}]}]}]}`))
	f.Add([]byte(`{"listeners":[{"virtualHosts":[{"hostname":"a"}],"virtualHosts":[{"hostname":"b"}]}]}`))
	f.Add([]byte(`{"listeners":[{"virtualHosts":[{"hostname":"a"},{"hostname":1}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var want Config
		werr := json.Unmarshal(data, &want)
		got, err := DecodeJSON(data, nil)
		if (err == nil) != (werr == nil) {
			t.Fatalf("DecodeJSON(%q) error %v, json.Unmarshal error %v", data, err, werr)
		}
		if err != nil {
			return
		}
		if diff := cmp.Diff(&want, got); diff != "" {
			t.Fatalf("DecodeJSON(%q) (-json.Unmarshal +DecodeJSON):\n%s", data, diff)
		}
	})
}

// TestDecodeJSONSkipping: the hosts skip takes are left out undecoded, with their listener's index;
// the rest decodes as json.Unmarshal decodes it.
func TestDecodeJSONSkipping(t *testing.T) {
	in := `{"gateway":"g","version":2,"listeners":[` +
		`{"name":"a","virtualHosts":[{"hostname":"x"},{"hostname":"skip-y"},{"hostname":"z","routes":[{"name":"r"}]}]},` +
		`{"name":"b","port":81,"virtualHosts":[{"hostname":"skip-x"}]},` +
		`{"name":"c","virtualHosts":null},` +
		`{"name":"d","virtualHosts":[{"hostname":"w"}]}]}`
	tests := []struct {
		name        string
		skip        func(raw string) bool
		wantSkipped []string
		want        map[string][]string // the hostnames decoded, by listener
	}{
		{name: "none", skip: func(string) bool { return false },
			want: map[string][]string{"a": {"x", "skip-y", "z"}, "b": {"skip-x"}, "c": nil, "d": {"w"}}},
		{name: "some", skip: func(raw string) bool { return strings.Contains(raw, "skip-") },
			wantSkipped: []string{`0 {"hostname":"skip-y"}`, `1 {"hostname":"skip-x"}`},
			want:        map[string][]string{"a": {"x", "z"}, "b": {}, "c": nil, "d": {"w"}}},
	}
	decoders := map[string]func(tick func(), skip func(int, []byte) bool) (*Config, error){
		"bytes": func(tick func(), skip func(int, []byte) bool) (*Config, error) {
			return DecodeJSONSkipping([]byte(in), tick, skip)
		},
		"reader": func(tick func(), skip func(int, []byte) bool) (*Config, error) {
			return DecodeJSONSkippingReader(strings.NewReader(in), tick, HostFilter{Skip: skip})
		},
		"small window, one byte a read": func(tick func(), skip func(int, []byte) bool) (*Config, error) {
			return decodeSkipping(&skipDecoder{data: make([]byte, 0, 4), r: iotest.OneByteReader(strings.NewReader(in)), keep: -1}, tick, HostFilter{Skip: skip})
		},
	}
	for _, tt := range tests {
		for dname, decode := range decoders {
			t.Run(tt.name+"/"+dname, func(t *testing.T) {
				var skipped []string
				ticks := 0
				got, err := decode(func() { ticks++ }, func(l int, raw []byte) bool {
					if tt.skip(string(raw)) {
						skipped = append(skipped, strconv.Itoa(l)+" "+string(raw))
						return true
					}
					return false
				})
				if err != nil {
					t.Fatal(err)
				}
				var want Config
				if err := json.Unmarshal([]byte(in), &want); err != nil {
					t.Fatal(err)
				}
				for i := range want.Listeners {
					l := &want.Listeners[i]
					var keep []VirtualHost
					if l.VirtualHosts != nil {
						keep = []VirtualHost{}
					}
					for _, vh := range l.VirtualHosts {
						if slices.Contains(tt.want[l.Name], vh.Hostname) {
							keep = append(keep, vh)
						}
					}
					l.VirtualHosts = keep
				}
				if diff := cmp.Diff(&want, got); diff != "" {
					t.Errorf("config (-json.Unmarshal without the skipped hosts +DecodeJSONSkipping):\n%s", diff)
				}
				if diff := cmp.Diff(tt.wantSkipped, skipped); diff != "" {
					t.Errorf("skipped (-want +got):\n%s", diff)
				}
				if ticks != 5 {
					t.Errorf("%d ticks for 5 hosts", ticks)
				}
			})
		}
	}
	readErr := errors.New("disk on fire")
	for _, r := range []io.Reader{
		iotest.ErrReader(readErr),
		io.MultiReader(strings.NewReader(in), iotest.ErrReader(readErr)), // all there, yet the end is not known
		io.MultiReader(strings.NewReader(in[:len(in)/2]), iotest.ErrReader(readErr)),
	} {
		if _, err := DecodeJSONSkippingReader(r, nil, HostFilter{Skip: func(int, []byte) bool { return false }}); !errors.Is(err, readErr) {
			t.Errorf("a failing reader: error %v, want %v", err, readErr)
		}
	}
	if _, err := DecodeJSONSkipping([]byte(`{"listeners":[{"virtualHosts":{}}]}`), nil, func(int, []byte) bool { return false }); err == nil {
		t.Error("an odd shape decoded")
	}
}

// FuzzDecodeJSONSkipping holds DecodeJSONSkipping, skipping nothing, to json.Unmarshal: whatever it
// decodes, json.Unmarshal decodes the same.
func FuzzDecodeJSONSkipping(f *testing.F) {
	f.Add([]byte(`{"gateway":"g","version":3,"listeners":[{"name":"l","port":80,"protocol":"HTTP","virtualHosts":[{"hostname":"a","routes":[{"name":"r","match":{"path":{"type":"Prefix","value":"/"}}}]}]}]}`))
	f.Add([]byte(`{"listeners":[{"virtualHosts":[{"hostname":"a\"]}"}],"name":"x\\"}], "limits": {"deniedEndpointCIDRs": []}}`))
	f.Add([]byte(`{"listeners":[{"virtualHosts":[{"hostname":"a"},{"hostname":1}]}]}`))
	f.Add([]byte(` { "version" : 1 , "listeners" : [ ] } `))
	f.Fuzz(func(t *testing.T, data []byte) {
		var raws []string
		got, err := DecodeJSONSkipping(data, nil, func(l int, raw []byte) bool {
			raws = append(raws, strconv.Itoa(l)+" "+string(raw))
			return false
		})
		// Read a byte at a time through a window of 8 bytes, which slides and grows.
		var streamedRaws []string
		streamed, serr := decodeSkipping(&skipDecoder{data: make([]byte, 0, 8), r: iotest.OneByteReader(bytes.NewReader(data)), keep: -1}, nil, HostFilter{Skip: func(l int, raw []byte) bool {
			streamedRaws = append(streamedRaws, strconv.Itoa(l)+" "+string(raw))
			return false
		}})
		if (err == nil) != (serr == nil) {
			t.Fatalf("DecodeJSONSkipping(%q) error %v, read in pieces %v", data, err, serr)
		}
		if diff := cmp.Diff(raws, streamedRaws); diff != "" {
			t.Fatalf("DecodeJSONSkipping(%q) hosts (-whole +read in pieces):\n%s", data, diff)
		}
		if err != nil {
			return
		}
		if diff := cmp.Diff(got, streamed); diff != "" {
			t.Fatalf("DecodeJSONSkipping(%q) (-whole +read in pieces):\n%s", data, diff)
		}
		// Expecting every host where it is leaves each out unscanned; expecting one byte more than
		// each has leaves the decode as it was.
		for _, extra := range []int{0, 1} {
			pos := 0
			expected, err := decodeSkipping(&skipDecoder{data: make([]byte, 0, 8), r: iotest.HalfReader(bytes.NewReader(data)), keep: -1}, nil, HostFilter{
				Skip: func(int, []byte) bool { pos++; return false },
				Expect: func(l int) int {
					if pos >= len(raws) || !strings.HasPrefix(raws[pos], strconv.Itoa(l)+" ") {
						return 0
					}
					return len(raws[pos]) - len(strconv.Itoa(l)+" ") + extra
				},
				SkipExpected: func(l int, raw []byte) bool {
					if strconv.Itoa(l)+" "+string(raw) != raws[pos] {
						return false
					}
					pos++
					return true
				},
			})
			if err != nil {
				t.Fatalf("DecodeJSONSkipping(%q) expecting its hosts (+%d bytes): %v", data, extra, err)
			}
			want := got
			if extra == 0 {
				want = withoutObjectHosts(got, raws)
			}
			if diff := cmp.Diff(want, expected); diff != "" {
				t.Fatalf("DecodeJSONSkipping(%q) expecting its hosts (+%d bytes) (-want +got):\n%s", data, extra, diff)
			}
		}
		var want Config
		if err := json.Unmarshal(data, &want); err != nil {
			t.Fatalf("DecodeJSONSkipping(%q) decoded what json.Unmarshal refuses: %v", data, err)
		}
		if diff := cmp.Diff(&want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("DecodeJSONSkipping(%q) (-json.Unmarshal +DecodeJSONSkipping):\n%s", data, diff)
		}
	})
}

// withoutObjectHosts is cfg without the virtual hosts whose JSON (in raws, "listener JSON" in file
// order) is an object: those a decode expecting every host where it is leaves out.
func withoutObjectHosts(cfg *Config, raws []string) *Config {
	c := *cfg
	c.Listeners = slices.Clone(cfg.Listeners)
	for i := range c.Listeners {
		l := &c.Listeners[i]
		if l.VirtualHosts == nil {
			continue
		}
		keep := []VirtualHost{}
		j := 0
		for _, r := range raws {
			if li, raw, _ := strings.Cut(r, " "); li != strconv.Itoa(i) {
				continue
			} else if !strings.HasPrefix(raw, "{") {
				keep = append(keep, cfg.Listeners[i].VirtualHosts[j])
			}
			j++
		}
		l.VirtualHosts = keep
	}
	return &c
}
