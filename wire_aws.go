package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/providers/aws"
)

// addAWSFlags defines the flags of the AWS provider, which the operator and `fleetgate plan` share.
func addAWSFlags(fs *flag.FlagSet, o *options) {
	fs.StringVar(&o.fleetID, "fleet-id", "", "tags every cloud resource, so that fleets sharing an account never touch each other's (default: the UID of the hub's kube-system namespace)")
	fs.StringVar(&o.awsRegion, "aws-region", os.Getenv("AWS_REGION"), "AWS region of classes that name none, and of LoadBalancer Services of class "+v1alpha1.LoadBalancerClassAWSNLB)
	fs.StringVar(&o.awsEndpoint, "aws-endpoint", "", "AWS API endpoint of classes that name none (a VPC endpoint; default AWS's)")
	fs.Float64Var(&o.awsQPS, "aws-qps", 10, "AWS API calls per second per account and region, shared by every gateway")
	fs.IntVar(&o.awsBurst, "aws-burst", 20, "AWS API call burst per account and region")
}

// newAWS builds the provider of aws classes. Its static keys come from Secrets read directly (the
// manager caches no Secrets of other namespaces), its accounts from the GatewayClassConfigs.
func newAWS(ctx context.Context, o options, direct client.Client, reg prometheus.Registerer, logger logr.Logger) (*aws.Provider, error) {
	fleet := o.fleetID
	if fleet == "" {
		// The hub's kube-system namespace lives as long as the hub: a stable, unique fleet ID.
		var ns corev1.Namespace
		if err := direct.Get(ctx, client.ObjectKey{Name: "kube-system"}, &ns); err != nil {
			return nil, fmt.Errorf("deriving the fleet ID from the kube-system namespace (or set --fleet-id): %w", err)
		}
		fleet = string(ns.UID)
	}
	return aws.New(aws.Options{
		Fleet:    fleet,
		Defaults: v1alpha1.AWSOptions{Region: o.awsRegion, Endpoint: o.awsEndpoint},
		Secrets: func(ctx context.Context, namespace, name string) (map[string][]byte, error) {
			var s corev1.Secret
			if err := direct.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &s); err != nil {
				return nil, err
			}
			return s.Data, nil
		},
		Classes: func(ctx context.Context) ([]v1alpha1.AWSOptions, error) {
			var list v1alpha1.GatewayClassConfigList
			if err := direct.List(ctx, &list); err != nil {
				return nil, err
			}
			var out []v1alpha1.AWSOptions
			for _, c := range list.Items {
				if c.Spec.Provider == v1alpha1.ProviderAWS && c.Spec.AWS != nil {
					out = append(out, *c.Spec.AWS)
				}
			}
			return out, nil
		},
		QPS:        o.awsQPS,
		Burst:      o.awsBurst,
		Registerer: reg,
		Log:        logger.WithName("aws"),
	})
}
