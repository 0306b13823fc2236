// Package controllers holds fleetgate's reconcilers: thin loops that read the caches, call the pure
// translation and hand results to the providers and to the one status writer.
package controllers

// ControllerName is the GatewayClass spec.controllerName fleetgate implements.
const ControllerName = "fleetgate.dev/gateway-controller"
