// Package local is the provider for machines without a kubelet (tests, `make demo`): each gateway's
// proxy runs as a local process of the operator, bound to its own loopback address, fed over the
// operator's config stream like an in-cluster replica.
//
// A gateway's resources are of two lives. Its state directory (Options.Dir/<GatewayID>, tagged
// with the gateway it belongs to, holding the proxy's credentials and log) and its Services
// (service.go, labelled like any provider's resource) outlive the operator; List finds gateways
// by them and Delete removes them. Its proxy process is the operator's child and dies with it
// (Pdeathsig, and a lifeline pipe whose end of file it drains and stops at: tied): it is never
// listed on its own, and an Ensure after a restart starts it again.
package local

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/providers"
	"github.com/fleetgate/fleetgate/providers/tied"
)

// Credentials are the PEM files a proxy needs to join the config stream for one gateway.
type Credentials struct {
	CertPEM, KeyPEM, CAPEM []byte
}

// Options configure the provider.
type Options struct {
	// Command is the proxy program and its leading arguments, e.g. {"/usr/bin/fleetgate", "dataplane"}.
	Command []string
	// XDSAddress is the operator's config server, host:port.
	XDSAddress string
	// Credentials issues a client certificate for one gateway key.
	Credentials func(gateway string) (Credentials, error)
	// Dir holds per-gateway credentials and logs; it is created if missing.
	Dir string
	// DrainTimeout bounds a proxy's shutdown (default 5s).
	DrainTimeout time.Duration
	// OnExit is called (in its own goroutine) when a proxy exits by itself, so that the caller can
	// reconcile and Ensure starts it again.
	OnExit func(gateway string)
	// Client, when set, returns the client of a member cluster, in which each gateway gets a
	// Service that stands for it (service.go). It may read from a cache.
	Client func(cluster string) (client.Client, error)
	// Clusters returns the member clusters whose Services List and Delete look at. List fails
	// without it when Client is set; Delete then takes lb.Clusters for all of the gateway's.
	Clusters func() []string
	Log      logr.Logger
}

// Provider runs one proxy process per gateway.
type Provider struct {
	opts Options

	mu    sync.Mutex
	procs map[string]*proc      // by gateway key
	addrs map[netip.Addr]string // allocated address → gateway key
}

type proc struct {
	addr netip.Addr
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	// stopping is set when Delete asked the process to end, so its exit is not reported.
	stopping bool
	// static is set when the address came from the gateway's spec.addresses.
	static bool
}

// New returns a provider with no proxies running.
func New(o Options) (*Provider, error) {
	if len(o.Command) == 0 || o.XDSAddress == "" || o.Credentials == nil || o.Dir == "" {
		return nil, errors.New("local provider: Command, XDSAddress, Credentials and Dir are required")
	}
	if o.DrainTimeout == 0 {
		o.DrainTimeout = 5 * time.Second
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("local provider dir: %w", err)
	}
	return &Provider{opts: o, procs: map[string]*proc{}, addrs: map[netip.Addr]string{}}, nil
}

// Ensure starts the gateway's proxy unless it runs, and reports its loopback address. Ready means
// the process runs; whether it serves the current config is the config stream's ACK to tell. A
// gateway whose spec.addresses name an address the proxy can bind gets that address; a proxy on an
// address the gateway no longer asks for is stopped.
func (p *Provider) Ensure(ctx context.Context, lb *providers.LoadBalancer) (providers.Status, error) {
	if err := ctx.Err(); err != nil {
		return providers.Status{}, fmt.Errorf("local: ensuring %s: %w", lb.Gateway, err)
	}
	p.mu.Lock()
	pr := p.procs[lb.Gateway]
	addr, static, reason, msg := p.address(lb, pr)
	stale := pr != nil && (reason != "" || pr.addr != addr)
	p.mu.Unlock()
	if stale {
		if err := p.stop(ctx, lb.Gateway); err != nil {
			return providers.Status{}, fmt.Errorf("stopping the proxy of %s on its former address: %w", lb.Gateway, err)
		}
	}
	if reason != "" {
		if err := p.ensureServices(ctx, lb, netip.Addr{}); err != nil {
			return providers.Status{}, err
		}
		return providers.Status{Reason: reason, Message: msg}, nil
	}
	st, err := p.run(lb, addr, static)
	if err != nil {
		return providers.Status{}, err
	}
	if err := p.ensureServices(ctx, lb, addr); err != nil {
		return providers.Status{}, err
	}
	return st, nil
}

