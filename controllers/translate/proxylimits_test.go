package translate

import "testing"

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
