package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/fleetgate/fleetgate/dataplane/ir"
	"github.com/fleetgate/fleetgate/dataplane/proxy"
)

// TestLoaderReloads reloads a file step by step: a reload decodes only the hosts whose JSON
// changed, and the proxy then answers every probe as a proxy given the same file whole does.
func TestLoaderReloads(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, r.URL.Path) }))
	defer backend.Close()
	bu, _ := url.Parse(backend.URL)
	bport, _ := strconv.Atoi(bu.Port())
	host := func(name, path string) ir.VirtualHost {
		return ir.VirtualHost{Hostname: name, Routes: []ir.Route{{Name: "r-" + name, Match: ir.Match{Path: &ir.StringMatch{Type: ir.MatchPrefix, Value: path}},
			Backends: []ir.Backend{{Name: "b", Weight: 1, Endpoints: []ir.Endpoint{{Address: "127.0.0.1", Port: uint32(bport)}}}}}}}
	}
	config := func(listener string, hosts ...ir.VirtualHost) *ir.Config {
		return &ir.Config{Gateway: "ns/gw", Listeners: []ir.Listener{{Name: listener, Port: 80, Protocol: ir.ProtocolHTTP, VirtualHosts: hosts}}}
	}
	steps := []struct {
		name        string
		cfg         *ir.Config
		wantDecoded int
		wantErr     bool
	}{
		{name: "first load", cfg: config("http", host("a.example.com", "/"), host("b.example.com", "/b"), host("c.example.com", "/c")), wantDecoded: 3},
		{name: "version only", cfg: config("http", host("a.example.com", "/"), host("b.example.com", "/b"), host("c.example.com", "/c"))},
		{name: "reordered", cfg: config("http", host("c.example.com", "/c"), host("a.example.com", "/"), host("b.example.com", "/b"))},
		{name: "one inserted first", cfg: config("http", host("f.example.com", "/f"), host("c.example.com", "/c"), host("a.example.com", "/"), host("b.example.com", "/b")), wantDecoded: 1},
		{name: "one removed at the end", cfg: config("http", host("f.example.com", "/f"), host("c.example.com", "/c"), host("a.example.com", "/"))},
		{name: "one back, one changed", cfg: config("http", host("a.example.com", "/"), host("b.example.com", "/b"), host("c.example.com", "/c/")), wantDecoded: 2},
		{name: "version only again", cfg: config("http", host("a.example.com", "/"), host("b.example.com", "/b"), host("c.example.com", "/c/"))},
		{name: "one host changes", cfg: config("http", host("a.example.com", "/"), host("b.example.com", "/x"), host("c.example.com", "/c")), wantDecoded: 2},
		{name: "one goes, one comes", cfg: config("http", host("a.example.com", "/"), host("b.example.com", "/x"), host("d.example.com", "/")), wantDecoded: 1},
		{name: "a host changes case", cfg: config("http", host("A.example.com", "/"), host("b.example.com", "/x"), host("d.example.com", "/")), wantDecoded: 1},
		{name: "listener renamed: whole", cfg: config("web", host("A.example.com", "/"), host("b.example.com", "/x"), host("d.example.com", "/")), wantDecoded: 3},
		{name: "a host twice is refused", cfg: config("web", host("A.example.com", "/"), host("b.example.com", "/x"), host("b.example.com", "/x")), wantErr: true},
		{name: "a new host duplicating one in service is refused", cfg: config("web", host("A.example.com", "/"), host("b.example.com", "/x"), host("a.example.com", "/y")), wantErr: true},
		{name: "after a refusal", cfg: config("web", host("A.example.com", "/"), host("b.example.com", "/x"), host("e.example.com", "/")), wantDecoded: 1},
		{name: "every host removed", cfg: config("web")},
	}
	probe := func(s *proxy.Server) []string {
		var out []string
		for _, h := range []string{"a.example.com", "b.example.com", "c.example.com", "d.example.com", "e.example.com", "f.example.com"} {
			for _, p := range []string{"/", "/b", "/x", "/c", "/f"} {
				req, _ := http.NewRequest(http.MethodGet, "http://"+s.Addr(80, false).String()+p, nil)
				req.Host = h
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				out = append(out, h+p+" "+strconv.Itoa(resp.StatusCode)+" "+string(b))
			}
		}
		return out
	}
	path := filepath.Join(t.TempDir(), "fg.json")
	srv := newReloadServer(t)
	ld := newLoader(srv, path)
	var served []string
	for i, st := range steps {
		st.cfg.Version = uint64(i) + 1
		b, err := json.Marshal(st.cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		_, decoded, err := ld.load()
		if st.wantErr {
			if err == nil {
				t.Fatalf("step %q: loaded", st.name)
			}
			if diff := cmp.Diff(served, probe(srv)); diff != "" {
				t.Errorf("step %q: after the refusal (-before +now):\n%s", st.name, diff)
			}
			continue
		}
		if err != nil {
			t.Fatalf("step %q: %v", st.name, err)
		}
		if decoded != st.wantDecoded {
			t.Errorf("step %q: decoded %d hosts, want %d", st.name, decoded, st.wantDecoded)
		}
		if srv.Version() != st.cfg.Version {
			t.Errorf("step %q: serving version %d, want %d", st.name, srv.Version(), st.cfg.Version)
		}
		whole := newReloadServer(t)
		if err := whole.Apply(st.cfg); err != nil {
			t.Fatal(err)
		}
		served = probe(srv)
		if diff := cmp.Diff(probe(whole), served); diff != "" {
			t.Errorf("step %q: answers (-whole +reloaded):\n%s", st.name, diff)
		}
	}
}

