// Command fleetgate-proxy serves an ir.Config JSON file with the fleetgate proxy. It reloads the
// file on SIGHUP, or when its modification time changes if -watch is set. Used for benchmarks, demos
// and local runs; in a cluster the proxy is fed over the config API instead.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	httppprof "net/http/pprof"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/fleetgate/fleetgate/dataplane/gcfloor"
	"github.com/fleetgate/fleetgate/dataplane/ir"
	"github.com/fleetgate/fleetgate/dataplane/pace"
	"github.com/fleetgate/fleetgate/dataplane/proxy"
	"github.com/fleetgate/fleetgate/dataplane/sysmon"
)

func main() {
	if err := sysmon.Reexec(); err != nil {
		fmt.Fprintln(os.Stderr, "fleetgate-proxy:", err)
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "fleetgate-proxy:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		configPath  = flag.String("config", "", "path of the ir.Config JSON file to serve")
		address     = flag.String("address", "", "IP address to bind listeners to (default: all)")
		portOffset  = flag.Int("port-offset", 0, "added to every IR port, to run unprivileged")
		metricsAddr = flag.String("metrics-address", "", "host:port serving /metrics (off when empty)")
		accessLog   = flag.Bool("access-log", false, "log one JSON line per request to stdout")
		verbosity   = flag.Int("v", 0, "log verbosity")
		watch       = flag.Duration("watch", 0, "poll the config file at this interval and reload on change (0: only on SIGHUP)")
		drain       = flag.Duration("drain-timeout", 30*time.Second, "how long connections may finish on shutdown")
		cpuProfile  = flag.String("cpuprofile", "", "write a CPU profile to this file until shutdown")
		gcFloorMB   = flag.Uint64("gc-heap-floor-mb", 64, "keep the GC heap goal at least this many MiB above the live heap (0: plain GOGC)")
		pprofOn     = flag.Bool("pprof", false, "also serve /debug/pprof/ (profiles, execution traces) on -metrics-address")
		limits      proxy.Options
		upIdle      = flag.Duration("upstream-idle-timeout", 4*time.Second, "close idle keepalive connections to backends after this long; keep it below the backends' own (Node.js: 5s)")
	)
	limits.LimitFlags(flag.CommandLine)
	flag.Parse()
	defer gcfloor.Start(*gcFloorMB << 20)()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if *configPath == "" {
		return errors.New("-config is required")
	}
	log := funcr.NewJSON(func(obj string) { fmt.Fprintln(os.Stderr, obj) }, funcr.Options{Verbosity: *verbosity})
	opts := limits
	opts.Address, opts.Log, opts.DrainTimeout, opts.UpstreamIdleTimeout = *address, log, *drain, *upIdle
	if *accessLog {
		opts.AccessLog = funcr.NewJSON(func(obj string) { fmt.Println(obj) }, funcr.Options{})
	}
	if *portOffset != 0 {
		off := uint32(*portOffset)
		opts.PortMap = func(p uint32) uint32 { return p + off }
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	opts.Registry = reg
	srv, err := proxy.New(opts)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *metricsAddr != "" {
		mux := http.NewServeMux()
		mux.Handle("/", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		if *pprofOn {
			mux.HandleFunc("/debug/pprof/", httppprof.Index)
			mux.HandleFunc("/debug/pprof/profile", httppprof.Profile)
			mux.HandleFunc("/debug/pprof/trace", httppprof.Trace)
		}
		ms := &http.Server{Addr: *metricsAddr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go func() {
			if err := ms.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error(err, "metrics server")
			}
		}()
		defer ms.Close()
	}
	mtime, err := load(srv, *configPath)
	if err != nil {
		return err
	}
	log.Info("serving", "config", *configPath, "version", srv.Version())
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	var tick <-chan time.Time
	if *watch > 0 {
		t := time.NewTicker(*watch)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			log.Info("shutting down")
			sctx, cancel := context.WithTimeout(context.Background(), *drain)
			defer cancel()
			return srv.Shutdown(sctx)
		case <-hup:
			mtime = reload(log, srv, *configPath, mtime, true)
		case <-tick:
			mtime = reload(log, srv, *configPath, mtime, false)
		}
	}
}

func reload(log logr.Logger, srv *proxy.Server, path string, last time.Time, force bool) time.Time {
	if !force {
		if fi, err := os.Stat(path); err != nil || fi.ModTime().Equal(last) {
			return last
		}
	}
	start := time.Now()
	mtime, err := load(srv, path)
	if err != nil {
		log.Error(err, "config rejected; still serving the previous one", "version", srv.Version())
		return last
	}
	log.Info("config reloaded", "version", srv.Version(), "took", time.Since(start).String())
	return mtime
}

func load(srv *proxy.Server, path string) (time.Time, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return time.Time{}, err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return time.Time{}, err
	}
	// A reload is paced: decoding 100k hostnames takes seconds of the core that serves requests.
	var tick func()
	if srv.Version() != 0 {
		tick = pace.New().Tick
	}
	cfg, err := ir.DecodeJSON(b, tick)
	if err != nil {
		return time.Time{}, fmt.Errorf("decoding %s: %w", path, err)
	}
	if err := srv.Apply(cfg); err != nil {
		return time.Time{}, fmt.Errorf("applying %s: %w", path, err)
	}
	return fi.ModTime(), nil
}
