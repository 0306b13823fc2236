package proxyproc

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/fleetgate/fleetgate/dataplane/gcfloor"
	"github.com/fleetgate/fleetgate/dataplane/proxy"
	"github.com/fleetgate/fleetgate/dataplane/sysmon"
)

// LifelineEnv names the environment variable that holds the number of the proxy's lifeline: a
// pipe whose write end only the process that started it holds (providers/tied.StartWithLifeline,
// which dataplane may not import, so the name is written twice). Its end of file means that
// process is gone.
const LifelineEnv = "FLEETGATE_LIFELINE_FD"

// Main is the life of a proxy process named name: it restarts itself for sysmon's sake
// (sysmon.Reexec), parses args with parse, and calls run until SIGINT, SIGTERM or the end of its
// lifeline (LifelineEnv, when set) ends its context. It returns the exit code: 0, 2 for a bad
// command line, 1 when run fails.
func Main[O any](name string, args []string, stdout, stderr io.Writer,
	parse func(args []string, output io.Writer) (O, error), run func(ctx context.Context, o O, stdout, stderr io.Writer) error,
) int {
	if err := sysmon.Reexec(); err != nil {
		fmt.Fprintln(stderr, name+":", err)
	}
	o, err := parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, name+":", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if fd := os.Getenv(LifelineEnv); fd != "" {
		var stopWatch func()
		ctx, stopWatch, err = watchLifeline(ctx, fd)
		if err != nil {
			// Without it the proxy could outlive the operator: better not to start.
			fmt.Fprintln(stderr, name+":", err)
			return 2
		}
		defer stopWatch()
	}
	err = run(ctx, o, stdout, stderr)
	if errors.Is(context.Cause(ctx), errParentGone) {
		fmt.Fprintln(stderr, name+":", errParentGone)
	}
	if err != nil {
		fmt.Fprintln(stderr, name+":", err)
		return 1
	}
	return 0
}

var errParentGone = errors.New("stopped: the process that started this one is gone (its lifeline closed)")

// watchLifeline returns a context that ends with ctx or at the end of file of the lifeline whose
// descriptor number is fd: the parent-death signal alone can be lost (sysmon.Reexec runs on any
// thread, and Linux keeps the signal with the thread that asked for it), an end of file cannot,
// and it is there even if the parent died before this process looked. stop ends the watch.
func watchLifeline(ctx context.Context, fd string) (_ context.Context, stop func(), _ error) {
	n, err := strconv.Atoi(fd)
	if err != nil || n < 3 {
		return nil, nil, fmt.Errorf("%s=%q is not a file descriptor above stderr", LifelineEnv, fd)
	}
	// Non-blocking, so that the poller reads it and stop's Close ends the read; close-on-exec
	// (only now, after sysmon.Reexec, which must keep it), so that nothing this process might
	// start holds it.
	if err := syscall.SetNonblock(n, true); err != nil {
		return nil, nil, fmt.Errorf("lifeline %s=%d: %w", LifelineEnv, n, err)
	}
	syscall.CloseOnExec(n)
	f := os.NewFile(uintptr(n), "lifeline")
	ctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, err := io.Copy(io.Discard, f)
		if errors.Is(err, os.ErrClosed) {
			return // stopped
		}
		cancel(errParentGone)
	}()
	return ctx, func() { _ = f.Close(); <-done; cancel(nil) }, nil
}

// Process is a proxy process's setup from its Flags: logger, access log, metrics registry and GC
// floor. Close undoes it.
type Process struct {
	Log      logr.Logger
	Registry *prometheus.Registry
	flags    Flags
	access   logr.Logger
	closers  []func() error
	// metricsAddr is where ServeMetrics listens.
	metricsAddr net.Addr
}

// Start sets up a process: logs go to stderr, the access log (when on) to stdout.
func Start(f Flags, stdout, stderr io.Writer) *Process {
	p := &Process{flags: f, Registry: prometheus.NewRegistry()}
	stopGC := gcfloor.Start(f.GCHeapFloorMB << 20)
	p.closers = append(p.closers, func() error { stopGC(); return nil })
	var sync func() error
	p.Log, sync = newLogger(stderr, f.Verbosity)
	p.closers = append(p.closers, sync)
	if f.AccessLog {
		p.access, sync = newLogger(stdout, 0)
		p.closers = append(p.closers, sync)
	}
	p.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return p
}

// ProxyOptions are the proxy.Server options of the flags, logging and counting through p.
func (p *Process) ProxyOptions() proxy.Options {
	o := p.flags.Limits
	o.Address, o.DrainTimeout, o.UpstreamIdleTimeout = p.flags.Address, p.flags.DrainTimeout, p.flags.UpstreamIdleTimeout
	o.Log, o.AccessLog, o.Registry = p.Log, p.access, p.Registry
	return o
}

// ServeMetrics serves the registry at /metrics on the -metrics-address, with whatever else routes
// adds to the mux (may be nil); it does nothing without an address. A metrics endpoint that cannot
// listen is logged, not fatal: the proxy serves traffic without it. stop closes the server.
func (p *Process) ServeMetrics(routes func(*http.ServeMux)) (stop func()) {
	if p.flags.MetricsAddress == "" {
		return func() {}
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(p.Registry, promhttp.HandlerOpts{}))
	if routes != nil {
		routes(mux)
	}
	ln, err := net.Listen("tcp", p.flags.MetricsAddress)
	if err != nil {
		p.Log.Error(err, "metrics server")
		return func() {}
	}
	p.metricsAddr = ln.Addr()
	ms := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := ms.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			p.Log.Error(err, "metrics server")
		}
	}()
	return func() { _ = ms.Close() }
}

// Shutdown drains srv for up to the -drain-timeout.
func (p *Process) Shutdown(srv *proxy.Server) error {
	ctx, cancel := context.WithTimeout(context.Background(), p.flags.DrainTimeout)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		return fmt.Errorf("draining: %w", err)
	}
	return nil
}

// Close restores the GC settings and flushes the logs.
func (p *Process) Close() {
	for i := len(p.closers) - 1; i >= 0; i-- {
		_ = p.closers[i]() // flushing stderr/stdout can fail harmlessly (EINVAL on a terminal)
	}
}
