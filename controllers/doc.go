// Package controllers holds fleetgate's reconcilers: thin loops that read the caches into a
// snapshot, call the pure translation, hand the results to the providers and to the one status
// writer.
package controllers

import "github.com/fleetgate/fleetgate/controllers/snapshot"

// ControllerName is the GatewayClass spec.controllerName fleetgate implements.
const ControllerName = snapshot.ControllerName
