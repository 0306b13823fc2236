package proxy

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// stallFirst is a backend whose first stallN requests hang until the proxy gives up on them; the
// others are answered at once.
type stallFirst struct {
	srv    *httptest.Server
	stallN atomic.Int64
	hits   atomic.Int64
}

func newStallFirst(t *testing.T, n int64) *stallFirst {
	t.Helper()
	b := &stallFirst{}
	b.stallN.Store(n)
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.hits.Add(1)
		if b.stallN.Add(-1) >= 0 {
			select {
			case <-r.Context().Done():
				return
			case <-time.After(5 * time.Second):
			}
		}
		w.Header().Set("X-Backend", "stall")
		_, _ = w.Write([]byte(`{"backend":"stall"}`))
	}))
	t.Cleanup(b.srv.Close)
	return b
}

// dropFirst accepts and at once closes the first n connections (a backend that is restarting),
// then serves.
type dropFirst struct {
	net.Listener
	n       atomic.Int64
	dropped atomic.Int64
}

func (l *dropFirst) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil || l.n.Add(-1) < 0 {
			return c, err
		}
		l.dropped.Add(1)
		c.Close()
	}
}

// TestRetryConnectionErrorAndBackendTimeout proves HTTPRouteRetryConnectionError and
// HTTPRouteRetryBackendTimeout over real sockets: a refused or dropped connection and an attempt
// that hits the backendRequest timeout are retried, after the backoff, on another endpoint when
// there is one, within the attempts and the request timeout.
func TestRetryConnectionErrorAndBackendTimeout(t *testing.T) {
	live := newEcho(t, "live", false)
	dead := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: int(freePort(t, false))}
	refusing := irBackend("refusing", 1, dead, live.srv.Listener.Addr())
	onlyDead := irBackend("only-dead", 1, dead)

	stall := newStallFirst(t, 0)
	stallBackend := irBackend("stall", 1, stall.srv.Listener.Addr())

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	drop := &dropFirst{Listener: ln}
	dropSrv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(`{"backend":"drop"}`)) })}
	go func() { _ = dropSrv.Serve(drop) }()
	t.Cleanup(func() { dropSrv.Close() })
	dropBackend := irBackend("drop", 1, ln.Addr())

	retry := func(attempts int, backoff time.Duration) *ir.Retry {
		return &ir.Retry{Attempts: attempts, Backoff: backoff}
	}
	cfg, port := httpConfig(t, ir.VirtualHost{Hostname: "retry.example.com", Routes: []ir.Route{
		{Name: "refused", Match: ir.Match{Path: exact("/refused")}, Retry: retry(1, time.Millisecond), Backends: []ir.Backend{refusing}},
		{Name: "refused-no-retry", Match: ir.Match{Path: exact("/refused-no-retry")}, Backends: []ir.Backend{onlyDead}},
		{Name: "refused-exhausted", Match: ir.Match{Path: exact("/refused-exhausted")}, Retry: retry(2, time.Millisecond), Backends: []ir.Backend{onlyDead}},
		{Name: "dropped", Match: ir.Match{Path: exact("/dropped")}, Retry: retry(1, 50*time.Millisecond), Backends: []ir.Backend{dropBackend}},
		{Name: "timeout", Match: ir.Match{Path: exact("/timeout")}, Retry: retry(2, 100*time.Millisecond),
			Timeouts: ir.Timeouts{BackendRequest: 200 * time.Millisecond}, Backends: []ir.Backend{stallBackend}},
		{Name: "timeout-bounded", Match: ir.Match{Path: exact("/timeout-bounded")}, Retry: retry(10, 50*time.Millisecond),
			Timeouts: ir.Timeouts{Request: 400 * time.Millisecond, BackendRequest: 100 * time.Millisecond}, Backends: []ir.Backend{stallBackend}},
	}})
	cfg.Limits = &ir.Limits{MaxRetryAttempts: 10} // the class's cap, above the default 5
	newProxyOpts(t, cfg, Options{})
	c := testClient()
	u := baseURL(port)
	const host = "retry.example.com"

	t.Run("connection refused goes to another endpoint", func(t *testing.T) {
		before := live.hits.Load()
		for i := range 40 {
			if r := get(t, c, u+"/refused", host); r.code != http.StatusOK || r.echo.Backend != "live" {
				t.Fatalf("request %d: %d from %q, want 200 from the live endpoint", i, r.code, r.echo.Backend)
			}
		}
		if n := live.hits.Load() - before; n != 40 {
			t.Errorf("live endpoint got %d requests, want 40", n)
		}
		if r := get(t, c, u+"/refused-no-retry", host); r.code != http.StatusBadGateway {
			t.Errorf("refused without a retry policy: %d, want 502", r.code)
		}
		if r := get(t, c, u+"/refused-exhausted", host); r.code != http.StatusBadGateway {
			t.Errorf("refused on every attempt: %d, want 502", r.code)
		}
	})
	t.Run("dropped connection is retried after the backoff", func(t *testing.T) {
		drop.n.Store(1)
		start := time.Now()
		r := get(t, c, u+"/dropped", host)
		if r.code != http.StatusOK || drop.dropped.Load() != 1 {
			t.Fatalf("%d after %d dropped connections, want 200 after 1", r.code, drop.dropped.Load())
		}
		if d := time.Since(start); d < 50*time.Millisecond {
			t.Errorf("answered in %s: the retry did not wait for the 50ms backoff", d)
		}
	})
	t.Run("backend timeout is retried", func(t *testing.T) {
		stall.hits.Store(0)
		stall.stallN.Store(1)
		start := time.Now()
		r := get(t, c, u+"/timeout", host)
		took := time.Since(start)
		if r.code != http.StatusOK || stall.hits.Load() != 2 {
			t.Fatalf("%d after %d attempts, want 200 after 2", r.code, stall.hits.Load())
		}
		if took < 300*time.Millisecond || took > 3*time.Second {
			t.Errorf("took %s, want the 200ms timeout plus the 100ms backoff, and far less than the 5s stall", took)
		}

		stall.hits.Store(0)
		stall.stallN.Store(100)
		if r := get(t, c, u+"/timeout", host); r.code != http.StatusGatewayTimeout || stall.hits.Load() != 3 {
			t.Errorf("every attempt timing out: %d after %d attempts, want 504 after 3", r.code, stall.hits.Load())
		}
	})
	t.Run("request timeout bounds the retries", func(t *testing.T) {
		stall.hits.Store(0)
		stall.stallN.Store(100)
		start := time.Now()
		r := get(t, c, u+"/timeout-bounded", host)
		took := time.Since(start)
		if r.code != http.StatusGatewayTimeout {
			t.Errorf("%d, want 504", r.code)
		}
		if took > 2*time.Second || stall.hits.Load() > 4 || stall.hits.Load() < 2 {
			t.Errorf("took %s and %d attempts, want the 400ms request timeout to stop the retries after 2 to 4", took, stall.hits.Load())
		}
		stall.stallN.Store(0)
	})
}

