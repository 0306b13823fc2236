package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// listenerSummary is what a compiled listener serves, in comparable form.
type listenerSummary struct {
	Port  uint32
	Proto ir.Protocol
	// Hosts map each hostname to its routes, as "name path -> endpoints".
	Hosts map[string][]string
}

func summarize(t *table) map[string]listenerSummary {
	out := map[string]listenerSummary{}
	for _, lt := range t.listeners {
		ls := listenerSummary{Port: lt.port, Proto: lt.proto}
		if lt.hosts != nil {
			ls.Hosts = map[string][]string{}
			lt.hosts.each(func(v *vhost) {
				for _, r := range v.routes {
					var eps []string
					for _, b := range r.backends.list {
						eps = append(eps, b.eps...)
					}
					ls.Hosts[v.name] = append(ls.Hosts[v.name], fmt.Sprintf("%s %s -> %s", r.name, r.path, strings.Join(eps, ",")))
				}
			})
		}
		out[lt.name] = ls
	}
	return out
}

// checkRefs fails unless every series the metrics hold is referenced exactly as often as the table
// in service refers to it.
func checkRefs(t *testing.T, s *Server) {
	t.Helper()
	want := map[[2]string]int{}
	for _, lt := range s.cur.Load().listeners {
		for _, rs := range lt.stats(nil) {
			want[[2]string{rs.listener, rs.route}]++
		}
		// The references a whole compile recorded are those its hosts and itself hold.
		walked := *lt
		walked.refs = nil
		count := func(rss []*routeStats) map[*routeStats]int {
			m := map[*routeStats]int{}
			for _, rs := range rss {
				m[rs]++
			}
			return m
		}
		if diff := cmp.Diff(count(walked.stats(nil)), count(lt.stats(nil))); diff != "" {
			t.Errorf("listener %q: recorded references (-walked +recorded):\n%s", lt.name, diff)
		}
	}
	got := map[[2]string]int{}
	s.metrics.mu.Lock()
	for k, rs := range s.metrics.routes {
		got[k] = rs.refs
	}
	s.metrics.mu.Unlock()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("series references (-table +metrics):\n%s", diff)
	}
}

// hostPtrs returns the compiled hosts of listener l by name.
func hostPtrs(s *Server, l string) map[string]*vhost {
	out := map[string]*vhost{}
	for _, lt := range s.cur.Load().listeners {
		if lt.name == l && lt.hosts != nil {
			lt.hosts.each(func(v *vhost) { out[v.name] = v })
		}
	}
	return out
}

func host(name, path, ep string) ir.VirtualHost {
	return ir.VirtualHost{Hostname: name, Routes: []ir.Route{{Name: "r-" + name, Match: ir.Match{Path: prefix(path)},
		Backends: []ir.Backend{{Name: "b", Weight: 1, Endpoints: []ir.Endpoint{{Address: ep, Port: 80}}}}}}}
}