// run starts the gateway's proxy on addr unless it runs. Only the bookkeeping holds p.mu: the
// engine ensures different gateways at once, and never one gateway twice at once.
func (p *Provider) run(lb *providers.LoadBalancer, addr netip.Addr, static bool) (providers.Status, error) {
	gateway := lb.Gateway
	p.mu.Lock()
	pr := p.procs[gateway]
	p.mu.Unlock()
	if pr != nil && !exited(pr) {
		return running(pr), nil
	}
	dir, err := p.writeState(lb)
	if err != nil {
		return providers.Status{}, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if owner, used := p.addrs[addr]; used && owner != gateway {
		// Taken while the lock was released.
		return providers.Status{Reason: providers.ReasonAddressNotUsable, Message: fmt.Sprintf("address %s is used by gateway %s", addr, owner)}, nil
	}
	pr, err = p.start(gateway, dir, addr)
	if err != nil {
		return providers.Status{}, err
	}
	pr.static = static
	p.procs[gateway] = pr
	p.addrs[addr] = gateway
	return running(pr), nil
}

// address picks the loopback address of the gateway's proxy: the one its spec.addresses ask for,
// else the one it had, else one derived from its key. A requested address must be an IPv4 loopback
// address outside 127.0.0.0/16 (left to others, see allocate) that no other gateway uses; otherwise
// reason and msg say why it cannot be served. Called with p.mu held.
func (p *Provider) address(lb *providers.LoadBalancer, pr *proc) (addr netip.Addr, static bool, reason, msg string) {
	var requested []providers.Address
	for _, a := range lb.Addresses {
		if a.Value != "" {
			requested = append(requested, a)
		}
	}
	if len(requested) == 0 {
		if pr != nil && !pr.static {
			return pr.addr, false, "", "" // a restarted proxy keeps its address
		}
		addr, ok := p.allocate(lb)
		if !ok {
			return netip.Addr{}, false, providers.ReasonAddressNotUsable,
				fmt.Sprintf("none of the %d loopback addresses tried for this gateway has its ports free (something else on the machine listens on them)", maxProbes)
		}
		return addr, false, "", ""
	}
	// Every requested address is checked, so that an unusable one is reported whatever its place.
	for _, a := range requested {
		if a.Type != providers.AddressTypeIPAddress {
			return netip.Addr{}, false, providers.ReasonUnsupportedAddress, fmt.Sprintf("local mode serves IP addresses only, not %s %q", a.Type, a.Value)
		}
		ip, err := netip.ParseAddr(a.Value)
		if err != nil || !ip.Is4() || !ip.IsLoopback() || localReserved.Contains(ip) {
			return netip.Addr{}, false, providers.ReasonAddressNotUsable,
				fmt.Sprintf("local mode binds loopback addresses in 127.0.0.0/8 outside %s; %q is not one", localReserved, a.Value)
		}
		if owner, used := p.addrs[ip]; used && owner != lb.Gateway {
			return netip.Addr{}, false, providers.ReasonAddressNotUsable, fmt.Sprintf("address %s is used by gateway %s", ip, owner)
		}
		addr = ip
	}
	if len(requested) > 1 {
		return netip.Addr{}, false, providers.ReasonUnsupportedAddress, fmt.Sprintf("local mode binds each gateway to one address; %d were requested", len(requested))
	}
	return addr, true, "", ""
}

// localReserved is the part of 127.0.0.0/8 local mode never binds: 127.0.0.1 and its neighbours
// belong to the machine's own services.
var localReserved = netip.MustParsePrefix("127.0.0.0/16")

// Delete deletes the gateway's Services in lb.Clusters. Once it has no Service left in any
// cluster, it also stops the gateway's proxy, letting it drain, frees its address and removes its
// state directory: a fleet gateway that leaves one cluster keeps serving the others.
func (p *Provider) Delete(ctx context.Context, lb *providers.LoadBalancer) error {
	if err := p.deleteServices(ctx, lb); err != nil {
		return err
	}
	left, err := p.servicesLeft(ctx, lb)
	if err != nil {
		return err
	}
	if len(left) > 0 {
		return nil
	}
	if err := p.stop(ctx, lb.Gateway); err != nil {
		return fmt.Errorf("local: stopping the proxy of %s: %w", lb.Gateway, err)
	}
	if err := os.RemoveAll(p.dir(lb.Gateway)); err != nil {
		return fmt.Errorf("local: removing the state of %s: %w", lb.Gateway, err)
	}
	return nil
}

// stop ends the gateway's proxy, letting it drain, and frees its address; its state stays.
func (p *Provider) stop(ctx context.Context, gateway string) error {
	p.mu.Lock()
	pr := p.procs[gateway]
	delete(p.procs, gateway)
	if pr != nil {
		delete(p.addrs, pr.addr)
		pr.stopping = true
	}
	p.mu.Unlock()
	if pr == nil {
		return nil
	}
	_ = pr.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-pr.done:
	case <-time.After(p.opts.DrainTimeout + 5*time.Second):
		_ = pr.cmd.Process.Kill()
		<-pr.done
	case <-ctx.Done():
		_ = pr.cmd.Process.Kill()
		return ctx.Err()
	}
	return nil
}

