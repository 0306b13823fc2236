// Command fleetgate is the fleetgate operator: it turns Gateway API, Ingress and LoadBalancer Service
// objects across a fleet of clusters into load balancers and writes their status back.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/zapr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/fleetgate/fleetgate/controllers"
)

type options struct {
	metricsAddr     string
	probeAddr       string
	leaderElect     bool
	leaderElectNS   string
	logLevel        string
	logFormat       string
	shutdownTimeout time.Duration
}

func main() {
	var o options
	fs := flag.CommandLine
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", ":8080", "address the Prometheus metrics endpoint binds to (0 disables it)")
	fs.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "address the /healthz and /readyz probes bind to")
	fs.BoolVar(&o.leaderElect, "leader-elect", true, "elect a leader so that only one replica writes status and cloud resources")
	fs.StringVar(&o.leaderElectNS, "leader-election-namespace", "", "namespace of the leader-election Lease (default: the operator's own namespace)")
	fs.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&o.logFormat, "log-format", "json", "log format: json or console")
	fs.DurationVar(&o.shutdownTimeout, "graceful-shutdown-timeout", 30*time.Second, "how long runnables get to stop on SIGTERM")
	flag.Parse()

	logger, err := newLogger(o.logLevel, o.logFormat)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctrl.SetLogger(logger)
	if err := run(ctrl.SetupSignalHandler(), o, logger); err != nil {
		logger.Error(err, "fleetgate stopped")
		os.Exit(1)
	}
}

func newLogger(level, format string) (logr.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return logr.Logger{}, fmt.Errorf("--log-level: %w", err)
	}
	var cfg zap.Config
	switch format {
	case "json":
		cfg = zap.NewProductionConfig()
	case "console":
		cfg = zap.NewDevelopmentConfig()
	default:
		return logr.Logger{}, fmt.Errorf("--log-format must be json or console, not %q", format)
	}
	cfg.Level = zap.NewAtomicLevelAt(lvl)
	cfg.DisableStacktrace = lvl > zapcore.DebugLevel
	z, err := cfg.Build()
	if err != nil {
		return logr.Logger{}, fmt.Errorf("building logger: %w", err)
	}
	return zapr.NewLogger(z), nil
}

func run(ctx context.Context, o options, logger logr.Logger) error {
	scheme, err := controllers.NewScheme()
	if err != nil {
		return err
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}
	shutdown := o.shutdownTimeout
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        scheme,
		Metrics:                       metricsserver.Options{BindAddress: o.metricsAddr},
		HealthProbeBindAddress:        o.probeAddr,
		LeaderElection:                o.leaderElect,
		LeaderElectionID:              "fleetgate.dev",
		LeaderElectionNamespace:       o.leaderElectNS,
		LeaderElectionReleaseOnCancel: true,
		GracefulShutdownTimeout:       &shutdown,
		Logger:                        logger,
	})
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	if err := controllers.Setup(ctx, mgr, controllers.Options{}); err != nil {
		return err
	}
	if err := errors.Join(
		mgr.AddHealthzCheck("ping", healthz.Ping),
		mgr.AddReadyzCheck("caches", func(req *http.Request) error {
			if !mgr.GetCache().WaitForCacheSync(req.Context()) {
				return errors.New("informer caches not synced")
			}
			return nil
		}),
	); err != nil {
		return fmt.Errorf("adding probes: %w", err)
	}
	logger.Info("starting fleetgate", "controllerName", controllers.ControllerName, "leaderElection", o.leaderElect)
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running manager: %w", err)
	}
	return nil
}
