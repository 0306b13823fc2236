package controllers

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/discovery"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/controllers/fleet"
	"github.com/fleetgate/fleetgate/controllers/translate"
	"github.com/fleetgate/fleetgate/providers"
)

// Options configure Setup.
type Options struct {
	// Registry receives fleetgate's metrics; nil means controller-runtime's registry, which the
	// manager serves on its metrics endpoint.
	Registry prometheus.Registerer
	// Apply makes translations real; nil leaves every Gateway Programmed=False/Pending.
	Apply Applier
	// Catalog tells translation what each provider can express (providers.Registry); nil means
	// everything, so that a rule is refused only by a provider that says it cannot serve it.
	Catalog translate.Catalog
	// Events re-run the pipeline when something outside the API changed, e.g. a proxy exited.
	Events *Trigger
	// Delivery tells that only the proxies' delivery state changed (an ACK, a NACK, a replica
	// connecting or leaving): Programmed is re-evaluated without a new translation.
	Delivery *Trigger
	// Fleet, when set, connects the hub's MemberClusters and reads them all; nil reads the hub alone.
	Fleet *FleetOptions
	// MemberClients, when set, is bound to the fleet so that providers reach member clusters.
	MemberClients *MemberClients
	// DNS, when set, publishes every programmed hostname as external-dns DNSEndpoints in the hub.
	DNS *DNSOptions
	// Replica, when set, makes this operator one of several replicas: it serves proxies while a
	// follower, publishes what its proxies acknowledged, and as the leader counts the others'.
	Replica *ReplicaOptions
	// StatusWorkers is how many status writes are in flight at most, 1 to MaxStatusWorkers; 0
	// means DefaultStatusWorkers.
	StatusWorkers int
	// SkipNameValidation lets tests run several managers in one process; controller-runtime
	// otherwise refuses a second controller of the same name (their metrics would collide).
	SkipNameValidation bool
}

// FleetOptions configure the member clusters.
type FleetOptions struct {
	// Namespace holds the MemberClusters' kubeconfig Secrets (the operator's namespace).
	Namespace string
	// HubIsMember makes the operator's own cluster a member named "hub".
	HubIsMember bool
	// MCSController maintains ServiceImports in every member from the ServiceExports, for fleets
	// without another MCS implementation.
	MCSController bool
	// MemberQPS and MemberBurst bound the calls to each member's API server (fleet.Options).
	MemberQPS   float32
	MemberBurst int
	// ReleaseTimeout is how long a member whose MemberCluster is being deleted must have been
	// unreachable before the MemberCluster goes with fleetgate's finalizers and statuses left on
	// the member's objects (its load balancers and DNS records are deleted in any case); zero
	// means fleet.DefaultReleaseTimeout.
	ReleaseTimeout time.Duration
}

