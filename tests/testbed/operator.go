package testbed

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// BuildOperator builds the fleetgate binary from this checkout into dir and returns its path.
func BuildOperator(dir string) (string, error) {
	bin := filepath.Join(dir, "fleetgate")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = RepoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building fleetgate: %w: %s", err, out)
	}
	return bin, nil
}

// Operator is a running fleetgate process in local mode.
type Operator struct {
	cmd  *exec.Cmd
	done chan error
	// Log is the file the operator logs to.
	Log string
}

// StartOperator runs binary in local mode against the cluster, with its state (proxy credentials
// and logs) under stateDir and its log in stateDir/operator.log.
func StartOperator(binary string, c *Cluster, stateDir string, extraArgs ...string) (*Operator, error) {
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return nil, err
	}
	logPath := filepath.Join(stateDir, "operator.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	args := append([]string{
		"--kubeconfig", c.KubeconfigPath,
		"--leader-elect=false",
		"--metrics-bind-address=127.0.0.1:0",
		"--health-probe-bind-address=127.0.0.1:0",
		"--log-format=console",
		"--local-mode",
		"--xds-address=127.0.0.1:0",
		"--state-dir", stateDir,
	}, extraArgs...)
	// FLEETGATE_PPROF=host:port exposes the operator's profiles and FLEETGATE_METRICS=host:port
	// its metrics at a known address, for benchmarks.
	if addr := os.Getenv("FLEETGATE_PPROF"); addr != "" {
		args = append(args, "--pprof-bind-address="+addr)
	}
	if addr := os.Getenv("FLEETGATE_METRICS"); addr != "" {
		args = append(args, "--metrics-bind-address="+addr)
	}
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Its own process group: a Ctrl-C in a terminal reaches only the demo or test, which stops
	// the operator with one SIGTERM (Stop). A second signal, as Ctrl-C would add, makes the
	// operator exit at once, without stopping its proxies. Killed with us; its proxies die with
	// it by their own parent-death signal.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	waited, err := StartTied(cmd, syscall.SIGKILL)
	if err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting operator: %w", err)
	}
	o := &Operator{cmd: cmd, done: make(chan error, 1), Log: logPath}
	go func() {
		o.done <- <-waited
		logFile.Close()
	}()
	return o, nil
}

// Stop asks the operator to shut down gracefully (its proxies drain with it) and waits.
func (o *Operator) Stop() error {
	_ = o.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-o.done:
		var exit *exec.ExitError
		if err != nil && (!errors.As(err, &exit) || exit.Exited()) {
			return fmt.Errorf("operator exited: %w; its log ends:\n%s", err, tail(o.Log, 20))
		}
		return nil
	case <-time.After(60 * time.Second):
		_ = o.cmd.Process.Kill()
		return errors.New("operator did not stop within 60s; killed")
	}
}

// Kill ends the operator at once, as a crash would.
func (o *Operator) Kill() {
	_ = o.cmd.Process.Kill()
	<-o.done //nolint:errcheck // the error is the kill's own
}

// KillChildren SIGKILLs the operator's own child processes (its local proxies) whose command line
// contains match, as a crash would, and returns how many it killed: never another test's processes.
func (o *Operator) KillChildren(match string) (int, error) {
	pids, err := o.Children(match)
	killed := 0
	for _, pid := range pids {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			return killed, fmt.Errorf("killing %d: %w", pid, err)
		}
		killed++
	}
	return killed, err
}

// Children returns the pids of the operator's own child processes whose command line contains
// match.
func (o *Operator) Children(match string) ([]int, error) {
	return Processes(func(ppid int, cmdline string) bool {
		return ppid == o.cmd.Process.Pid && strings.Contains(cmdline, match)
	})
}

// Processes returns the pids of the live processes (not zombies) for which keep, given the
// parent's pid and the command line (arguments joined by spaces), is true.
func Processes(keep func(ppid int, cmdline string) bool) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("listing processes: %w", err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err1 := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		cmdline, err2 := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err1 != nil || err2 != nil {
			continue // gone meanwhile
		}
		// stat: pid (comm) state ppid …; comm may hold spaces and parentheses, so read after the last ')'.
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) < 2 || fields[0] == "Z" {
			continue
		}
		ppid, err := strconv.Atoi(fields[1])
		if err != nil || !keep(ppid, strings.ReplaceAll(string(cmdline), "\x00", " ")) {
			continue
		}
		pids = append(pids, pid)
	}
	return pids, nil
}

// tail returns the last n lines of the file at path (what it says when it cannot be read).
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
