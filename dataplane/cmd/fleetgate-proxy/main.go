// Command fleetgate-proxy serves an ir.Config JSON file with the fleetgate proxy. It reloads the
// file on SIGHUP, or when its modification time changes if -watch is set; a reload decodes and
// compiles only the virtual hosts whose JSON changed (reload.go). Used for benchmarks, demos
// and local runs; in a cluster the proxy is fed over the config API instead.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	httppprof "net/http/pprof"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/fleetgate/fleetgate/dataplane/proxy"
	"github.com/fleetgate/fleetgate/dataplane/proxyproc"
)

func main() {
	os.Exit(proxyproc.Main("fleetgate-proxy", os.Args[1:], os.Stdout, os.Stderr, parseFlags, run))
}

// options are fleetgate-proxy's settings: the shared ones and those of serving a file.
type options struct {
	proxyproc.Flags
	configPath string
	portOffset int
	watch      time.Duration
	cpuProfile string
	pprof      bool
}

func parseFlags(args []string, output io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("fleetgate-proxy", flag.ContinueOnError)
	fs.SetOutput(output)
	fs.StringVar(&o.configPath, "config", "", "path of the ir.Config JSON file to serve")
	fs.IntVar(&o.portOffset, "port-offset", 0, "added to every IR port, to run unprivileged")
	fs.DurationVar(&o.watch, "watch", 0, "poll the config file at this interval and reload on change (0: only on SIGHUP)")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile to this file until shutdown")
	fs.BoolVar(&o.pprof, "pprof", false, "also serve /debug/pprof/ (profiles, execution traces) on -metrics-address")
	o.Register(fs)
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.configPath == "" {
		return o, errors.New("-config is required")
	}
	return o, nil
}

func run(ctx context.Context, o options, stdout, stderr io.Writer) error {
	p := proxyproc.Start(o.Flags, stdout, stderr)
	defer p.Close()
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return fmt.Errorf("creating -cpuprofile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("starting CPU profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	opts := p.ProxyOptions()
	if o.portOffset != 0 {
		off := uint32(o.portOffset)
		opts.PortMap = func(p uint32) uint32 { return p + off }
	}
	srv, err := proxy.New(opts)
	if err != nil {
		return fmt.Errorf("creating proxy: %w", err)
	}
	defer p.ServeMetrics(func(mux *http.ServeMux) {
		mux.Handle("/", promhttp.HandlerFor(p.Registry, promhttp.HandlerOpts{})) // any path, as always
		if o.pprof {
			mux.HandleFunc("/debug/pprof/", httppprof.Index)
			mux.HandleFunc("/debug/pprof/profile", httppprof.Profile)
			mux.HandleFunc("/debug/pprof/trace", httppprof.Trace)
		}
	})()
	log := p.Log
	ld := newLoader(srv, o.configPath)
	mtime, _, err := ld.load()
	if err != nil {
		return err
	}
	ld.release()
	log.Info("serving", "config", o.configPath, "version", srv.Version())
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	var tick <-chan time.Time
	if o.watch > 0 {
		t := time.NewTicker(o.watch)
		defer t.Stop()
		tick = t.C
	}
	ld.serve(ctx, log, mtime, tick, hup, func() <-chan time.Time { return time.After(releaseQuiet) })
	log.Info("shutting down")
	return p.Shutdown(srv)
}

// releaseQuiet is how long reloads must pause before the garbage of the last goes back to the
// system: a reload that comes sooner decodes into the memory the one before kept (loader.mem)
// and reuses the pages a release would have given back, where it would have faulted them in
// again after a full collection. Swaps of 100k hosts with routes of their own ~2 s apart took
// ~28% less CPU so, for a peak of ~320 MiB instead of ~220 (tests/bench/results/table.md, s17).
const releaseQuiet = 2 * time.Second

// serve reloads the file on hup, or on tick when its modification time changed, until ctx is
// done; once quiet's channel (made after each reload that left garbage worth it, releaseQuiet)
// fires with no reload since, it releases that garbage.
func (ld *loader) serve(ctx context.Context, log logr.Logger, mtime time.Time, tick <-chan time.Time, hup <-chan os.Signal, quiet func() <-chan time.Time) {
	var due <-chan time.Time // nil: nothing to release
	for {
		garbage := false
		select {
		case <-ctx.Done():
			return
		case <-hup:
			mtime, garbage = reload(log, ld, mtime, true)
		case <-tick:
			mtime, garbage = reload(log, ld, mtime, false)
		case <-due:
			ld.release()
			due = nil
		}
		if garbage {
			due = quiet()
		}
	}
}

// reload loads the file when force is set or its modification time is not last, and says
// whether that left garbage worth a release.
func reload(log logr.Logger, ld *loader, last time.Time, force bool) (time.Time, bool) {
	if !force {
		if fi, err := os.Stat(ld.path); err != nil || fi.ModTime().Equal(last) {
			return last, false
		}
	}
	start := time.Now()
	mtime, decoded, err := ld.load()
	if err != nil {
		log.Error(err, "config rejected; still serving the previous one", "version", ld.srv.Version())
		return last, true
	}
	log.Info("config reloaded", "version", ld.srv.Version(), "took", time.Since(start).String(), "decodedHosts", decoded)
	return mtime, decoded >= releaseAfter
}
