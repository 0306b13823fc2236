// Package controllers holds fleetgate's reconcilers: thin loops that read the caches into a
// snapshot, call the pure translation, hand the results to the providers and to the one status
// writer.
package controllers
