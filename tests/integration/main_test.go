// Package integration runs fleetgate's controllers against real kube-apiservers.
package integration

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/fleetgate/fleetgate/controllers"
	"github.com/fleetgate/fleetgate/providers"
	"github.com/fleetgate/fleetgate/tests/testbed"
)

// startOperator runs the production controller wiring against the cluster until the test ends.
func startOperator(t *testing.T, c *testbed.Cluster) {
	t.Helper()
	runOperator(t, c, testr.NewWithOptions(t, testr.Options{Verbosity: 0}), controllers.Options{Registry: prometheus.NewRegistry()})
}

// runOperator runs controllers.Setup with o on a new manager of c, logging to log, and returns a
// function that stops it and waits (also called when the test ends).
func runOperator(t *testing.T, c *testbed.Cluster, log logr.Logger, o controllers.Options) (stop func()) {
	t.Helper()
	scheme, err := controllers.NewScheme()
	must(t, err)
	mgr, err := ctrl.NewManager(c.Config, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  controllers.CacheOptions("fleetgate-system"),
		Logger:                 log,
	})
	must(t, err)
	o.SkipNameValidation = true // several managers run in one test process
	ctx, cancel := context.WithCancel(context.Background())
	if err := controllers.Setup(ctx, mgr, o); err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("manager: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Error("manager did not stop within 30s")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func TestMain(m *testing.M) {
	testbed.QuietGlobalLogger()
	os.Exit(m.Run())
}

// update reads obj afresh, applies mutate and writes it, retrying when the status writer updated the
// object in between.
func update(t testing.TB, c client.Client, obj client.Object, mutate func()) {
	t.Helper()
	must(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		mutate()
		return c.Update(t.Context(), obj)
	}))
}

// secretsOf reads a Secret's data from cl, as the operator's cloud providers read their keys.
func secretsOf(cl client.Client) func(ctx context.Context, ns, name string) (map[string][]byte, error) {
	return func(ctx context.Context, ns, name string) (map[string][]byte, error) {
		var s corev1.Secret
		err := cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &s)
		return s.Data, err
	}
}

// runWithProvider runs the operator on c with p as the provider named name and proxies that
// acknowledge every config at once; o adds the rest (fleet, DNS). It returns runOperator's stop.
func runWithProvider(t *testing.T, c *testbed.Cluster, name string, p providers.Provider, o controllers.Options) (stop func()) {
	t.Helper()
	registry := providers.NewRegistry()
	registry.Register(name, p)
	delivery := controllers.NewTrigger()
	o.Registry = prometheus.NewRegistry()
	o.Apply = &controllers.Dataplane{Providers: registry, Configs: newAckingConfigs(func() { delivery.Fire("") }), Delivered: delivery.Fire}
	o.Delivery = delivery
	return runOperator(t, c, testr.NewWithOptions(t, testr.Options{Verbosity: 0}), o)
}
