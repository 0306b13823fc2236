package ir

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
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