func TestUpdate(t *testing.T) {
	port, tcpPort := freePort(t, false), freePort(t, false)
	initial := func() *ir.Config {
		return &ir.Config{Gateway: "ns/gw", Version: 1, Listeners: []ir.Listener{{Name: "http", Port: port, Protocol: ir.ProtocolHTTP,
			VirtualHosts: []ir.VirtualHost{
				host("a.example.com", "/", "10.0.0.1"),
				host("b.example.com", "/", "10.0.0.2"),
				{Hostname: "*.example.com", SingleLabelWildcard: true, Routes: host("w", "/", "10.0.0.3").Routes},
				host("*", "/", "10.0.0.4"),
			}}}}
	}
	withTCP := ir.BaseOf(initial())
	withTCP.Listeners = append(withTCP.Listeners, ir.Listener{Name: "tcp", Port: tcpPort, Protocol: ir.ProtocolTCP,
		L4: &ir.L4Route{Name: "l4", Backends: []ir.Backend{{Name: "t", Weight: 1}}}})
	withHTTP2 := ir.BaseOf(initial())
	withHTTP2.Listeners = append(withHTTP2.Listeners, ir.Listener{Name: "http2", Port: tcpPort, Protocol: ir.ProtocolHTTP})
	tests := []struct {
		name    string
		updates []ir.Update // versions are set by the test
	}{
		{name: "add a host", updates: []ir.Update{{Hosts: []ir.ListenerHost{{Listener: "http", Host: host("c.example.com", "/", "10.0.0.5")}}}}},
		{name: "replace a host", updates: []ir.Update{{Hosts: []ir.ListenerHost{{Listener: "http", Host: host("a.example.com", "/v2", "10.0.0.9")}}}}},
		{name: "remove a host", updates: []ir.Update{{Removed: []ir.HostKey{{Listener: "http", Hostname: "b.example.com"}}}}},
		{name: "replace the catch-all and a single-label wildcard", updates: []ir.Update{{Hosts: []ir.ListenerHost{
			{Listener: "http", Host: host("*", "/x", "10.0.0.8")},
			{Listener: "http", Host: ir.VirtualHost{Hostname: "*.example.com", Routes: host("w", "/y", "10.0.0.7").Routes}},
		}}}},
		{name: "remove and add back", updates: []ir.Update{
			{Removed: []ir.HostKey{{Listener: "http", Hostname: "a.example.com"}, {Listener: "http", Hostname: "*"}}},
			{Hosts: []ir.ListenerHost{{Listener: "http", Host: host("a.example.com", "/", "10.0.0.1")}}},
		}},
		{name: "only the version", updates: []ir.Update{{}}},
		{name: "a new listener keeps the hosts of the others", updates: []ir.Update{{Base: withTCP}}},
		{name: "a new listener with hosts, then without it", updates: []ir.Update{
			{Base: withHTTP2, Hosts: []ir.ListenerHost{{Listener: "http2", Host: host("a.example.com", "/", "10.0.1.1")}}},
			{Base: ir.BaseOf(initial()), Removed: []ir.HostKey{{Listener: "http2", Hostname: "a.example.com"}}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := initial()
			s := newProxy(t, cfg)
			ref := newProxy(t, nil)
			for i, u := range tt.updates {
				u.Gateway, u.Version = cfg.Gateway, cfg.Version+1
				before := hostPtrs(s, "http")
				if err := s.Update(&u); err != nil {
					t.Fatalf("update %d: %v", i, err)
				}
				next, err := cfg.Patch(&u)
				if err != nil {
					t.Fatal(err)
				}
				cfg = next
				want, err := ref.compile(cfg, certCache{}, tlsTransports{})
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(summarize(want), summarize(s.cur.Load())); diff != "" {
					t.Errorf("update %d: table (-whole compile +patched):\n%s", i, diff)
				}
				if s.Version() != cfg.Version {
					t.Errorf("update %d: version %d, want %d", i, s.Version(), cfg.Version)
				}
				// Hosts the update does not name are the same compiled hosts.
				changed := map[string]bool{}
				for _, h := range u.Hosts {
					changed[h.Host.Hostname] = h.Listener == "http"
				}
				for _, k := range u.Removed {
					changed[k.Hostname] = k.Listener == "http"
				}
				after := hostPtrs(s, "http")
				for name, v := range before {
					if changed[name] {
						if after[name] == v {
							t.Errorf("update %d: host %q not compiled again", i, name)
						}
						continue
					}
					if after[name] != v {
						t.Errorf("update %d: host %q compiled again", i, name)
					}
				}
				checkRefs(t, s)
			}
		})
	}
}

func TestUpdateRejectsAndKeepsServing(t *testing.T) {
	a := newEcho(t, "a", false)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	good := func(name string) ir.VirtualHost {
		return ir.VirtualHost{Hostname: name, Routes: []ir.Route{{Name: "r", Backends: []ir.Backend{a.backend(1)}}}}
	}
	cfg, port := httpConfig(t, good("a.example.com"), good("b.example.com"))
	asTCP := ir.BaseOf(cfg)
	asTCP.Listeners[0].Protocol = ir.ProtocolTCP
	tests := []struct {
		name string
		u    ir.Update
		want string
	}{
		{name: "invalid host", u: ir.Update{Hosts: []ir.ListenerHost{{Listener: "http", Host: ir.VirtualHost{Hostname: "c.example.com",
			Routes: []ir.Route{{Name: "bad", Match: ir.Match{Path: regex("(")}}}}}}}, want: `listener "http" host "c.example.com" route "bad" path`},
		{name: "duplicate host", u: ir.Update{Hosts: []ir.ListenerHost{{Listener: "http", Host: good("A.example.com")}}},
			want: `listener "http" host "A.example.com": duplicate host`},
		{name: "removes a host it does not have", u: ir.Update{Removed: []ir.HostKey{{Listener: "http", Hostname: "z.example.com"}}},
			want: "which it does not have"},
		{name: "hosts for an unknown listener", u: ir.Update{Hosts: []ir.ListenerHost{{Listener: "other", Host: good("c.example.com")}}},
			want: "a listener the config does not have"},
		{name: "listener removed with hosts left", u: ir.Update{Base: &ir.Config{Gateway: cfg.Gateway},
			Removed: []ir.HostKey{{Listener: "http", Hostname: "a.example.com"}}}, want: "removed with hosts left"},
		{name: "hosts on a TCP listener", u: ir.Update{Base: asTCP}, want: "TCP listener holds HTTP routes"},
		{name: "invalid base", u: ir.Update{Base: &ir.Config{Listeners: []ir.Listener{{Name: "x", Port: 80, Protocol: "SCTP"}}}},
			want: "SCTP"},
		{name: "port that cannot be bound", u: ir.Update{Base: func() *ir.Config {
			b := ir.BaseOf(cfg)
			b.Listeners = append(b.Listeners, ir.Listener{Name: "busy", Port: uint32(busy.Addr().(*net.TCPAddr).Port), Protocol: ir.ProtocolTCP})
			return b
		}()}, want: "address already in use"},
	}
	s := newProxy(t, cfg)
	served := s.cur.Load()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.u.Gateway, tt.u.Version = cfg.Gateway, 2
			err := s.Update(&tt.u)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Update = %v, want an error containing %q", err, tt.want)
			}
			if s.cur.Load() != served {
				t.Error("the table in service changed")
			}
			checkRefs(t, s)
		})
	}
	for _, h := range []string{"a.example.com", "b.example.com"} {
		if r := get(t, testClient(), baseURL(port)+"/", h); r.code != http.StatusOK || r.echo.Backend != "a" {
			t.Errorf("%s after rejected updates: %+v", h, r)
		}
	}
}

