package translate

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/dataplane/ir"
)

func TestDefaultPolicyDenies(t *testing.T) {
	p := defaultProxyPolicy()
	for _, tc := range []struct {
		addr string
		want bool
	}{
		{"10.0.0.1", false},
		{"198.18.0.1", false},
		{"fd00::1", false},
		{"127.0.0.1", true},
		{"169.254.169.254", true},
		{"::ffff:169.254.169.254", true}, // v4-mapped
		{"fe80::1%eth0", true},           // a zone must not hide the prefix
		{"fd00:ec2::254", true},
		{"100.100.100.200", true},
		{"::1", true},
		{"not-an-ip", true}, // a proxy could not dial it safely
	} {
		if got := p.denies(tc.addr); got != tc.want {
			t.Errorf("denies(%q) = %v, want %v", tc.addr, got, tc.want)
		}
	}
}

// TestProxyPolicyServerHeader: the class's Server header travels in the limits, and a value a
// proxy would refuse (the CRD's pattern refuses it too) is an error of the class, not a NACK.
func TestProxyPolicyServerHeader(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    *v1alpha1.ProxyOptions
		want    *ir.Limits
		wantErr string
	}{
		{name: "strip", opts: &v1alpha1.ProxyOptions{ServerHeader: v1alpha1.ServerHeaderStrip},
			want: &ir.Limits{ServerHeader: ir.ServerHeaderStrip}},
		{name: "set a value", opts: &v1alpha1.ProxyOptions{ServerHeader: v1alpha1.ServerHeaderSet, ServerHeaderValue: "edge"},
			want: &ir.Limits{ServerHeader: ir.ServerHeaderSet, ServerHeaderValue: "edge"}},
		{name: "header injection", opts: &v1alpha1.ProxyOptions{ServerHeaderValue: "x\r\nSet-Cookie: a=b"},
			wantErr: "spec.proxy.serverHeaderValue"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := newProxyPolicy(tc.opts)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, p.limits); diff != "" {
				t.Errorf("limits (-want +got):\n%s", diff)
			}
		})
	}
}
