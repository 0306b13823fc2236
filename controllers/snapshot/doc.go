// Package snapshot holds the immutable input of one translation: every object one GatewayClass key
// needs, read from the informer caches of every member cluster, each tagged with the cluster it
// came from, and sorted deterministically by (cluster, namespace, name).
//
// The builder that fills a Snapshot lives with the controllers; this package only defines the
// shape, the sort order and small pure conversion helpers. Once built and sorted, a Snapshot must
// not be mutated: translation reads it concurrently with nothing else and keeps no references
// that it writes through.
package snapshot
