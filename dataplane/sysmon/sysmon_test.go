package sysmon

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestEnviron(t *testing.T) {
	for _, tc := range []struct {
		name   string
		env    []string
		want   []string
		wantOK bool
	}{
		{"no GODEBUG", []string{"A=1"}, []string{"A=1", "GODEBUG=" + Setting}, true},
		{"empty GODEBUG", []string{"GODEBUG=", "A=1"}, []string{"A=1", "GODEBUG=" + Setting}, true},
		{"other settings kept", []string{"GODEBUG=gctrace=1,madvdontneed=1"}, []string{"GODEBUG=gctrace=1,madvdontneed=1," + Setting}, true},
		{"already set", []string{"A=1", "GODEBUG=" + Setting}, []string{"A=1", "GODEBUG=" + Setting}, false},
		{"explicit opt-out", []string{"GODEBUG=gctrace=1, schedtrace=0"}, []string{"GODEBUG=gctrace=1, schedtrace=0"}, false},
		{"similar name is not schedtrace", []string{"GODEBUG=xschedtrace=1"}, []string{"GODEBUG=xschedtrace=1," + Setting}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Environ(tc.env)
			if ok != tc.wantOK {
				t.Errorf("ok = %v, want %v", ok, tc.wantOK)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("env (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReexec runs this test binary as a program calling Reexec: the process must come back as
// itself (same PID and arguments) with the setting in GODEBUG, earlier settings kept, exactly once.
func TestReexec(t *testing.T) {
	if os.Getenv("SYSMON_TEST_CHILD") == "1" {
		starts, _ := strconv.Atoi(os.Getenv("SYSMON_TEST_STARTS"))
		os.Setenv("SYSMON_TEST_STARTS", strconv.Itoa(starts+1))
		if err := Reexec(); err != nil {
			t.Fatal(err)
		}
		os.Stdout.WriteString("pid=" + strconv.Itoa(os.Getpid()) + " starts=" + os.Getenv("SYSMON_TEST_STARTS") + " godebug=" + os.Getenv("GODEBUG") + "\n")
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestReexec$", "-test.v")
	cmd.Env = append(os.Environ(), "SYSMON_TEST_CHILD=1", "SYSMON_TEST_STARTS=0", "GODEBUG=gctrace=0")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	line := ""
	for l := range strings.Lines(string(out)) {
		if strings.HasPrefix(l, "pid=") {
			line = strings.TrimSpace(l)
		}
	}
	want := "pid=" + strconv.Itoa(cmd.Process.Pid) + " starts=2 godebug=gctrace=0," + Setting
	if line != want {
		t.Errorf("child printed %q, want %q; output:\n%s", line, want, out)
	}
}