func TestFirstUpdate(t *testing.T) {
	a := newEcho(t, "a", false)
	s := newProxy(t, nil)
	port := freePort(t, false)
	if err := s.Update(&ir.Update{Gateway: "ns/gw", Version: 1,
		Hosts: []ir.ListenerHost{{Listener: "http", Host: host("a.example.com", "/", "10.0.0.1")}}}); err == nil {
		t.Error("a first update without a base was accepted")
	}
	base := &ir.Config{Gateway: "ns/gw", Listeners: []ir.Listener{{Name: "http", Port: port, Protocol: ir.ProtocolHTTP}}}
	if err := s.Update(&ir.Update{Gateway: "ns/gw", Version: 1, Base: base, Hosts: []ir.ListenerHost{{Listener: "http",
		Host: ir.VirtualHost{Hostname: "a.example.com", Routes: []ir.Route{{Name: "r", Backends: []ir.Backend{a.backend(1)}}}}}}}); err != nil {
		t.Fatal(err)
	}
	if r := get(t, testClient(), baseURL(port)+"/", "a.example.com"); r.echo.Backend != "a" {
		t.Errorf("after the first update: %+v", r)
	}
	if r := get(t, testClient(), baseURL(port)+"/", "b.example.com"); r.code != http.StatusNotFound {
		t.Errorf("unknown host: %+v", r)
	}
}

