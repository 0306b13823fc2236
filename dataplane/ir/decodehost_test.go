package ir

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// decodeFast is the hand-written decoder alone, without DecodeHost's fallback to json.Unmarshal.
func decodeFast(data []byte) (VirtualHost, error) {
	var vh VirtualHost
	d := hostDecoder{data: data}
	err := d.top(&vh)
	return vh, err
}

// decodeReused decodes data with a decoder for many hosts that decoded a host with every field
// set, and a host with more routes, backends and endpoints than most, before: what those left in
// its scratch slices must not show. Its arrays are cut from reusedMemory, which every call before
// (the fuzzer's inputs included) left with fields set.
func decodeReused(t testing.TB, data []byte) (VirtualHost, error) {
	reusedMemory.Lock()
	defer reusedMemory.Unlock()
	if reusedMemory.filled == nil {
		reusedMemory.filled = filledHost(t)
	}
	warm := [][]byte{reusedMemory.filled, []byte(`{"routes":[{"name":"a","backends":[{"name":"x","endpoints":[{"address":"e1"},{"address":"e2"},{"address":"e3"}]},{"name":"y"}]},{"name":"b"},{"name":"c"},{"name":"d"},{"name":"e"}]}`)}
	// A decode before into the same memory leaves every field of its chunks set: the decoder
	// below cuts its arrays from them, and must see none of it.
	before := newReusedHostDecoder(&reusedMemory.mem)
	for _, h := range warm {
		if _, err := before.decode(h); err != nil {
			t.Fatal(err)
		}
	}
	d := newReusedHostDecoder(&reusedMemory.mem)
	for _, h := range warm {
		if _, err := d.decode(h); err != nil {
			t.Fatal(err)
		}
	}
	first, err := d.decode(data)
	// Again, now that its routes are the last the decoder saw (sameRoutes).
	again, aerr := d.decode(data)
	if (err == nil) != (aerr == nil) {
		t.Fatalf("reused decoder on %q: error %v, and %v the second time", data, err, aerr)
	}
	if diff := cmp.Diff(first, again); diff != "" {
		t.Fatalf("reused decoder on %q, again (-first +second):\n%s", data, diff)
	}
	// And once more with its routes one by one the last the decoder saw at their places (recent).
	d.pool.sameRoutes, d.pool.sameJSON = nil, nil
	third, terr := d.decode(data)
	if (err == nil) != (terr == nil) {
		t.Fatalf("reused decoder on %q: error %v, and %v the third time", data, err, terr)
	}
	if diff := cmp.Diff(first, third); diff != "" {
		t.Fatalf("reused decoder on %q, a third time (-first +third):\n%s", data, diff)
	}
	return first, err
}