// TestLoaderLooksAway: a reload stops looking for moved hosts elsewhere in the hosts in service
// once lookAway of them were not found there and none was; the hosts it then takes for new are
// decoded again, and the table served is the whole file's either way.
func TestLoaderLooksAway(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, r.Host+r.URL.Path) }))
	defer backend.Close()
	bu, _ := url.Parse(backend.URL)
	bport, _ := strconv.Atoi(bu.Port())
	const moved = 40
	n := lookAway + 1 + moved
	host := func(i int, path string) ir.VirtualHost {
		return ir.VirtualHost{Hostname: "h" + strconv.Itoa(i) + ".example.com", Routes: []ir.Route{{Name: "r", Match: ir.Match{Path: &ir.StringMatch{Type: ir.MatchPrefix, Value: path}},
			Backends: []ir.Backend{{Name: "b", Weight: 1, Endpoints: []ir.Endpoint{{Address: "127.0.0.1", Port: uint32(bport)}}}}}}}
	}
	// file: the first `changed` hosts get a new path, and the last `moved` hosts come in reverse
	// order, each away from its place.
	file := func(version, changed int) *ir.Config {
		hosts := make([]ir.VirtualHost, n)
		for i := range n {
			path := "/"
			if i < changed {
				path = "/v" + strconv.Itoa(version)
			}
			at := i
			if i >= n-moved {
				at = n - 1 - (i - (n - moved))
			}
			hosts[at] = host(i, path)
		}
		return &ir.Config{Gateway: "ns/gw", Version: uint64(version), Listeners: []ir.Listener{{Name: "http", Port: 80, Protocol: ir.ProtocolHTTP, VirtualHosts: hosts}}}
	}
	probe := func(s *proxy.Server, version int) []string {
		var out []string
		for i := range n {
			req, _ := http.NewRequest(http.MethodGet, "http://"+s.Addr(80, false).String()+"/v"+strconv.Itoa(version), nil)
			req.Host = "h" + strconv.Itoa(i) + ".example.com"
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			out = append(out, strconv.Itoa(resp.StatusCode)+" "+string(b))
		}
		return out
	}
	for _, tt := range []struct {
		name        string
		changed     int
		wantDecoded int
	}{
		// Fewer changed hosts than lookAway: the moved ones are found.
		{"moved hosts found", lookAway - 1, lookAway - 1},
		// lookAway changed hosts before the moved ones: those are decoded again.
		{"moved hosts decoded", lookAway + 1, lookAway + 1 + moved},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "fg.json")
			srv := newReloadServer(t)
			ld := newLoader(srv, path)
			for version := 1; version <= 2; version++ {
				cfg := file(version, tt.changed)
				if version == 1 {
					cfg = file(version, 0)
					cfg.Listeners[0].VirtualHosts = slices.SortedFunc(slices.Values(cfg.Listeners[0].VirtualHosts), func(a, b ir.VirtualHost) int {
						return hostIndex(a.Hostname) - hostIndex(b.Hostname)
					})
				}
				b, err := json.Marshal(cfg)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, b, 0o600); err != nil {
					t.Fatal(err)
				}
				_, decoded, err := ld.load()
				if err != nil {
					t.Fatal(err)
				}
				if version == 2 && decoded != tt.wantDecoded {
					t.Errorf("decoded %d hosts, want %d", decoded, tt.wantDecoded)
				}
				whole := newReloadServer(t)
				if err := whole.Apply(cfg); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(probe(whole, version), probe(srv, version)); diff != "" {
					t.Fatalf("version %d: answers (-whole +reloaded):\n%s", version, diff)
				}
			}
		})
	}
}

