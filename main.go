// Command fleetgate is the fleetgate operator: it turns Gateway API, Ingress and LoadBalancer Service
// objects across a fleet of clusters into load balancers and writes their status back.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/zapr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/controllers"
	"github.com/fleetgate/fleetgate/dataplane/agent"
	"github.com/fleetgate/fleetgate/dataplane/xds"
	"github.com/fleetgate/fleetgate/providers"
	"github.com/fleetgate/fleetgate/providers/local"
)

type options struct {
	metricsAddr     string
	probeAddr       string
	leaderElect     bool
	leaderElectNS   string
	logLevel        string
	logFormat       string
	shutdownTimeout time.Duration
	localMode       bool
	xdsAddr         string
	stateDir        string
}

func main() {
	// `fleetgate dataplane` is the proxy process, so one image serves both roles.
	if len(os.Args) > 1 && os.Args[1] == "dataplane" {
		os.Exit(runDataplane(os.Args[2:]))
	}
	var o options
	fs := flag.CommandLine
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", ":8080", "address the Prometheus metrics endpoint binds to (0 disables it)")
	fs.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "address the /healthz and /readyz probes bind to")
	fs.BoolVar(&o.leaderElect, "leader-elect", true, "elect a leader so that only one replica writes status and cloud resources")
	fs.StringVar(&o.leaderElectNS, "leader-election-namespace", "", "namespace of the leader-election Lease (default: the operator's own namespace)")
	fs.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&o.logFormat, "log-format", "json", "log format: json or console")
	fs.DurationVar(&o.shutdownTimeout, "graceful-shutdown-timeout", 30*time.Second, "how long runnables get to stop on SIGTERM")
	fs.BoolVar(&o.localMode, "local-mode", false, "run each Gateway's proxy as a local process on its own loopback address (machines without a kubelet)")
	fs.StringVar(&o.xdsAddr, "xds-address", "127.0.0.1:18000", "address the proxies' config server listens on")
	fs.StringVar(&o.stateDir, "state-dir", filepath.Join(os.TempDir(), "fleetgate"), "local mode: where proxy credentials and logs go")
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

// localDataplane wires local mode: an in-memory CA, the proxies' config server, and the local
// provider serving the incluster class with one proxy process per Gateway.
func localDataplane(mgr ctrl.Manager, o options, logger logr.Logger) (controllers.Options, error) {
	ca, err := xds.NewCA("fleetgate local CA", 365*24*time.Hour)
	if err != nil {
		return controllers.Options{}, err
	}
	host, _, err := net.SplitHostPort(o.xdsAddr)
	if err != nil {
		return controllers.Options{}, fmt.Errorf("--xds-address: %w", err)
	}
	serverKP, err := ca.IssueServer([]string{host}, 365*24*time.Hour)
	if err != nil {
		return controllers.Options{}, err
	}
	serverTLS, err := xds.ServerTLSConfig(serverKP, ca.CertPEM())
	if err != nil {
		return controllers.Options{}, err
	}
	events := make(chan event.GenericEvent, 1)
	poke := func(string) {
		select {
		case events <- event.GenericEvent{Object: &gwv1.Gateway{}}:
		default: // a reconcile is already due
		}
	}
	configs := xds.NewServer(xds.ServerOptions{TLS: serverTLS, Logger: logger.WithName("xds"), OnChange: poke})
	lis, err := net.Listen("tcp", o.xdsAddr)
	if err != nil {
		return controllers.Options{}, fmt.Errorf("config server: %w", err)
	}
	self, err := os.Executable()
	if err != nil {
		return controllers.Options{}, err
	}
	proxies, err := local.New(local.Options{
		Command:    []string{self, "dataplane"},
		XDSAddress: lis.Addr().String(),
		Credentials: func(gateway string) (local.Credentials, error) {
			kp, err := ca.IssueClient([]string{gateway}, 365*24*time.Hour)
			return local.Credentials{CertPEM: kp.CertPEM, KeyPEM: kp.KeyPEM, CAPEM: ca.CertPEM()}, err
		},
		Dir:    o.stateDir,
		OnExit: poke,
		Log:    logger.WithName("local"),
	})
	if err != nil {
		return controllers.Options{}, err
	}
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		serveErr := configs.Serve(ctx, lis)
		// The proxies go with the operator: they drain while the manager shuts down.
		return errors.Join(serveErr, proxies.Stop(context.Background()))
	})); err != nil {
		return controllers.Options{}, err
	}
	registry := providers.NewRegistry()
	registry.Register(string(v1alpha1.ProviderInCluster), proxies)
	logger.Info("local mode: incluster Gateways get a local proxy process", "xds", lis.Addr().String(), "stateDir", o.stateDir)
	return controllers.Options{
		Apply:  &controllers.Dataplane{Providers: registry, Configs: xdsConfigs{configs}},
		Events: events,
	}, nil
}

// xdsConfigs adapts the xDS server to the controllers' ConfigServer.
type xdsConfigs struct{ *xds.Server }

func (x xdsConfigs) Acknowledged(gateway string, v uint64) (ok, rejected bool, reason string) {
	st := x.Status(gateway)
	ok, reason = st.Programmed(v)
	for _, r := range st.Replicas {
		if r.Acked < v && r.Nacked >= v {
			rejected = true
		}
	}
	return ok, rejected, reason
}

func runDataplane(args []string) int {
	o, err := agent.ParseFlags(args, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fleetgate dataplane:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := agent.Run(ctx, o, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "fleetgate dataplane:", err)
		return 1
	}
	return 0
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
	setup := controllers.Options{}
	if o.localMode {
		if setup, err = localDataplane(mgr, o, logger); err != nil {
			return err
		}
	}
	if err := controllers.Setup(ctx, mgr, setup); err != nil {
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
