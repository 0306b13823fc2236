package aws

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAssignPriorities(t *testing.T) {
	tests := []struct {
		name     string
		order    []string
		existing map[string]int32
		want     map[string]int32
	}{
		{"fresh", []string{"a", "b"}, nil, map[string]int32{"a": 1, "b": 2}},
		{"kept", []string{"a", "b"}, map[string]int32{"a": 10, "b": 20}, map[string]int32{"a": 10, "b": 20}},
		{"inserted in a gap", []string{"a", "n", "b"}, map[string]int32{"a": 10, "b": 20}, map[string]int32{"a": 10, "n": 11, "b": 20}},
		{"out of order moves the later", []string{"b", "a"}, map[string]int32{"a": 10, "b": 20}, map[string]int32{"b": 20, "a": 21}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, assignPriorities(tt.order, tt.existing)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
}