// TestUpdateSeries follows the series of a route two hosts share: they go with the last host.
func TestUpdateSeries(t *testing.T) {
	shared := func(name string) ir.VirtualHost {
		return ir.VirtualHost{Hostname: name, Routes: []ir.Route{{Name: "shared", Backends: []ir.Backend{{Name: "b", Weight: 1}}}}}
	}
	cfg, _ := httpConfig(t, shared("a.example.com"), shared("b.example.com"))
	s := newProxy(t, cfg)
	series := func() []string {
		s.metrics.mu.Lock()
		defer s.metrics.mu.Unlock()
		var out []string
		for k, rs := range s.metrics.routes {
			out = append(out, fmt.Sprintf("%s/%s=%d", k[0], k[1], rs.refs))
		}
		slices.Sort(out)
		return out
	}
	steps := []struct {
		u    ir.Update
		want []string
	}{
		{u: ir.Update{Removed: []ir.HostKey{{Listener: "http", Hostname: "a.example.com"}}}, want: []string{"http/=1", "http/shared=1"}},
		{u: ir.Update{Hosts: []ir.ListenerHost{{Listener: "http", Host: ir.VirtualHost{Hostname: "b.example.com",
			Routes: []ir.Route{{Name: "other", Backends: []ir.Backend{{Name: "b", Weight: 1}}}}}}}}, want: []string{"http/=1", "http/other=1"}},
	}
	for i, st := range steps {
		st.u.Gateway, st.u.Version = cfg.Gateway, uint64(i)+2
		if err := s.Update(&st.u); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(st.want, series()); diff != "" {
			t.Errorf("step %d: series (-want +got):\n%s", i, diff)
		}
	}
}

