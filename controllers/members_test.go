package controllers

import (
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/fleetgate/fleetgate/controllers/fleet"
)

func TestMemberClients(t *testing.T) {
	var c MemberClients
	if _, err := c.Client("member-a"); err == nil || !strings.Contains(err.Error(), "not running") {
		t.Errorf("before the fleet runs: err = %v, want not running", err)
	}
	a := fake.NewClientBuilder().Build()
	c.bind(func() []fleet.Member { return []fleet.Member{{Name: "member-a", Writer: a}} })
	tests := []struct {
		cluster string
		want    client.Client
		wantErr string
	}{
		{cluster: "member-a", want: a},
		{cluster: "member-b", wantErr: "not connected"},
	}
	for _, tt := range tests {
		got, err := c.Client(tt.cluster)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Client(%q) err = %v, want %q", tt.cluster, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Client(%q) = %v, %v; want the member's writer", tt.cluster, got, err)
		}
	}
}