// filledHost is a VirtualHost with every field set (see fill), as JSON.
func filledHost(t testing.TB) []byte {
	var vh VirtualHost
	fill(reflect.ValueOf(&vh).Elem(), map[reflect.Type]bool{})
	raw, err := json.Marshal(vh)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// reusedMemory is the memory decodeReused decodes into, from call to call: rebuilding it dirty
// for every call made the fuzzer's runs (and its minimizing) three times slower.
var reusedMemory struct {
	sync.Mutex
	mem    DecodeMemory
	filled []byte
}

// genconfigHosts are the virtual hosts of testdata/genconfig.json, the dataplane benchmark's
// shape (tests/bench/dataplane/genconfig.py, CHANGE_HOSTS=1), as the file holds them.
func genconfigHosts(t testing.TB) [][]byte {
	file, err := os.ReadFile(filepath.Join("testdata", "genconfig.json"))
	if err != nil {
		t.Fatal(err)
	}
	var hosts [][]byte
	if _, err := DecodeJSONSkipping(file, nil, func(_ int, raw []byte) bool {
		hosts = append(hosts, raw)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if len(hosts) == 0 {
		t.Fatal("no hosts in testdata/genconfig.json")
	}
	return hosts
}

// TestReusedDecoderSharesRoutes checks that hosts with the same routes JSON share one decoded
// slice, and that nothing a later host holds changes an earlier one's: "routes" given twice
// decodes into the routes the first gave, which may be shared.
func TestReusedDecoderSharesRoutes(t *testing.T) {
	routes := `[{"name":"r","match":{"path":{"type":"Exact","value":"/"}},"backends":[{"name":"b","weight":1}]}]`
	hosts := []string{
		`{"hostname":"a","routes":` + routes + `}`,
		`{"hostname":"b","routes":` + routes + `}`,
		`{"hostname":"c","routes":` + routes + `,"routes":[{"match":{"path":{"value":"/x"}},"backends":[{"weight":7}]}]}`,
		`{"hostname":"d","routes":` + routes + `}`,
	}
	d := newReusedHostDecoder(nil)
	var got []VirtualHost
	for _, h := range hosts {
		vh, err := d.decode([]byte(h))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, vh)
	}
	for i, h := range hosts {
		var want VirtualHost
		if err := json.Unmarshal([]byte(h), &want); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got[i]); diff != "" {
			t.Errorf("host %d (-json.Unmarshal +reused decoder):\n%s", i, diff)
		}
	}
	if &got[0].Routes[0] != &got[1].Routes[0] || &got[0].Routes[0] != &got[3].Routes[0] {
		t.Error("hosts a, b and d do not share their routes")
	}
}

// TestReusedDecoderSharesBackends checks that routes with the same backends JSON share one
// decoded slice, across routes and hosts, and that a route giving "backends" twice changes no
// other route's.
func TestReusedDecoderSharesBackends(t *testing.T) {
	be := `[{"name":"b","weight":1,"endpoints":[{"address":"10.0.0.1","port":80}]}]`
	route := func(path string) string {
		return `{"name":"r","match":{"path":{"type":"Exact","value":"` + path + `"}},"backends":` + be + `}`
	}
	hosts := []string{
		`{"hostname":"a","routes":[` + route("/a1") + `,` + route("/a2") + `]}`,
		`{"hostname":"b","routes":[` + route("/b") + `,{"name":"r","backends":` + be + `,"backends":[{"weight":7,"endpoints":[{"port":81}]}]}]}`,
		`{"hostname":"c","routes":[` + route("/c") + `]}`,
	}
	d := newReusedHostDecoder(nil)
	var got []VirtualHost
	for _, h := range hosts {
		vh, err := d.decode([]byte(h))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, vh)
	}
	for i, h := range hosts {
		var want VirtualHost
		if err := json.Unmarshal([]byte(h), &want); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got[i]); diff != "" {
			t.Errorf("host %d (-json.Unmarshal +reused decoder):\n%s", i, diff)
		}
	}
	// Host b, which gives "backends" twice, is json.Unmarshal's: only a's and c's routes share.
	first := &got[0].Routes[0].Backends[0]
	for _, b := range []*Backend{&got[0].Routes[1].Backends[0], &got[2].Routes[0].Backends[0]} {
		if b != first {
			t.Error("routes with the same backends JSON do not share their backends")
		}
	}
}

