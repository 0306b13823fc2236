package main

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/fleetgate/fleetgate/providers/dns"
)

// newEmbeddedDNS builds the publishers of the classes whose GatewayClassConfig has spec.dns: one
// external-dns plan + TXT registry per config, owner ID the fleet's. TSIG secrets are read only
// from the operator's namespace, as the API says.
func newEmbeddedDNS(ctx context.Context, o options, direct client.Reader, logger logr.Logger) (*dns.Publishers, error) {
	fleet, err := fleetID(ctx, o, direct)
	if err != nil {
		return nil, err
	}
	read := secretData(direct)
	secrets := func(ctx context.Context, namespace, name string) (map[string][]byte, error) {
		if namespace != o.namespace {
			return nil, fmt.Errorf("the TSIG Secret must be in the operator's namespace %s, not %s", o.namespace, namespace)
		}
		return read(ctx, namespace, name)
	}
	return dns.NewPublishers(dns.Options{FleetID: fleet, Secrets: secrets, Log: logger.WithName("dns"), Metrics: metrics.Registry}), nil
}
