// Package tied starts child processes that do not outlive the process that started them, even
// when it is SIGKILLed: local-mode proxies, and the servers tests and the demo run.
//
// They get a parent-death signal (Pdeathsig). Linux sends it when the *thread* that forked the
// child exits, not the process, and Go ends a thread whose goroutine returns while locked to it:
// so every child is started from a goroutine locked to its own thread that stays until the child
// is gone.
//
// The signal is kept by the child's thread that asked for it, not by the process: a child that
// re-executes itself from another thread (a Go program's main goroutine need not be on its main
// thread; sysmon.Reexec does this) loses it, and so does a child whose handler misses it. A
// child that must not be missed is given a lifeline as well (StartWithLifeline): a pipe whose
// write end only this process holds. Its end of file comes when this process is gone, however
// it went, and stays: a child that looks late, or re-executed itself, still sees it.
package tied

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
)

// Start starts cmd so that it gets sig when this process dies, and returns a channel that
// receives cmd.Wait's result.
func Start(cmd *exec.Cmd, sig syscall.Signal) (<-chan error, error) {
	return start(cmd, sig, nil)
}

// StartWithLifeline is Start, and also hands the child the read end of a pipe whose write end
// only this process holds, the descriptor's number in the environment variable env: the child
// reads end of file from it once this process is gone. The write end is closed once the child
// has exited.
func StartWithLifeline(cmd *exec.Cmd, sig syscall.Signal, env string) (<-chan error, error) {
	r, w, err := os.Pipe() // both close-on-exec: no other child holds the write end
	if err != nil {
		return nil, fmt.Errorf("lifeline pipe: %w", err)
	}
	defer r.Close() // the child has its own copy once started
	fd := 3 + len(cmd.ExtraFiles)
	cmd.ExtraFiles = append(cmd.ExtraFiles, r)
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, env+"="+strconv.Itoa(fd))
	done, err := start(cmd, sig, w)
	if err != nil {
		w.Close()
		return nil, err
	}
	return done, nil
}

// start is Start; lifeline, when not nil, is closed once the child has exited.
func start(cmd *exec.Cmd, sig syscall.Signal, lifeline *os.File) (<-chan error, error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = sig
	started, done := make(chan error, 1), make(chan error, 1)
	go func() {
		// Never unlocked: the thread exits with this goroutine, once the child has.
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		err := cmd.Wait()
		if lifeline != nil {
			lifeline.Close() // held until now, also against its finalizer
		}
		done <- err
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return done, nil
}
