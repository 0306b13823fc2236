// Package mototest starts a moto server (github.com/getmoto/moto) for tests of the AWS provider:
// the real aws-sdk-go-v2 clients talk to it over HTTP on loopback.
package mototest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/fleetgate/fleetgate/providers/tied"
)

// EnvServer names the moto_server executable; `make test` sets it to the one it installed.
const EnvServer = "FLEETGATE_MOTO_SERVER"

// Region is the region tests use.
const Region = "us-east-1"

// Server is a running moto server.
type Server struct {
	// URL is its endpoint, for config.WithBaseEndpoint: one endpoint serves every service.
	URL string
	cmd *exec.Cmd
	// exited is closed once cmd has been waited for, with exitErr what Wait said.
	exited  chan struct{}
	exitErr error
}

// Find returns the moto_server executable: $FLEETGATE_MOTO_SERVER, else bin/moto/bin/moto_server
// of the module, else the one on PATH.
func Find() (string, error) {
	if p := os.Getenv(EnvServer); p != "" {
		return p, nil
	}
	if root, err := moduleRoot(); err == nil {
		p := filepath.Join(root, "bin", "moto", "bin", "moto_server")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	p, err := exec.LookPath("moto_server")
	if err != nil {
		return "", fmt.Errorf("moto_server not found (run `make moto`, or set %s): %w", EnvServer, err)
	}
	return p, nil
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil && !strings.Contains(dir, "mototest") {
			if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.HasPrefix(string(b), "module github.com/fleetgate/fleetgate\n") {
				return dir, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no fleetgate go.mod above the working directory")
		}
		dir = parent
	}
}

// Start starts moto on a free loopback port and waits until it answers. Stop it with Stop.
func Start() (*Server, error) {
	bin, err := Find()
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	cmd := exec.Command(bin, "-H", "127.0.0.1", "-p", strconv.Itoa(port))
	if os.Getenv("FLEETGATE_MOTO_LOG") != "" {
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	}
	// moto dies with the test binary or demo, even a SIGKILLed one.
	waited, err := tied.Start(cmd, syscall.SIGKILL)
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	s := &Server{URL: fmt.Sprintf("http://127.0.0.1:%d", port), cmd: cmd, exited: make(chan struct{})}
	go func() {
		s.exitErr = <-waited
		close(s.exited)
	}()
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(s.URL + "/moto-api/")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		select {
		case <-s.exited:
			return nil, fmt.Errorf("moto at %s exited before it answered: %v", s.URL, s.exitErr)
		default:
		}
		if time.Now().After(deadline) {
			s.Stop()
			return nil, fmt.Errorf("moto at %s did not answer within 60s: %v", s.URL, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Stop kills the server.
func (s *Server) Stop() {
	_ = s.cmd.Process.Kill()
	<-s.exited
}

// Reset empties every backend and seeds moto's ID generator, so that IDs repeat across runs.
func (s *Server) Reset(tb testing.TB, seed int) {
	tb.Helper()
	for _, path := range []string{"/moto-api/reset", fmt.Sprintf("/moto-api/seed?a=%d", seed)} {
		resp, err := http.Post(s.URL+path, "application/json", nil)
		if err != nil {
			tb.Fatalf("moto %s: %v", path, err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			tb.Fatalf("moto %s: %s", path, resp.Status)
		}
	}
}

// Config is an SDK config for endpoint (s.URL, or a fault shim in front of it) with static test
// credentials and one attempt per call, so that tests see every failure.
func Config(ctx context.Context, endpoint string) (aws.Config, error) {
	return config.LoadDefaultConfig(ctx,
		config.WithRegion(Region),
		config.WithBaseEndpoint(endpoint),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("testing", "testing", "")),
		// API errors are never retried (tests see each fault they inject), but a connection moto
		// reset under load is: the SDK reads it as "connection reset" or "use of closed network
		// connection", and one such reset failed a clean-clone CI run.
		config.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts, o.MaxBackoff = 3, 50*time.Millisecond
				o.Retryables = []retry.IsErrorRetryable{retry.RetryableConnectionError{}}
				o.RateLimiter = ratelimit.None
			})
		}),
	)
}

// Main runs a test package's tests with a moto server in *srv: it starts one, runs m, stops it.
// Without moto_server the tests that need it skip (Require), except in CI ($CI set), where
// they fail.
func Main(m *testing.M, srv **Server) int {
	s, err := Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "mototest: %v\n", err)
		if os.Getenv("CI") != "" {
			return 1
		}
	} else {
		*srv = s
		defer s.Stop()
	}
	return m.Run()
}

// Require skips tb when no moto server runs (only possible outside CI, see Main).
func Require(tb testing.TB, s *Server) *Server {
	tb.Helper()
	if s == nil {
		tb.Skip("moto_server is not installed: run `make moto` (CI fails instead of skipping)")
	}
	return s
}

// ForTest starts a moto server of tb's own, stopped when tb ends. Without moto_server it skips tb,
// except in CI ($CI set), where it fails it.
func ForTest(tb testing.TB) *Server {
	tb.Helper()
	s, err := Start()
	if err != nil {
		if os.Getenv("CI") != "" {
			tb.Fatalf("mototest: %v", err)
		}
		tb.Skipf("mototest: %v (run `make moto`; CI fails instead of skipping)", err)
	}
	tb.Cleanup(s.Stop)
	return s
}