// TestCompiledHostsOwnTheirIR: the loader decodes each reload into the arrays of the one before
// (ir.DecodeMemory), so a table in service must hold nothing of the IR it was compiled from. Table
// A is compiled from a decode, B decoded into the same memory, then A's hosts are compared with A's
// IR: the IR hosts with TLS backends keep (vhost.src), and their compiled routes once a new client
// certificate has them compiled again from it.
func TestCompiledHostsOwnTheirIR(t *testing.T) {
	hosts := func(version string) []ir.VirtualHost {
		var out []ir.VirtualHost
		for i := range 200 {
			proto := ir.AppProtocol("")
			if i%3 == 0 {
				proto = ir.AppTLS
			}
			be := func(name string) ir.Backend {
				return ir.Backend{Name: version + name + strconv.Itoa(i), Weight: uint32(1 + i%4), AppProtocol: proto,
					Endpoints: []ir.Endpoint{{Address: "10.0.0." + strconv.Itoa(1+i%200), Port: 443}, {Address: "10.0.1.1", Port: uint32(8000 + i)}}}
			}
			routes := []ir.Route{
				{Name: "exact", Match: ir.Match{Path: exact("/healthz")}, Backends: []ir.Backend{be("h")}},
				{Name: "api", Match: ir.Match{Path: prefix("/" + version + "/h" + strconv.Itoa(i))}, Backends: []ir.Backend{be("a"), be("b")},
					Filters: ir.Filters{Mirrors: []ir.Mirror{{Backend: be("m")}}}},
				{Name: "root", Match: ir.Match{Path: prefix("/")}, Backends: []ir.Backend{be("r")}},
			}
			out = append(out, ir.VirtualHost{Hostname: "h" + strconv.Itoa(i) + ".example.com", Routes: routes[:1+i%3]})
		}
		return out
	}
	mem := &ir.DecodeMemory{}
	decode := func(cfg *ir.Config) *ir.Config {
		raw, err := json.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ir.DecodeJSONSkippingReader(bytes.NewReader(raw), nil, ir.HostFilter{Skip: func(int, []byte) bool { return false }, Memory: mem})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	wantA, _ := httpConfig(t, hosts("a")...)
	a := newProxy(t, decode(wantA))
	before := describeHosts(a)
	cfgB, _ := httpConfig(t, hosts("b")...)
	newProxy(t, decode(cfgB))

	kept := 0
	for name, v := range hostPtrs(a, "http") {
		if v.src == nil {
			continue
		}
		kept++
		i := slices.IndexFunc(wantA.Listeners[0].VirtualHosts, func(vh ir.VirtualHost) bool { return vh.Hostname == name })
		if diff := cmp.Diff(&wantA.Listeners[0].VirtualHosts[i], v.src); diff != "" {
			t.Errorf("host %s: the IR its table keeps, once B is decoded (-A's IR +kept):\n%s", name, diff)
		}
	}
	if kept == 0 {
		t.Fatal("no host kept its IR: the test tests nothing")
	}
	cert, _ := selfSigned(t, "client")
	base := ir.BaseOf(wantA)
	base.BackendClientCertificate = &cert
	if err := a.Update(&ir.Update{Gateway: wantA.Gateway, Version: 2, Base: base}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, describeHosts(a)); diff != "" {
		t.Errorf("A's hosts compiled again from what they kept, once B is decoded (-A's +now):\n%s", diff)
	}
}

// TestUpdateClientCertificate changes the certificate presented to TLS backends: the hosts with
// TLS backends are compiled again, the others kept.
func TestUpdateClientCertificate(t *testing.T) {
	tlsHost := ir.VirtualHost{Hostname: "tls.example.com", Routes: []ir.Route{{Name: "t",
		Backends: []ir.Backend{{Name: "t", Weight: 1, AppProtocol: ir.AppTLS, Endpoints: []ir.Endpoint{{Address: "10.0.0.1", Port: 443}}}}}}}
	cfg, _ := httpConfig(t, tlsHost, host("plain.example.com", "/", "10.0.0.2"))
	s := newProxy(t, cfg)
	before := hostPtrs(s, "http")
	cert, _ := selfSigned(t, "client")
	base := ir.BaseOf(cfg)
	base.BackendClientCertificate = &cert
	if err := s.Update(&ir.Update{Gateway: cfg.Gateway, Version: 2, Base: base}); err != nil {
		t.Fatal(err)
	}
	after := hostPtrs(s, "http")
	if after["plain.example.com"] != before["plain.example.com"] {
		t.Error("host without TLS backends compiled again")
	}
	v := after["tls.example.com"]
	if v == before["tls.example.com"] {
		t.Fatal("host with a TLS backend not compiled again")
	}
	tr, ok := v.routes[0].backends.list[0].rt.(*http.Transport)
	if !ok || len(tr.TLSClientConfig.Certificates) != 1 {
		t.Errorf("TLS backend does not present the client certificate: %#v", v.routes[0].backends.list[0].rt)
	}
	if !slices.Equal(slices.Sorted(maps.Keys(after)), []string{"plain.example.com", "tls.example.com"}) {
		t.Errorf("hosts after the update: %v", slices.Sorted(maps.Keys(after)))
	}
	checkRefs(t, s)
}

// TestUpdateUnderLoad patches a table of many hosts, one host at a time and now and then a
// listener, while clients send requests to the hosts being patched: none may fail.
func TestUpdateUnderLoad(t *testing.T) {
	n := 100000
	if testing.Short() {
		n = 1000
	}
	a, b := newEcho(t, "a", false), newEcho(t, "b", false)
	port, extra := freePort(t, false), freePort(t, false)
	mk := func(i int, be ir.Backend) ir.VirtualHost {
		return ir.VirtualHost{Hostname: "r" + strconv.Itoa(i) + ".example.com", Routes: []ir.Route{{Name: "r" + strconv.Itoa(i),
			Match: ir.Match{Path: prefix("/")}, Backends: []ir.Backend{be}}}}
	}
	vhosts := make([]ir.VirtualHost, n)
	for i := range vhosts {
		vhosts[i] = mk(i, a.backend(1))
	}
	cfg := &ir.Config{Gateway: "ns/gw", Version: 1, Listeners: []ir.Listener{{Name: "http", Port: port, Protocol: ir.ProtocolHTTP, VirtualHosts: vhosts}}}
	s := newProxy(t, cfg)
	withExtra := ir.BaseOf(cfg)
	withExtra.Listeners = append(withExtra.Listeners, ir.Listener{Name: "extra", Port: extra, Protocol: ir.ProtocolHTTP})
	const updates = 60
	var ok, failed atomic.Int64
	var firstErr atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
			defer c.CloseIdleConnections()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				req, _ := http.NewRequest("GET", baseURL(port)+"/", nil)
				req.Host = "r" + strconv.Itoa((i*4+w)%updates) + ".example.com"
				if err := getOK(c, req); err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
					continue
				}
				ok.Add(1)
			}
		})
	}
	start := time.Now()
	for v := 2; v < 2+updates; v++ {
		u := &ir.Update{Gateway: cfg.Gateway, Version: uint64(v), Hosts: []ir.ListenerHost{{Listener: "http", Host: mk(v-2, b.backend(1))}}}
		switch v % 10 {
		case 0:
			u.Base = withExtra
		case 5:
			u.Base = ir.BaseOf(cfg)
		}
		if err := s.Update(u); err != nil {
			t.Fatalf("update %d: %v", v, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	took := time.Since(start)
	close(stop)
	wg.Wait()
	t.Logf("%d updates of a table of %d hosts in %v, %d requests meanwhile", updates, n, took, ok.Load())
	if failed.Load() != 0 {
		t.Errorf("%d of %d requests failed during updates; first: %v", failed.Load(), ok.Load()+failed.Load(), firstErr.Load())
	}
	for i := range updates {
		if r := get(t, testClient(), baseURL(port)+"/", "r"+strconv.Itoa(i)+".example.com"); r.echo.Backend != "b" {
			t.Errorf("host %d after its update went to %q", i, r.echo.Backend)
		}
	}
	if r := get(t, testClient(), baseURL(port)+"/", "r"+strconv.Itoa(updates)+".example.com"); r.echo.Backend != "a" {
		t.Errorf("host not updated went to %q", r.echo.Backend)
	}
	checkRefs(t, s)
}

// TestUpdateFoldsLargePatch: an update that replaces more hosts than a clone's overlay holds
// leaves a host map of its own, which no longer refers to the hosts it replaced; a small one
// overlays the map it shares.
func TestUpdateFoldsLargePatch(t *testing.T) {
	const n = 100
	var vhosts []ir.VirtualHost
	for i := range n {
		vhosts = append(vhosts, host("h"+strconv.Itoa(i)+".example.com", "/", "10.0.0.1"))
	}
	cfg, _ := httpConfig(t, vhosts...)
	tests := []struct {
		name       string
		replace    int
		wantShared bool
	}{
		{name: "one host", replace: 1, wantShared: true},
		{name: "every host", replace: n},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newProxy(t, cfg)
			old := hostPtrs(s, "http")
			u := &ir.Update{Gateway: cfg.Gateway, Version: 2}
			for i := range tt.replace {
				u.Hosts = append(u.Hosts, ir.ListenerHost{Listener: "http", Host: host("h"+strconv.Itoa(i)+".example.com", "/v2", "10.0.0.2")})
			}
			if err := s.Update(u); err != nil {
				t.Fatal(err)
			}
			var hosts *hostMap[*vhost]
			for _, lt := range s.cur.Load().listeners {
				hosts = lt.hosts
			}
			if hosts.shared != tt.wantShared {
				t.Errorf("host map shared: %v, want %v", hosts.shared, tt.wantShared)
			}
			replaced := 0
			for _, v := range hosts.exact {
				if old[v.name] == v {
					continue
				}
				replaced++
			}
			if want := map[bool]int{true: 0, false: tt.replace}[tt.wantShared]; replaced != want {
				t.Errorf("%d hosts of the map's own are new, want %d", replaced, want)
			}
			if hosts.len() != n {
				t.Errorf("%d hosts, want %d", hosts.len(), n)
			}
			checkRefs(t, s)
		})
	}
}

