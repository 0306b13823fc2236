// Package fleet connects fleetgate to its member clusters. Each MemberCluster in the hub gets its
// own controller-runtime cluster.Cluster (client and informer cache), built from the kubeconfig
// Secret it names, started and stopped at runtime as MemberClusters come, change and go, and probed
// for health. The pipeline reads only the members that are connected, synced and answering, so an
// unreachable member's objects (and with them its endpoints) drop out of every translation while the
// rest of the fleet keeps being served.
package fleet

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/fleetgate/fleetgate/api/v1alpha1"
)

// HubCluster is the member name of the operator's own cluster when it is a member.
const HubCluster = "hub"

// DefaultWeight is a member's weight when its MemberCluster does not say (the CRD default).
const DefaultWeight int32 = 100

// Member is one usable member cluster: connected, caches synced and answering its probes.
type Member struct {
	Name   string
	Weight int32
	// Reader reads the member's informer cache.
	Reader client.Reader
	// Writer talks to the member's API server directly, with a short timeout so that a member
	// that stops answering cannot hold up writes to the others.
	Writer client.Client
	// Recorder emits Events in the member.
	Recorder events.EventRecorder
}

// Options configure the fleet.
type Options struct {
	// Namespace holds the kubeconfig Secrets MemberClusters refer to.
	Namespace string
	// Scheme decodes every kind the pipeline reads.
	Scheme *runtime.Scheme
	// Kinds get an informer in every member; any change to one of them calls Changed.
	Kinds []client.Object
	// Hub, when set, is the operator's own cluster as a member named "hub"; its events reach the
	// pipeline through the manager's own watches.
	Hub *Member
	// Changed is called (without blocking for long) when a member's objects or its health changed.
	Changed func(cluster string)
	// UpdateMatters, when set, filters update events: those it returns false for (e.g. a status
	// fleetgate wrote itself) do not call Changed.
	UpdateMatters func(old, new any) bool
	// Ready is called when a member becomes usable (again); Lost when it stops being usable.
	Ready func(Member)
	Lost  func(name string)
	// ProbeInterval and ProbeTimeout pace the health probe; FailureThreshold consecutive failures
	// make a member unreachable. Zero values mean 2s, 1s and 2.
	ProbeInterval    time.Duration
	ProbeTimeout     time.Duration
	FailureThreshold int
	// WriteTimeout bounds each call of Member.Writer; zero means 5s.
	WriteTimeout time.Duration
	Log          logr.Logger
}

// Fleet is the set of member clusters. Its MemberCluster reconciler (Reconciler) connects and
// disconnects them; the pipeline reads Members.
type Fleet struct {
	o Options
	// health carries a MemberCluster name to its reconciler when a probe changed its health or its
	// caches synced, so that status is written by one place.
	health chan event.GenericEvent
	// mcs pokes the MCS controller on any member change.
	mcs chan event.GenericEvent

	mu        sync.RWMutex
	members   map[string]*member
	hubWeight int32
	stopped   bool
}

// member is one connected member cluster and what its probe last saw.
type member struct {
	name     string
	hash     string // of the kubeconfig it was built from; a change reconnects
	weight   int32
	cl       cluster.Cluster
	reader   client.Reader // cl's cache, reading missing kinds as empty
	missing  *missingKinds
	notify   toolscache.ResourceEventHandler // calls Changed for the member's events
	writer   client.Client
	cancel   context.CancelFunc
	synced   bool
	healthy  bool
	failures int
	version  string
	probeErr string
	// stale is set when the member answers again after being unreachable: its caches may have
	// missed events, so the reconciler rebuilds them.
	stale bool
}

func (m *member) usable() bool { return m.synced && m.healthy && !m.stale }

// New returns an empty fleet.
func New(o Options) *Fleet {
	if o.ProbeInterval == 0 {
		o.ProbeInterval = 2 * time.Second
	}
	if o.ProbeTimeout == 0 {
		o.ProbeTimeout = time.Second
	}
	if o.FailureThreshold == 0 {
		o.FailureThreshold = 2
	}
	if o.WriteTimeout == 0 {
		o.WriteTimeout = 5 * time.Second
	}
	if o.Changed == nil {
		o.Changed = func(string) {}
	}
	return &Fleet{o: o, health: make(chan event.GenericEvent, 64), mcs: make(chan event.GenericEvent, 1), members: map[string]*member{}, hubWeight: DefaultWeight}
}

