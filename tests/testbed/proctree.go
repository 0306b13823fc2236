package testbed

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Listening reports whether something accepts TCP connections on addr (host:port).
func Listening(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}

// Proc is one process, told apart from a later one with its PID by its start time.
type Proc struct {
	PID   int
	start string
	// Role is what the process is: kube-apiserver, etcd, operator, proxy, moto, or its program's name.
	Role string
}

// Procs is a process tree, as Descendants found it.
type Procs []Proc

// Has reports whether a process of the role is in the tree.
func (tr Procs) Has(role string) bool {
	for _, p := range tr {
		if p.Role == role {
			return true
		}
	}
	return false
}

// Alive returns the processes of tr still running; a zombie has ended.
func (tr Procs) Alive() Procs {
	var out Procs
	for _, p := range tr {
		if st, err := readStat(p.PID); err == nil && st.start == p.start && st.state != "Z" {
			out = append(out, p)
		}
	}
	return out
}

func (tr Procs) String() string {
	var parts []string
	for _, p := range tr {
		parts = append(parts, fmt.Sprintf("%s(%d)", p.Role, p.PID))
	}
	return strings.Join(parts, " ")
}

// Descendants lists every process under pid, and pid itself, from /proc.
func Descendants(pid int) Procs {
	children := map[int][]int{}
	stats := map[int]stat{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := readStat(n)
		if err != nil {
			continue
		}
		stats[n] = st
		children[st.ppid] = append(children[st.ppid], n)
	}
	var tree Procs
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if st, ok := stats[p]; ok {
			tree = append(tree, Proc{PID: p, start: st.start, Role: role(p)})
		}
		queue = append(queue, children[p]...)
	}
	return tree
}

// role names a process of the test bed's from its command line.
func role(pid int) string {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(raw) == 0 {
		return "?"
	}
	args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
	base := filepath.Base(args[0])
	switch {
	case base == "fleetgate" && len(args) > 1 && args[1] == "dataplane":
		return "proxy"
	case base == "fleetgate":
		return "operator"
	case strings.Contains(strings.Join(args, " "), "moto_server"):
		return "moto"
	}
	return base
}

type stat struct {
	ppid         int
	state, start string
}

// readStat reads a process's parent, state and start time from /proc/pid/stat.
func readStat(pid int) (stat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return stat{}, err
	}
	// The command may hold spaces and parentheses; the fields follow the last ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return stat{}, errors.New("malformed stat")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return stat{}, errors.New("short stat")
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return stat{}, err
	}
	return stat{ppid: ppid, state: f[0], start: f[19]}, nil // fields 3, 4 and 22 of proc(5)
}
