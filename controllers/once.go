package controllers

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/controllers/translate"
)

// TranslateOnce reads the hub once through reader, as the member "hub", and translates it: the
// models the operator's next pass would hand to providers (`fleetgate plan`). It reads no other
// member, and no v1alpha2 ReferencePolicy.
func TranslateOnce(ctx context.Context, reader client.Reader, opts ...translate.Option) (*translate.Result, error) {
	hub := []ClusterReader{{Cluster: v1alpha1.HubCluster, Reader: reader, Weight: v1alpha1.DefaultClusterWeight}}
	snap, err := buildSnapshot(ctx, kinds(), hub, nil)
	if err != nil {
		return nil, fmt.Errorf("reading the hub: %w", err)
	}
	return translate.Translate(snap, opts...), nil
}
