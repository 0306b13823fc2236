package node

import (
	"fmt"
	"os/exec"
	"strings"
)

// netnsPrefix names every network namespace this package creates, so a crashed run's leftovers
// can be found and removed by the next one.
const netnsPrefix = "fgconf-"

// sandbox is one pod's network namespace: a veth pair whose inner end holds the pod IP. echo-basic
// binds 0.0.0.0 on fixed ports, so pods need their own namespaces to not collide.
type sandbox struct {
	netns string
	veth  string
	ip    string
}

func ipCmd(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

// newSandbox creates netns fgconf-<id> with the pod IP, routed from the host through a veth pair;
// replies go to hostIP (an address on lo), which the host answers ARP for on the veth.
func newSandbox(id int, ip, hostIP string) (*sandbox, error) {
	s := &sandbox{netns: fmt.Sprintf("%s%d", netnsPrefix, id), veth: fmt.Sprintf("fgc%d", id), ip: ip}
	steps := [][]string{
		{"netns", "add", s.netns},
		{"link", "add", s.veth, "type", "veth", "peer", "name", "eth0", "netns", s.netns},
		{"-n", s.netns, "link", "set", "lo", "up"},
		{"-n", s.netns, "addr", "add", ip + "/32", "dev", "eth0"},
		{"-n", s.netns, "link", "set", "eth0", "up"},
		{"-n", s.netns, "route", "add", "default", "dev", "eth0"},
		{"link", "set", s.veth, "up"},
		{"route", "replace", ip + "/32", "dev", s.veth, "src", hostIP},
	}
	for _, args := range steps {
		if err := ipCmd(args...); err != nil {
			s.remove()
			return nil, err
		}
	}
	return s, nil
}

// command runs name inside the sandbox.
func (s *sandbox) command(name string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", s.netns, name}, args...)...)
}

// remove deletes the namespace; its veth pair and the host route go with it.
func (s *sandbox) remove() {
	_ = ipCmd("netns", "delete", s.netns)
}

// removeStaleSandboxes deletes namespaces an earlier, crashed run of this package left behind.
func removeStaleSandboxes() {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return
	}
	for line := range strings.SplitSeq(string(out), "\n") {
		if name, _, _ := strings.Cut(line, " "); strings.HasPrefix(name, netnsPrefix) {
			_ = ipCmd("netns", "delete", name)
		}
	}
}