// TestCompileSharedRoutes compiles random configs whose hosts repeat routes the way the loader's
// decoder gives them (a route that is the one at its place in the host before is a copy of it,
// sharing its match and backends) and the same configs through a JSON round trip (nothing
// shared): every host must compile to the same routes, the repeated ones compiled once.
func TestCompileSharedRoutes(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 22))
	be := func(name string) []ir.Backend {
		return []ir.Backend{{Name: name, Weight: 1, Endpoints: []ir.Endpoint{{Address: "10.0.0.1", Port: 80}}}}
	}
	// Templates that differ in one field each, sharing the rest in memory.
	slash, a := prefix("/"), be("a")
	templates := []ir.Route{
		{Name: "health", Match: ir.Match{Path: exact("/healthz")}, Backends: a},
		{Name: "root", Match: ir.Match{Path: slash}, Backends: a},
		{Name: "root", Match: ir.Match{Path: slash}, Backends: be("b")},
		{Name: "root2", Match: ir.Match{Path: slash}, Backends: a},
		{Name: "root", Match: ir.Match{Path: slash, Method: "GET"}, Backends: a},
		{Name: "root", Match: ir.Match{Path: slash}, Backends: a, Timeouts: ir.Timeouts{Request: time.Second}},
		{Name: "root", Match: ir.Match{Path: slash}, Backends: a, Retry: &ir.Retry{Attempts: 2}},
		{Name: "root", Match: ir.Match{Path: slash}, Backends: a, Filters: ir.Filters{Redirect: &ir.Redirect{StatusCode: 301, Hostname: "new.example.com"}}},
		{Name: "re", Match: ir.Match{Path: regex("/x[0-9]+")}, Backends: a},
	}
	for round := range 20 {
		var hosts []ir.VirtualHost
		var prev []ir.Route
		for h := range 50 {
			routes := make([]ir.Route, 1+rnd.IntN(4))
			for i := range routes {
				switch {
				case i < len(prev) && rnd.IntN(2) == 0:
					routes[i] = prev[i] // the one at its place before: shared, as the decoder gives it
				case rnd.IntN(3) != 0:
					routes[i] = templates[rnd.IntN(len(templates))]
				default:
					routes[i] = ir.Route{Name: "own", Match: ir.Match{Path: prefix("/h" + strconv.Itoa(h) + "/" + strconv.Itoa(i))}, Backends: be("c")}
				}
			}
			prev = routes
			hosts = append(hosts, ir.VirtualHost{Hostname: "h" + strconv.Itoa(h) + ".example.com", Routes: routes})
		}
		cfg, _ := httpConfig(t, hosts...)
		shared, own := compiledBothWays(t, round, cfg)
		for _, s := range []*Server{shared, own} {
			_ = s.Shutdown(t.Context())
		}
	}
	// Hosts whose routes differ in the middle one hold one compiled first and last route.
	var hosts []ir.VirtualHost
	for h := range 10 {
		hosts = append(hosts, ir.VirtualHost{Hostname: "h" + strconv.Itoa(h) + ".example.com", Routes: []ir.Route{templates[0],
			{Name: "own", Match: ir.Match{Path: prefix("/h" + strconv.Itoa(h))}, Backends: be("c")}, templates[1]}})
	}
	cfg, _ := httpConfig(t, hosts...)
	s := newProxy(t, cfg)
	compiled := hostPtrs(s, "http")
	first := compiled[hosts[0].Hostname]
	for _, h := range hosts[1:] {
		if v := compiled[h.Hostname]; v.routes[0] != first.routes[0] || v.routes[2] != first.routes[2] || v.routes[1] == first.routes[1] {
			t.Errorf("host %s: routes %p, %p, %p; the first host's %p, %p, %p", h.Hostname, v.routes[0], v.routes[1], v.routes[2],
				first.routes[0], first.routes[1], first.routes[2])
		}
	}
	checkRefs(t, s)
}

