package proxy

import (
	"flag"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

func TestDeniedEndpointCIDRsFlag(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		want    []string
		wantErr bool
	}{
		{name: "default", want: ir.DefaultDeniedEndpointCIDRs()},
		{name: "replaced", args: []string{"-denied-endpoint-cidrs=10.0.0.0/8, fd00::/8"}, want: []string{"10.0.0.0/8", "fd00::/8"}},
		{name: "none", args: []string{"-denied-endpoint-cidrs="}, want: nil},
		{name: "invalid", args: []string{"-denied-endpoint-cidrs=169.254.169.254"}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var o Options
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			o.LimitFlags(fs)
			err := fs.Parse(tc.args)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if diff := cmp.Diff(tc.want, o.DeniedEndpointCIDRs); diff != "" {
				t.Errorf("DeniedEndpointCIDRs (-want +got):\n%s", diff)
			}
		})
	}
}