// CacheOptions keep the informers small: of all Deployments, only the proxies fleetgate made; of
// all Leases, only the replicas' delivery reports in the operator's namespace; and every object
// compacted (fleet.CacheTransform).
func CacheOptions(namespace string) cache.Options {
	return cache.Options{
		ByObject: map[client.Object]cache.ByObject{
			&appsv1.Deployment{}:    {Label: labels.SelectorFromSet(labels.Set{providers.LabelManagedBy: providers.ManagedBy})},
			&coordinationv1.Lease{}: {Label: labels.SelectorFromSet(labels.Set{LabelDeliveryReport: "true"}), Namespaces: map[string]cache.Config{namespace: {}}},
		},
		DefaultTransform: fleet.CacheTransform(),
	}
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
	if writer.workers, err = statusWorkers(o.StatusWorkers); err != nil {
		return err
	}
	writer.leader = leads(mgr)
	writer.SetTarget(v1alpha1.HubCluster, statusTarget{
		Reader:   mgr.GetClient(),
		Live:     mgr.GetAPIReader(),
		Writer:   mgr.GetClient(),
		Recorder: mgr.GetEventRecorder("fleetgate"),
	})
	if err := mgr.Add(writer); err != nil {
		return fmt.Errorf("adding status writer: %w", err)
	}
	legacy := servesLegacyReferencePolicy(mgr)
	hubReader := fleet.StoreReader{Reader: mgr.GetClient(), Cache: mgr.GetCache()}
	hub := []ClusterReader{{Cluster: v1alpha1.HubCluster, Reader: hubReader, LegacyReferencePolicy: legacy, Weight: v1alpha1.DefaultClusterWeight}}
	sources := func() []ClusterReader { return hub }
	watchKinds, watchHub := true, true
	events := []<-chan event.GenericEvent{o.Events.Channel()}
	var awaiting func(context.Context) ([]string, error)
	release := &memberRelease{writer: writer}
	if o.Fleet != nil {
		memberEvents := NewTrigger()
		events = append(events, memberEvents.Channel())
		fl, aw, err := setupFleet(ctx, mgr, o, writer, memberEvents, legacy, release)
		if err != nil {
			return err
		}
		awaiting = aw
		// The hub's kinds reach the pipeline through the fleet (fleet.WatchHub), which reads those
		// whose CRDs are absent as empty: only its proxy Deployments are watched here.
		sources, watchKinds, watchHub = fl, false, o.Fleet.HubIsMember
	}
	if d, ok := o.Apply.(*Dataplane); ok {
		if err := d.setupProvisioning(ctx, mgr, o.Registry, sources, o.MemberClients); err != nil {
			return fmt.Errorf("setting up provisioning: %w", err)
		}
		release.engine, release.finalizers = d.engine, d.finalizers
		if o.Replica != nil {
			t := cmp.Or(o.Delivery, o.Events)
			changed := func() { t.Fire("") }
			if err := d.setupReplicas(ctx, mgr, o.Registry, *o.Replica, changed, mgr.GetLogger().WithName("replicas")); err != nil {
				return err
			}
		}
	}
	var dns *dnsPublisher
	if o.DNS != nil {
		// A new verdict only changes status: the delivery trigger merges it without a translation.
		var changed func()
		if t := cmp.Or(o.Delivery, o.Events); t != nil {
			changed = func() { t.Fire("") }
		}
		dns = newDNSPublisher(mgr.GetClient(), mgr.GetAPIReader(), *o.DNS, changed, mgr.GetLogger().WithName("dns"))
		release.dns = mgr.GetAPIReader()
		if err := mgr.Add(dns); err != nil {
			return fmt.Errorf("adding the DNS publisher: %w", err)
		}
	}
	// A first pass even where nothing in the API fires one: it is what makes the replica ready.
	start := NewTrigger()
	start.Fire("")
	r := &GatewayReconciler{
		Clusters:   sources,
		Translator: translate.NewMemo(translate.WithCatalog(o.Catalog)),
		Apply:      o.Apply,
		Status:     writer,
		Metrics:    m,
		DNS:        dns,
		Awaiting:   awaiting,
	}
	if err := r.SetupWithManager(mgr, append(events, start.Channel()), o.Delivery.Channel(), watchKinds, watchHub, legacy, o.SkipNameValidation); err != nil {
		return fmt.Errorf("setting up the Gateway API controller: %w", err)
	}
	if err := mgr.AddReadyzCheck("translated", r.Applied); err != nil {
		return fmt.Errorf("adding the readiness check: %w", err)
	}
	return nil
}

// leads tells whether this replica is the leader (always, without leader election).
func leads(mgr ctrl.Manager) func() bool {
	elected := mgr.Elected()
	return func() bool {
		select {
		case <-elected:
			return true
		default:
			return false
		}
	}
}

// servesLegacyReferencePolicy tells whether the cluster has the v1alpha2 ReferencePolicy CRD. It is
// looked up once at start: installing that CRD later needs an operator restart to be noticed.
func servesLegacyReferencePolicy(mgr ctrl.Manager) bool {
	gvk := referencePolicyGVK()
	_, err := mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	return err == nil
}

