package main

import (
	"context"
	"flag"
	"os"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/providers"
	"github.com/fleetgate/fleetgate/providers/gcp"
)

// addGCPFlags defines the flags of the GCP provider.
func addGCPFlags(fs *flag.FlagSet, o *options) {
	fs.StringVar(&o.gcpProject, "gcp-project", os.Getenv("GOOGLE_CLOUD_PROJECT"), "GCP project of classes that name none, and of LoadBalancer Services of class "+v1alpha1.LoadBalancerClassGCP)
	fs.StringVar(&o.gcpRegion, "gcp-region", "", "GCP region of regional and network classes that name none, and of LoadBalancer Services of class "+v1alpha1.LoadBalancerClassGCP)
	fs.StringVar(&o.gcpEndpoint, "gcp-endpoint", "", "Compute Engine API endpoint of classes that name none (Private Service Connect; default Google's)")
}

// newGCP builds the provider of gcp classes: service account keys come from Secrets read
// directly, the projects and regions to sweep from the GatewayClassConfigs; probes find backends'
// readiness probes for the health checks.
func newGCP(ctx context.Context, o options, direct client.Client, probes providers.ReadinessProbes, reg prometheus.Registerer, logger logr.Logger) (*gcp.Provider, error) {
	fleet, err := fleetID(ctx, o, direct)
	if err != nil {
		return nil, err
	}
	return gcp.New(gcp.Options{
		Fleet:    fleet,
		Defaults: v1alpha1.GCPOptions{Project: o.gcpProject, Region: o.gcpRegion, Endpoint: o.gcpEndpoint},
		Secrets:  secretData(direct),
		Classes: func(ctx context.Context) ([]v1alpha1.GCPOptions, error) {
			var list v1alpha1.GatewayClassConfigList
			if err := direct.List(ctx, &list); err != nil {
				return nil, err
			}
			var out []v1alpha1.GCPOptions
			for _, c := range list.Items {
				if c.Spec.Provider == v1alpha1.ProviderGCP && c.Spec.GCP != nil {
					out = append(out, *c.Spec.GCP)
				}
			}
			return out, nil
		},
		Members:    memberSpecs(direct),
		Probes:     probes,
		Registerer: reg,
		Log:        logger.WithName("gcp"),
	})
}
