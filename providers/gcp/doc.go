// Package gcp is the Cloud Load Balancing provider: global and regional external Application
// Load Balancers (URL maps, target HTTP(S) proxies, backend services with zonal NEGs filled from
// every member cluster's endpoints) and regional passthrough Network Load Balancers, driven
// through the cloud.google.com/go/compute/apiv1 REST clients.
//
// The shape follows the aws provider: Build makes the desired Stack purely from the model;
// the deployer lists what the gateway owns (by name prefix, and the ownership record in each
// resource's description), then creates and updates in dependency order and deletes what is no
// longer desired in reverse order. Nothing is remembered between calls but caches: every decision
// is made from what the API lists.
package gcp
