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
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/controllers"
	"github.com/fleetgate/fleetgate/controllers/snapshot"
	"github.com/fleetgate/fleetgate/dataplane/agent"
	"github.com/fleetgate/fleetgate/dataplane/sysmon"
	"github.com/fleetgate/fleetgate/dataplane/xds"
	"github.com/fleetgate/fleetgate/providers"
	"github.com/fleetgate/fleetgate/providers/incluster"
	"github.com/fleetgate/fleetgate/providers/local"
)

type options struct {
	metricsAddr     string
	probeAddr       string
	pprofAddr       string
	leaderElect     bool
	leaderElectNS   string
	logLevel        string
	logFormat       string
	shutdownTimeout time.Duration
	namespace       string
	localMode       bool
	xdsAddr         string
	xdsPublicAddr   string
	proxyImage      string
	stateDir        string
	hubIsMember     bool
	mcsController   bool
}

func main() {
	// `fleetgate dataplane` is the proxy process, so one image serves both roles.
	if len(os.Args) > 1 && os.Args[1] == "dataplane" {
		if err := sysmon.Reexec(); err != nil {
			fmt.Fprintln(os.Stderr, "fleetgate dataplane:", err)
		}
		os.Exit(runDataplane(os.Args[2:]))
	}
	var o options
	fs := flag.CommandLine
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", ":8080", "address the Prometheus metrics endpoint binds to (0 disables it)")
	fs.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "address the /healthz and /readyz probes bind to")
	fs.StringVar(&o.pprofAddr, "pprof-bind-address", "", "address serving Go's /debug/pprof (off when empty)")
	fs.BoolVar(&o.leaderElect, "leader-elect", true, "elect a leader so that only one replica writes status and cloud resources")
	fs.StringVar(&o.leaderElectNS, "leader-election-namespace", "", "namespace of the leader-election Lease (default: the operator's own namespace)")
	fs.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&o.logFormat, "log-format", "json", "log format: json or console")
	fs.DurationVar(&o.shutdownTimeout, "graceful-shutdown-timeout", 30*time.Second, "how long runnables get to stop on SIGTERM")
	fs.BoolVar(&o.localMode, "local-mode", false, "run each Gateway's proxy as a local process on its own loopback address (machines without a kubelet)")
	fs.StringVar(&o.namespace, "namespace", envOr("POD_NAMESPACE", "fleetgate-system"), "the operator's namespace: its CA Secret lives there")
	fs.StringVar(&o.xdsAddr, "xds-address", "", "address the proxies' config server listens on (default :18000, or 127.0.0.1:18000 in local mode)")
	fs.StringVar(&o.xdsPublicAddr, "xds-public-address", "", "address proxies dial to reach the config server (default fleetgate-xds.<namespace>.svc:<port>, or the listen address in local mode)")
	fs.StringVar(&o.proxyImage, "proxy-image", envOr("FLEETGATE_IMAGE", "fleetgate:dev"), "image of the proxy pods (the operator image: it runs `fleetgate dataplane`)")
	fs.StringVar(&o.stateDir, "state-dir", filepath.Join(os.TempDir(), "fleetgate"), "local mode: where proxy credentials and logs go")
	fs.BoolVar(&o.hubIsMember, "hub-is-member", true, "serve the Gateway API objects of the operator's own cluster as the member \"hub\"")
	fs.BoolVar(&o.mcsController, "mcs-controller", true, "maintain ServiceImports in every member from ServiceExports (disable when another MCS implementation runs)")
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

