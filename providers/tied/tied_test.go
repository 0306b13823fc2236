package tied

import (
	"os/exec"
	"syscall"
	"testing"
)

// TestStart: the child runs with the parent-death signal set and its Wait result arrives.
func TestStart(t *testing.T) {
	cmd := exec.Command("sh", "-c", "exit 3")
	done, err := Start(cmd, syscall.SIGKILL)
	if err != nil {
		t.Fatal(err)
	}
	if cmd.SysProcAttr.Pdeathsig != syscall.SIGKILL {
		t.Errorf("Pdeathsig %v, want SIGKILL", cmd.SysProcAttr.Pdeathsig)
	}
	var exit *exec.ExitError
	if err := <-done; err == nil || !asExit(err, &exit) || exit.ExitCode() != 3 {
		t.Errorf("Wait = %v, want exit status 3", err)
	}
	if _, err := Start(exec.Command("/nonexistent/binary"), syscall.SIGKILL); err == nil {
		t.Error("starting a missing binary succeeded")
	}
}

func asExit(err error, target **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	*target = e
	return ok
}
