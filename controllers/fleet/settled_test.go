package fleet

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSettled: a MemberCluster is awaited until the reconciler has looked at it and it is either
// usable or known not to be.
func TestSettled(t *testing.T) {
	f := New(Options{})
	f.members = map[string]*member{
		"syncing":     {name: "syncing", healthy: true},
		"synced":      {name: "synced", healthy: true, synced: true},
		"unreachable": {name: "unreachable"},
	}
	for _, n := range []string{"syncing", "synced", "unreachable", "refused"} {
		f.markObserved(n)
	}
	tests := []struct {
		name  string
		names []string
		want  []string
	}{
		{name: "none", want: nil},
		{name: "connected and synced", names: []string{"synced"}},
		{name: "caches still syncing", names: []string{"syncing", "synced"}, want: []string{"syncing"}},
		{name: "does not answer", names: []string{"unreachable"}},
		{name: "connection refused (kubeconfig, TLS)", names: []string{"refused"}},
		{name: "not looked at yet", names: []string{"new", "synced"}, want: []string{"new"}},
	}
	for _, tc := range tests {
		if diff := cmp.Diff(tc.want, f.Settled(tc.names)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}
