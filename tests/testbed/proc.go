package testbed

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"

	"github.com/fleetgate/fleetgate/providers/tied"
)

// StartTied starts cmd so that it gets sig when this process dies (tied.Start): the test bed's
// processes must not outlive the test binary or demo, even a SIGKILLed one.
func StartTied(cmd *exec.Cmd, sig syscall.Signal) (<-chan error, error) { return tied.Start(cmd, sig) }

// thread runs functions on one locked OS thread that lives until close: envtest starts
// kube-apiserver and etcd itself, so the thread that forks them must outlive them.
type thread struct{ fns chan func() }

func newThread() *thread {
	t := &thread{fns: make(chan func())}
	go func() {
		runtime.LockOSThread() // never unlocked, see above
		for f := range t.fns {
			f()
		}
	}()
	return t
}

func (t *thread) do(f func()) {
	done := make(chan struct{})
	t.fns <- func() { f(); close(done) }
	<-done
}

func (t *thread) close() { close(t.fns) }

// tiedAssets makes dir a binary assets directory for envtest whose etcd and kube-apiserver are
// the ones in AssetsDir, started through setpriv(1) with a parent-death SIGKILL (envtest sets
// the processes' attributes itself, so the signal cannot be asked for through it). The inner
// shell checks its parent after the signal is armed: a parent that died before cannot send it.
// Without setpriv it returns AssetsDir, and the servers are not tied.
func tiedAssets(dir string) (string, error) {
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		return AssetsDir(), nil //nolint:nilerr // an untied server is still a server
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("assets dir: %w", err)
	}
	ppid := strconv.Itoa(os.Getpid())
	for _, bin := range []string{"etcd", "kube-apiserver"} {
		script := fmt.Sprintf("#!/bin/sh\nexec %s --pdeathsig KILL -- /bin/sh -c '[ \"$PPID\" = %s ] || exit 1; exec \"$0\" \"$@\"' %s \"$@\"\n",
			setpriv, ppid, filepath.Join(AssetsDir(), bin))
		if err := os.WriteFile(filepath.Join(dir, bin), []byte(script), 0o700); err != nil { //nolint:gosec // an executable script
			return "", fmt.Errorf("writing the %s wrapper: %w", bin, err)
		}
	}
	return dir, nil
}
