package controllers

import (
	"slices"
	"strings"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/gateway-api/pkg/features"
)

// SupportedFeatures lists the Gateway API features fleetgate implements end to end (config, status
// and traffic), sorted as the API requires. A feature joins only once its upstream conformance tests
// pass (make conformance).
func SupportedFeatures() []gwv1.SupportedFeature {
	claimed := []features.FeatureName{
		features.SupportGateway,
		features.SupportHTTPRoute,
		features.SupportReferenceGrant,
	}
	out := make([]gwv1.SupportedFeature, 0, len(claimed))
	for _, f := range claimed {
		out = append(out, gwv1.SupportedFeature{Name: gwv1.FeatureName(f)})
	}
	slices.SortFunc(out, func(a, b gwv1.SupportedFeature) int { return strings.Compare(string(a.Name), string(b.Name)) })
	return out
}