// describeHosts prints every field of the compiled routes of each host of listener "http" that
// TestCompileSharedRoutes varies, with their backends and series.
func describeHosts(s *Server) map[string]string {
	out := map[string]string{}
	for name, v := range hostPtrs(s, "http") {
		var b strings.Builder
		for _, r := range v.routes {
			x := r.rare
			if x == nil {
				x = &routeRare{}
			}
			fmt.Fprintf(&b, "%s %d %q %s re=%v h=%d q=%d t=%v/%v retry=%v redirect=%v stats=%s/%s", r.name, r.pathType, r.path, x.method,
				x.re != nil, len(x.headers), len(x.query), x.timeout, x.beTimeout, x.retry != nil, x.redirect != nil, r.stats.listener, r.stats.route)
			for i, be := range r.backends.list {
				fmt.Fprintf(&b, " %s:%d:%s", be.name, r.backends.cum[i], r.backends.stats[i].name)
			}
			b.WriteString("; ")
		}
		out[name] = b.String()
	}
	return out
}

// TestCompileMemoTrial: past memoTrial hosts whose route lists are all different, the compile
// stops looking for equal lists, and shares only a list that is the last host's in memory. Random
// tables (lists of their own, equal lists apart in memory, one slice for neighbours) must compile
// to the hosts and series of the same table after a JSON round trip, which shares nothing.
func TestCompileMemoTrial(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 22))
	be := func(name string) []ir.Backend {
		return []ir.Backend{{Name: name, Weight: 1, Endpoints: []ir.Endpoint{{Address: "10.0.0.1", Port: 80}}}}
	}
	own := func(h, i int) ir.Route {
		return ir.Route{Name: "own" + strconv.Itoa(i), Match: ir.Match{Path: prefix("/h" + strconv.Itoa(h))}, Backends: be("b" + strconv.Itoa(h%3))}
	}
	for round := range 6 {
		// Rounds 0-2 begin with memoTrial lists of their own (the memo goes off); the others
		// repeat a list early (it stays on).
		distinct := memoTrial
		if round >= 3 {
			distinct = 1 + rnd.IntN(20)
		}
		var hosts []ir.VirtualHost
		var lists [][]ir.Route
		for h := range distinct + 300 {
			var routes []ir.Route
			switch k := rnd.IntN(4); {
			case h < distinct || k == 0:
				routes = []ir.Route{own(h, 0), own(h, 1)}[:1+rnd.IntN(2)]
			case k == 1:
				routes = lists[len(lists)-1] // the host before's slice
			case k == 2:
				routes = slices.Clone(lists[rnd.IntN(len(lists))]) // an earlier list, apart in memory
			default:
				routes = lists[rnd.IntN(len(lists))] // an earlier host's slice
			}
			lists = append(lists, routes)
			hosts = append(hosts, ir.VirtualHost{Hostname: "h" + strconv.Itoa(h) + ".example.com", Routes: routes})
		}
		cfg, _ := httpConfig(t, hosts...)
		shared, apart := compiledBothWays(t, round, cfg)
		// The same code compiles both: each host's compiled routes must also be its own IR's.
		compiled := hostPtrs(shared, "http")
		for _, h := range hosts {
			var want, got strings.Builder
			for _, r := range h.Routes {
				fmt.Fprintf(&want, "%s %s %s %s; ", r.Name, r.Match.Path.Value, r.Backends[0].Name, r.Name)
			}
			for _, r := range compiled[h.Hostname].routes {
				fmt.Fprintf(&got, "%s %s %s %s; ", r.name, r.path, r.backends.list[0].name, r.stats.route)
			}
			if want.String() != got.String() {
				t.Fatalf("round %d: host %s compiled as %q, its IR is %q", round, h.Hostname, got.String(), want.String())
			}
		}
		// Neighbours given one slice share one compiled set, memo or not.
		for h := 1; h < len(hosts); h++ {
			a, b := hosts[h-1], hosts[h]
			if &a.Routes[0] == &b.Routes[0] && compiled[a.Hostname].routeSet != compiled[b.Hostname].routeSet {
				t.Errorf("round %d: %s and %s have one route list in memory and two compiled sets", round, a.Hostname, b.Hostname)
			}
		}
		// With the memo on, equal lists anywhere share one.
		if round >= 3 {
			first := map[string]*routeSet{}
			for _, h := range hosts {
				k := fmt.Sprint(h.Routes)
				if set, ok := first[k]; ok && compiled[h.Hostname].routeSet != set {
					t.Errorf("round %d: %s has routes equal to an earlier host's, compiled apart", round, h.Hostname)
				} else if !ok {
					first[k] = compiled[h.Hostname].routeSet
				}
			}
		}
		for _, s := range []*Server{shared, apart} {
			_ = s.Shutdown(t.Context())
		}
	}
}

// compiledBothWays serves cfg as given (its hosts sharing route lists as they do) and after a JSON
// round trip that shares nothing, on another port; every host must compile the same in both, and
// the shared one's series references must be right.
func compiledBothWays(t *testing.T, round int, cfg *ir.Config) (shared, apart *Server) {
	t.Helper()
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var copied ir.Config
	if err := json.Unmarshal(raw, &copied); err != nil {
		t.Fatal(err)
	}
	copied.Listeners[0].Port = freePort(t, false)
	shared, apart = newProxy(t, cfg), newProxy(t, &copied)
	if diff := cmp.Diff(describeHosts(apart), describeHosts(shared)); diff != "" {
		t.Fatalf("round %d: compiled hosts (-own routes +shared routes):\n%s", round, diff)
	}
	checkRefs(t, shared)
	return shared, apart
}
