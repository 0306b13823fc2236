package agent

import (
	"errors"
	"flag"
	"io"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// TestParseFlags parses the command lines the local provider and the in-cluster Deployment's
// tests give `fleetgate dataplane`, and the ones it must refuse.
func TestParseFlags(t *testing.T) {
	creds := []string{"--cert", "/c/tls.crt", "--key", "/c/tls.key", "--ca", "/c/ca.crt"}
	tests := []struct {
		name    string
		args    []string
		want    summary
		wantErr bool
	}{
		{
			name: "local provider",
			args: append([]string{"--gateway", "hub/ns/gw", "--node", "local-abc", "--xds-address", "127.0.0.1:18000",
				"--address", "127.0.0.5", "--drain-timeout", "1s"}, creds...),
			want: summary{Gateway: "hub/ns/gw", Node: "local-abc", XDS: "127.0.0.1:18000", Address: "127.0.0.5",
				Drain: time.Second, UpIdle: 4 * time.Second, GCFloor: 64, MaxConns: 10000, Denied: len(ir.DefaultDeniedEndpointCIDRs())},
		},
		{
			name: "shared flags",
			args: append([]string{"-gateway", "g", "-node", "n", "-xds-address", "x:1", "-metrics-address", ":9090", "-access-log",
				"-v", "2", "-gc-heap-floor-mb", "0", "-max-connections-per-listener", "5", "-denied-endpoint-cidrs=", "-upstream-idle-timeout", "2s"}, creds...),
			want: summary{Gateway: "g", Node: "n", XDS: "x:1", Metrics: ":9090", AccessLog: true, V: 2,
				Drain: 30 * time.Second, UpIdle: 2 * time.Second, MaxConns: 5},
		},
		{name: "missing gateway", args: append([]string{"--xds-address", "x:1"}, creds...), wantErr: true},
		{name: "unknown flag", args: []string{"--config", "x"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := ParseFlags(tt.args, io.Discard)
			if tt.wantErr {
				if err == nil || errors.Is(err, flag.ErrHelp) {
					t.Fatalf("err = %v, want a refusal", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := summary{Gateway: o.Gateway, Node: o.Node, XDS: o.XDSAddress, Address: o.Address, Metrics: o.MetricsAddress,
				AccessLog: o.AccessLog, V: o.Verbosity, Drain: o.DrainTimeout, UpIdle: o.UpstreamIdleTimeout, GCFloor: o.GCHeapFloorMB,
				MaxConns: o.Limits.MaxConnectionsPerListener, Denied: len(o.Limits.DeniedEndpointCIDRs)}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("options (-want +got):\n%s", diff)
			}
		})
	}
}

type summary struct {
	Gateway, Node, XDS, Address, Metrics string
	AccessLog                            bool
	V                                    int
	Drain, UpIdle                        time.Duration
	GCFloor                              uint64
	MaxConns, Denied                     int
}
