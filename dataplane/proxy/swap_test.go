package proxy

import (
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

func TestSwapUnderLoad(t *testing.T) {
	a, b := newEcho(t, "a", false), newEcho(t, "b", false)
	port, extra := freePort(t, false), freePort(t, false)
	mk := func(v uint64) *ir.Config {
		be := a.backend(1)
		if v%2 == 0 {
			be = b.backend(1)
		}
		cfg := &ir.Config{Version: v, Listeners: []ir.Listener{{Name: "http", Port: port, Protocol: ir.ProtocolHTTP,
			VirtualHosts: []ir.VirtualHost{
				{Hostname: "v" + strconv.FormatUint(v, 10) + ".example.com", Routes: []ir.Route{{Name: "only-now", Backends: []ir.Backend{be}}}},
				{Hostname: "*", Routes: []ir.Route{
					{Name: "exact", Match: ir.Match{Path: exact("/x")}, Backends: []ir.Backend{be}},
					{Name: "root", Match: ir.Match{Path: prefix("/")}, Backends: []ir.Backend{a.backend(1), b.backend(1)}},
				}},
			}}}}
		// Every other version also opens a second port, so ports come and go under load.
		if v%2 == 1 {
			cfg.Listeners = append(cfg.Listeners, ir.Listener{Name: "extra", Port: extra, Protocol: ir.ProtocolHTTP,
				VirtualHosts: []ir.VirtualHost{{Hostname: "*", Routes: []ir.Route{{Name: "r", Backends: []ir.Backend{be}}}}}})
		}
		return cfg
	}
	s := newProxy(t, mk(1))
	var ok, failed atomic.Int64
	var firstErr atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
			defer c.CloseIdleConnections()
			paths := []string{"/x", "/y/z"}
			for i := 0; i < 20000; i++ {
				select {
				case <-stop:
					return
				default:
				}
				req, _ := http.NewRequest("GET", baseURL(port)+paths[(i+w)%2], nil)
				if err := getOK(c, req); err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
					continue
				}
				ok.Add(1)
			}
		})
	}
	for v := uint64(2); v <= 40; v++ {
		time.Sleep(25 * time.Millisecond)
		if err := s.Apply(mk(v)); err != nil {
			t.Fatalf("apply %d: %v", v, err)
		}
	}
	close(stop)
	wg.Wait()
	if failed.Load() != 0 {
		t.Errorf("%d of %d requests failed during swaps; first: %v", failed.Load(), ok.Load()+failed.Load(), firstErr.Load())
	}
	t.Logf("%d requests across 39 swaps", ok.Load())
	if ok.Load() < 100 {
		t.Errorf("only %d requests completed", ok.Load())
	}
	if s.Version() != 40 {
		t.Errorf("version %d, want 40", s.Version())
	}
	c := testClient()
	if r := get(t, c, baseURL(port)+"/x", "any"); r.echo.Backend != "b" {
		t.Errorf("after the last swap /x went to %q, want b", r.echo.Backend)
	}
	if r := get(t, c, baseURL(port)+"/", "v40.example.com"); r.echo.Backend != "b" {
		t.Errorf("host of the last version went to %q", r.echo.Backend)
	}
	if r := get(t, c, baseURL(port)+"/", "v39.example.com"); r.echo.Backend == "" {
		t.Errorf("host of an old version still routed specially: %+v", r)
	}
	if _, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(int(extra)), time.Second); err == nil {
		t.Error("port of the removed listener still accepts")
	}
}

// getOK does req and reads the whole answer; anything but a 200 is an error.
func getOK(c *http.Client, req *http.Request) error {
	res, err := c.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if _, err := io.Copy(io.Discard, res.Body); err != nil {
		return err
	}
	if res.StatusCode != 200 {
		return errStatus(res.StatusCode)
	}
	return nil
}

type errStatus int

func (e errStatus) Error() string { return "status " + strconv.Itoa(int(e)) }

func TestApplyRejectsInvalidAndKeepsServing(t *testing.T) {
	a := newEcho(t, "a", false)
	cfg, port := httpConfig(t, ir.VirtualHost{Hostname: "*", Routes: []ir.Route{{Name: "r", Backends: []ir.Backend{a.backend(1)}}}})
	s := newProxy(t, cfg)
	bad := *cfg
	bad.Version = 2
	bad.Listeners = []ir.Listener{{Name: "x", Port: port, Protocol: ir.ProtocolHTTP, VirtualHosts: []ir.VirtualHost{{Hostname: "*",
		Routes: []ir.Route{{Name: "bad", Match: ir.Match{Path: regex("(")}}}}}}}
	if err := s.Apply(&bad); err == nil {
		t.Fatal("invalid config accepted")
	}
	// A port that cannot be bound is refused too, without touching the served config.
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	clash := *cfg
	clash.Version = 3
	clash.Listeners = append(append([]ir.Listener{}, cfg.Listeners...), ir.Listener{Name: "busy",
		Port: uint32(busy.Addr().(*net.TCPAddr).Port), Protocol: ir.ProtocolTCP})
	if err := s.Apply(&clash); err == nil {
		t.Fatal("config with an unbindable port accepted")
	}
	if s.Version() != 1 {
		t.Errorf("version %d after rejected configs, want 1", s.Version())
	}
	if r := get(t, testClient(), baseURL(port)+"/", "h"); r.echo.Backend != "a" {
		t.Errorf("after rejected configs: %+v", r)
	}
}

