package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	discoveryv1 "k8s.io/api/discovery/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/controllers"
	"github.com/fleetgate/fleetgate/controllers/fleet"
	"github.com/fleetgate/fleetgate/dataplane/xds"
	"github.com/fleetgate/fleetgate/dataplane/xds/casecret"
	"github.com/fleetgate/fleetgate/providers"
	"github.com/fleetgate/fleetgate/providers/incluster"
	"github.com/fleetgate/fleetgate/providers/local"
)

// proxyCertValidity is the lifetime of the proxies' client certificates.
const proxyCertValidity = 365 * 24 * time.Hour

// wireDataplane builds the proxies' config server (mTLS from fleetgate's CA) and the provider that
// serves incluster classes, and returns the controllers' options that connect them.
func wireDataplane(ctx context.Context, mgr ctrl.Manager, o options, logger logr.Logger) (controllers.Options, error) {
	// The manager's cache is not running yet, and the provider reads back what it applied with
	// managedFields: both get an uncached client.
	direct, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme()})
	if err != nil {
		return controllers.Options{}, fmt.Errorf("creating the operator's client: %w", err)
	}
	// Local proxies die with the operator, so their CA lives in memory; in a cluster it lives in a
	// Secret, so that proxies keep trusting the operator across restarts and replicas.
	var ca *xds.CA
	listen, publicHost := ":18000", "fleetgate-xds."+o.namespace+".svc"
	if o.localMode {
		listen, publicHost = "127.0.0.1:18000", ""
		ca, err = xds.NewCA("fleetgate local CA", 365*24*time.Hour)
	} else {
		ca, err = casecret.LoadOrCreate(ctx, direct, client.ObjectKey{Namespace: o.namespace, Name: "fleetgate-xds-ca"})
	}
	if err != nil {
		return controllers.Options{}, err
	}
	if o.xdsAddr != "" {
		listen = o.xdsAddr
	}
	ep, err := xds.Listen(ca, listen, o.xdsPublicAddr, publicHost)
	if err != nil {
		return controllers.Options{}, err
	}
	setup := controllers.Options{
		Events: controllers.NewTrigger(),
		// ACKs and replicas coming and going change only Programmed: no new translation.
		Delivery:      controllers.NewTrigger(),
		MemberClients: &controllers.MemberClients{},
	}
	configs := xds.NewServer(xds.ServerOptions{TLS: ep.TLS, Logger: logger.WithName("xds"), OnChange: setup.Delivery.Fire})
	// An operator started again in one process (tests) keeps the first one's xDS metrics.
	if err := metrics.Registry.Register(configs.Collector()); err != nil && !errors.As(err, new(prometheus.AlreadyRegisteredError)) {
		return controllers.Options{}, fmt.Errorf("registering xds metrics: %w", err)
	}
	registry := providers.NewRegistry()
	dataplane := &controllers.Dataplane{Providers: registry, Configs: xdsConfigs{configs}, Delivered: setup.Delivery.Fire}
	// A local proxy that exited is the provider's to restart: ask it to look again.
	exited := func(gw string) { dataplane.Recheck(gw); setup.Events.Fire(gw) }
	proxies, stop, err := newProxies(o, mgr, direct, setup, ca, ep.Public, exited, logger)
	if err != nil {
		return controllers.Options{}, err
	}
	registry.Register(string(v1alpha1.ProviderInCluster), proxies)
	clusters := memberClients(direct, setup.MemberClients)
	behindNLB := newNLBProxies(proxies, proxyPods(clusters))
	if o.localMode {
		behindNLB.endpoints = localProxyAddresses(proxies)
	} else {
		// The hub's proxies only: members' caches come and go with them.
		informer, err := mgr.GetCache().GetInformer(ctx, &discoveryv1.EndpointSlice{})
		if err != nil {
			return controllers.Options{}, fmt.Errorf("getting the EndpointSlice informer: %w", err)
		}
		if err := behindNLB.watchPods(informer, dataplane.Recheck); err != nil {
			return controllers.Options{}, err
		}
	}
	// The records of member accounts are read back right after a write: the direct client.
	memberRules := fleet.NewAWSRules(direct, logger.WithName("member-rules"))
	memberRules.Recorder = mgr.GetEventRecorder("fleetgate")
	cloud, err := newAWS(ctx, o, direct, memberRules, behindNLB, controllers.NewPodProbes(clusters), metrics.Registry, logger)
	if err != nil {
		return controllers.Options{}, err
	}
	registry.Register(string(v1alpha1.ProviderAWS), cloud)
	recheckAWS := func() { dataplane.RecheckProvider(string(v1alpha1.ProviderAWS)) }
	memberRules.Sweep, memberRules.Swept = cloud.SweepMembers, recheckAWS
	if err := mgr.Add(memberRules); err != nil {
		return controllers.Options{}, fmt.Errorf("adding the member rules sweep: %w", err)
	}
	members, err := mgr.GetCache().GetInformer(ctx, &v1alpha1.MemberCluster{})
	if err != nil {
		return controllers.Options{}, fmt.Errorf("getting the MemberCluster informer: %w", err)
	}
	if err := memberRules.Watch(members, recheckAWS); err != nil {
		return controllers.Options{}, err
	}
	gcpProvider, err := newGCP(ctx, o, direct, controllers.NewPodProbes(clusters), metrics.Registry, logger)
	if err != nil {
		return controllers.Options{}, err
	}
	registry.Register(string(v1alpha1.ProviderGCP), gcpProvider)
	setup.Apply, setup.Catalog = dataplane, registry
	// Every replica translates and serves its proxies (the leader alone writes status and calls
	// providers), so that proxies fail over to any replica.
	if err := mgr.Add(everyReplica(func(ctx context.Context) error {
		serveErr := configs.Serve(ctx, ep.Listener)
		// Local proxies go with the operator: they drain while the manager shuts down.
		return errors.Join(serveErr, stop(context.Background()))
	})); err != nil {
		return controllers.Options{}, fmt.Errorf("adding the config server: %w", err)
	}
	logger.Info("dataplane wired", "localMode", o.localMode, "xdsListen", ep.Listener.Addr().String(), "xdsPublic", ep.Public)
	return setup, nil
}

