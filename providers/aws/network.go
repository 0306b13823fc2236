package aws

import "github.com/fleetgate/fleetgate/providers"

// Network is what discovery finds around a gateway before Build, which stays pure: where its load
// balancer goes, the VPC and the subnets chosen for it (one per zone, subnets.go), and what its
// backends' pods are probed with (readiness.go).
type Network struct {
	VPC     string
	Subnets []Subnet
	// Probes are the HTTP readiness probes of backends' pods, by backend name.
	Probes map[string]providers.HTTPProbe
}

// Subnet is one subnet the load balancer uses.
type Subnet struct {
	ID               string
	AvailabilityZone string
	CIDR             string
}
