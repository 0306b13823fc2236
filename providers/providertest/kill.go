package providertest

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// KillPlan says where KillOnce kills its child: Delay after the N-th line the child announces
// that is Op or starts with Op and a space.
type KillPlan struct {
	// Env is the child's whole environment; its TestMain recognizes it and runs the child's main.
	Env   []string
	Op    string
	N     int
	Delay time.Duration
}

// KillOnce runs this test binary again as a child (with no test selected: the child is its
// TestMain), which announces what it does one line at a time on stdout, SIGKILLs it as p says and
// returns the last line it announced before the signal landed ("" if none).
func KillOnce(t testing.TB, p KillPlan) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "-test.run=^$")
	cmd.Env = p.Env
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			lines <- s.Text()
		}
	}()
	last, seen := "", 0
	for seen < p.N {
		l, ok := <-lines
		if !ok {
			t.Fatalf("the kill-test child exited by itself: %v", cmd.Wait())
		}
		if l == p.Op || strings.HasPrefix(l, p.Op+" ") {
			seen++
		}
		last = l
	}
	timer := time.NewTimer(p.Delay)
wait:
	for {
		select {
		case l := <-lines:
			last = l
		case <-timer.C:
			break wait
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for l := range lines {
		last = l // announced before the signal landed
	}
	_ = cmd.Wait() // killed: its exit status says only that
	return last
}
