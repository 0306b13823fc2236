package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSoftMemoryLimit(t *testing.T) {
	for _, tt := range []struct {
		name    string
		env     map[string]string
		want    int64
		wantOK  bool
		wantErr bool
	}{
		{name: "no limit given"},
		{name: "512Mi container", env: map[string]string{"FLEETGATE_MEMORY_LIMIT": "536870912"}, want: 483183819, wantOK: true},
		{name: "GOMEMLIMIT wins", env: map[string]string{"GOMEMLIMIT": "300MiB", "FLEETGATE_MEMORY_LIMIT": "536870912"}},
		{name: "zero", env: map[string]string{"FLEETGATE_MEMORY_LIMIT": "0"}},
		{name: "a quantity, not bytes", env: map[string]string{"FLEETGATE_MEMORY_LIMIT": "512Mi"}, wantErr: true},
		{name: "negative", env: map[string]string{"FLEETGATE_MEMORY_LIMIT": "-1"}, wantErr: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, ok, err := softMemoryLimit(func(k string) string { return tt.env[k] })
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if diff := cmp.Diff([2]any{tt.want, tt.wantOK}, [2]any{got, ok}); diff != "" {
				t.Errorf("limit, ok (-want +got):\n%s", diff)
			}
		})
	}
}
