package v1alpha1

// FinalizerLoadBalancer holds Gateways, Ingresses and LoadBalancer Services of fleetgate classes
// until the provider deleted what was built for them, so that a deletion survives an operator
// restart.
const FinalizerLoadBalancer = "fleetgate.dev/load-balancer"
