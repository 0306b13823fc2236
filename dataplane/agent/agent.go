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
	"os"

	"github.com/fleetgate/fleetgate/dataplane/proxy"
	"github.com/fleetgate/fleetgate/dataplane/proxyproc"
	"github.com/fleetgate/fleetgate/dataplane/xds"
)

// Options are the proxy process's settings, parsed from its command line.
type Options struct {
	Gateway       string
	Node          string
	XDSAddress    string
	XDSServerName string
	CertFile      string
	KeyFile       string
	CAFile        string
	// Flags are the settings every proxy process takes (listen address, metrics, logs, limits).
	proxyproc.Flags
}

// Main is `fleetgate dataplane`: it parses args (the words after it), serves until SIGINT or
// SIGTERM, then drains, and returns the exit code.
func Main(args []string) int {
	return proxyproc.Main("fleetgate dataplane", args, os.Stdout, os.Stderr, ParseFlags, Run)
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
	o.Register(fs)
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
	p := proxyproc.Start(o.Flags, stdout, stderr)
	defer p.Close()
	p.Log = p.Log.WithValues("gateway", o.Gateway, "node", o.Node)
	srv, err := proxy.New(p.ProxyOptions())
	if err != nil {
		return fmt.Errorf("creating proxy: %w", err)
	}
	tlsCfg, err := clientTLS(o)
	if err != nil {
		return err
	}
	client, err := xds.NewClient(xds.ClientOptions{
		Address: o.XDSAddress, TLS: tlsCfg, Gateway: o.Gateway, Node: o.Node,
		Apply: srv.Update, Logger: p.Log.WithName("xds"),
	})
	if err != nil {
		return fmt.Errorf("creating config client: %w", err)
	}
	defer p.ServeMetrics(func(mux *http.ServeMux) { mux.Handle("/healthz", healthz(client)) })()
	p.Log.Info("proxy starting", "xds", o.XDSAddress, "address", o.Address)
	runErr := client.Run(ctx)
	return errors.Join(runErr, p.Shutdown(srv))
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

// healthz is healthy once a config is in service.
func healthz(client *xds.Client) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if client.Version() == 0 {
			http.Error(w, "no config yet", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintf(w, "serving config version %d\n", client.Version())
	})
}

func hostOf(addr string) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	return host
}
