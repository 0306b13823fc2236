package proxy

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestValidHost(t *testing.T) {
	for _, tc := range []struct {
		host string
		want bool
	}{
		{"a.example.com", true},
		{"A.Example.COM:8080", true},
		{"a.example.com:", true}, // RFC 3986: port = *DIGIT
		{"a.example.com.", true},
		{"127.0.0.1:80", true},
		{"[::1]", true},
		{"[2001:db8::1]:443", true},
		{"xn--bcher-kva.example", true},
		{"a_b.example.com", true},
		{"a%41.example.com", true},
		{"sub!$&'()*+,;=.example.com", true},
		{"", false},
		{":80", false},
		{"evil.test#.example.com", false},
		{"evil.test/.example.com", false},
		{"evil.test?.example.com", false},
		{"user@a.example.com", false},
		{"a example.com", false},
		{"a.example.com:8x", false},
		{"a.example.com:123456", false},
		{"a.example.com:80:80", false},
		{"a%4.example.com", false},
		{"a%zz.example.com", false},
		{"[::1", false},
		{"[::1]x", false},
		{"[1.2.3.4]", false},
		{"[fe80::1%25eth0]", false},
		{"[v1.x]", false},
		{"::1", false},
		{"bücher.example", false},
		{"a\x00b", false},
	} {
		if got := validHost(tc.host); got != tc.want {
			t.Errorf("validHost(%q) = %v, want %v", tc.host, got, tc.want)
		}
	}
}

func TestParseChunkSize(t *testing.T) {
	for _, tc := range []struct {
		line string
		want int64
		ok   bool
	}{
		{"5\r\n", 5, true},
		{"1aF\r\n", 0x1af, true},
		{"0\r\n", 0, true},
		{"5;name=value\r\n", 5, true},
		{"5 ;name=\"v\"\r\n", 5, true},
		{"fffffffffffffff\r\n", 0xfffffffffffffff, true},
		{"+5\r\n", 0, false},
		{"-5\r\n", 0, false},
		{"0x5\r\n", 0, false},
		{" 5\r\n", 0, false},
		{"\r\n", 0, false},
		{"5\n", 0, false},
		{"5x\r\n", 0, false},
		{"5;a\rb\r\n", 0, false},
		{"1000000000000000\r\n", 0, false},
	} {
		n, ok := parseChunkSize([]byte(tc.line))
		if n != tc.want || ok != tc.ok {
			t.Errorf("parseChunkSize(%q) = %d, %v, want %d, %v", tc.line, n, ok, tc.want, tc.ok)
		}
	}
}

func TestParseLength(t *testing.T) {
	for _, tc := range []struct {
		v    string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"42", 42, true}, {"007", 7, true}, {"999999999999999999", 999999999999999999, true},
		{"", 0, false}, {"+5", 0, false}, {"-1", 0, false}, {" 5", 0, false}, {"5,5", 0, false},
		{"1e3", 0, false}, {"0x10", 0, false}, {"9999999999999999999", 0, false},
	} {
		n, ok := parseLength(tc.v)
		if n != tc.want || ok != tc.ok {
			t.Errorf("parseLength(%q) = %d, %v, want %d, %v", tc.v, n, ok, tc.want, tc.ok)
		}
	}
}

// TestTargetTooLongCounted: a 414 on either path is a limit hit.
func TestTargetTooLongCounted(t *testing.T) {
	for _, f := range fronts() {
		t.Run(f.name, func(t *testing.T) {
			be := newRecBackend(t, 0)
			dial, s := smuggleProxy(t, be, f)
			c := dial()
			c.send("GET /" + strings.Repeat("a", maxTarget+1) + " HTTP/1.1\r\nHost: a.example.com\r\n\r\n")
			if got := c.read("GET"); !strings.HasPrefix(got, "414") {
				t.Fatalf("answer %q, want 414", got)
			}
			if n := limitHit(t, s.opts.Registry.(*prometheus.Registry), "request_target_too_long"); n != 1 {
				t.Errorf("request_target_too_long hits = %v, want 1", n)
			}
		})
	}
}
