package controllers

import (
	"fmt"
	"slices"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/controllers/fleet"
)

// MemberClients hands providers a client of each usable member cluster. main.go builds the providers
// before Setup starts the fleet, so the lookup is bound late.
type MemberClients struct {
	mu      sync.RWMutex
	members func() []fleet.Member
}

func (c *MemberClients) bind(members func() []fleet.Member) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.members = members
}

// Client returns the member's client that talks to its API server directly.
func (c *MemberClients) Client(cluster string) (client.Client, error) {
	c.mu.RLock()
	members := c.members
	c.mu.RUnlock()
	if members == nil {
		return nil, fmt.Errorf("member cluster %q: fleet support is not running", cluster)
	}
	for _, m := range members() {
		if m.Name == cluster {
			return m.Writer, nil
		}
	}
	return nil, fmt.Errorf("member cluster %q is not connected", cluster)
}

// Clusters names the hub and every connected member cluster: where providers look for what they own.
func (c *MemberClients) Clusters() []string {
	c.mu.RLock()
	members := c.members
	c.mu.RUnlock()
	out := []string{v1alpha1.HubCluster}
	if members == nil {
		return out
	}
	for _, m := range members() {
		if !slices.Contains(out, m.Name) {
			out = append(out, m.Name)
		}
	}
	slices.Sort(out)
	return out
}
