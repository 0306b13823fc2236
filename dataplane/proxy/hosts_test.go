package proxy

import (
	"maps"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// TestHostMapClone patches clones of clones, folding recent names several times, and holds every
// map to a plain map of what it should hold: a clone must never change the map it came from,
// which may still be serving.
func TestHostMapClone(t *testing.T) {
	contents := func(m *hostMap[int]) map[string]int {
		out := map[string]int{}
		m.each(func(v int) { out[strconv.Itoa(v)] = v })
		if n := m.len(); n != len(out) {
			t.Fatalf("len() = %d, each gives %d", n, len(out))
		}
		return out
	}
	rng := rand.New(rand.NewPCG(1, 2))
	m := newHostMap[int]()
	want := map[string]int{}
	for i := range 500 {
		m.add("h"+strconv.Itoa(i)+".example.com", i)
		want[strconv.Itoa(i)] = i
	}
	type version struct {
		m    *hostMap[int]
		want map[string]int
	}
	var history []version
	next := 500
	for step := range 300 {
		c := m.clone()
		cw := maps.Clone(want)
		for range 1 + rng.IntN(3) {
			i := rng.IntN(next)
			name := "h" + strconv.Itoa(i) + ".example.com"
			if _, ok := cw[strconv.Itoa(i)]; ok && rng.IntN(2) == 0 {
				c.remove(name)
				delete(cw, strconv.Itoa(i))
				if _, ok := c.find(name); ok {
					t.Fatalf("step %d: %s found after remove", step, name)
				}
				if _, ok := c.lookup(name); ok {
					t.Fatalf("step %d: %s looked up after remove", step, name)
				}
				continue
			}
			if _, ok := cw[strconv.Itoa(i)]; ok {
				continue
			}
			if !c.add(name, i) {
				t.Fatalf("step %d: add %s refused", step, name)
			}
			cw[strconv.Itoa(i)] = i
			if v, ok := c.lookup(name); !ok || v != i {
				t.Fatalf("step %d: lookup(%s) = %d, %v", step, name, v, ok)
			}
		}
		c.add("h"+strconv.Itoa(next)+".example.com", next)
		cw[strconv.Itoa(next)] = next
		next++
		history = append(history, version{m, want})
		m, want = c, cw
		if diff := cmp.Diff(want, contents(m)); diff != "" {
			t.Fatalf("step %d: clone holds (-want +got):\n%s", step, diff)
		}
	}
	for i, h := range history {
		if diff := cmp.Diff(h.want, contents(h.m)); diff != "" {
			t.Fatalf("version %d changed after it was cloned (-want +got):\n%s", i, diff)
		}
	}
}

// BenchmarkHostLookup looks up an exact name in a map of 100k as compiled whole, and after patches
// left recent names over the shared map (the extra probe a request pays between folds).
func BenchmarkHostLookup(b *testing.B) {
	m := newHostMap[int]()
	for i := range 100000 {
		m.add("r"+strconv.Itoa(i)+".example.com", i)
	}
	patched := m.clone()
	for i := range foldAt(100000) - 1 {
		patched.remove("r" + strconv.Itoa(i) + ".example.com")
		patched.add("r"+strconv.Itoa(i)+".example.com", i)
	}
	for _, bm := range []struct {
		name string
		m    *hostMap[int]
	}{{"whole", m}, {"patched", patched}} {
		b.Run(bm.name, func(b *testing.B) {
			for _, host := range []string{"r50000.example.com", "r7.example.com"} {
				if _, ok := bm.m.lookup(host); !ok {
					b.Fatal(host)
				}
			}
			for b.Loop() {
				bm.m.lookup("r50000.example.com")
			}
		})
	}
}

// TestHostMapKeysAsIR: names ir.HostnameKey tells apart are separate entries, names it does not are
// one, so that the proxy serves as one host exactly what ir.Validate calls a duplicate.
func TestHostMapKeysAsIR(t *testing.T) {
	tests := []struct {
		first, second string
		want          bool // the second is added beside the first
	}{
		{"", "*", false},
		{"*", ".", false},
		{"Example.com", "example.com.", false},
		{"*.A.example", "*.a.example.", false},
		{"a.example", "b.example", true},
		{"*.example", "x.example", true},
		{"*", "*.example", true},
	}
	for _, tt := range tests {
		if sameKey := ir.HostnameKey(tt.first) == ir.HostnameKey(tt.second); sameKey == tt.want {
			t.Fatalf("%q, %q: the case contradicts ir.HostnameKey", tt.first, tt.second)
		}
		m := newHostMap[int]()
		m.add(tt.first, 1)
		got := m.add(tt.second, 2)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("add(%q) after add(%q) (-want +got):\n%s", tt.second, tt.first, diff)
		}
		if v, ok := m.find(tt.second); !ok || v != map[bool]int{false: 1, true: 2}[tt.want] {
			t.Errorf("find(%q) = %d, %v after adding %q and %q", tt.second, v, ok, tt.first, tt.second)
		}
	}
}