// newProxies builds the provider of incluster classes: in local mode one proxy process per Gateway
// on a loopback address, in a cluster the proxy Deployment and Service next to each Gateway. stop
// ends what the provider runs itself.
func newProxies(o options, mgr ctrl.Manager, direct client.Client, setup controllers.Options, ca *xds.CA, public string, exited func(string), logger logr.Logger) (p providers.Provider, stop func(context.Context) error, err error) {
	issue := func(gateway string) (xds.KeyPair, error) { return ca.IssueClient([]string{gateway}, proxyCertValidity) }
	if o.localMode {
		self, err := os.Executable()
		if err != nil {
			return nil, nil, fmt.Errorf("finding the proxy binary: %w", err)
		}
		command := []string{self, "dataplane"}
		if o.logLevel == "debug" {
			command = append(command, "-v=1") // the proxies' debug lines too (config applied, stream events)
		}
		proxies, err := local.New(local.Options{
			Command:    command,
			XDSAddress: public,
			Credentials: func(gateway string) (local.Credentials, error) {
				kp, err := issue(gateway)
				return local.Credentials{CertPEM: kp.CertPEM, KeyPEM: kp.KeyPEM, CAPEM: ca.CertPEM()}, err
			},
			Dir:      o.stateDir,
			OnExit:   exited,
			Clusters: setup.MemberClients.Clusters,
			// The manager's cache holds every Service already (they are translation inputs).
			Client: memberClients(mgr.GetClient(), setup.MemberClients),
			Log:    logger.WithName("local"),
		})
		if err != nil {
			return nil, nil, err
		}
		return proxies, proxies.Stop, nil
	}
	proxies, err := incluster.New(incluster.Options{
		Client:     memberClients(direct, setup.MemberClients),
		Image:      o.proxyImage,
		XDSAddress: public,
		Credentials: func(gateway string) (incluster.Credentials, error) {
			kp, err := issue(gateway)
			return incluster.Credentials{CertPEM: kp.CertPEM, KeyPEM: kp.KeyPEM, CAPEM: ca.CertPEM()}, err
		},
		CA:       ca.CertPEM,
		Clusters: setup.MemberClients.Clusters,
	})
	if err != nil {
		return nil, nil, err
	}
	return proxies, func(context.Context) error { return nil }, nil
}

// memberClients finds a member's client, the hub being hub.
func memberClients(hub client.Client, members *controllers.MemberClients) func(cluster string) (client.Client, error) {
	return func(cluster string) (client.Client, error) {
		if cluster == v1alpha1.HubCluster {
			return hub, nil
		}
		return members.Client(cluster)
	}
}

// xdsConfigs is the config server as the dataplane applier sees it.
type xdsConfigs struct{ *xds.Server }

func (c xdsConfigs) Proxies(gateway string) []controllers.ProxyState {
	st := c.Status(gateway)
	out := make([]controllers.ProxyState, 0, len(st.Replicas))
	for _, r := range st.Replicas {
		out = append(out, controllers.ProxyState{Node: r.Node, Acked: r.Acked, Nacked: r.Nacked, NackReason: r.NackReason, Refused: r.Refused})
	}
	return out
}

// everyReplica is a runnable that runs on followers too.
type everyReplica func(ctx context.Context) error

func (f everyReplica) Start(ctx context.Context) error { return f(ctx) }
func (everyReplica) NeedLeaderElection() bool          { return false }
