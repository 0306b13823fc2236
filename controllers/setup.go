package controllers

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/fleetgate/fleetgate/controllers/snapshot"
)

// Options configure Setup.
type Options struct {
	// Registry receives fleetgate's metrics; nil means controller-runtime's registry, which the
	// manager serves on its metrics endpoint.
	Registry prometheus.Registerer
	// Apply makes translations real; nil leaves every Gateway Programmed=False/Pending.
	Apply Applier
	// Events re-run the pipeline when something outside the API changed, e.g. a proxy ACKed.
	Events <-chan event.GenericEvent
	// SkipNameValidation lets tests run several managers in one process; controller-runtime
	// otherwise refuses a second controller of the same name (their metrics would collide).
	SkipNameValidation bool
}

// Setup registers every fleetgate controller and the status writer with the manager. main.go and
// the integration tests share it so that tests exercise the production wiring.
func Setup(ctx context.Context, mgr ctrl.Manager, o Options) error {
	if o.Registry == nil {
		o.Registry = metrics.Registry
	}
	m, err := NewMetrics(o.Registry)
	if err != nil {
		return fmt.Errorf("registering metrics: %w", err)
	}
	writer := NewStatusWriter(mgr.GetLogger().WithName("status"), SupportedFeatures(), m)
	writer.SetTarget(snapshot.HubCluster, statusTarget{
		Reader:   mgr.GetClient(),
		Writer:   mgr.GetClient(),
		Recorder: mgr.GetEventRecorder("fleetgate"),
	})
	if err := mgr.Add(writer); err != nil {
		return fmt.Errorf("adding status writer: %w", err)
	}
	hub := []Source{{Cluster: snapshot.HubCluster, Reader: mgr.GetClient(), LegacyReferencePolicy: servesLegacyReferencePolicy(mgr)}}
	if err := (&GatewayReconciler{
		Sources: func() []Source { return hub },
		Apply:   o.Apply,
		Status:  writer,
		Metrics: m,
	}).SetupWithManager(mgr, o.Events, hub[0].LegacyReferencePolicy, o.SkipNameValidation); err != nil {
		return fmt.Errorf("setting up the Gateway API controller: %w", err)
	}
	return nil
}

// servesLegacyReferencePolicy tells whether the cluster has the v1alpha2 ReferencePolicy CRD. It is
// looked up once at start: installing that CRD later needs an operator restart to be noticed.
func servesLegacyReferencePolicy(mgr ctrl.Manager) bool {
	gvk := referencePolicyGVK()
	_, err := mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	return err == nil
}
