package proxyproc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestMainExitCodes runs Main through each way a process ends, SIGTERM included (sent to the test
// process itself, which Main's signal context catches).
func TestMainExitCodes(t *testing.T) {
	// Main would otherwise restart the test binary for sysmon (sysmon.Reexec).
	t.Setenv("GODEBUG", "schedtrace=0")
	errBoom := errors.New("boom")
	tests := []struct {
		name       string
		parseErr   error
		run        func(ctx context.Context) error
		wantCode   int
		wantStderr string
	}{
		{name: "served", run: func(context.Context) error { return nil }, wantCode: 0},
		{name: "help", parseErr: flag.ErrHelp, wantCode: 0},
		{name: "bad command line", parseErr: errors.New("-x is required"), wantCode: 2, wantStderr: "px: -x is required\n"},
		{name: "run fails", run: func(context.Context) error { return errBoom }, wantCode: 1, wantStderr: "px: boom\n"},
		{name: "SIGTERM ends the context", run: func(ctx context.Context) error {
			if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
				return err
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(5 * time.Second):
				return errors.New("context not cancelled by SIGTERM")
			}
		}, wantCode: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			parse := func([]string, io.Writer) (string, error) { return "opts", tt.parseErr }
			run := func(ctx context.Context, o string, _, _ io.Writer) error {
				if o != "opts" {
					t.Errorf("run got options %q", o)
				}
				return tt.run(ctx)
			}
			code := Main("px", nil, io.Discard, &stderr, parse, run)
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d", code, tt.wantCode)
			}
			if diff := cmp.Diff(tt.wantStderr, stderr.String()); diff != "" {
				t.Errorf("stderr (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMainLifeline: the end of file of the lifeline named by LifelineEnv ends run's context,
// whether the parent went while the proxy ran or before it looked; an open lifeline leaves it
// alone; a lifeline that is not an open descriptor stops the proxy before it starts.
func TestMainLifeline(t *testing.T) {
	t.Setenv("GODEBUG", "schedtrace=0") // as in TestMainExitCodes
	tests := []struct {
		name string
		// fd is LifelineEnv's value; "pipe" stands for the read end of a fresh pipe.
		fd string
		// closeBefore closes the write end before Main, closeDuring once run has started.
		closeBefore, closeDuring bool
		wantEnded                bool
		wantCode                 int
		wantStderr               string
	}{
		{name: "parent gone while running", fd: "pipe", closeDuring: true, wantEnded: true,
			wantStderr: "px: stopped: the process that started this one is gone (its lifeline closed)\n"},
		{name: "parent gone before the proxy looked", fd: "pipe", closeBefore: true, wantEnded: true,
			wantStderr: "px: stopped: the process that started this one is gone (its lifeline closed)\n"},
		{name: "parent alive", fd: "pipe", wantEnded: false},
		{name: "not a number", fd: "three", wantCode: 2, wantStderr: `px: FLEETGATE_LIFELINE_FD="three" is not a file descriptor above stderr` + "\n"},
		{name: "stdin", fd: "0", wantCode: 2, wantStderr: `px: FLEETGATE_LIFELINE_FD="0" is not a file descriptor above stderr` + "\n"},
		{name: "not open", fd: "987654", wantCode: 2, wantStderr: "px: lifeline FLEETGATE_LIFELINE_FD=987654: bad file descriptor\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fd := tt.fd
			var w *os.File
			if fd == "pipe" {
				r, pw, err := os.Pipe()
				if err != nil {
					t.Fatal(err)
				}
				w = pw
				defer w.Close()
				// Main owns (and closes) the descriptor it is given, as a started process would.
				n, err := syscall.Dup(int(r.Fd()))
				if err != nil {
					t.Fatal(err)
				}
				r.Close()
				fd = strconv.Itoa(n)
				if tt.closeBefore {
					w.Close()
				}
			}
			t.Setenv(LifelineEnv, fd)
			var stderr bytes.Buffer
			ended := false
			parse := func([]string, io.Writer) (string, error) { return "opts", nil }
			run := func(ctx context.Context, _ string, _, _ io.Writer) error {
				if tt.closeDuring {
					w.Close()
				}
				select {
				case <-ctx.Done():
					ended = true
				case <-time.After(time.Second):
				}
				return nil
			}
			code := Main("px", nil, io.Discard, &stderr, parse, run)
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d", code, tt.wantCode)
			}
			if ended != tt.wantEnded {
				t.Errorf("context ended: %v, want %v", ended, tt.wantEnded)
			}
			if diff := cmp.Diff(tt.wantStderr, stderr.String()); diff != "" {
				t.Errorf("stderr (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLogger: JSON lines through zap, V(n) shown up to the verbosity, errors always.
func TestLogger(t *testing.T) {
	tests := []struct {
		verbosity int
		want      []string
	}{
		{0, []string{"info:v0", "error:failed"}},
		{1, []string{"info:v0", "debug:v1", "error:failed"}},
		{2, []string{"info:v0", "debug:v1", "Level(-2):v2", "error:failed"}},
	}
	for _, tt := range tests {
		var buf bytes.Buffer
		log, sync := newLogger(&buf, tt.verbosity)
		log.Info("v0", "k", "v")
		log.V(1).Info("v1")
		log.V(2).Info("v2")
		log.Error(errors.New("x"), "failed")
		if err := sync(); err != nil {
			t.Fatal(err)
		}
		var got []string
		for line := range strings.Lines(buf.String()) {
			var rec struct{ Level, Msg string }
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatalf("verbosity %d: not a JSON line: %q", tt.verbosity, line)
			}
			got = append(got, rec.Level+":"+rec.Msg)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("verbosity %d (-want +got):\n%s", tt.verbosity, diff)
		}
	}
}

// TestProcess starts a process from flags and checks what it hands the proxy and serves: the
// metrics endpoint on a real socket with the caller's routes, and the access log on stdout.
func TestProcess(t *testing.T) {
	var f Flags
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	f.Register(fs)
	if err := fs.Parse([]string{"-metrics-address", "127.0.0.1:0", "-access-log", "-address", "127.0.0.9", "-drain-timeout", "2s"}); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	p := Start(f, &stdout, &stderr)
	defer p.Close()
	stop := p.ServeMetrics(func(mux *http.ServeMux) {
		mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	})
	defer stop()
	if p.metricsAddr == nil {
		t.Fatalf("metrics endpoint not listening: %s", stderr.String())
	}
	for path, want := range map[string]string{"/metrics": "go_goroutines", "/healthz": "ok"} {
		resp, err := http.Get("http://" + p.metricsAddr.String() + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			t.Errorf("GET %s: %d, body without %q", path, resp.StatusCode, want)
		}
	}
	o := p.ProxyOptions()
	got := struct {
		Address        string
		Drain, UpIdle  time.Duration
		MaxConnections int
		Registry, Acc  bool
	}{o.Address, o.DrainTimeout, o.UpstreamIdleTimeout, o.MaxConnectionsPerListener, o.Registry == p.Registry, o.AccessLog.GetSink() != nil}
	want := got
	want.Address, want.Drain, want.UpIdle, want.MaxConnections, want.Registry, want.Acc = "127.0.0.9", 2*time.Second, 4*time.Second, 10000, true, true
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("proxy options (-want +got):\n%s", diff)
	}
	o.AccessLog.Info("request", "path", "/x")
	p.Close()
	if !strings.Contains(stdout.String(), `"msg":"request"`) || !strings.Contains(stdout.String(), `"path":"/x"`) {
		t.Errorf("access log on stdout: %q", stdout.String())
	}
}