// TestApplyRefusesInvalidHosts: Apply validates each host as it compiles it, and finds a host
// given twice in a listener's host map (its ir.Validate call skips the hosts), and answers as if
// Validate had run first, with every error of the config; the table in service stays.
func TestApplyRefusesInvalidHosts(t *testing.T) {
	host := func(name string, singleLabel bool) ir.VirtualHost {
		return ir.VirtualHost{Hostname: name, SingleLabelWildcard: singleLabel, Routes: []ir.Route{{Name: "r",
			Backends: []ir.Backend{{Name: "b", Weight: 1, Endpoints: []ir.Endpoint{{Address: "10.0.0.1", Port: 80}}}}}}}
	}
	badRoute := host("bad.example.com", false)
	badRoute.Routes[0].Match.Path = regex("(")
	// Errors the compile itself would not see.
	badHeader, manyRetries := host("h.example.com", false), host("r.example.com", false)
	badHeader.Routes[0].Filters.RequestHeaders = &ir.HeaderModifier{Set: []ir.Header{{Name: "X-A", Value: "v\r\nX-B: 1"}}}
	manyRetries.Routes[0].Retry = &ir.Retry{Attempts: ir.DefaultMaxRetryAttempts + 1}
	shared := host("s.example.com", false)
	singleLabelExact := shared
	singleLabelExact.Hostname, singleLabelExact.SingleLabelWildcard = "t.example.com", true
	tests := []struct {
		name         string
		hosts        [][]ir.VirtualHost // by listener
		sourceRanges []string           // of the first listener
	}{
		{name: "case and trailing dot", hosts: [][]ir.VirtualHost{{host("a.example.com", false), host("b.example.com", false), host("A.example.com.", false)}}},
		{name: "empty and star", hosts: [][]ir.VirtualHost{{host("", false), host("*", false)}}},
		{name: "wildcard", hosts: [][]ir.VirtualHost{{host("*.A.example", false), host("*.a.example.", false)}}},
		{name: "single-label wildcard after a wildcard", hosts: [][]ir.VirtualHost{{host("*.a.example", false), host("*.a.example", true)}}},
		{name: "wildcard after a single-label wildcard", hosts: [][]ir.VirtualHost{{host("*.a.example", true), host("*.a.example", false)}}},
		{name: "three times, and a bad route", hosts: [][]ir.VirtualHost{{host("a.example.com", false), badRoute, host("a.example.com", false), host("a.example.com", false)}}},
		{name: "on the second listener", hosts: [][]ir.VirtualHost{{host("a.example.com", false)}, {host("b.example.com", false), host("B.example.com", false)}}},
		{name: "one host on two listeners", hosts: [][]ir.VirtualHost{{host("a.example.com", false)}, {host("a.example.com", false)}}},
		{name: "a wildcard and its suffix", hosts: [][]ir.VirtualHost{{host("*.a.example", false), host("a.example", false), host("x.a.example", false)}}},
		{name: "a bad header value", hosts: [][]ir.VirtualHost{{host("a.example.com", false), badHeader}}},
		{name: "too many retries on the second listener", hosts: [][]ir.VirtualHost{{host("a.example.com", false)}, {manyRetries}}},
		{name: "single-label wildcard on an exact host sharing valid routes", hosts: [][]ir.VirtualHost{{shared, singleLabelExact}}},
		{name: "bad host and its duplicate", hosts: [][]ir.VirtualHost{{badHeader, host("b.example.com", false), badHeader}}},
		{name: "a bad listener, a bad host and a duplicate", hosts: [][]ir.VirtualHost{{badHeader, host("b.example.com", false), host("b.example.com", false)}},
			sourceRanges: []string{"10.0.0.0/33"}},
	}
	cfg, _ := httpConfig(t, host("a.example.com", false))
	s := newProxy(t, cfg)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next := &ir.Config{Gateway: "ns/gw", Version: uint64(i + 2)}
			for j, hosts := range tt.hosts {
				next.Listeners = append(next.Listeners, ir.Listener{Name: "http" + strconv.Itoa(j), Port: freePort(t, false),
					Protocol: ir.ProtocolHTTP, VirtualHosts: hosts})
			}
			next.Listeners[0].SourceRanges = tt.sourceRanges
			want, version := "", next.Version
			if err := next.Validate(); err != nil {
				want, version = "invalid config: "+err.Error(), s.Version()
			}
			got := ""
			if err := s.Apply(next); err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Apply's error (-Validate's +got):\n%s", diff)
			}
			if diff := cmp.Diff(version, s.Version()); diff != "" {
				t.Errorf("version in service (-want +got):\n%s", diff)
			}
		})
	}
}
