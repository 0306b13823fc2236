package testbed

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// What a node leaves on the machine, and how a sweep removes it after a killed run.

// foreignRuntime refuses a machine where a containerd or kubelet that is not a test node's runs:
// the sweep would take its state.
func foreignRuntime(root string) error {
	mine := nodeProcesses(root)
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil {
			continue
		}
		r := role(pid)
		if (r == "containerd" || r == "kubelet") && !slices.ContainsFunc(mine, func(p Proc) bool { return p.PID == pid }) {
			return fmt.Errorf("a %s (pid %d) that is not a test node's runs here: no test node beside it", r, pid)
		}
	}
	return nil
}

// nodeProcesses are the processes a node started: those whose arguments name its root (its
// daemons and containerd's shims) and those in the kubelet's cgroups (the containers).
func nodeProcesses(root string) Procs {
	var out Procs
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil || pid == os.Getpid() {
			continue
		}
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || len(raw) == 0 {
			continue // gone, or a kernel thread
		}
		cg, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
		if strings.Contains(string(raw), root+"/") || strings.Contains(string(cg), ":/kubepods") {
			st, err := readStat(pid)
			if err != nil || st.state == "Z" {
				continue
			}
			out = append(out, Proc{PID: pid, start: st.start, Role: role(pid)})
		}
	}
	return out
}

// NodeLeftovers lists what a node leaves on the machine when it is not stopped (or swept):
// processes, mounts, network namespaces, the bridge, packet filter tables and chains, cgroups,
// directories, and kernel settings that differ from sysctls (ReadNodeSysctls before the node
// started). Empty means the machine is as before.
func NodeLeftovers(sysctls map[string]string) []string {
	root := nodeRoot()
	var out []string
	for _, p := range nodeProcesses(root) {
		out = append(out, fmt.Sprintf("process %s(%d)", p.Role, p.PID))
	}
	for _, m := range nodeMounts(root) {
		out = append(out, "mount "+m)
	}
	netns, _ := filepath.Glob("/run/netns/cni-*")
	for _, ns := range netns {
		out = append(out, "netns "+ns)
	}
	if _, err := os.Stat("/sys/class/net/" + nodeBridge); err == nil {
		out = append(out, "link "+nodeBridge)
	}
	tables, chains, _ := packetFilter()
	for _, t := range tables {
		out = append(out, "nft table "+t)
	}
	for _, c := range chains {
		out = append(out, "iptables chain "+c.String())
	}
	for _, cg := range kubeCgroups() {
		out = append(out, "cgroup "+cg)
	}
	for _, d := range append(nodeGlobalDirs(), root, root+"-logs") {
		if _, err := os.Lstat(d); err == nil {
			out = append(out, "dir "+d)
		}
	}
	now := ReadNodeSysctls()
	for _, s := range nodeSysctls() {
		if now[s] != sysctls[s] {
			out = append(out, fmt.Sprintf("sysctl %s=%s (was %s)", s, now[s], sysctls[s]))
		}
	}
	return out
}

// ReadNodeSysctls reads the kernel settings a node changes.
func ReadNodeSysctls() map[string]string {
	out := map[string]string{}
	for _, s := range nodeSysctls() {
		if v, err := os.ReadFile(filepath.Join("/proc/sys", s)); err == nil {
			out[s] = strings.TrimSpace(string(v))
		}
	}
	return out
}

