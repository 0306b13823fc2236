package proxy

import (
	"crypto/tls"
	"net/http/httptest"
	"testing"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

func TestMisdirected(t *testing.T) {
	lt := &listenerTable{owners: compileOwners([]ir.Certificate{
		{Name: "any"},
		{Name: "second", Hostnames: []string{"second-example.org"}},
		{Name: "wild", Hostnames: []string{"*.wildcard.org"}},
		{Name: "fourth", Hostnames: []string{"fourth-example.wildcard.org"}},
	})}
	for _, tc := range []struct {
		sni, host string
		want      bool
	}{
		{"example.org", "example.org", false},
		{"example.org", "second-example.org", true},
		{"example.org", "unknown-example.org", false},
		{"second-example.org", "second-example.org:443", false},
		{"second-example.org", "example.org", true},
		{"third-example.wildcard.org", "fith-example.wildcard.org", false},
		{"third-example.wildcard.org", "fourth-example.wildcard.org", true},
		{"fourth-example.wildcard.org", "fith-example.wildcard.org", true},
		{"", "second-example.org", false},
	} {
		r := httptest.NewRequest("GET", "https://"+tc.host+"/", nil)
		r.TLS = &tls.ConnectionState{ServerName: tc.sni}
		if got := misdirected(lt, r); got != tc.want {
			t.Errorf("misdirected(SNI %q, Host %q) = %v, want %v", tc.sni, tc.host, got, tc.want)
		}
	}
	if misdirected(&listenerTable{}, httptest.NewRequest("GET", "http://a/", nil)) {
		t.Error("plain HTTP listener reported a misdirected request")
	}
}