// TestServeReleasesOnceQuiet: reloads that follow each other decode into the memory the one
// before kept; it goes back to the system once reloads pause for the quiet period.
func TestServeReleasesOnceQuiet(t *testing.T) {
	for _, tt := range []struct {
		name string
		// quiet: the quiet period ends after each reload (the test fires it before the next).
		quiet bool
		// kept: the memory is the first reload's after the second, and still held at the end.
		kept bool
	}{
		{"reloads within the quiet period", false, true},
		{"released once quiet", true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "fg.json")
			write := func(version int) {
				be := []ir.Backend{{Name: "b", Weight: 1, Endpoints: []ir.Endpoint{{Address: "127.0.0.1", Port: 8080}}}}
				hosts := make([]ir.VirtualHost, releaseAfter+10)
				for i := range hosts {
					hosts[i] = ir.VirtualHost{Hostname: "h" + strconv.Itoa(i) + ".example.com", Routes: []ir.Route{
						{Name: "api", Match: ir.Match{Path: &ir.StringMatch{Type: ir.MatchPrefix, Value: "/v" + strconv.Itoa(version) + "/h" + strconv.Itoa(i)}}, Backends: be}}}
				}
				b, err := json.Marshal(&ir.Config{Gateway: "ns/gw", Version: uint64(version), Listeners: []ir.Listener{{Name: "http", Port: 80, Protocol: ir.ProtocolHTTP, VirtualHosts: hosts}}})
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, b, 0o600); err != nil {
					t.Fatal(err)
				}
				at := time.Unix(int64(1e9+version), 0) // a modification time of its own
				if err := os.Chtimes(path, at, at); err != nil {
					t.Fatal(err)
				}
			}
			srv := newReloadServer(t)
			ld := newLoader(srv, path)
			write(1)
			mtime, _, err := ld.load()
			if err != nil {
				t.Fatal(err)
			}
			ld.release()
			tick, quiet := make(chan time.Time), make(chan time.Time)
			done := make(chan struct{})
			ctx, cancel := context.WithCancel(t.Context())
			go func() {
				defer close(done)
				ld.serve(ctx, logr.Discard(), mtime, tick, nil, func() <-chan time.Time { return quiet })
			}()
			// Sends return once serve took them, and a tick when the file did not change once
			// serve is waiting again: what it did before is done and seen here.
			reloadTo := func(version int) *ir.DecodeMemory {
				write(version)
				tick <- time.Now()
				if tt.quiet {
					quiet <- time.Now()
				}
				tick <- time.Now()
				if srv.Version() != uint64(version) {
					t.Fatalf("serving version %d, want %d", srv.Version(), version)
				}
				return ld.mem
			}
			first := reloadTo(2)
			second := reloadTo(3)
			if got := first != nil && first == second; got != tt.kept {
				t.Errorf("the second reload decoded into the first's memory: %v, want %v", got, tt.kept)
			}
			if got := second != nil; got != tt.kept {
				t.Errorf("memory held after the second reload: %v, want %v", got, tt.kept)
			}
			cancel()
			<-done
		})
	}
}