// sweepNode removes everything a node may have left, in dependency order: processes (so that
// nothing recreates the rest), mounts, network namespaces, the bridge, packet filter state,
// cgroups, kernel settings (saved at its start), directories.
func sweepNode(root string) error {
	var errs []error
	if err := killNodeProcesses(root); err != nil {
		errs = append(errs, err)
	}
	for range 5 {
		mounts := nodeMounts(root)
		if len(mounts) == 0 {
			break
		}
		for _, m := range mounts {
			if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
				errs = append(errs, fmt.Errorf("unmounting %s: %w", m, err))
			}
		}
	}
	netns, _ := filepath.Glob("/run/netns/cni-*")
	for _, ns := range netns {
		if err := os.Remove(ns); err != nil {
			errs = append(errs, err)
		}
	}
	_ = os.Remove("/run/netns") // only when empty: others may use it
	if _, err := os.Stat("/sys/class/net/" + nodeBridge); err == nil {
		if out, err := exec.Command("ip", "link", "del", nodeBridge).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("deleting %s: %w: %s", nodeBridge, err, out))
		}
	}
	if err := cleanPacketFilter(); err != nil {
		errs = append(errs, err)
	}
	for _, cg := range kubeCgroups() {
		if err := removeCgroup(cg); err != nil {
			errs = append(errs, err)
		}
	}
	if saved, err := os.ReadFile(filepath.Join(root, "sysctls.json")); err == nil {
		var sysctls map[string]string
		if err := json.Unmarshal(saved, &sysctls); err != nil {
			errs = append(errs, fmt.Errorf("saved sysctls: %w", err))
		}
		now := ReadNodeSysctls()
		for s, v := range sysctls {
			if now[s] != v {
				if err := os.WriteFile(filepath.Join("/proc/sys", s), []byte(v), 0o644); err != nil { //nolint:gosec // a sysctl
					errs = append(errs, fmt.Errorf("restoring %s: %w", s, err))
				}
			}
		}
	}
	for _, d := range append(nodeGlobalDirs(), root, root+"-logs") {
		if err := os.RemoveAll(d); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// killNodeProcesses SIGKILLs the node's processes until none is left (containerd's shims may
// start one more as they go).
func killNodeProcesses(root string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		procs := nodeProcesses(root)
		if len(procs) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node processes still running after 30s: %v", procs)
		}
		for _, p := range procs {
			_ = syscall.Kill(p.PID, syscall.SIGKILL)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// nodeMounts lists the mount points under the node's root and the fixed places, deepest first.
func nodeMounts(root string) []string {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	prefixes := []string{root + "/", "/var/lib/kubelet/", "/run/containerd/", "/run/netns/cni-"}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		mp := unescapeMount(f[4])
		if mp == root || mp == "/var/lib/kubelet" || slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(mp, p) }) {
			out = append(out, mp)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var c byte
			if _, err := fmt.Sscanf(s[i+1:i+4], "%03o", &c); err == nil {
				b.WriteByte(c)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// kubeCgroups are the kubelet's cgroups in every hierarchy (cgroup v1 mounts one per controller).
func kubeCgroups() []string {
	out, _ := filepath.Glob("/sys/fs/cgroup/*/kubepods")
	if _, err := os.Stat("/sys/fs/cgroup/kubepods"); err == nil {
		out = append(out, "/sys/fs/cgroup/kubepods")
	}
	return out
}

// removeCgroup removes a cgroup and its children, deepest first; their processes are gone.
func removeCgroup(top string) error {
	var dirs []string
	_ = filepath.WalkDir(top, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	slices.Reverse(dirs)
	var errs []error
	for _, d := range dirs {
		var err error
		for range 50 { // a killed process leaves its cgroup a moment after it is reaped
			if err = syscall.Rmdir(d); err == nil || errors.Is(err, syscall.ENOENT) {
				err = nil
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("removing cgroup %s: %w", d, err))
		}
	}
	return errors.Join(errs...)
}

// chain is an iptables chain (in iptables-nft's tables) that kubelet, kube-proxy or CNI created.
type chain struct{ family, table, name string }

func (c chain) String() string { return c.family + " " + c.table + " " + c.name }

// ours reports whether an iptables chain is a node's: kubelet's and kube-proxy's KUBE-*, the CNI
// plugins' CNI-*.
func ours(name string) bool {
	return strings.HasPrefix(name, "KUBE-") || strings.HasPrefix(name, "CNI-")
}

// packetFilter lists the node's packet filter state: kube-proxy's nftables tables, iptables-nft
// tables left with no rule (kubelet creates them for its canary chains), and the node's iptables
// chains.
func packetFilter() (tables []string, chains []chain, err error) {
	out, err := exec.Command("nft", "-j", "list", "ruleset").Output()
	if err != nil {
		return nil, nil, fmt.Errorf("nft list ruleset: %w", err)
	}
	var rs struct {
		Nftables []map[string]json.RawMessage `json:"nftables"`
	}
	if err := json.Unmarshal(out, &rs); err != nil {
		return nil, nil, fmt.Errorf("nft ruleset: %w", err)
	}
	type ref struct {
		Family string `json:"family"`
		Name   string `json:"name"`
		Table  string `json:"table"`
	}
	rules := map[string]int{}
	var all []string
	for _, obj := range rs.Nftables {
		for kind, raw := range obj {
			var r ref
			_ = json.Unmarshal(raw, &r)
			switch kind {
			case "table":
				all = append(all, r.Family+" "+r.Name)
			case "rule":
				rules[r.Family+" "+r.Table]++
			case "chain":
				if ours(r.Name) {
					chains = append(chains, chain{family: r.Family, table: r.Table, name: r.Name})
				}
			}
		}
	}
	iptablesTables := []string{"filter", "nat", "mangle", "raw", "security"}
	for _, t := range all {
		fam, name, _ := strings.Cut(t, " ")
		if name == "kube-proxy" || ((fam == "ip" || fam == "ip6") && slices.Contains(iptablesTables, name) && rules[t] == 0) {
			tables = append(tables, t)
		}
	}
	// kube-proxy's own table's chains are its business; the table goes as a whole.
	chains = slices.DeleteFunc(chains, func(c chain) bool { return c.table == "kube-proxy" })
	return tables, chains, nil
}

// cleanPacketFilter deletes kube-proxy's tables, the node's iptables chains with the rules that
// jump to them, and then the iptables tables that are left empty.
func cleanPacketFilter() error {
	var errs []error
	for _, fam := range []string{"ip", "ip6", "inet"} {
		_ = exec.Command("nft", "delete", "table", fam, "kube-proxy").Run() // absent is fine
	}
	for _, tool := range []string{"iptables", "ip6tables"} {
		if err := cleanIptables(tool); err != nil {
			errs = append(errs, err)
		}
	}
	tables, _, err := packetFilter()
	if err != nil {
		errs = append(errs, err)
	}
	for _, t := range tables {
		fam, name, _ := strings.Cut(t, " ")
		if out, err := exec.Command("nft", "delete", "table", fam, name).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("nft delete table %s: %w: %s", t, err, out))
		}
	}
	return errors.Join(errs...)
}

// cleanIptables removes the node's chains from one family's iptables tables in one
// iptables-restore transaction: the rules of other chains that jump to them, then the chains.
func cleanIptables(tool string) error {
	out, err := exec.Command(tool + "-save").Output()
	if err != nil {
		return fmt.Errorf("%s-save: %w", tool, err)
	}
	var script strings.Builder
	var table string
	var mine []string
	var jumps []string
	flush := func() {
		if table == "" || (len(mine) == 0 && len(jumps) == 0) {
			return
		}
		fmt.Fprintf(&script, "*%s\n", table)
		for _, j := range jumps {
			fmt.Fprintf(&script, "-D %s\n", j)
		}
		for _, c := range mine {
			fmt.Fprintf(&script, "-F %s\n", c)
		}
		for _, c := range mine {
			fmt.Fprintf(&script, "-X %s\n", c)
		}
		script.WriteString("COMMIT\n")
	}
	for _, line := range strings.Split(string(out), "\n") {
		switch {
		case strings.HasPrefix(line, "*"):
			flush()
			table, mine, jumps = line[1:], nil, nil
		case strings.HasPrefix(line, ":"):
			if name, _, _ := strings.Cut(line[1:], " "); ours(name) {
				mine = append(mine, name)
			}
		case strings.HasPrefix(line, "-A "):
			rule := line[3:]
			name, _, _ := strings.Cut(rule, " ")
			if !ours(name) && (strings.Contains(rule, " -j KUBE-") || strings.Contains(rule, " -j CNI-") ||
				strings.Contains(rule, " -g KUBE-") || strings.Contains(rule, " -g CNI-")) {
				jumps = append(jumps, rule)
			}
		case line == "COMMIT":
			flush()
			table = ""
		}
	}
	if script.Len() == 0 {
		return nil
	}
	cmd := exec.Command(tool+"-restore", "--noflush")
	cmd.Stdin = strings.NewReader(script.String())
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s-restore: %w: %s\n%s", tool, err, b, script.String())
	}
	return nil
}
