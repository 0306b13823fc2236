package integration

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/fleetgate/fleetgate/tests/testbed"
)

// TestLocalProxiesDieWithOperator: the operator binary (local mode) with one Gateway is SIGKILLed
// FLEETGATE_ORPHAN_KILLS times (default 12), at moments that take turns: as soon as its proxy
// shows (while the proxy starts and re-executes itself), a little later, once it serves, and at
// a random moment of the operator's own start (before, while or after it forks the proxy). Then
// no proxy of an earlier operator may be left once its drain timeout (5s) is over: each must have
// gone with its operator, whether by its parent-death signal or by its lifeline.
func TestLocalProxiesDieWithOperator(t *testing.T) {
	kills := killCount(t, "FLEETGATE_ORPHAN_KILLS", 12)
	e := newTrafficEnv(t)
	e.gateway(gwv1.Listener{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType})
	const match = "dataplane --gateway hub/default/gw"
	// ours are the proxies of this test's operators: their credentials are in its state directory.
	ours := func(ppid int, cmdline string) bool {
		return strings.Contains(cmdline, match) && strings.Contains(cmdline, e.stateDir)
	}
	t.Cleanup(func() {
		// Whatever this test leaves, it must not leave to the next.
		pids, _ := testbed.Processes(ours)
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	proxy := func(timeout time.Duration) bool {
		for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			if pids, err := e.op.Children(match); err == nil && len(pids) > 0 {
				return true
			}
		}
		return false
	}
	moments := map[int]int{}
	for i := range kills {
		switch moment := i % 4; moment {
		case 0: // as soon as the proxy shows
			if !proxy(30 * time.Second) {
				t.Fatalf("kill %d: the operator started no proxy within 30s", i)
			}
		case 1: // while it starts
			if !proxy(30 * time.Second) {
				t.Fatalf("kill %d: the operator started no proxy within 30s", i)
			}
			time.Sleep(rand.N(300 * time.Millisecond))
		case 2: // once it serves
			e.programmed(metav1.ConditionTrue, 30*time.Second)
			time.Sleep(rand.N(time.Second))
		case 3: // any moment of the operator's start
			time.Sleep(rand.N(3 * time.Second))
		}
		moments[i%4]++
		e.op.Kill()
		e.startOperator()
	}
	// The proxies of the killed operators drain for up to 5s, then must be gone.
	var left []int
	testbed.Eventually(t, 20*time.Second, func() error {
		pids, err := testbed.Processes(ours)
		if err != nil {
			return err
		}
		mine, _ := e.op.Children(match)
		left = left[:0]
		for _, pid := range pids {
			if !slices.Contains(mine, pid) {
				left = append(left, pid)
			}
		}
		if len(left) > 0 {
			return fmt.Errorf("%d proxies of killed operators still run: %v", len(left), left)
		}
		return nil
	})
	t.Logf("%d kills (at once %d, while starting %d, serving %d, during the operator's start %d): no proxy outlived its operator",
		kills, moments[0], moments[1], moments[2], moments[3])
}
