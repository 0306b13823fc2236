// Command fleetgate is the fleetgate operator: it turns Gateway API, Ingress and LoadBalancer Service
// objects across a fleet of clusters into load balancers and writes their status back.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/controllers"
	"github.com/fleetgate/fleetgate/controllers/fleet"
	"github.com/fleetgate/fleetgate/dataplane/agent"
)

type options struct {
	metricsAddr, probeAddr, pprofAddr        string
	leaderElect                              bool
	leaderElectNS                            string
	logLevel, logFormat                      string
	shutdownTimeout                          time.Duration
	namespace                                string
	localMode                                bool
	xdsAddr, xdsPublicAddr                   string
	proxyImage, stateDir                     string
	hubIsMember, mcsController, dnsEndpoints bool
	fleetID                                  string
	awsRegion, awsEndpoint                   string
	awsQPS                                   float64
	awsBurst                                 int
	gcpProject, gcpRegion, gcpEndpoint       string
	statusWorkers                            int
	memberQPS                                float64
	memberBurst                              int
	memberReleaseTimeout                     time.Duration
	dnsShardRecords, dnsShardBytes           int
}

func main() {
	// `fleetgate dataplane` is the proxy process, so one image serves both roles.
	if len(os.Args) > 1 && os.Args[1] == "dataplane" {
		os.Exit(agent.Main(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "plan" {
		os.Exit(planMain(os.Args[2:], os.Stdout, os.Stderr))
	}
	var o options
	flag.StringVar(&o.metricsAddr, "metrics-bind-address", ":8080", "address the Prometheus metrics endpoint binds to (0 disables it)")
	flag.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "address the /healthz and /readyz probes bind to")
	flag.StringVar(&o.pprofAddr, "pprof-bind-address", "", "address serving Go's /debug/pprof (off when empty)")
	flag.BoolVar(&o.leaderElect, "leader-elect", true, "elect a leader so that only one replica writes status and cloud resources")
	flag.StringVar(&o.leaderElectNS, "leader-election-namespace", "", "namespace of the leader-election Lease (default: the operator's own namespace)")
	flag.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	flag.StringVar(&o.logFormat, "log-format", "json", "log format: json or console")
	flag.DurationVar(&o.shutdownTimeout, "graceful-shutdown-timeout", 30*time.Second, "how long runnables get to stop on SIGTERM")
	flag.BoolVar(&o.localMode, "local-mode", false, "run each Gateway's proxy as a local process on its own loopback address (machines without a kubelet)")
	flag.StringVar(&o.namespace, "namespace", cmp.Or(os.Getenv("POD_NAMESPACE"), "fleetgate-system"), "the operator's namespace: its CA Secret lives there")
	flag.StringVar(&o.xdsAddr, "xds-address", "", "address the proxies' config server listens on (default :18000, or 127.0.0.1:18000 in local mode)")
	flag.StringVar(&o.xdsPublicAddr, "xds-public-address", "", "address proxies dial to reach the config server (default fleetgate-xds.<namespace>.svc:<port>, or the listen address in local mode)")
	flag.StringVar(&o.proxyImage, "proxy-image", cmp.Or(os.Getenv("FLEETGATE_IMAGE"), "fleetgate:dev"), "image of the proxy pods (the operator image: it runs `fleetgate dataplane`)")
	flag.StringVar(&o.stateDir, "state-dir", filepath.Join(os.TempDir(), "fleetgate"), "local mode: where proxy credentials and logs go")
	flag.BoolVar(&o.hubIsMember, "hub-is-member", true, "serve the Gateway API objects of the operator's own cluster as the member \"hub\"")
	flag.BoolVar(&o.dnsEndpoints, "dns-endpoints", true, "publish every programmed hostname as an external-dns DNSEndpoint in the hub (once its CRD is installed)")
	flag.IntVar(&o.dnsShardRecords, "dns-endpoint-records", controllers.DefaultDNSShardRecords, "records per DNSEndpoint at most: a gateway's records go to as many DNSEndpoints as they need")
	flag.IntVar(&o.dnsShardBytes, "dns-endpoint-bytes", controllers.DefaultDNSShardBytes, "bytes of records per DNSEndpoint at most (about, as encoded; etcd refuses an object over 1.5 MiB by default)")
	flag.IntVar(&o.statusWorkers, "status-workers", controllers.DefaultStatusWorkers, fmt.Sprintf("status writes in flight at most (1-%d); each is one API round trip, so more writers write a cold start's statuses sooner while the API servers have CPU to spare", controllers.MaxStatusWorkers))
	flag.Float64Var(&o.memberQPS, "member-qps", 100, "API calls per second to each member cluster's API server (reads, status writes, Events); negative: no client-side limit, the API server's priority and fairness decides")
	flag.IntVar(&o.memberBurst, "member-burst", 200, "API call burst to each member cluster's API server")
	flag.DurationVar(&o.memberReleaseTimeout, "member-release-timeout", fleet.DefaultReleaseTimeout, "how long a member whose MemberCluster is being deleted must have been unreachable before the MemberCluster goes with fleetgate's finalizers and statuses left on the member's objects (its load balancers and DNS records are deleted first in any case)")
	flag.BoolVar(&o.mcsController, "mcs-controller", true, "maintain ServiceImports in every member from ServiceExports (disable when another MCS implementation runs)")
	addAWSFlags(flag.CommandLine, &o)
	addGCPFlags(flag.CommandLine, &o)
	flag.Parse()

	logger, err := controllers.NewLogger(o.logLevel, o.logFormat)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctrl.SetLogger(logger)
	ctx := ctrl.SetupSignalHandler()
	switch limit, ok, err := containerMemoryLimit(os.Getenv); {
	case err != nil:
		logger.Error(err, "no soft memory limit set")
	case ok:
		go followBinaryPages(ctx, limit, 10*time.Second, selfFileRSS, debug.SetMemoryLimit, logger)
	}
	if err := run(ctx, o, logger); err != nil {
		if ctx.Err() != nil {
			// A SIGTERM while starting (say, during a rollout) cancels what startup was waiting
			// for: a shutdown that was asked for, not a failure.
			logger.Info("fleetgate stopped while starting", "cause", err.Error())
			return
		}
		logger.Error(err, "fleetgate stopped")
		os.Exit(1)
	}
}

// replicaOptions name this replica after its pod (the Deployment gives POD_NAME and POD_UID), or
// after the host outside a pod.
func replicaOptions(o options) *controllers.ReplicaOptions {
	r := &controllers.ReplicaOptions{Name: os.Getenv("POD_NAME"), Namespace: o.namespace}
	if uid := os.Getenv("POD_UID"); r.Name != "" && uid != "" {
		r.Owner = &metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: r.Name, UID: types.UID(uid)}
	}
	if r.Name == "" {
		host, _ := os.Hostname()
		r.Name = fmt.Sprintf("%s-%d", strings.ToLower(cmp.Or(host, "fleetgate")), os.Getpid())
	}
	return r
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
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        scheme,
		Metrics:                       metricsserver.Options{BindAddress: o.metricsAddr},
		HealthProbeBindAddress:        o.probeAddr,
		PprofBindAddress:              o.pprofAddr,
		LeaderElection:                o.leaderElect,
		LeaderElectionID:              "fleetgate.dev",
		LeaderElectionNamespace:       o.leaderElectNS,
		LeaderElectionReleaseOnCancel: true,
		GracefulShutdownTimeout:       &o.shutdownTimeout,
		Logger:                        logger,
		Cache:                         controllers.CacheOptions(o.namespace),
	})
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	setup, err := wireDataplane(ctx, mgr, o, logger)
	if err != nil {
		return err
	}
	if o.leaderElect {
		setup.Replica = replicaOptions(o)
	}
	setup.StatusWorkers = o.statusWorkers
	setup.Fleet = &controllers.FleetOptions{Namespace: o.namespace, HubIsMember: o.hubIsMember, MCSController: o.mcsController,
		MemberQPS: float32(o.memberQPS), MemberBurst: o.memberBurst, ReleaseTimeout: o.memberReleaseTimeout}
	if o.dnsEndpoints {
		embedded, err := newEmbeddedDNS(ctx, o, mgr.GetAPIReader(), logger)
		if err != nil {
			return err
		}
		setup.DNS = &controllers.DNSOptions{Namespace: o.namespace, Sync: embedded, ShardRecords: o.dnsShardRecords, ShardBytes: o.dnsShardBytes}
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
	logger.Info("starting fleetgate", "version", version, "controllerName", v1alpha1.ControllerName, "leaderElection", o.leaderElect)
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running manager: %w", err)
	}
	return nil
}
