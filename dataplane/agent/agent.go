// Package agent is the proxy process: a dataplane/proxy Server fed by the operator over the xDS
// config stream (dataplane/xds), with mTLS credentials from files. The operator image runs it as
// `fleetgate dataplane`; local mode starts one such process per Gateway.
package agent

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/fleetgate/fleetgate/dataplane/gcfloor"
	"github.com/fleetgate/fleetgate/dataplane/ir"
	"github.com/fleetgate/fleetgate/dataplane/proxy"
	"github.com/fleetgate/fleetgate/dataplane/xds"
)

// Options are the proxy process's settings, parsed from its command line.
type Options struct {
	Gateway        string
	Node           string
	XDSAddress     string
	XDSServerName  string
	CertFile       string
	KeyFile        string
	CAFile         string
	Address        string
	MetricsAddress string
	AccessLog      bool
	Verbosity      int
	DrainTimeout   time.Duration
	GCHeapFloorMB  uint64
	// DeniedEndpointCIDRs are networks the proxy never connects to, unless a config sets its own.
	DeniedEndpointCIDRs []string
}

// ParseFlags reads Options from args (the words after `fleetgate dataplane`).
func ParseFlags(args []string, output io.Writer) (Options, error) {
	var o Options
	fs := flag.NewFlagSet("dataplane", flag.ContinueOnError)
	fs.SetOutput(output)
	host, _ := os.Hostname()
	fs.StringVar(&o.Gateway, "gateway", "", "the gateway key this proxy serves (required)")
	fs.StringVar(&o.Node, "node", host, "this replica's name, unique per gateway")
	fs.StringVar(&o.XDSAddress, "xds-address", "", "host:port of the operator's config server (required)")
	fs.StringVar(&o.XDSServerName, "xds-server-name", "", "name the config server's certificate must carry (default: the host of -xds-address)")
	fs.StringVar(&o.CertFile, "cert", "", "client certificate (PEM) naming the gateway")
	fs.StringVar(&o.KeyFile, "key", "", "client key (PEM)")
	fs.StringVar(&o.CAFile, "ca", "", "CA certificate (PEM) the config server's certificate chains to")
	fs.StringVar(&o.Address, "address", "", "IP the listeners bind to (default: every interface)")
	fs.StringVar(&o.MetricsAddress, "metrics-address", "", "host:port serving /metrics and /healthz (off when empty)")
	fs.BoolVar(&o.AccessLog, "access-log", false, "log one JSON line per request to stdout")
	fs.IntVar(&o.Verbosity, "v", 0, "log verbosity")
	fs.DurationVar(&o.DrainTimeout, "drain-timeout", 30*time.Second, "how long connections may finish on shutdown or when a listener goes")
	fs.Uint64Var(&o.GCHeapFloorMB, "gc-heap-floor-mb", 64, "keep the GC heap goal at least this many MiB above the live heap (0: plain GOGC)")
	o.DeniedEndpointCIDRs = ir.DefaultDeniedEndpointCIDRs()
	fs.Func("denied-endpoint-cidrs", "comma-separated networks the proxy never connects to, whatever its config's endpoints say (\"\": none; default "+
		strings.Join(o.DeniedEndpointCIDRs, ",")+"); a GatewayClassConfig's spec.proxy.deniedEndpointCIDRs replaces it", func(v string) error {
		o.DeniedEndpointCIDRs = nil
		for c := range strings.SplitSeq(v, ",") {
			if c = strings.TrimSpace(c); c == "" {
				continue
			}
			if _, err := netip.ParsePrefix(c); err != nil {
				return err
			}
			o.DeniedEndpointCIDRs = append(o.DeniedEndpointCIDRs, c)
		}
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	var missing []error
	for _, f := range []struct{ name, value string }{
		{"gateway", o.Gateway}, {"xds-address", o.XDSAddress}, {"cert", o.CertFile}, {"key", o.KeyFile}, {"ca", o.CAFile},
	} {
		if f.value == "" {
			missing = append(missing, fmt.Errorf("-%s is required", f.name))
		}
	}
	return o, errors.Join(missing...)
}

// Run serves until ctx ends, then drains.
func Run(ctx context.Context, o Options, stdout, stderr io.Writer) error {
	defer gcfloor.Start(o.GCHeapFloorMB << 20)()
	log := funcr.NewJSON(func(obj string) { fmt.Fprintln(stderr, obj) }, funcr.Options{Verbosity: o.Verbosity}).
		WithValues("gateway", o.Gateway, "node", o.Node)
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	popts := proxy.Options{Address: o.Address, Log: log, DrainTimeout: o.DrainTimeout, Registry: reg,
		DeniedEndpointCIDRs: o.DeniedEndpointCIDRs}
	if o.AccessLog {
		popts.AccessLog = funcr.NewJSON(func(obj string) { fmt.Fprintln(stdout, obj) }, funcr.Options{})
	}
	srv, err := proxy.New(popts)
	if err != nil {
		return fmt.Errorf("creating proxy: %w", err)
	}
	tlsCfg, err := clientTLS(o)
	if err != nil {
		return err
	}
	client, err := xds.NewClient(xds.ClientOptions{
		Address: o.XDSAddress, TLS: tlsCfg, Gateway: o.Gateway, Node: o.Node,
		Apply: srv.Update, Logger: log.WithName("xds"),
	})
	if err != nil {
		return fmt.Errorf("creating config client: %w", err)
	}
	if o.MetricsAddress != "" {
		stop := serveMetrics(o.MetricsAddress, reg, client, log)
		defer stop()
	}
	log.Info("proxy starting", "xds", o.XDSAddress, "address", o.Address)
	runErr := client.Run(ctx)
	shutdownCtx, cancel := context.WithTimeout(context.Background(), o.DrainTimeout)
	defer cancel()
	return errors.Join(runErr, srv.Shutdown(shutdownCtx))
}

func clientTLS(o Options) (*tls.Config, error) {
	cert, err := os.ReadFile(o.CertFile)
	if err != nil {
		return nil, fmt.Errorf("reading -cert: %w", err)
	}
	key, err := os.ReadFile(o.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("reading -key: %w", err)
	}
	ca, err := os.ReadFile(o.CAFile)
	if err != nil {
		return nil, fmt.Errorf("reading -ca: %w", err)
	}
	serverName := o.XDSServerName
	if serverName == "" {
		serverName = hostOf(o.XDSAddress)
	}
	cfg, err := xds.ClientTLSConfig(xds.KeyPair{CertPEM: cert, KeyPEM: key}, ca, serverName)
	if err != nil {
		return nil, fmt.Errorf("client TLS: %w", err)
	}
	return cfg, nil
}

// serveMetrics serves /metrics, and /healthz which is healthy once a config is in service.
func serveMetrics(addr string, reg *prometheus.Registry, client *xds.Client, log logr.Logger) func() {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if client.Version() == 0 {
			http.Error(w, "no config yet", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintf(w, "serving config version %d\n", client.Version())
	})
	ms := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := ms.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error(err, "metrics server")
		}
	}()
	return func() { _ = ms.Close() }
}

func hostOf(addr string) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	return host
}
