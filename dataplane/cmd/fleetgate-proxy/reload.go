package main

import (
	"errors"
	"fmt"
	"hash/maphash"
	"os"
	"runtime/debug"
	"time"

	"github.com/fleetgate/fleetgate/dataplane/ir"
	"github.com/fleetgate/fleetgate/dataplane/pace"
	"github.com/fleetgate/fleetgate/dataplane/proxy"
)

// loader feeds a config file to the proxy. It remembers the JSON of every virtual host in service
// by a 128-bit hash, so that a reload decodes and compiles only the hosts whose JSON changed and
// hands the proxy an ir.Update, as the config stream's delta updates do in a cluster: swapping a
// file of 100k hosts that differ in a few costs a scan of the file, not a decode of it.
type loader struct {
	srv   *proxy.Server
	path  string
	seeds [2]maphash.Seed
	// listeners are the names of the listeners in service, by index in the file.
	listeners []string
	// hosts are the hosts in service by the hash of their listener index and JSON; nil when the
	// next load must apply a whole config.
	hosts map[hostSum]hostRef
}

type hostSum [2]uint64

type hostRef struct {
	listener int
	hostname string
}

func newLoader(srv *proxy.Server, path string) *loader {
	return &loader{srv: srv, path: path, seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}}
}

func (ld *loader) sum(listener int, raw []byte) hostSum {
	var s hostSum
	for i, seed := range ld.seeds {
		var h maphash.Hash
		h.SetSeed(seed)
		h.WriteByte(byte(listener))
		h.WriteByte(byte(listener >> 8))
		h.Write(raw)
		s[i] = h.Sum64()
	}
	return s
}

// load reads the file and applies it, returning its modification time and how many virtual
// hosts it had to decode.
func (ld *loader) load() (time.Time, int, error) {
	fi, err := os.Stat(ld.path)
	if err != nil {
		return time.Time{}, 0, err
	}
	b, err := os.ReadFile(ld.path)
	if err != nil {
		return time.Time{}, 0, err
	}
	// A reload is paced: decoding 100k hostnames takes seconds of the core that serves requests.
	var tick func()
	if ld.srv.Version() != 0 {
		tick = pace.New().Tick
	}
	decoded, err := ld.apply(b, tick)
	if err != nil {
		return time.Time{}, 0, err
	}
	return fi.ModTime(), decoded, nil
}

// release hands the garbage of a load back to the system. Decoding a large file leaves hundreds
// of MB of it, which the runtime would return only slowly: the proxy's memory would stay at its
// peak for minutes. Called once the new table is served.
func release() {
	debug.FreeOSMemory()
}

// errWhole says a file cannot be applied as an update of the config in service.
var errWhole = errors.New("apply the whole config")

// apply applies b as an update of the hosts in service, else whole. On error the state stays that
// of the config in service.
func (ld *loader) apply(b []byte, tick func()) (decoded int, err error) {
	decoded, err = ld.applyChanges(b, tick, ld.hosts)
	if errors.Is(err, errWhole) && ld.hosts != nil {
		decoded, err = ld.applyChanges(b, tick, nil)
	}
	if !errors.Is(err, errWhole) {
		return decoded, err
	}
	cfg, err := ir.DecodeJSON(b, tick)
	if err != nil {
		return 0, fmt.Errorf("decoding %s: %w", ld.path, err)
	}
	if err := ld.srv.Apply(cfg); err != nil {
		return 0, fmt.Errorf("applying %s: %w", ld.path, err)
	}
	ld.hosts = nil
	for _, l := range cfg.Listeners {
		decoded += len(l.VirtualHosts)
	}
	return decoded, nil
}

// applyChanges decodes the hosts of b that are not among held (the hosts in service) and applies
// them: as a whole config when it decoded every host (always when held is nil), else as an
// ir.Update. It returns errWhole when b has
// to be applied whole: a host in service moved to another listener, or, with held nil, when b's
// shape is not the one the streamed decoder takes or a host is there twice (which the whole
// config's validation reports).
func (ld *loader) applyChanges(b []byte, tick func(), held map[hostSum]hostRef) (decoded int, err error) {
	next := make(map[hostSum]hostRef, len(held))
	var sums [][]hostSum // of the hosts decoded, by listener, in order
	dup, kept := false, 0
	cfg, err := ir.DecodeJSONSkipping(b, tick, func(l int, raw []byte) bool {
		k := ld.sum(l, raw)
		if _, ok := next[k]; ok {
			dup = true
		}
		if r, ok := held[k]; ok {
			next[k] = r
			kept++
			return true
		}
		next[k] = hostRef{listener: l}
		for len(sums) <= l {
			sums = append(sums, nil)
		}
		sums[l] = append(sums[l], k)
		return false
	})
	if err != nil || dup {
		return 0, errWhole
	}
	names := make([]string, len(cfg.Listeners))
	for i := range cfg.Listeners {
		names[i] = cfg.Listeners[i].Name
	}
	for i, l := range cfg.Listeners {
		for j := range l.VirtualHosts {
			next[sums[i][j]] = hostRef{listener: i, hostname: l.VirtualHosts[j].Hostname}
			decoded++
		}
	}
	if kept == 0 {
		// Every host was decoded: the whole config is at hand, and compiles faster than a patch
		// replacing every host.
		if err := ld.srv.Apply(cfg); err != nil {
			return 0, fmt.Errorf("applying %s: %w", ld.path, err)
		}
		ld.hosts, ld.listeners = next, names
		return decoded, nil
	}
	u := &ir.Update{Gateway: cfg.Gateway, Version: cfg.Version, Base: ir.BaseOf(cfg)}
	for i := range min(len(names), len(ld.listeners)) {
		if names[i] != ld.listeners[i] {
			return 0, errWhole // hosts in service may have moved to another listener
		}
	}
	if decoded > 0 {
		if err := checkNames(next, names); err != nil {
			return 0, err
		}
	}
	for i, l := range cfg.Listeners {
		for j := range l.VirtualHosts {
			u.Hosts = append(u.Hosts, ir.ListenerHost{Listener: l.Name, Host: l.VirtualHosts[j]})
		}
		cfg.Listeners[i].VirtualHosts = nil
	}
	if kept < len(held) { // else none was removed
		for k, r := range held {
			if _, ok := next[k]; !ok {
				u.Removed = append(u.Removed, ir.HostKey{Listener: ld.listeners[r.listener], Hostname: r.hostname})
			}
		}
	}
	if err := ld.srv.Update(u); err != nil {
		return 0, fmt.Errorf("applying %s: %w", ld.path, err)
	}
	ld.hosts, ld.listeners = next, names
	return decoded, nil
}

// checkNames returns errWhole when two hosts of next share a listener and hostname: a host decoded
// duplicates one in service, which the whole config's validation reports.
func checkNames(next map[hostSum]hostRef, names []string) error {
	taken := make(map[ir.HostKey]bool, len(next))
	for _, r := range next {
		k := ir.HostKey{Listener: names[r.listener], Hostname: ir.HostnameKey(r.hostname)}
		if taken[k] {
			return errWhole
		}
		taken[k] = true
	}
	return nil
}
