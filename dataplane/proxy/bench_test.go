package proxy

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// benchConfig has n hostnames, each with a few typical routes, plus a wildcard.
func benchConfig(n int, port uint32, be ir.Backend) *ir.Config {
	vhosts := make([]ir.VirtualHost, 0, n+1)
	for i := range n {
		vhosts = append(vhosts, ir.VirtualHost{Hostname: "host" + strconv.Itoa(i) + ".example.com", Routes: []ir.Route{
			{Name: "exact", Match: ir.Match{Path: exact("/healthz")}, Backends: []ir.Backend{be}},
			{Name: "api", Match: ir.Match{Path: prefix("/api/v1"), Headers: []ir.KeyMatch{{Name: "x-canary", Type: ir.MatchExact, Value: "1"}}}, Backends: []ir.Backend{be}},
			{Name: "api", Match: ir.Match{Path: prefix("/api")}, Backends: []ir.Backend{be}},
			{Name: "root", Match: ir.Match{Path: prefix("/")}, Backends: []ir.Backend{be}},
		}})
	}
	vhosts = append(vhosts, ir.VirtualHost{Hostname: "*.example.com", Routes: []ir.Route{{Name: "wild", Backends: []ir.Backend{be}}}})
	return &ir.Config{Version: 1, Listeners: []ir.Listener{{Name: "http", Port: port, Protocol: ir.ProtocolHTTP, VirtualHosts: vhosts}}}
}

func BenchmarkLookup(b *testing.B) {
	for _, n := range []int{1, 1000, 100000} {
		b.Run(fmt.Sprintf("hosts=%d", n), func(b *testing.B) {
			s, err := New(Options{Registry: prometheus.NewRegistry()})
			if err != nil {
				b.Fatal(err)
			}
			tbl, err := s.compile(benchConfig(n, 80, ir.Backend{Name: "b", Weight: 1}), certCache{}, tlsTransports{})
			if err != nil {
				b.Fatal(err)
			}
			lt := tbl.listeners[portKey{80, false}]
			req := httptest.NewRequest("GET", "/api/v1/users/42", nil)
			req.Host = "host" + strconv.Itoa(n/2) + ".example.com:80"
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				vh, ok := lt.hosts.lookup(normalizeHost(req.Host))
				if !ok || vh.match(req) == nil {
					b.Fatal("no match")
				}
			}
		})
	}
}

// BenchmarkProxyHTTP1 measures a full round trip through the proxy over loopback, keepalive on
// both sides. Client and backend run in the same process, so the figures are an upper bound of the
// proxy's own cost; use -cpuprofile to look at the proxy's share.
func BenchmarkProxyHTTP1(b *testing.B) {
	for _, fast := range []bool{true, false} {
		b.Run(map[bool]string{true: "fast", false: "nethttp"}[fast], func(b *testing.B) {
			benchmarkProxyHTTP1(b, Options{DisableFastPath: !fast})
		})
	}
}

func benchmarkProxyHTTP1(b *testing.B, opts Options) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", "2")
		_, _ = io.WriteString(w, "ok")
	}))
	defer backend.Close()
	port := freePortTB(b, false)
	opts.Address, opts.Registry = "127.0.0.1", prometheus.NewRegistry()
	s, err := New(opts)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Shutdown(b.Context()) //nolint:errcheck // bench
	if err := s.Apply(benchConfig(1000, port, irBackend("b", 1, backend.Listener.Addr()))); err != nil {
		b.Fatal(err)
	}
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	defer tr.CloseIdleConnections()
	url := baseURL(port) + "/api/v1/users/42"
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		req, _ := http.NewRequest("GET", url, nil)
		req.Host = "host500.example.com"
		for pb.Next() {
			res, err := tr.RoundTrip(req)
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode != 200 {
				b.Errorf("status %d", res.StatusCode)
				return
			}
		}
	})
}

