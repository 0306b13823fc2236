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

// Main is the life of a proxy process named name: it restarts itself for sysmon's sake
// (sysmon.Reexec), parses args with parse, and calls run until SIGINT or SIGTERM ends its context.
// It returns the exit code: 0, 2 for a bad command line, 1 when run fails.
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
	if err := run(ctx, o, stdout, stderr); err != nil {
		fmt.Fprintln(stderr, name+":", err)
		return 1
	}
	return 0
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
