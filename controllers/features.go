package controllers

import (
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// SupportedFeatures lists the Gateway API features fleetgate implements end to end (config, status and
// traffic), sorted as the API requires. It grows only with features whose conformance tests pass.
func SupportedFeatures() []gwv1.SupportedFeature {
	return []gwv1.SupportedFeature{}
}
