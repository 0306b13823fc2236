package controllers

import (
	"context"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
)

// Setup registers every fleetgate controller with the manager. main.go and the integration tests
// share it so that tests exercise the production wiring.
func Setup(ctx context.Context, mgr ctrl.Manager) error {
	if err := (&GatewayClassReconciler{
		Client:   mgr.GetClient(),
		Recorder: mgr.GetEventRecorder("fleetgate"),
		Features: SupportedFeatures(),
	}).SetupWithManager(ctx, mgr); err != nil {
		return fmt.Errorf("setting up GatewayClass controller: %w", err)
	}
	return nil
}
