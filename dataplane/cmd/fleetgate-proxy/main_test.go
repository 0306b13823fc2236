package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetgate/fleetgate/dataplane/ir"
	"github.com/fleetgate/fleetgate/dataplane/ir/irtest"
)

// TestParseFlags parses the command line tests/bench/dataplane/run.sh gives fleetgate-proxy, and
// the ones it must refuse.
func TestParseFlags(t *testing.T) {
	type summary struct {
		Config, Address string
		Watch, Drain    time.Duration
		Denied          int
		PortOffset      int
		PProf           bool
	}
	tests := []struct {
		name    string
		args    []string
		want    summary
		wantErr bool
	}{
		{
			name: "dataplane benchmark",
			args: []string{"-config", "/w/fg.json", "-address", "127.0.0.1", "-watch", "100ms", "-drain-timeout", "2s", "-denied-endpoint-cidrs="},
			want: summary{Config: "/w/fg.json", Address: "127.0.0.1", Watch: 100 * time.Millisecond, Drain: 2 * time.Second},
		},
		{
			name: "port offset and pprof",
			args: []string{"-config", "c.json", "-port-offset", "10000", "-pprof", "-metrics-address", "127.0.0.1:9901"},
			want: summary{Config: "c.json", Drain: 30 * time.Second, Denied: 6, PortOffset: 10000, PProf: true},
		},
		{name: "no config", args: []string{"-address", "127.0.0.1"}, wantErr: true},
		{name: "agent flag", args: []string{"-config", "c.json", "-gateway", "g"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parseFlags(tt.args, io.Discard)
			if tt.wantErr {
				if err == nil {
					t.Fatal("accepted")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := summary{o.configPath, o.Address, o.watch, o.DrainTimeout, len(o.Limits.DeniedEndpointCIDRs), o.portOffset, o.pprof}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("options (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRun serves a config file on a real socket, reloads it when it changes, logs JSON lines
// through zap, and drains when its context ends.
func TestRun(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "echo") }))
	defer backend.Close()
	bu, _ := url.Parse(backend.URL)
	bport, _ := strconv.Atoi(bu.Port())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()

	path := filepath.Join(t.TempDir(), "fg.json")
	write := func(version uint64, prefix string) {
		cfg := irtest.FleetConfig(1)
		cfg.Version = version
		r := &cfg.Listeners[0].VirtualHosts[0].Routes[0]
		r.Match.Path.Value = prefix
		r.Backends[0].Endpoints = []ir.Endpoint{{Address: "127.0.0.1", Port: uint32(bport), Cluster: "m"}}
		b, err := json.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		// A later mtime, whatever the file system's resolution.
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		_ = os.Chtimes(path, time.Now(), time.Now().Add(time.Duration(version)*time.Second))
	}
	write(1, "/")
	o, err := parseFlags([]string{"-config", path, "-address", "127.0.0.1", "-port-offset", strconv.Itoa(port - 80),
		"-watch", "20ms", "-drain-timeout", "1s", "-denied-endpoint-cidrs="}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr syncBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, o, io.Discard, &stderr) }()

	get := func() int {
		req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1:"+strconv.Itoa(port)+"/a", nil)
		req.Host = "r0.example.com"
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	waitFor := func(want int) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for get() != want {
			if time.Now().After(deadline) {
				t.Fatalf("never answered %d; log:\n%s", want, stderr.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitFor(http.StatusOK)
	write(2, "/b") // the route no longer matches /a
	waitFor(http.StatusNotFound)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("run did not return after its context ended")
	}
	var msgs []string
	for line := range strings.Lines(stderr.String()) {
		var rec struct{ Msg string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line not JSON: %q", line)
		}
		msgs = append(msgs, rec.Msg)
	}
	if diff := cmp.Diff([]string{"serving", "config reloaded", "shutting down"}, msgs); diff != "" {
		t.Errorf("log messages (-want +got):\n%s", diff)
	}
	// tests/bench/dataplane/run.sh reads reloads and their durations off these lines.
	if !regexp.MustCompile(`"msg":"config reloaded".*"took":"[0-9.]+[µm]?s"`).MatchString(stderr.String()) {
		t.Errorf("no reload line with its duration as run.sh reads it:\n%s", stderr.String())
	}
}

// syncBuffer is a bytes.Buffer the process's logger and the test may use at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
