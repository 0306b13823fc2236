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
		// Core of the five gateway profiles.
		features.SupportGateway,
		features.SupportReferenceGrant,
		features.SupportHTTPRoute,
		features.SupportGRPCRoute,
		features.SupportTLSRoute,
		features.SupportTCPRoute,
		features.SupportUDPRoute,
		// Extended.
		features.SupportGatewayPort8080,
		features.SupportGatewayAddressEmpty,
		features.SupportGatewayStaticAddresses,
		features.SupportGatewayInfrastructure,
		features.SupportGatewayHTTPSListenerDetectMisdirectedRequests,
		features.SupportGatewayHTTPListenerIsolation,
		features.SupportListenerSet,
		features.SupportGatewayBackendClientCertificate,
		features.SupportGatewayFrontendClientCertificateValidation,
		features.SupportGatewayFrontendClientCertificateValidationInsecureFallback,
		features.SupportBackendTLSPolicy,
		features.SupportBackendTLSPolicySANValidation,
		features.SupportHTTPRouteQueryParamMatching,
		features.SupportHTTPRouteMethodMatching,
		features.SupportHTTPRouteDestinationPortMatching,
		features.SupportHTTPRouteParentRefPort,
		features.SupportHTTPRouteResponseHeaderModification,
		features.SupportHTTPRouteBackendRequestHeaderModification,
		features.SupportHTTPRoutePortRedirect,
		features.SupportHTTPRouteSchemeRedirect,
		features.SupportHTTPRoutePathRedirect,
		features.SupportHTTPRoute303RedirectStatusCode,
		features.SupportHTTPRoute307RedirectStatusCode,
		features.SupportHTTPRoute308RedirectStatusCode,
		features.SupportHTTPRouteHostRewrite,
		features.SupportHTTPRoutePathRewrite,
		features.SupportHTTPRouteRequestMirror,
		features.SupportHTTPRouteRequestMultipleMirrors,
		features.SupportHTTPRouteRequestPercentageMirror,
		features.SupportHTTPRouteRequestTimeout,
		features.SupportHTTPRouteBackendTimeout,
		features.SupportHTTPRouteBackendProtocolH2C,
		features.SupportHTTPRouteBackendProtocolWebSocket,
		features.SupportHTTPRouteNamedRouteRule,
		features.SupportHTTPRouteRetry,
		// No upstream tests in v1.6.3; dataplane/proxy TestRetryConnectionErrorAndBackendTimeout proves them.
		features.SupportHTTPRouteRetryBackendTimeout,
		features.SupportHTTPRouteRetryConnectionError,
		features.SupportHTTPRouteCORS,
		features.SupportGRPCRouteNamedRouteRule,
		features.SupportTLSRouteModeTerminate,
		features.SupportTLSRouteModeMixed,
	}
	out := make([]gwv1.SupportedFeature, 0, len(claimed))
	for _, f := range claimed {
		out = append(out, gwv1.SupportedFeature{Name: gwv1.FeatureName(f)})
	}
	slices.SortFunc(out, func(a, b gwv1.SupportedFeature) int { return strings.Compare(string(a.Name), string(b.Name)) })
	return out
}