// wireDataplane builds the proxies' config server (mTLS from fleetgate's CA) and the provider that
// serves incluster classes: in local mode one proxy process per Gateway on a loopback address, in a
// cluster the proxy Deployment and Service next to each Gateway.
func wireDataplane(ctx context.Context, mgr ctrl.Manager, o options, logger logr.Logger) (controllers.Options, error) {
	ca, err := loadCA(ctx, mgr, o)
	if err != nil {
		return controllers.Options{}, err
	}
	listen, public := o.xdsAddr, o.xdsPublicAddr
	if listen == "" {
		listen = ":18000"
		if o.localMode {
			listen = "127.0.0.1:18000"
		}
	}
	lis, err := net.Listen("tcp", listen)
	if err != nil {
		return controllers.Options{}, fmt.Errorf("config server: %w", err)
	}
	if public == "" {
		public = fmt.Sprintf("fleetgate-xds.%s.svc:%d", o.namespace, lis.Addr().(*net.TCPAddr).Port)
		if o.localMode {
			public = lis.Addr().String()
		}
	}
	host, _, err := net.SplitHostPort(public)
	if err != nil {
		return controllers.Options{}, fmt.Errorf("--xds-public-address: %w", err)
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
	// ACKs and replicas coming and going change only Programmed, which needs no new translation.
	delivery := make(chan event.GenericEvent, 1)
	delivered := func(string) {
		select {
		case delivery <- event.GenericEvent{Object: &gwv1.Gateway{}}:
		default: // a re-evaluation is already due
		}
	}
	configs := xds.NewServer(xds.ServerOptions{TLS: serverTLS, Logger: logger.WithName("xds"), OnChange: delivered})
	issue := func(gateway string) (xds.KeyPair, error) { return ca.IssueClient([]string{gateway}, 365*24*time.Hour) }

	registry := providers.NewRegistry()
	dataplane := &controllers.Dataplane{Providers: registry, Configs: xdsConfigs{configs}, Delivered: delivered}
	members := &controllers.MemberClients{}
	stop := func(context.Context) error { return nil }
	if o.localMode {
		self, err := os.Executable()
		if err != nil {
			return controllers.Options{}, err
		}
		proxies, err := local.New(local.Options{
			Command:    []string{self, "dataplane"},
			XDSAddress: public,
			Credentials: func(gateway string) (local.Credentials, error) {
				kp, err := issue(gateway)
				return local.Credentials{CertPEM: kp.CertPEM, KeyPEM: kp.KeyPEM, CAPEM: ca.CertPEM()}, err
			},
			Dir:    o.stateDir,
			OnExit: func(gw string) { dataplane.Recheck(gw); poke(gw) },
			// The manager's cache holds every Service already (they are translation inputs).
			Client: func(cluster string) (client.Client, error) {
				if cluster == snapshot.HubCluster {
					return mgr.GetClient(), nil
				}
				return members.Client(cluster)
			},
			Log: logger.WithName("local"),
		})
		if err != nil {
			return controllers.Options{}, err
		}
		registry.Register(string(v1alpha1.ProviderInCluster), proxies)
		stop = proxies.Stop
	} else {
		// The provider reads back what it applied, with managedFields, so it gets an uncached client.
		hub, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme()})
		if err != nil {
			return controllers.Options{}, err
		}
		proxies, err := incluster.New(incluster.Options{
			Client: func(cluster string) (client.Client, error) {
				if cluster == snapshot.HubCluster {
					return hub, nil
				}
				return members.Client(cluster)
			},
			Image:      o.proxyImage,
			XDSAddress: public,
			Credentials: func(gateway string) (incluster.Credentials, error) {
				kp, err := issue(gateway)
				return incluster.Credentials{CertPEM: kp.CertPEM, KeyPEM: kp.KeyPEM, CAPEM: ca.CertPEM()}, err
			},
			CA: ca.CertPEM,
		})
		if err != nil {
			return controllers.Options{}, err
		}
		registry.Register(incluster.Name, proxies)
	}
	// The config server runs on the leader only: it alone translates, so it alone has configs.
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		serveErr := configs.Serve(ctx, lis)
		// Local proxies go with the operator: they drain while the manager shuts down.
		return errors.Join(serveErr, stop(context.Background()))
	})); err != nil {
		return controllers.Options{}, err
	}
	logger.Info("dataplane wired", "localMode", o.localMode, "xdsListen", lis.Addr().String(), "xdsPublic", public)
	return controllers.Options{
		Apply:         dataplane,
		Events:        events,
		Delivery:      delivery,
		MemberClients: members,
	}, nil
}

// loadCA returns the CA that signs the config server's and the proxies' certificates. In a cluster
// it lives in a Secret so that proxies keep trusting the operator across restarts and replicas;
// local mode keeps it in memory, since its proxies die with the operator.
func loadCA(ctx context.Context, mgr ctrl.Manager, o options) (*xds.CA, error) {
	if o.localMode {
		return xds.NewCA("fleetgate local CA", 365*24*time.Hour)
	}
	c, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme()})
	if err != nil {
		return nil, err
	}
	key := client.ObjectKey{Namespace: o.namespace, Name: "fleetgate-xds-ca"}
	for {
		var secret corev1.Secret
		err := c.Get(ctx, key, &secret)
		if err == nil {
			ca, err := xds.LoadCA(secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey])
			if err != nil {
				return nil, fmt.Errorf("the CA Secret %s holds no usable CA: %w", key, err)
			}
			return ca, nil
		}
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("reading CA Secret %s: %w", key, err)
		}
		ca, err := xds.NewCA("fleetgate config CA", 10*365*24*time.Hour)
		if err != nil {
			return nil, err
		}
		certPEM, keyPEM, err := ca.Marshal()
		if err != nil {
			return nil, err
		}
		secret = corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
			Type:       corev1.SecretTypeTLS,
			Data:       map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM},
		}
		err = c.Create(ctx, &secret)
		if err == nil {
			return ca, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("creating CA Secret %s: %w", key, err)
		}
		// Another replica created it first: use theirs.
	}
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

func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
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
		PprofBindAddress:              o.pprofAddr,
		LeaderElection:                o.leaderElect,
		LeaderElectionID:              "fleetgate.dev",
		LeaderElectionNamespace:       o.leaderElectNS,
		LeaderElectionReleaseOnCancel: true,
		GracefulShutdownTimeout:       &shutdown,
		Logger:                        logger,
		Cache:                         controllers.CacheOptions(),
	})
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	setup, err := wireDataplane(ctx, mgr, o, logger)
	if err != nil {
		return err
	}
	setup.Fleet = &controllers.FleetOptions{Namespace: o.namespace, HubIsMember: o.hubIsMember, MCSController: o.mcsController}
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
