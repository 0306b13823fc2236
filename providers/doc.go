// Package providers is the contract between fleetgate and the load balancers it manages: the
// desired load-balancer model (LoadBalancer: ports, addresses, the provider's own parameters and
// the gateway's routing) that translation produces for every gateway, what each provider can
// express (Capabilities, consulted by translation before any call), and the interface that the
// aws, gcp, incluster and local providers implement (Ensure, Delete, List for the orphan sweep).
// Providers never import controllers; only package main (main.go, wire.go) names concrete
// providers; imports_test.go at the module root holds both rules.
package providers
