// Package providers is the contract between fleetgate and the load balancers it manages: the
// desired load-balancer model (LoadBalancer) that translation produces for every Gateway, and the
// interface that the aws, gcp and incluster providers implement. Providers never import
// controllers; only main.go names concrete providers.
package providers
