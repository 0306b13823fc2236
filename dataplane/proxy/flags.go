package proxy

import (
	"flag"
	"net/netip"
	"strings"
	"time"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// LimitFlags registers the flags of the limits a proxy process applies when its config does not
// set them (ir.Limits, from the GatewayClassConfig's spec.proxy), with their defaults.
func (o *Options) LimitFlags(fs *flag.FlagSet) {
	fs.DurationVar(&o.BackendResponseTimeout, "backend-response-timeout", 30*time.Second,
		"wait at most this long for a backend's response headers on routes that set no timeout (504 after it)")
	fs.DurationVar(&o.RequestBodyIdleTimeout, "request-body-idle-timeout", 30*time.Second,
		"end a request whose client sends no body byte for this long (408)")
	fs.DurationVar(&o.ResponseWriteIdleTimeout, "response-write-idle-timeout", 60*time.Second,
		"close a connection whose client accepts no response byte for this long")
	fs.DurationVar(&o.LingerTimeout, "linger-timeout", 2*time.Second,
		"after answering 414 to a client still sending its request target, read and discard for at most this long (and 4 MiB) before closing, so that the answer is not lost to a reset")
	fs.IntVar(&o.MaxConnectionsPerListener, "max-connections-per-listener", 10000,
		"client connections each listener (port) serves at once; more are closed at once")
	fs.IntVar(&o.HTTP2MaxResetsPerSecond, "http2-max-resets-per-second", 100,
		"streams an HTTP/2 client may cancel per second (and in a burst) before its connection gets a GOAWAY and is closed")
	fs.BoolVar(&o.DisableHTTP2Server, "disable-http2-server", false,
		"serve HTTP/2 (h2 over TLS and h2c) with net/http's HTTP/2 server instead of the proxy's own")
	fs.BoolVar(&o.AllowCBCCipherSuites, "allow-cbc-cipher-suites", false,
		"also offer the TLS 1.2 CBC-SHA cipher suites (by default only AEAD suites)")
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
}