// Stop ends every proxy; the operator calls it on shutdown. The gateways' Services and state
// stay, as they would if the operator died: the next operator serves them again, or List finds
// them for the sweep. The proxies drain at the same time, so that the operator's shutdown takes
// one drain timeout, not one per gateway.
func (p *Provider) Stop(ctx context.Context) error {
	p.mu.Lock()
	keys := make([]string, 0, len(p.procs))
	for k := range p.procs {
		keys = append(keys, k)
	}
	p.mu.Unlock()
	errs := make([]error, len(keys))
	var wg sync.WaitGroup
	for i, k := range keys {
		wg.Go(func() { errs[i] = p.stop(ctx, k) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// start starts the gateway's proxy with the state in dir. Called with p.mu held.
func (p *Provider) start(gateway, dir string, addr netip.Addr) (*proc, error) {
	logFile, err := os.OpenFile(filepath.Join(dir, "proxy.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("proxy log: %w", err)
	}
	args := append(append([]string{}, p.opts.Command[1:]...),
		"--gateway", gateway,
		"--node", "local-"+providers.GatewayID(gateway),
		"--xds-address", p.opts.XDSAddress,
		"--cert", filepath.Join(dir, "tls.crt"),
		"--key", filepath.Join(dir, "tls.key"),
		"--ca", filepath.Join(dir, "ca.crt"),
		"--address", addr.String(),
		"--drain-timeout", p.opts.DrainTimeout.String(),
	)
	cmd := exec.Command(p.opts.Command[0], args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// The proxies are the operator's children: they must not outlive it and hold its ports. The
	// signal can be lost (the proxy re-executes itself, see tied); the lifeline cannot.
	waited, err := tied.StartWithLifeline(cmd, syscall.SIGTERM, lifelineEnv)
	if err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting proxy for %s: %w", gateway, err)
	}
	pr := &proc{addr: addr, cmd: cmd, done: make(chan struct{})}
	p.opts.Log.Info("proxy started", "gateway", gateway, "address", addr, "pid", cmd.Process.Pid, "log", logFile.Name())
	go func() {
		err := <-waited
		logFile.Close()
		close(pr.done)
		p.mu.Lock()
		stopping := pr.stopping
		p.mu.Unlock()
		if stopping {
			return
		}
		p.opts.Log.Info("proxy exited", "gateway", gateway, "err", err)
		if p.opts.OnExit != nil {
			p.opts.OnExit(gateway)
		}
	}()
	return pr, nil
}

// lifelineEnv tells a proxy which descriptor is its lifeline; the proxy reads it as
// dataplane/proxyproc.LifelineEnv, which providers may not import.
const lifelineEnv = "FLEETGATE_LIFELINE_FD"

// maxProbes bounds the addresses allocate tries: a listener on a wildcard address takes its port
// on every loopback address, and no amount of probing finds a free one.
const maxProbes = 16

// allocate picks a loopback address for the gateway from a hash of its key, so that a gateway keeps
// its address across operator restarts. An address another gateway holds, or on which something
// else on the machine has bound one of the gateway's ports (the proxy's bind would fail with
// EADDRINUSE, and the Gateway never be Programmed), is passed over for the next. Called with p.mu held.
func (p *Provider) allocate(lb *providers.LoadBalancer) (netip.Addr, bool) {
	for i := range uint32(maxProbes) {
		addr := candidate(lb.Gateway, i)
		if owner, used := p.addrs[addr]; used && owner != lb.Gateway {
			continue
		}
		if portsFree(addr, lb.Ports) {
			return addr, true
		}
		p.opts.Log.Info("loopback address taken by another process, trying the next", "gateway", lb.Gateway, "address", addr)
	}
	return netip.Addr{}, false
}

// candidate is the gateway's i-th loopback address: its key's hash, then onward. 127.0.0.0/16 is
// left to others.
func candidate(gateway string, i uint32) netip.Addr {
	h := fnv.New32a()
	h.Write([]byte(gateway))
	n := h.Sum32() + i
	return netip.AddrFrom4([4]byte{127, byte(1 + n%254), byte(n >> 8), byte(1 + (n>>16)%254)})
}

// portsFree reports whether none of ports is bound on addr by anyone: it binds each and lets go.
// Only EADDRINUSE counts; another error (a privileged port) is the proxy's to meet and report.
func portsFree(addr netip.Addr, ports []providers.Port) bool {
	for _, pt := range ports {
		hostPort := netip.AddrPortFrom(addr, uint16(pt.Port)).String() //nolint:gosec // a port number
		var c io.Closer
		var err error
		if pt.Transport == providers.TransportUDP {
			c, err = net.ListenPacket("udp", hostPort)
		} else {
			c, err = net.Listen("tcp", hostPort)
		}
		if err == nil {
			_ = c.Close()
			continue
		}
		if errors.Is(err, syscall.EADDRINUSE) {
			return false
		}
	}
	return true
}

func exited(pr *proc) bool {
	select {
	case <-pr.done:
		return true
	default:
		return false
	}
}

func running(pr *proc) providers.Status {
	return providers.Status{
		Ready:     true,
		Reason:    providers.ReasonProgrammed,
		Addresses: []providers.Address{{Type: providers.AddressTypeIPAddress, Value: pr.addr.String()}},
	}
}

// Capabilities validates the class's spec.inCluster section, which local mode serves in place
// of the in-cluster provider: it must decode, unknown fields refused. Replicas and service type
// mean nothing to one local process (their ranges are the CRD's to check); the local proxies
// are fleetgate proxies, which express everything.
func (p *Provider) Capabilities(params json.RawMessage) (providers.Capabilities, error) {
	if len(params) == 0 || string(params) == "null" {
		return providers.FullCapabilities(), nil
	}
	dec := json.NewDecoder(bytes.NewReader(params))
	dec.DisallowUnknownFields()
	var in v1alpha1.InClusterOptions
	if err := dec.Decode(&in); err != nil {
		return providers.Capabilities{}, fmt.Errorf("inCluster parameters: %w", err)
	}
	return providers.FullCapabilities(), nil
}
