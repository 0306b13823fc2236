package providers

// HTTPProbe is a backend pod's HTTP readiness probe as a cloud health check can follow it: the
// kubelet's idea of ready, which GKE's Ingress also takes for its health checks.
type HTTPProbe struct {
	// Path starts with "/".
	Path string
	// Scheme is HTTP or HTTPS.
	Scheme string
}