// BenchmarkCompile100k measures compiling a table of 100k hostnames, the cost of one swap.
func BenchmarkCompile100k(b *testing.B) {
	s, err := New(Options{Registry: prometheus.NewRegistry()})
	if err != nil {
		b.Fatal(err)
	}
	cfg := benchConfig(100000, 80, ir.Backend{Name: "b", Weight: 1, Endpoints: []ir.Endpoint{{Address: "127.0.0.1", Port: 8080}}})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.compile(cfg, certCache{}, tlsTransports{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFastPathRaw drives the HTTP/1.1 fast path with a raw client and a raw backend that
// allocate nothing per request, so allocs/op and B/op are the proxy's own. The request carries the
// headers a typical client (h2load, curl) sends.
// BenchmarkFastPathRaw drives the fast path with raw keepalive requests, on a plain listener and
// behind TLS.
func BenchmarkFastPathRaw(b *testing.B) {
	for _, f := range fastFronts() {
		b.Run(f.name, func(b *testing.B) { benchmarkFastPathRaw(b, f.tls) })
	}
}

func benchmarkFastPathRaw(b *testing.B, useTLS bool) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					// Requests without a body: read up to the blank line, answer.
					for {
						l, err := br.ReadSlice('\n')
						if err != nil {
							return
						}
						if len(l) <= 2 {
							break
						}
					}
					if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nServer: raw\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok"); err != nil {
						return
					}
				}
			}()
		}
	}()
	port := freePortTB(b, false)
	s, err := New(Options{Address: "127.0.0.1", Registry: prometheus.NewRegistry()})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Shutdown(b.Context()) //nolint:errcheck // bench
	cfg := benchConfig(1000, port, irBackend("b", 1, ln.Addr()))
	if useTLS {
		cert, _ := selfSigned(b, "bench", "*.example.com")
		cfg.Listeners[0].Protocol, cfg.Listeners[0].Certificates = ir.ProtocolHTTPS, []ir.Certificate{cert}
	}
	if err := s.Apply(cfg); err != nil {
		b.Fatal(err)
	}
	req := []byte("GET /api/v1/users/42 HTTP/1.1\r\nHost: host500.example.com\r\nUser-Agent: h2load nghttp2/1.64.0\r\n" +
		"Accept: */*\r\nAccept-Encoding: gzip, deflate\r\n\r\n")
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var (
			c   net.Conn
			err error
		)
		if useTLS {
			c, err = tls.Dial("tcp", "127.0.0.1:"+strconv.Itoa(int(port)), &tls.Config{ServerName: "host500.example.com", InsecureSkipVerify: true}) //nolint:gosec // bench
		} else {
			c, err = net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(int(port)))
		}
		if err != nil {
			b.Error(err)
			return
		}
		defer c.Close()
		br := bufio.NewReader(c)
		for pb.Next() {
			if _, err := c.Write(req); err != nil {
				b.Error(err)
				return
			}
			n := -1
			for {
				l, err := br.ReadSlice('\n')
				if err != nil {
					b.Error(err)
					return
				}
				if bytes.HasPrefix(l, []byte("Content-Length: ")) {
					n, _ = strconv.Atoi(string(bytes.TrimSpace(l[16:])))
				}
				if len(l) <= 2 {
					break
				}
			}
			if _, err := br.Discard(n); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkSwap100k splits the cost of one 100k-hostname swap as the benchmark's file-fed proxy
// pays it (the in-cluster proxy decodes the same JSON from its config stream): decoding, validating
// and compiling.
func BenchmarkSwap100k(b *testing.B) {
	cfg := benchConfig(100000, 80, ir.Backend{Name: "b", Weight: 1, Endpoints: []ir.Endpoint{{Address: "127.0.0.1", Port: 8080}}})
	raw, err := json.Marshal(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var c ir.Config
			if err := json.Unmarshal(raw, &c); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode-paced", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := ir.DecodeJSON(raw, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("validate", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := cfg.Validate(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("compile", func(b *testing.B) {
		s, err := New(Options{Registry: prometheus.NewRegistry()})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.compile(cfg, certCache{}, tlsTransports{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
