package ir

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestHostnameKey(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "*"},
		{"*", "*"},
		{".", "*"},
		{"example.com", "example.com"},
		{"Example.COM", "example.com"},
		{"example.com.", "example.com"},
		{"*.Example.com.", "*.example.com"},
		{"a.b.c", "a.b.c"},
		{"xn--bcher-kva.example", "xn--bcher-kva.example"},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, HostnameKey(tt.in)); diff != "" {
			t.Errorf("HostnameKey(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}
