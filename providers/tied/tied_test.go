package tied

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
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

// TestLifelineOutlivesTheSignal: a parent (this test binary, run again) starts a child that
// ignores SIGTERM, standing for one whose parent-death signal was lost or missed, and is
// SIGKILLed. Started with a lifeline, the child reads its end of file and exits; started
// without, it is left running.
func TestLifelineOutlivesTheSignal(t *testing.T) {
	tests := []struct {
		mode     string
		wantGone bool
	}{
		{mode: "signal", wantGone: false},
		{mode: "lifeline", wantGone: true},
		{mode: "lifeline after another extra file", wantGone: true},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			parent := exec.Command(os.Args[0], "-test.run=^TestHelperParent$")
			parent.Env = append(os.Environ(), helperEnv+"="+tt.mode)
			out, err := parent.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := parent.Start(); err != nil {
				t.Fatal(err)
			}
			line, err := bufio.NewReader(out).ReadString('\n')
			if err != nil {
				_ = parent.Process.Kill()
				t.Fatalf("reading the child's pid: %v", err)
			}
			child, err := strconv.Atoi(strings.TrimSpace(line))
			if err != nil {
				t.Fatalf("child pid %q: %v", line, err)
			}
			t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) })
			// A child reading the wrong descriptor would be gone already.
			time.Sleep(100 * time.Millisecond)
			if alive(child) != nil {
				t.Fatal("the child is gone while its parent lives")
			}
			_ = parent.Process.Kill()
			_ = parent.Wait()
			gone := false
			for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline) && !gone; time.Sleep(20 * time.Millisecond) {
				gone = alive(child) != nil
			}
			if gone != tt.wantGone {
				t.Errorf("child gone 2s after its parent was SIGKILLed: %v, want %v", gone, tt.wantGone)
			}
		})
	}
}

const helperEnv = "TIED_TEST_PARENT"

// TestHelperParent is the parent of TestLifelineOutlivesTheSignal: it starts the child the way
// its mode says and waits to be killed.
func TestHelperParent(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		t.Skip("run by TestLifelineOutlivesTheSignal")
	}
	// The child ignores SIGTERM (so does cat, which inherits that), then prints its pid, and ends
	// at the lifeline's end of file, or never without one.
	cmd := exec.Command("sh", "-c", `trap "" TERM; echo $$; if [ -n "$LIFELINE" ]; then exec cat <&"$LIFELINE" >/dev/null; else exec sleep 60; fi`)
	cmd.Stdout = os.Stdout
	var err error
	if mode == "lifeline after another extra file" {
		devNull, err := os.Open(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
		cmd.ExtraFiles = []*os.File{devNull}
	}
	if mode != "signal" {
		_, err = StartWithLifeline(cmd, syscall.SIGTERM, "LIFELINE")
	} else {
		_, err = Start(cmd, syscall.SIGTERM)
	}
	if err != nil {
		t.Fatal(err)
	}
	select {}
}

// alive returns nil while the process runs: neither gone nor a zombie waiting for init.
func alive(pid int) error {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return err
	}
	s := string(stat)
	if fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]); len(fields) > 0 && fields[0] == "Z" {
		return fmt.Errorf("%d has exited", pid)
	}
	return nil
}
