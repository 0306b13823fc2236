package main

import (
	"errors"
	"fmt"
	"hash/maphash"
	"io"
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
// file of 100k hosts that differ in a few costs a scan of the file, not a decode of it. The file
// is read as it is scanned, never whole.
type loader struct {
	srv   *proxy.Server
	path  string
	seeds [2]maphash.Seed
	// listeners are the names of the listeners in service, by index in the file.
	listeners []string
	// hosts are the hosts in service in file order; nil when the next load must apply a whole
	// config. A slice, not a map: a reload meets the hosts where they were, and compares each
	// with the one held at its place before it looks further.
	hosts []hostEntry
	// mem is the memory the last reload decoded its hosts into, which the next decodes into
	// again (the proxy keeps none of it); nil after a release.
	mem *ir.DecodeMemory
}

type hostSum [2]uint64

// hostEntry is one host in service: the hash of its listener index and JSON, the JSON's length,
// and the host's name.
type hostEntry struct {
	sum      hostSum
	listener int32
	length   uint32
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
	f, err := os.Open(ld.path)
	if err != nil {
		return time.Time{}, 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return time.Time{}, 0, err
	}
	// A reload is paced: decoding 100k hostnames takes seconds of the core that serves requests.
	var tick func()
	if ld.srv.Version() != 0 {
		tick = pace.New().Tick
	}
	decoded, err := ld.apply(f, tick)
	if err != nil {
		return time.Time{}, 0, err
	}
	return fi.ModTime(), decoded, nil
}

// release hands the garbage of a load back to the system, the memory reloads decode into
// included. Decoding a large file leaves hundreds of MB of it, which the runtime would return only
// slowly: the proxy's memory would stay at its peak for minutes. Called once the first table is
// served, and once reloads pause (serve).
func (ld *loader) release() {
	ld.mem = nil
	debug.FreeOSMemory()
}

// releaseAfter is how many hosts a reload decodes before its garbage is worth a release: that is
// a full collection, unpaced (tens of ms of the one core at 100k hosts), and a reload that
// decoded a few hosts left little garbage.
const releaseAfter = 1000

// lookAway is how many hosts not at their place a reload looks for elsewhere in the hosts in
// service, finding none, before it stops looking.
const lookAway = 1024

// errWhole says a file cannot be applied as an update of the config in service.
var errWhole = errors.New("apply the whole config")

// apply applies the config src holds as an update of the hosts in service, else whole. On error
// the state stays that of the config in service.
func (ld *loader) apply(src io.ReadSeeker, tick func()) (decoded int, err error) {
	decoded, err = ld.applyChanges(src, tick, ld.hosts)
	if errors.Is(err, errWhole) && ld.hosts != nil {
		decoded, err = ld.applyChanges(src, tick, nil)
	}
	if !errors.Is(err, errWhole) {
		return decoded, err
	}
	if _, err := src.Seek(0, io.SeekStart); err != nil {
		return 0, fmt.Errorf("reading %s: %w", ld.path, err)
	}
	b, err := io.ReadAll(src)
	if err != nil {
		return 0, fmt.Errorf("reading %s: %w", ld.path, err)
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

// applyChanges decodes the hosts of src that are not among held (the hosts in service) and
// applies them: as a whole config when it decoded every host (always when held is nil), else as
// an ir.Update. It returns errWhole when src has to be applied whole: a host in service moved to
// another listener, or, with held nil, when src's shape is not the one the streamed decoder takes
// or a host is there twice (which the whole config's validation reports).
func (ld *loader) applyChanges(src io.ReadSeeker, tick func(), held []hostEntry) (decoded int, err error) {
	if _, err := src.Seek(0, io.SeekStart); err != nil {
		return 0, fmt.Errorf("reading %s: %w", ld.path, err)
	}
	next := make([]hostEntry, 0, len(held))
	// heldAt finds a host of held by the first half of its sum (the whole is compared after): made
	// when a host is not at its place. Of two held hosts whose halves collide one is not found,
	// and is decoded again. It is asked no more once lookAway hosts missed it and none was found
	// (a file whose every host changed: each lookup missed, ~5% of such a reload); a host that
	// moved after that is decoded again.
	var heldAt map[uint64]int32
	missedAway, foundAway := 0, false
	var fresh []int // indexes in next of the hosts decoded
	kept := 0
	// The sum of the bytes SkipExpected was given last, where the host at len(next) starts: a
	// host that changed but kept its length is those bytes, and is hashed once.
	var tried struct {
		at, length int
		sum        hostSum
	}
	tried.at = -1
	// perListener counts the hosts held by listener: the file most likely has as many.
	var perListener []int
	for _, h := range held {
		for int(h.listener) >= len(perListener) {
			perListener = append(perListener, 0)
		}
		perListener[h.listener]++
	}
	if ld.mem == nil {
		ld.mem = &ir.DecodeMemory{}
	}
	filter := ir.HostFilter{
		Memory: ld.mem,
		Skip: func(l int, raw []byte) bool {
			e := hostEntry{listener: int32(l), length: uint32(len(raw))}
			if tried.at == len(next) && tried.length == len(raw) {
				e.sum = tried.sum
			} else {
				e.sum = ld.sum(l, raw)
			}
			j, ok := len(next), false
			if ok = j < len(held) && held[j].sum == e.sum; !ok && held != nil && (foundAway || missedAway < lookAway) {
				if heldAt == nil {
					heldAt = make(map[uint64]int32, len(held))
					for i, h := range held {
						heldAt[h.sum[0]] = int32(i)
					}
				}
				var at int32
				at, ok = heldAt[e.sum[0]]
				j, ok = int(at), ok && held[at].sum == e.sum
				foundAway = foundAway || ok
				if !ok {
					missedAway++
				}
			}
			if ok {
				e.hostname = held[j].hostname
				kept++
			} else {
				fresh = append(fresh, len(next))
			}
			next = append(next, e)
			return ok
		},
		// The host held at this place, if the file still has it here: checking that costs a
		// hash of its bytes, not a scan of them.
		Expect: func(l int) int {
			if j := len(next); j < len(held) && held[j].listener == int32(l) {
				return int(held[j].length)
			}
			return 0
		},
		Hosts: func(l int) int {
			if l < len(perListener) {
				return perListener[l]
			}
			return 0
		},
		SkipExpected: func(l int, raw []byte) bool {
			h := held[len(next)]
			if sum := ld.sum(l, raw); sum != h.sum {
				tried.at, tried.length, tried.sum = len(next), len(raw), sum
				return false
			}
			next = append(next, h)
			kept++
			return true
		},
	}
	cfg, err := ir.DecodeJSONSkippingReader(src, tick, filter)
	if err != nil {
		return 0, errWhole
	}
	names := make([]string, len(cfg.Listeners))
	for i := range cfg.Listeners {
		names[i] = cfg.Listeners[i].Name
	}
	// The hosts decoded are in the config in file order, by listener.
	at := make([]int, len(cfg.Listeners))
	for _, i := range fresh {
		e := &next[i]
		e.hostname = cfg.Listeners[e.listener].VirtualHosts[at[e.listener]].Hostname
		at[e.listener]++
		decoded++
	}
	if kept == 0 {
		// Every host was decoded: the whole config is at hand, and compiles faster than a patch
		// replacing every host. Its validation refuses a host given twice.
		if err := ld.srv.Apply(cfg); err != nil {
			return 0, fmt.Errorf("applying %s: %w", ld.path, err)
		}
		ld.hosts, ld.listeners = next, names
		return decoded, nil
	}
	unmoved := kept == len(held) && len(next) == len(held) && heldAt == nil // every host at its place
	var inNext map[hostSum]bool
	if !unmoved {
		inNext = make(map[hostSum]bool, len(next))
		for _, e := range next {
			if inNext[e.sum] {
				return 0, errWhole // a host twice
			}
			inNext[e.sum] = true
		}
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
	if !unmoved {
		for _, h := range held {
			if !inNext[h.sum] {
				u.Removed = append(u.Removed, ir.HostKey{Listener: ld.listeners[h.listener], Hostname: h.hostname})
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
func checkNames(next []hostEntry, names []string) error {
	taken := make(map[ir.HostKey]bool, len(next))
	for _, e := range next {
		k := ir.HostKey{Listener: names[e.listener], Hostname: ir.HostnameKey(e.hostname)}
		if taken[k] {
			return errWhole
		}
		taken[k] = true
	}
	return nil
}