// TestReusedDecoderRepeatsRoutes checks that a route whose JSON is the one of the route at its
// place in the host before gets that route's value (sharing its match), and that every host
// decodes as json.Unmarshal decodes it.
func TestReusedDecoderRepeatsRoutes(t *testing.T) {
	route := func(name, path string) string {
		return `{"name":"` + name + `","match":{"path":{"type":"Prefix","value":"` + path + `"}},"backends":[{"name":"b","weight":1}]}`
	}
	hosts := []string{
		`{"hostname":"a","routes":[` + route("health", "/healthz") + `,` + route("api", "/a/api") + `,` + route("root", "/") + `]}`,
		`{"hostname":"b","routes":[` + route("health", "/healthz") + `,` + route("api", "/b/api") + `,` + route("root", "/") + `]}`,
		// The same routes at other places, and one given twice at the first.
		`{"hostname":"c","routes":[` + route("root", "/") + `,` + route("health", "/healthz") + `]}`,
		`{"hostname":"d","routes":[{"name":"root","name":"x"},` + route("health", "/healthz") + `]}`,
		`{"hostname":"e","routes":[{"name":"x"},` + route("health", "/healthz") + `,` + route("api", "/e/api") + `]}`,
	}
	d := newReusedHostDecoder(nil)
	var got []VirtualHost
	for _, h := range hosts {
		vh, err := d.decode([]byte(h))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, vh)
	}
	for i, h := range hosts {
		var want VirtualHost
		if err := json.Unmarshal([]byte(h), &want); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got[i]); diff != "" {
			t.Errorf("host %d (-json.Unmarshal +reused decoder):\n%s", i, diff)
		}
	}
	if got[0].Routes[0].Match.Path != got[1].Routes[0].Match.Path || got[0].Routes[2].Match.Path != got[1].Routes[2].Match.Path {
		t.Error("hosts a and b do not share their first and last routes")
	}
	if got[3].Routes[1].Match.Path != got[4].Routes[1].Match.Path {
		t.Error("hosts d and e do not share their second route")
	}
}

