package main

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/providers/aws/mototest"
	"github.com/fleetgate/fleetgate/tests/testbed"
)

// TestDemoLifecycle runs the demo as `make demo` does (its own binary, not under `go run`) until a
// Gateway serves, then ends it the ways a user does, and checks that nothing it started survives:
// no process of its tree (kube-apiserver, etcd, the operator, the operator's proxies, moto) and
// no listener on the API server's or the proxy's address. Ctrl-C and a closed terminal signal
// the demo's whole process group, as a terminal does; kill signals the demo alone.
func TestDemoLifecycle(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server per case; skipped in -short mode")
	}
	dir := t.TempDir()
	demo := filepath.Join(dir, "demo")
	build := exec.Command("go", "build", "-o", demo, "./tests/demo")
	build.Dir = testbed.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the demo: %v: %s", err, out)
	}
	operator, err := testbed.BuildOperator(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		sig   syscall.Signal
		group bool // sent to the process group, as a terminal does
		// within is how long the demo's tree may take to be gone: the 5s for a stop, more
		// for a kill, after which the operator's proxies drain on their parent-death SIGTERM.
		within time.Duration
		// exits is whether the demo exits by itself, with status 0.
		exits bool
	}{
		{name: "ctrl-c", sig: syscall.SIGINT, group: true, within: 5 * time.Second, exits: true},
		{name: "terminal-closed", sig: syscall.SIGHUP, group: true, within: 5 * time.Second, exits: true},
		{name: "kill", sig: syscall.SIGTERM, within: 5 * time.Second, exits: true},
		{name: "kill-9", sig: syscall.SIGKILL, within: 10 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := startDemo(t, demo, operator)
			tree := testbed.Descendants(run.pid)
			want := []string{"kube-apiserver", "etcd", "operator", "proxy"}
			if _, err := mototest.Find(); err == nil {
				want = append(want, "moto")
			}
			for _, want := range want {
				if !tree.Has(want) {
					t.Fatalf("the demo's process tree has no %s: %v", want, tree)
				}
			}
			t.Logf("tree before %s: %v", tc.sig, tree)
			target := run.pid
			if tc.group {
				target = -run.pid
			}
			start := time.Now()
			if err := syscall.Kill(target, tc.sig); err != nil {
				t.Fatal(err)
			}
			deadline := start.Add(tc.within)
			for {
				left := tree.Alive()
				listening := slices.DeleteFunc([]string{run.apiServer, run.proxy}, func(a string) bool { return !testbed.Listening(a) })
				if len(left) == 0 && len(listening) == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s after %s: still running: %v; still listening: %v", tc.sig, tc.within, left, listening)
				}
				time.Sleep(50 * time.Millisecond)
			}
			gone := time.Since(start)
			t.Logf("%s: the demo's %d processes and their listeners gone after %s", tc.sig, len(tree), gone.Round(time.Millisecond))
			err := <-run.exited
			if tc.exits && err != nil {
				t.Errorf("the demo exited with %v after %s, want status 0", err, tc.sig)
			}
		})
	}
}

type demoRun struct {
	pid              int
	exited           <-chan error
	apiServer, proxy string // host:port
}

var (
	apiServerLine = regexp.MustCompile(`API server (?:https://)?([0-9.:]+)/?, kubeconfig (/\S+/kubeconfig)`)
	programmed    = regexp.MustCompile(`Programmed=True at ([0-9.]+)`)
)

// startDemo starts the demo in --quick mode in its own process group and waits until it serves.
func startDemo(t *testing.T, demo, operator string) demoRun {
	t.Helper()
	cmd := exec.Command(demo, "--quick", "--operator", operator)
	cmd.Dir = testbed.RepoRoot()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	// A test that fails half-way, or is killed, takes the demo along.
	exited, err := testbed.StartTied(cmd, syscall.SIGKILL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	})
	run := demoRun{pid: cmd.Process.Pid, exited: exited}
	lines := bufio.NewScanner(out)
	var log strings.Builder
	for lines.Scan() {
		line := lines.Text()
		log.WriteString(line + "\n")
		if m := apiServerLine.FindStringSubmatch(line); m != nil {
			run.apiServer = m[1]
			// A killed demo cannot remove its own files.
			dir := filepath.Dir(m[2])
			t.Cleanup(func() { _ = os.RemoveAll(dir) })
		}
		if m := programmed.FindStringSubmatch(line); m != nil {
			run.proxy = net.JoinHostPort(m[1], "80")
		}
		if strings.Contains(line, "waiting for a signal") {
			// Keep draining its output, or the demo blocks on a full pipe.
			go func() {
				for lines.Scan() {
				}
			}()
			if run.apiServer == "" || run.proxy == "" {
				t.Fatalf("the demo's output named no API server or proxy address:\n%s", log.String())
			}
			return run
		}
	}
	t.Fatalf("the demo ended before serving: %v\n%s", <-exited, log.String())
	return run
}