// countingCloser accepts connections and closes them at once: a backend that refuses every
// request, counting the attempts made on it.
type countingCloser struct {
	net.Listener
	conns atomic.Int64
}

func newCountingCloser(t *testing.T) *countingCloser {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &countingCloser{Listener: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			l.conns.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return l
}

// TestRetryAttemptsBoundedAndPaced proves that no route can make the proxy spin on a refusing
// backend: attempts above the limit are refused with the config (NACK, the old config keeps
// serving), and the attempts within it wait at least the minimum backoff, even with none set.
func TestRetryAttemptsBoundedAndPaced(t *testing.T) {
	refuse := newCountingCloser(t)
	be := irBackend("refusing", 1, refuse.Addr())
	route := func(attempts int) *ir.Config {
		cfg := &ir.Config{Gateway: "ns/gw", Version: 1, Listeners: []ir.Listener{{Name: "http", Protocol: ir.ProtocolHTTP}}}
		cfg.Listeners[0].VirtualHosts = []ir.VirtualHost{{Hostname: "*", Routes: []ir.Route{
			{Name: "r", Match: ir.Match{Path: prefix("/")}, Retry: &ir.Retry{Attempts: attempts, Codes: []int{503}}, Backends: []ir.Backend{be}},
		}}}
		return cfg
	}
	cfg := route(ir.DefaultMaxRetryAttempts)
	port := freePort(t, false)
	cfg.Listeners[0].Port = port
	s := newProxy(t, cfg)

	huge := route(2_000_000_000)
	huge.Listeners[0].Port, huge.Version = port, 2
	if err := s.Apply(huge); err == nil || !strings.Contains(err.Error(), "retry attempts 2000000000 above the limit 5") {
		t.Fatalf("Apply(attempts 2e9) = %v, want the config refused", err)
	}

	c := testClient()
	start := time.Now()
	r := get(t, c, baseURL(port)+"/x", "a.example")
	took := time.Since(start)
	if r.code != http.StatusBadGateway {
		t.Errorf("status %d, want 502", r.code)
	}
	// 1 try + 5 retries, each retry after at least 25ms << (n-1): 25+50+100+200+400 = 775ms.
	if n := refuse.conns.Load(); n != 1+ir.DefaultMaxRetryAttempts {
		t.Errorf("backend saw %d connections, want %d (the config's attempts, not 2e9)", n, 1+ir.DefaultMaxRetryAttempts)
	}
	if took < 775*time.Millisecond || took > 5*time.Second {
		t.Errorf("took %s, want the minimum backoffs (775ms) and far less than a spin", took)
	}
}

// TestRetryBudget proves the retry budget over real sockets: with 20 requests in flight to a
// backend that answers 503 slowly, at most max(3, 20% of 20) = 4 retries are in flight at once
// (the backend sees each request again and counts those), the others answer the 503 they got,
// and each refusal is counted in fleetgate_proxy_retry_budget_exceeded_total.
func TestRetryBudget(t *testing.T) {
	var (
		mu              sync.Mutex
		seen            = map[string]int{}
		retriesInFlight int
		peakRetries     int
		attempts        atomic.Int64
	)
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		attempts.Add(1)
		id := r.Header.Get("X-Req")
		mu.Lock()
		seen[id]++
		retry := seen[id] > 1
		if retry {
			retriesInFlight++
			peakRetries = max(peakRetries, retriesInFlight)
		}
		mu.Unlock()
		time.Sleep(100 * time.Millisecond)
		if retry {
			mu.Lock()
			retriesInFlight--
			mu.Unlock()
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(backend.Close)
	cfg, port := httpConfig(t, ir.VirtualHost{Hostname: "*", Routes: []ir.Route{
		{Name: "r", Match: ir.Match{Path: prefix("/")}, Retry: &ir.Retry{Attempts: 5, Codes: []int{503}},
			Backends: []ir.Backend{irBackend("slow", 1, backend.Listener.Addr())}},
	}})
	s := newProxy(t, cfg)

	const clients = 20
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	var wg sync.WaitGroup
	codes := make([]int, clients)
	for i := range clients {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodGet, baseURL(port)+"/x", nil)
			req.Header.Set("X-Req", strconv.Itoa(i))
			res, err := c.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			codes[i] = res.StatusCode
		})
	}
	wg.Wait()
	for i, code := range codes {
		if code != http.StatusServiceUnavailable {
			t.Errorf("request %d: %d, want the backend's 503", i, code)
		}
	}
	if peakRetries > 4 || peakRetries == 0 {
		t.Errorf("peak retries in flight %d, want 1 to 4 (20%% of 20 requests)", peakRetries)
	}
	refused := counterValue(t, s, "fleetgate_proxy_retry_budget_exceeded_total")
	// Ideally clients-4; a loaded machine may spread the requests out and let a few more retry.
	if refused < clients/2 {
		t.Errorf("retry_budget_exceeded_total = %v, want at least %d", refused, clients/2)
	}
	// Without a budget every request would be tried 6 times.
	if n := attempts.Load(); n >= clients*6/2 {
		t.Errorf("backend saw %d attempts, want far fewer than %d", n, clients*6)
	}
	t.Logf("attempts %d, peak retries in flight %d, refused %v", attempts.Load(), peakRetries, refused)
}

// counterValue reads an unlabelled counter from the proxy's registry.
func counterValue(t *testing.T, s *Server, name string) float64 {
	t.Helper()
	mfs, err := s.opts.Registry.(*prometheus.Registry).Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("no counter %s", name)
	return 0
}
