// Package proxyproc is what the two proxy processes share: `fleetgate dataplane` (dataplane/agent,
// fed by the operator over xDS) and fleetgate-proxy (dataplane/cmd/fleetgate-proxy, fed from a
// file). It holds their common flags, their logger (zap through zapr, as the operator logs), the
// Prometheus registry and its endpoint, and their life from command line to shutdown on a signal.
package proxyproc

import (
	"flag"
	"time"

	"github.com/fleetgate/fleetgate/dataplane/proxy"
)

// Flags are the settings both proxy processes take, under the same flag names.
type Flags struct {
	Address             string
	MetricsAddress      string
	AccessLog           bool
	Verbosity           int
	DrainTimeout        time.Duration
	UpstreamIdleTimeout time.Duration
	GCHeapFloorMB       uint64
	// Limits holds the proxy's limits from their flags (proxy.Options.LimitFlags); a config's
	// ir.Limits overrides them.
	Limits proxy.Options
}

// Register adds the shared flags to fs, with their defaults.
func (f *Flags) Register(fs *flag.FlagSet) {
	fs.StringVar(&f.Address, "address", "", "IP the listeners bind to (default: every interface)")
	fs.StringVar(&f.MetricsAddress, "metrics-address", "", "host:port serving /metrics (off when empty)")
	fs.BoolVar(&f.AccessLog, "access-log", false, "log one JSON line per request to stdout")
	fs.IntVar(&f.Verbosity, "v", 0, "log verbosity")
	fs.DurationVar(&f.DrainTimeout, "drain-timeout", 30*time.Second, "how long connections may finish on shutdown or when a listener goes")
	fs.DurationVar(&f.UpstreamIdleTimeout, "upstream-idle-timeout", 4*time.Second,
		"close idle keepalive connections to backends after this long; keep it below the backends' own (Node.js: 5s)")
	fs.Uint64Var(&f.GCHeapFloorMB, "gc-heap-floor-mb", 64, "keep the GC heap goal at least this many MiB above the live heap (0: plain GOGC)")
	f.Limits.LimitFlags(fs)
}