// TestDecodeHost holds DecodeHost to json.Unmarshal on inputs chosen for the corners of
// encoding/json's semantics, and checks which of them the hand-written decoder takes itself
// (fast) rather than handing them to json.Unmarshal.
func TestDecodeHost(t *testing.T) {
	tests := []struct {
		name string
		in   string
		fast bool // decoded without json.Unmarshal
	}{
		{name: "every field", in: string(filledHost(t)), fast: true},
		{name: "genconfig", in: string(genconfigHosts(t)[0]), fast: true},
		{name: "empty object", in: `{}`, fast: true},
		{name: "null", in: ` null `, fast: true},
		{name: "white space", in: " \t\r\n{ \"hostname\" :\n\"a\" , \"routes\" : [ ] }\n", fast: true},
		{name: "case-folded keys", in: `{"HOSTNAME":"a","Routes":[{"NaMe":"r","match":{"PATH":{"TYPE":"Exact","value":"/"}}}]}`, fast: true},
		{name: "unicode fold: long s", in: `{"hoſtname":"a","routes":[{"name":"r","match":{"path":{"type":"Exact","value":"/"}},"timeouts":{"request":1}}],"ſingleLabelWildcard":true}`, fast: true},
		{name: "Kelvin sign", in: "{\"routes\":[{\"timeouts\":{\"bac\u212AendRequest\":5,\"bac\u212Aend\":1}}]}", fast: true},
		{name: "escaped key", in: `{"host\u006eame":"a"}`, fast: true},
		{name: "unknown fields of every kind", in: `{"x":{"a":[1,-2.5e+3,true,false,null,"s\n"],"b":{}},"hostname":"a","y":[],"z":0}`, fast: true},
		{name: "duplicate fields merge", in: `{"routes":[{"name":"a","backends":[{"name":"x","weight":2}]},{"name":"b"}],"routes":[{"backends":[{"weight":3}]}],"routes":[{},{}]}`, fast: true},
		{name: "duplicate pointer merges", in: `{"routes":[{"match":{"path":{"type":"Exact"}}},{"match":{"path":{"value":"/"}}}],"routes":[{"match":{"path":{"value":"/x"}}},{"match":{"path":null}}]}`, fast: true},
		{name: "nulls", in: `{"hostname":null,"singleLabelWildcard":null,"routes":[{"name":null,"match":null,"filters":null,"backends":null,"timeouts":null,"retry":null}]}`, fast: true},
		{name: "null after a value", in: `{"hostname":"a","hostname":null,"routes":[{"retry":{"attempts":1},"retry":null,"backends":[{}],"backends":null}]}`, fast: true},
		{name: "empty arrays", in: `{"routes":[{"backends":[],"match":{"headers":[]}}]}`, fast: true},
		{name: "escapes", in: `{"hostname":"a\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00\u0000"}`, fast: true},
		{name: "lone surrogates", in: `{"hostname":"\ud800x\udc00\ud800\u0041\ud83d"}`, fast: true},
		{name: "invalid UTF-8", in: "{\"hostname\":\"a\xffb\xc3\"}", fast: true},
		{name: "valid UTF-8", in: `{"hostname":"é☃😀"}`, fast: true},
		{name: "integer limits", in: `{"routes":[{"timeouts":{"request":-9223372036854775808,"backendRequest":9223372036854775807},"retry":{"attempts":-0,"codes":[0,500,-1]},"filters":{"mirrors":[{"numerator":2147483647,"denominator":-2147483648,"backend":{"weight":4294967295,"endpoints":[{"port":0}]}}]}}]}`, fast: true},
		{name: "base64", in: `{"routes":[{"backends":[{"tls":{"caCertPEM":"aGVs\r\nbG8=","subjectAltNames":[{"type":"URI","value":"u"}]}},{"tls":{"caCertPEM":""}},{"tls":{"caCertPEM":null}}]}]}`, fast: true},
		{name: "filters", in: `{"routes":[{"filters":{"requestHeaders":{"set":[{"name":"a","value":"b"}],"add":[],"remove":["c"]},"responseHeaders":{},"redirect":{"scheme":"https","hostname":"h","port":443,"path":{"type":"ReplaceFullPath","value":"/"},"statusCode":301},"rewrite":{"hostname":"h","path":null},"cors":{"allowOrigins":["*"],"allowCredentials":true,"allowMethods":["GET"],"allowHeaders":["x"],"exposeHeaders":["y"],"maxAge":5}}}]}`, fast: true},

		// Refused by the hand-written decoder: json.Unmarshal decides.
		{name: "bytes as an array", in: `{"routes":[{"backends":[{"tls":{"caCertPEM":[104,105]}}]}]}`},
		{name: "deep unknown value", in: `{"x":` + strings.Repeat("[", 300) + strings.Repeat("]", 300) + `}`},
		{name: "uint32 overflow", in: `{"routes":[{"backends":[{"weight":4294967296}]}]}`},
		{name: "int32 overflow", in: `{"routes":[{"filters":{"cors":{"maxAge":2147483648}}}]}`},
		{name: "int64 overflow", in: `{"routes":[{"timeouts":{"request":9223372036854775808}}]}`},
		{name: "negative uint", in: `{"routes":[{"backends":[{"weight":-1}]}]}`},
		{name: "negative zero uint", in: `{"routes":[{"backends":[{"weight":-0}]}]}`},
		{name: "fraction", in: `{"routes":[{"backends":[{"weight":1.0}]}]}`},
		{name: "exponent", in: `{"routes":[{"backends":[{"weight":1e2}]}]}`},
		{name: "leading zero", in: `{"routes":[{"backends":[{"weight":01}]}]}`},
		{name: "string for a number", in: `{"routes":[{"backends":[{"weight":"1"}]}]}`},
		{name: "number for a string", in: `{"hostname":1}`},
		{name: "object for a slice", in: `{"routes":{}}`},
		{name: "array for a struct", in: `{"routes":[{"match":[]}]}`},
		{name: "bad base64", in: `{"routes":[{"backends":[{"tls":{"caCertPEM":"!"}}]}]}`},
		{name: "bad escape", in: `{"hostname":"\x"}`},
		{name: "short unicode escape", in: `{"hostname":"\u12"}`},
		{name: "control character", in: "{\"hostname\":\"a\tb\"}"},
		{name: "bad literal in an unknown field", in: `{"x":nul}`},
		{name: "trailing comma", in: `{"hostname":"a",}`},
		{name: "trailing data", in: `{"hostname":"a"} {}`},
		{name: "unterminated", in: `{"hostname":"a"`},
		{name: "empty", in: ``},
		{name: "array", in: `[]`},
		{name: "non-string key", in: `{1:2}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var want VirtualHost
			werr := json.Unmarshal([]byte(tt.in), &want)
			got, err := DecodeHost([]byte(tt.in))
			if (err == nil) != (werr == nil) {
				t.Fatalf("DecodeHost error %v, json.Unmarshal error %v", err, werr)
			}
			if err != nil {
				if err.Error() != werr.Error() {
					t.Errorf("DecodeHost error %q, json.Unmarshal's %q", err, werr)
				}
				want = VirtualHost{}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-json.Unmarshal +DecodeHost):\n%s", diff)
			}
			reused, rerr := decodeReused(t, []byte(tt.in))
			if (rerr == nil) != (werr == nil) {
				t.Fatalf("reused decoder error %v, json.Unmarshal error %v", rerr, werr)
			}
			if diff := cmp.Diff(want, reused); diff != "" {
				t.Errorf("(-json.Unmarshal +reused decoder):\n%s", diff)
			}
			fast, ferr := decodeFast([]byte(tt.in))
			if (ferr == nil) != tt.fast {
				t.Fatalf("hand-written decoder error %v, want it to decode: %v", ferr, tt.fast)
			}
			if ferr == nil {
				if diff := cmp.Diff(want, fast); diff != "" {
					t.Errorf("(-json.Unmarshal +hand-written decoder):\n%s", diff)
				}
			}
		})
	}
}

// TestDecodeHostCoversEveryField: a host with every field set, and the same with each of its
// scalar fields changed in turn, decode without json.Unmarshal and as json.Unmarshal decodes them,
// so a field added to the IR without a case in the decoder fails here.
func TestDecodeHostCoversEveryField(t *testing.T) {
	mk := func() *VirtualHost {
		var vh VirtualHost
		fill(reflect.ValueOf(&vh).Elem(), map[reflect.Type]bool{})
		return &vh
	}
	n := 0
	leaves(reflect.ValueOf(mk()).Elem(), "VirtualHost", func(path string, _ func()) {
		n++
		vh := mk()
		i := 0
		leaves(reflect.ValueOf(vh).Elem(), "VirtualHost", func(_ string, change func()) {
			if i++; i == n {
				change()
			}
		})
		raw, err := json.Marshal(vh)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeFast(raw)
		if err != nil {
			t.Fatalf("%s changed: %v", path, err)
		}
		var want VirtualHost
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s changed (-json.Unmarshal +hand-written decoder):\n%s", path, diff)
		}
	})
	if n < 50 {
		t.Errorf("only %d fields walked", n)
	}
	// Every json name of every type under VirtualHost appears in the decoder's JSON output of a
	// filled host: json.Marshal wrote them, so a name the decoder skips would lose its value above.
	raw := string(filledHost(t))
	for _, name := range jsonNames(reflect.TypeFor[VirtualHost](), map[reflect.Type]bool{}) {
		if !strings.Contains(raw, strconv.Quote(name)+":") {
			t.Errorf("field %q is not in a filled host's JSON: fill misses it", name)
		}
	}
}

// jsonNames lists the JSON field names of t and the struct types under it.
func jsonNames(t reflect.Type, seen map[reflect.Type]bool) []string {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice:
		return jsonNames(t.Elem(), seen)
	case reflect.Struct:
	default:
		return nil
	}
	if seen[t] {
		return nil
	}
	seen[t] = true
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		names = append(names, strings.Split(f.Tag.Get("json"), ",")[0])
		names = append(names, jsonNames(f.Type, seen)...)
	}
	return names
}

// FuzzDecodeHost holds DecodeHost, and the hand-written decoder alone, to json.Unmarshal: the same
// error or none, the same value. Seeds: the benchmark's hosts, a host with every field set and
// the cases of TestDecodeHost's kind.
func FuzzDecodeHost(f *testing.F) {
	for _, h := range genconfigHosts(f) {
		f.Add(h)
	}
	f.Add(filledHost(f))
	f.Add([]byte(`{"HOSTNAME":"a","routes":[{"name":"r","match":{"path":{"type":"Exact","value":"/"}}}],"routes":[{}]}`))
	f.Add([]byte(`{"hoſtname":"\ud800x\u00e9","routes":[{"retry":{"attempts":1,"codes":[500]},"retry":null,"timeouts":{"request":-1}}]}`))
	f.Add([]byte(`{"routes":[{"backends":[{"tls":{"caCertPEM":"aGVs\nbG8=","systemRoots":true},"weight":4294967295}]}],"x":[1.5e3,{"y":null}]}`))
	f.Add([]byte(`{"routes":[{"filters":{"redirect":{"port":443,"path":{"type":"ReplacePrefixMatch","value":"/"},"statusCode":302},"cors":{"maxAge":-2147483648}}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var want VirtualHost
		werr := json.Unmarshal(data, &want)
		got, err := DecodeHost(data)
		if (err == nil) != (werr == nil) {
			t.Fatalf("DecodeHost(%q) error %v, json.Unmarshal error %v", data, err, werr)
		}
		reused, rerr := decodeReused(t, data)
		if (rerr == nil) != (werr == nil) {
			t.Fatalf("reused decoder on %q: error %v, json.Unmarshal error %v", data, rerr, werr)
		}
		fast, ferr := decodeFast(data)
		if ferr == nil && werr != nil {
			t.Fatalf("the hand-written decoder took %q, which json.Unmarshal refuses: %v", data, werr)
		}
		// decodeAt, as the file loader calls it: past white space, on the host and what follows
		// it in the file.
		data = bytes.TrimLeft(data, " \t\r\n")
		at, n, ok := newReusedHostDecoder(nil).decodeAt(append(data[:len(data):len(data)], ",{}]"...))
		if ok {
			var whole VirtualHost
			if err := json.Unmarshal(data[:n], &whole); err != nil {
				t.Fatalf("decodeAt took %q of %q, which json.Unmarshal refuses: %v", data[:n], data, err)
			}
			if diff := cmp.Diff(whole, at); diff != "" {
				t.Fatalf("decodeAt on %q (-json.Unmarshal +it):\n%s", data[:n], diff)
			}
		}
		// A reused decoder's fast path takes less than decodeFast's (no "routes" twice).
		reusedFast := newReusedHostDecoder(nil)
		reusedFast.data = data
		if reusedFast.top(new(VirtualHost)) == nil && (!ok || strings.TrimSpace(string(data[n:])) != "") {
			t.Fatalf("decodeAt(%q) = %d, %v; the hand-written decoder takes it whole", data, n, ok)
		}
		if werr != nil {
			return
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("DecodeHost(%q) (-json.Unmarshal +DecodeHost):\n%s", data, diff)
		}
		if diff := cmp.Diff(want, reused); diff != "" {
			t.Fatalf("reused decoder on %q (-json.Unmarshal +it):\n%s", data, diff)
		}
		if ferr == nil {
			if diff := cmp.Diff(want, fast); diff != "" {
				t.Fatalf("hand-written decoder on %q (-json.Unmarshal +it):\n%s", data, diff)
			}
		}
	})
}

// BenchmarkDecodeHost decodes one host of the benchmark's shape, and one with every field set,
// with json.Unmarshal and with DecodeHost.
func BenchmarkDecodeHost(b *testing.B) {
	for _, tt := range []struct {
		name string
		raw  []byte
	}{
		{"genconfig", genconfigHosts(b)[0]},
		{"every-field", filledHost(b)},
	} {
		b.Run(tt.name+"/json.Unmarshal", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(tt.raw)))
			for b.Loop() {
				var vh VirtualHost
				if err := json.Unmarshal(tt.raw, &vh); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tt.name+"/reused", func(b *testing.B) {
			d := newReusedHostDecoder(nil)
			b.ReportAllocs()
			b.SetBytes(int64(len(tt.raw)))
			for b.Loop() {
				if _, err := d.decode(tt.raw); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tt.name+"/DecodeHost", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(tt.raw)))
			for b.Loop() {
				if _, err := DecodeHost(tt.raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
