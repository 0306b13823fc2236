// Package tied starts child processes that do not outlive the process that started them, even
// when it is SIGKILLed: local-mode proxies, and the servers tests and the demo run.
//
// They get a parent-death signal (Pdeathsig). Linux sends it when the *thread* that forked the
// child exits, not the process, and Go ends a thread whose goroutine returns while locked to it:
// so every child is started from a goroutine locked to its own thread that stays until the child
// is gone.
package tied

import (
	"os/exec"
	"runtime"
	"syscall"
)

// Start starts cmd so that it gets sig when this process dies, and returns a channel that
// receives cmd.Wait's result.
func Start(cmd *exec.Cmd, sig syscall.Signal) (<-chan error, error) {
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
		done <- cmd.Wait()
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return done, nil
}