func hostIndex(hostname string) int {
	i, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(hostname, "h"), ".example.com"))
	return i
}

// BenchmarkReload100k is the file-fed proxy's side of a table swap at 100k hostnames, unpaced: a
// file of the dataplane benchmark's shape (tests/bench/dataplane/genconfig.py) whose version alone
// changes, and one in which every host changes (its routes' prefix), so that every host is decoded
// and compiled again, with the same routes for every host (as genconfig.py writes them) or with
// routes of its own; "whole" cases decode and apply the whole file, as reloads did before the
// loader.
func BenchmarkReload100k(b *testing.B) {
	const n = 100000
	file := func(version int, prefix func(host int) string) []byte {
		be := []ir.Backend{{Name: "bench/default/echo:80", Weight: 1, Endpoints: []ir.Endpoint{{Address: "127.0.0.1", Port: 18080}}}}
		vhosts := make([]ir.VirtualHost, n)
		for i := range vhosts {
			vhosts[i] = ir.VirtualHost{Hostname: "host" + strconv.Itoa(i) + ".example.com", Routes: []ir.Route{
				{Name: "exact", Match: ir.Match{Path: &ir.StringMatch{Type: ir.MatchExact, Value: "/healthz"}}, Backends: be},
				{Name: "api", Match: ir.Match{Path: &ir.StringMatch{Type: ir.MatchPrefix, Value: prefix(i) + "/api"}}, Backends: be},
				{Name: "root", Match: ir.Match{Path: &ir.StringMatch{Type: ir.MatchPrefix, Value: "/"}}, Backends: be},
			}}
		}
		cfg := &ir.Config{Gateway: "bench/gw", Version: uint64(version), Listeners: []ir.Listener{{Name: "http", Port: 80, Protocol: ir.ProtocolHTTP, VirtualHosts: vhosts}}}
		raw, err := json.Marshal(cfg)
		if err != nil {
			b.Fatal(err)
		}
		return raw
	}
	for _, tt := range []struct {
		name string
		// prefix is that of host's "api" route in the file of a version.
		prefix func(version, host int) string
		whole  bool
	}{
		{"version", func(int, int) string { return "" }, false},
		{"every-host", func(v, _ int) string { return "/v" + strconv.Itoa(v) }, false},
		// Every host's routes its own, as well as changed: none shared with another host.
		{"every-host-distinct", func(v, i int) string { return "/v" + strconv.Itoa(v) + "/h" + strconv.Itoa(i) }, false},
		{"version-whole", func(int, int) string { return "" }, true},
		{"every-host-whole", func(v, _ int) string { return "/v" + strconv.Itoa(v) }, true},
	} {
		b.Run(tt.name, func(b *testing.B) {
			files := make([][]byte, 2)
			for v := range files {
				files[v] = file(v+1, func(i int) string { return tt.prefix(v, i) })
			}
			s, err := proxy.New(proxy.Options{Address: "127.0.0.1", PortMap: func(uint32) uint32 { return 0 }, Registry: prometheus.NewRegistry()})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Shutdown(b.Context()) //nolint:errcheck // bench
			ld := newLoader(s, "bench.json")
			if _, err := ld.apply(bytes.NewReader(files[0]), nil); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuTime(b)
			defer func() { b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N)/1e6, "cpu-ms/op") }()
			for i := range b.N {
				f := files[(i+1)%2]
				if !tt.whole {
					if _, err := ld.apply(bytes.NewReader(f), nil); err != nil {
						b.Fatal(err)
					}
					continue
				}
				cfg, err := ir.DecodeJSON(f, nil)
				if err != nil {
					b.Fatal(err)
				}
				if err := s.Apply(cfg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// cpuTime is the CPU time the process has used, the collector's included: on the shared 2-core
// box the neighbours' load stretches wall time, and the reload's cost is its CPU.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// newReloadServer is a proxy on ephemeral ports for a reload test, shut down at its end.
func newReloadServer(t *testing.T) *proxy.Server {
	t.Helper()
	s, err := proxy.New(proxy.Options{Address: "127.0.0.1", PortMap: func(uint32) uint32 { return 0 }, Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Shutdown(t.Context()) })
	return s
}
