// Package provision is the provisioning engine between translation and the providers: a rate-limited
// work queue per provider with one key per gateway, a bounded number of workers per queue,
// coalescing of model changes, jittered periodic resync, deletion of gateways that leave the
// desired set, and an orphan sweep by ownership labels. Results are kept per gateway and announced
// through a callback, so that the status writer re-evaluates Programmed without a new translation.
package provision