// Members returns the usable members sorted by name, the hub first when it is one.
func (f *Fleet) Members() []Member {
	f.mu.RLock()
	defer f.mu.RUnlock()
	out := make([]Member, 0, len(f.members)+1)
	if f.o.Hub != nil {
		hub := *f.o.Hub
		hub.Name, hub.Weight = HubCluster, f.hubWeight
		out = append(out, hub)
	}
	names := make([]string, 0, len(f.members))
	for n, m := range f.members {
		if m.usable() {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		out = append(out, f.memberLocked(f.members[n]))
	}
	return out
}

func (f *Fleet) memberLocked(m *member) Member {
	return Member{Name: m.name, Weight: m.weight, Reader: m.reader, Writer: m.writer, Recorder: m.cl.GetEventRecorder("fleetgate")}
}

// NeedLeaderElection: members are connected only on the leader, which alone runs the pipeline.
func (f *Fleet) NeedLeaderElection() bool { return true }

// Start waits for ctx to end and then disconnects every member. Members run on contexts of their
// own (cancelled on disconnect), not on a reconcile's.
func (f *Fleet) Start(ctx context.Context) error {
	<-ctx.Done()
	f.mu.Lock()
	f.stopped = true
	names := make([]string, 0, len(f.members))
	for n := range f.members {
		names = append(names, n)
	}
	f.mu.Unlock()
	for _, n := range names {
		f.disconnect(n)
	}
	return nil
}

// connect builds, starts and probes a member. It returns once the informers are registered; the
// caches sync in the background and the member becomes usable when they have.
func (f *Fleet) connect(ctx context.Context, name, hash string, weight int32, cfg *rest.Config) error {
	log := f.o.Log.WithValues("cluster", name)
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 100, 200
	cl, err := cluster.New(cfg, func(o *cluster.Options) {
		o.Scheme = f.o.Scheme
		o.Logger = log
	})
	if err != nil {
		return fmt.Errorf("creating client for member %s: %w", name, err)
	}
	wcfg := rest.CopyConfig(cfg)
	wcfg.Timeout = f.o.WriteTimeout
	writer, err := client.New(wcfg, client.Options{Scheme: f.o.Scheme})
	if err != nil {
		return fmt.Errorf("creating writer for member %s: %w", name, err)
	}
	notify := toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { f.changed(name) },
		UpdateFunc: func(old, new any) {
			if f.o.UpdateMatters == nil || f.o.UpdateMatters(old, new) {
				f.changed(name)
			}
		},
		DeleteFunc: func(any) { f.changed(name) },
	}
	missing := &missingKinds{}
	for _, obj := range f.o.Kinds {
		inf, err := cl.GetCache().GetInformer(ctx, obj, cache.BlockUntilSynced(false))
		if err != nil {
			if meta.IsNoMatchError(err) {
				// A kind the member does not serve reads as empty until its CRD appears (adoptKinds).
				log.Info("member does not serve a kind fleetgate reads", "kind", fmt.Sprintf("%T", obj))
				missing.add(obj, f.o.Scheme)
				continue
			}
			return fmt.Errorf("member %s: informer for %T: %w", name, obj, err)
		}
		if _, err := inf.AddEventHandler(notify); err != nil {
			return fmt.Errorf("member %s: handler for %T: %w", name, obj, err)
		}
	}
	mctx, cancel := context.WithCancel(context.Background())
	m := &member{name: name, hash: hash, weight: weight, cl: cl, writer: writer, cancel: cancel, healthy: true,
		reader:  partialReader{Reader: cl.GetCache(), store: StoreReader{Reader: cl.GetCache(), Cache: cl.GetCache()}, scheme: f.o.Scheme, missing: missing},
		missing: missing, notify: notify}
	f.mu.Lock()
	if f.stopped {
		f.mu.Unlock()
		cancel()
		return fmt.Errorf("member %s: fleet is shutting down", name)
	}
	f.members[name] = m
	f.mu.Unlock()

	go func() {
		if err := cl.Start(mctx); err != nil {
			log.Error(err, "member cache stopped")
		}
	}()
	go func() {
		if !cl.GetCache().WaitForCacheSync(mctx) {
			return
		}
		f.mu.Lock()
		if f.members[name] != m {
			f.mu.Unlock()
			return
		}
		m.synced = true
		usable := m.usable()
		f.mu.Unlock()
		log.Info("member caches synced")
		if usable && f.o.Ready != nil {
			f.o.Ready(f.snapshotMember(m))
		}
		f.changed(name)
		f.pokeStatus(name)
	}()
	go f.probe(mctx, m, cfg)
	log.Info("member connected", "host", cfg.Host)
	return nil
}

