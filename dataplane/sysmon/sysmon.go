// Package sysmon keeps the Go runtime's system monitor thread from pre-empting a proxy's one core
// thousands of times a second.
//
// The monitor (sysmon) sleeps deeply while every P is idle. The first system call after that wakes
// it, and it then polls at 20 µs intervals, backing off only after 1 ms of them. A proxy at half
// load goes idle between bursts of requests thousands of times a second, so sysmon kept waking up
// (~2,400 times a second at 28k rps) and, sharing the proxy's one core, each wake-up pre-empted the
// thread serving requests: 11k involuntary context switches in 5 s, and a p99 ~0.3 ms higher than
// nginx's. With GODEBUG's schedtrace set, sysmon never sleeps deeply and instead stays at its
// 10 ms interval (~100 wake-ups a second, 30× fewer pre-emptions).
//
// The runtime reads GODEBUG once, at start, and //go:debug does not accept schedtrace, so Reexec
// restarts the program with the setting. Its period is the longest possible (2³¹−1 ms): the
// scheduler line it prints comes once every 24.8 days of the host's uptime, and in a crash report.
package sysmon

import (
	"fmt"
	"os"
	"strings"
	"syscall"
)

// Setting is what Reexec adds to GODEBUG.
const Setting = "schedtrace=2147483647"

// Reexec replaces the process with a fresh start of the same program and arguments, Setting added
// to GODEBUG. It does nothing when GODEBUG already sets schedtrace, which ends the loop after the
// re-exec and lets an explicit GODEBUG=schedtrace=0 opt out. It returns only if it does nothing or
// the exec fails, in which case the program can run on as it is. Linux keeps a parent-death
// signal with the thread that asked for it, and the main goroutine need not be on the main
// thread by now: a restart from another one drops the signal, which is why a local proxy has a
// lifeline too (proxyproc.LifelineEnv).
func Reexec() error {
	env, ok := Environ(os.Environ())
	if !ok {
		return nil
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding own executable to restart with GODEBUG=%s: %w", Setting, err)
	}
	if err := syscall.Exec(exe, os.Args, env); err != nil {
		return fmt.Errorf("restarting %s with GODEBUG=%s: %w", exe, Setting, err)
	}
	return nil
}

// Environ returns env with Setting added to its GODEBUG, and false when GODEBUG sets schedtrace
// already.
func Environ(env []string) ([]string, bool) {
	out := make([]string, 0, len(env)+1)
	godebug := Setting
	for _, kv := range env {
		v, ok := strings.CutPrefix(kv, "GODEBUG=")
		if !ok {
			out = append(out, kv)
			continue
		}
		for item := range strings.SplitSeq(v, ",") {
			if strings.HasPrefix(strings.TrimSpace(item), "schedtrace=") {
				return env, false
			}
		}
		if v != "" {
			godebug = v + "," + Setting
		}
	}
	return append(out, "GODEBUG="+godebug), true
}