// setupFleet wires the member clusters: their informers fire events, each usable member gets a
// status target, leaving members are read as present but empty until release says they are
// released, and the returned functions list the pipeline's sources and the MemberClusters not
// settled yet (Fleet.Settled).
func setupFleet(ctx context.Context, mgr ctrl.Manager, o Options, writer *StatusWriter, events *Trigger, legacy bool, release fleet.Releaser) (func() []ClusterReader, func(context.Context) ([]string, error), error) {
	table := kinds()
	var hub *fleet.Member
	if o.Fleet.HubIsMember {
		hub = &fleet.Member{Reader: fleet.StoreReader{Reader: mgr.GetClient(), Cache: mgr.GetCache()}, Writer: mgr.GetClient(), Recorder: mgr.GetEventRecorder("fleetgate")}
	} else {
		writer.RemoveTarget(v1alpha1.HubCluster)
	}
	fl := fleet.New(fleet.Options{
		Namespace: o.Fleet.Namespace,
		Scheme:    mgr.GetScheme(),
		Kinds:     fleetKinds(table),
		Hub:       hub,
		Changed:   events.Fire,
		// fleetgate's own status writes come back as updates; they change nothing translation reads.
		UpdateMatters: newUpdateFilter(table).inputChanged,
		Ready: func(m fleet.Member) {
			writer.SetTarget(m.Name, statusTarget{Reader: m.Reader, Live: m.Writer, Writer: m.Writer, Recorder: m.Recorder})
		},
		Lost:   writer.RemoveTarget,
		Leader: leads(mgr),
		QPS:    o.Fleet.MemberQPS,
		Burst:  o.Fleet.MemberBurst,
		Log:    mgr.GetLogger().WithName("fleet"),
	})
	if hub != nil {
		if err := fl.WatchHub(ctx, mgr.GetCache(), mgr.GetConfig()); err != nil {
			return nil, nil, fmt.Errorf("watching the hub's kinds: %w", err)
		}
	}
	if o.MemberClients != nil {
		o.MemberClients.bind(fl.Members)
	}
	writer.leaving = fl.IsLeaving
	version := ""
	if dc, err := discovery.NewDiscoveryClientForConfig(mgr.GetConfig()); err == nil {
		if v, err := dc.ServerVersion(); err == nil {
			version = v.GitVersion
		}
	}
	if err := (&fleet.Reconciler{
		Fleet:          fl,
		Client:         mgr.GetClient(),
		Recorder:       mgr.GetEventRecorder("fleetgate"),
		HubVersion:     version,
		Releaser:       release,
		ReleaseTimeout: o.Fleet.ReleaseTimeout,
	}).SetupWithManager(mgr, o.SkipNameValidation); err != nil {
		return nil, nil, fmt.Errorf("setting up the MemberCluster controller: %w", err)
	}
	if o.Fleet.MCSController {
		if err := (&fleet.MCS{Fleet: fl}).SetupWithManager(mgr, o.SkipNameValidation); err != nil {
			return nil, nil, fmt.Errorf("setting up the MCS controller: %w", err)
		}
	}
	awaiting := func(ctx context.Context) ([]string, error) {
		var list v1alpha1.MemberClusterList
		if err := mgr.GetClient().List(ctx, &list); err != nil {
			return nil, fmt.Errorf("listing MemberClusters: %w", err)
		}
		var names []string
		for _, mc := range list.Items {
			// A leaving member is waited for too: the first pass must read it as leaving, so that
			// the orphan sweep after it finds what was made for it.
			releasing := controllerutil.ContainsFinalizer(&mc, v1alpha1.FinalizerMember)
			if (mc.DeletionTimestamp.IsZero() || releasing) && (mc.Name != v1alpha1.HubCluster || !o.Fleet.HubIsMember) {
				names = append(names, mc.Name)
			}
		}
		return fl.Settled(names), nil
	}
	return func() []ClusterReader {
		members := fl.Members()
		leaving := fl.Leaving()
		out := make([]ClusterReader, 0, len(members)+len(leaving))
		for _, m := range members {
			out = append(out, ClusterReader{Cluster: m.Name, Reader: m.Reader, Weight: m.Weight, Unserved: m.Unserved,
				LegacyReferencePolicy: legacy && m.Name == v1alpha1.HubCluster, Leaving: m.Leaving})
		}
		// A leaving member that is not usable is read all the same, as empty: its load balancers
		// and DNS records are the hub's to delete.
		for _, n := range leaving {
			if !slices.ContainsFunc(out, func(c ClusterReader) bool { return c.Cluster == n }) {
				out = append(out, ClusterReader{Cluster: n, Leaving: true})
			}
		}
		return out
	}, awaiting, nil
}
