package controllers

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgate/fleetgate/controllers/snapshot"
)

// setupProvisioning builds the Dataplane's provisioning engine and finalizers and runs them on the
// leader: the engine reads the clusters through sources, and finalizers are written with the hub's
// client or the member's.
func (d *Dataplane) setupProvisioning(mgr ctrl.Manager, reg prometheus.Registerer, sources func() []Source, members *MemberClients) error {
	clients := func(cluster string) (client.Client, error) {
		if cluster == snapshot.HubCluster {
			return mgr.GetClient(), nil
		}
		if members == nil {
			return nil, fmt.Errorf("member cluster %q: no member clients", cluster)
		}
		return members.Client(cluster)
	}
	log := mgr.GetLogger()
	if err := d.newEngine(reg, log.WithName("provision")); err != nil {
		return err
	}
	d.finalizers = newFinalizers(log.WithName("finalizers"), sources, clients, d.engine)
	if err := mgr.Add(d.engine); err != nil {
		return fmt.Errorf("adding the provisioning engine: %w", err)
	}
	if err := mgr.Add(d.finalizers); err != nil {
		return fmt.Errorf("adding the finalizers: %w", err)
	}
	return nil
}