func (f *Fleet) snapshotMember(m *member) Member {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.memberLocked(m)
}

// disconnect stops a member's caches and probe and drops it from the fleet.
func (f *Fleet) disconnect(name string) {
	f.mu.Lock()
	m := f.members[name]
	delete(f.members, name)
	f.mu.Unlock()
	if m == nil {
		return
	}
	m.cancel()
	if f.o.Lost != nil {
		f.o.Lost(name)
	}
	f.changed(name)
	f.o.Log.Info("member disconnected", "cluster", name)
}

// state is what the reconciler needs to write a member's status.
type state struct {
	known, synced, healthy, stale bool
	hash, version, probeErr       string
}

func (f *Fleet) state(name string) state {
	f.mu.RLock()
	defer f.mu.RUnlock()
	m := f.members[name]
	if m == nil {
		return state{}
	}
	return state{known: true, synced: m.synced, healthy: m.healthy, stale: m.stale, hash: m.hash, version: m.version, probeErr: m.probeErr}
}

// setWeight updates a connected member's weight (or the hub's) and says whether it changed.
func (f *Fleet) setWeight(name string, w int32) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if name == HubCluster && f.o.Hub != nil {
		changed := f.hubWeight != w
		f.hubWeight = w
		return changed
	}
	m := f.members[name]
	if m == nil || m.weight == w {
		return false
	}
	m.weight = w
	return true
}

// partialReader reads a member's cache and lists the kinds the member does not serve (say, no MCS
// CRDs) as empty, so that one missing CRD does not hide the member's other objects.
type partialReader struct {
	client.Reader
	store   StoreReader
	scheme  *runtime.Scheme
	missing *missingKinds
}

func (p partialReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if p.missing.hides(list, p.scheme) {
		return nil
	}
	return p.Reader.List(ctx, list, opts...)
}

// changed tells the pipeline and the MCS controller that a member's objects or health changed.
func (f *Fleet) changed(cluster string) {
	f.o.Changed(cluster)
	select {
	case f.mcs <- event.GenericEvent{Object: &v1alpha1.MemberCluster{}}:
	default: // a pass is already due
	}
}

// allUsable tells whether every connected member is usable.
func (f *Fleet) allUsable() bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	for _, m := range f.members {
		if !m.usable() {
			return false
		}
	}
	return true
}

func (f *Fleet) pokeStatus(name string) {
	obj := &v1alpha1.MemberCluster{}
	obj.Name = name
	select {
	case f.health <- event.GenericEvent{Object: obj}:
	default: // the reconciler is far behind; its periodic requeue catches up
	}
}

// StoreReader is a client.Reader that also lists a kind straight from its informer's store: the
// cached objects themselves, neither copied nor converted into a typed list. A pass over
// thousands of routes reads them all; the pipeline only reads what it gets.
type StoreReader struct {
	client.Reader
	Cache cache.Cache
}

// ListStore returns every cached object of obj's kind; ok is false when the cache cannot tell
// (the caller lists through the Reader instead).
func (r StoreReader) ListStore(ctx context.Context, obj client.Object) (objs []any, ok bool, err error) {
	inf, err := r.Cache.GetInformer(ctx, obj)
	if err != nil {
		return nil, false, fmt.Errorf("informer for %T: %w", obj, err)
	}
	s, ok := inf.(interface{ GetIndexer() toolscache.Indexer })
	if !ok {
		return nil, false, nil
	}
	return s.GetIndexer().List(), true, nil
}

// ListStore is StoreReader.ListStore for a member, whose kinds it does not serve read as empty.
func (p partialReader) ListStore(ctx context.Context, obj client.Object) ([]any, bool, error) {
	if p.missing.hides(obj, p.scheme) {
		return nil, true, nil
	}
	return p.store.ListStore(ctx, obj)
}
