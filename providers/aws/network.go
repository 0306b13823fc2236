package aws

// Network is where a gateway's load balancer goes: the VPC and the subnets chosen for it (one per
// zone), found by discovery (subnets.go) before Build, which stays pure.
type Network struct {
	VPC     string
	Subnets []Subnet
}

// Subnet is one subnet the load balancer uses.
type Subnet struct {
	ID               string
	AvailabilityZone string
	CIDR             string
}