func TestDrainOnRemoveAndShutdown(t *testing.T) {
	slow := newEcho(t, "slow", false)
	slow.delay = 300 * time.Millisecond
	cfg, port := httpConfig(t, ir.VirtualHost{Hostname: "*", Routes: []ir.Route{{Name: "r", Backends: []ir.Backend{slow.backend(1)}}}})
	s := newProxy(t, cfg)
	inflight := func() chan int {
		done := make(chan int, 1)
		before := slow.hits.Load()
		go func() {
			res, err := http.Get(baseURL(port) + "/")
			if err != nil {
				done <- -1
				return
			}
			res.Body.Close()
			done <- res.StatusCode
		}()
		// Wait until the backend holds the request, so it is in flight for sure.
		waitFor(t, func() bool { return slow.hits.Load() > before })
		return done
	}
	// Removing the port lets the request in flight finish.
	done := inflight()
	if err := s.Apply(&ir.Config{Version: 2}); err != nil {
		t.Fatal(err)
	}
	if code := <-done; code != 200 {
		t.Errorf("in-flight request during removal: %d", code)
	}
	if err := s.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	done = inflight()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Errorf("shutdown: %v", err)
	}
	if code := <-done; code != 200 {
		t.Errorf("in-flight request during shutdown: %d", code)
	}
	if err := s.Apply(cfg); err == nil {
		t.Error("Apply after Shutdown succeeded")
	}
}

func TestMetrics(t *testing.T) {
	a := newEcho(t, "a", false)
	reg := prometheus.NewRegistry()
	s, err := New(Options{Address: "127.0.0.1", Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background()) //nolint:errcheck // test
	cfg, port := httpConfig(t, ir.VirtualHost{Hostname: "*", Routes: []ir.Route{
		{Name: "ok", Match: ir.Match{Path: prefix("/ok")}, Backends: []ir.Backend{a.backend(1)}},
		{Name: "bad", Match: ir.Match{Path: prefix("/bad")}},
	}})
	if err := s.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	c := testClient()
	for _, p := range []string{"/ok", "/ok", "/bad", "/nothing"} {
		get(t, c, baseURL(port)+p, "h")
	}
	got := nonZero(t, reg, "fleetgate_proxy_requests_total")
	if diff := cmp.Diff([]string{
		`backend="",code="4xx",listener="http",route="" 1`,
		`backend="",code="5xx",listener="http",route="bad" 1`,
		`backend="a",code="2xx",listener="http",route="ok" 2`,
	}, got); diff != "" {
		t.Errorf("requests_total (-want +got):\n%s", diff)
	}
	// Dropping a route drops its series.
	cfg.Listeners[0].VirtualHosts[0].Routes = cfg.Listeners[0].VirtualHosts[0].Routes[:1]
	if err := s.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	for _, line := range nonZero(t, reg, "fleetgate_proxy_requests_total") {
		if strings.Contains(line, `route="bad"`) {
			t.Errorf("series of a removed route kept: %s", line)
		}
	}
}

func nonZero(t *testing.T, reg *prometheus.Registry, name string) []string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetCounter().GetValue() == 0 {
				continue
			}
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+strconv.Quote(l.GetValue()))
			}
			out = append(out, strings.Join(labels, ",")+" "+strconv.FormatFloat(m.GetCounter().GetValue(), 'f', -1, 64))
		}
	}
	return out
}

func TestAccessLog(t *testing.T) {
	a := newEcho(t, "a", false)
	var mu sync.Mutex
	var lines []string
	logger := funcr.New(func(_, args string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, args)
	}, funcr.Options{})
	s, err := New(Options{Address: "127.0.0.1", AccessLog: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background()) //nolint:errcheck // test
	cfg, port := httpConfig(t, ir.VirtualHost{Hostname: "*", Routes: []ir.Route{{Name: "r", Backends: []ir.Backend{a.backend(1)}}}})
	if err := s.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	get(t, testClient(), baseURL(port)+"/logged?x=1", "h")
	// The line is written once the response is out, so it may trail the client's read.
	waitFor(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(lines) > 0
	})
	mu.Lock()
	defer mu.Unlock()
	if len(lines) != 1 {
		t.Fatalf("got %d access log lines, want 1: %q", len(lines), lines)
	}
	for _, want := range []string{`"route"="r"`, `"backend"="a"`, `"code"=200`, `"path"="/logged"`, `"method"="GET"`} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("access log %q lacks %s", lines[0], want)
		}
	}
}
