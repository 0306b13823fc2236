// Package fleet connects fleetgate to its member clusters. Each MemberCluster in the hub gets its
// own controller-runtime cluster.Cluster (client and informer cache), built from the kubeconfig
// Secret it names, started and stopped at runtime as MemberClusters come, change and go, and probed
// for health. The pipeline reads only the members that are connected, synced and answering, so an
// unreachable member's objects (and with them its endpoints) drop out of every translation while the
// rest of the fleet keeps being served.
package fleet

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/event"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
)

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
	// Unserved are the kinds fleetgate reads whose CRD the member does not serve, sorted.
	Unserved []string
	// Leaving is set while the member's MemberCluster is being deleted: the pipeline reads it as
	// present but empty, so that what fleetgate made for it is released (Reconciler.release).
	Leaving bool
}

// Options configure the fleet.
type Options struct {
	// Namespace holds the kubeconfig Secrets MemberClusters refer to.
	Namespace string
	// Scheme decodes every kind the pipeline reads.
	Scheme *runtime.Scheme
	// Kinds get an informer in every member that serves them; any change to one of them calls Changed.
	Kinds []Kind
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
	// Leader tells whether this replica leads: every replica connects the members (they all serve
	// proxies), only the leader writes MemberCluster status and Events. Nil means it leads.
	Leader func() bool
	// ProbeInterval and ProbeTimeout pace the health probe; FailureThreshold consecutive failures
	// make a member unreachable. Zero values mean 2s, 1s and 2.
	ProbeInterval    time.Duration
	ProbeTimeout     time.Duration
	FailureThreshold int
	// WriteTimeout bounds each call of Member.Writer; zero means 5s.
	WriteTimeout time.Duration
	// QPS and Burst bound the calls to each member's API server (reads, status writes, Events);
	// zero means 100 and 200. A negative QPS sets no client-side limit and leaves it to the API
	// server's priority and fairness, as the hub's client does.
	QPS   float32
	Burst int
	Log   logr.Logger
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
	// hubKinds tracks the kinds the hub serves, when it is a member (WatchHub).
	hubKinds *kindWatcher
	stopped  bool
	// observed are the MemberClusters the reconciler has looked at since the start, connected or not.
	observed map[string]bool
	// leaving are the members whose MemberCluster is being deleted and still holds FinalizerMember.
	leaving map[string]bool
}

// member is one connected member cluster and what its probe last saw.
type member struct {
	name     string
	hash     string // of the kubeconfig it was built from; a change reconnects
	weight   int32
	cl       cluster.Cluster
	reader   client.Reader // cl's cache, reading missing kinds as empty
	kinds    *kindWatcher
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
	if o.QPS == 0 {
		o.QPS = 100
	}
	if o.Burst == 0 {
		o.Burst = 200
	}
	if o.Changed == nil {
		o.Changed = func(string) {}
	}
	return &Fleet{o: o, health: make(chan event.GenericEvent, 64), mcs: make(chan event.GenericEvent, 1), members: map[string]*member{}, hubWeight: v1alpha1.DefaultClusterWeight,
		observed: map[string]bool{}, leaving: map[string]bool{}}
}

// Members returns the usable members sorted by name, the hub first when it is one.
func (f *Fleet) Members() []Member {
	f.mu.RLock()
	defer f.mu.RUnlock()
	out := make([]Member, 0, len(f.members)+1)
	if f.o.Hub != nil {
		hub := *f.o.Hub
		hub.Name, hub.Weight = v1alpha1.HubCluster, f.hubWeight
		if f.hubKinds != nil {
			hub.Unserved = f.hubKinds.unserved()
		}
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
	return Member{Name: m.name, Weight: m.weight, Reader: m.reader, Writer: m.writer, Recorder: m.cl.GetEventRecorder("fleetgate"),
		Unserved: m.kinds.unserved(), Leaving: f.leaving[m.name]}
}

// Leaving returns the members being deleted whose release is not done, connected or not, sorted:
// the pipeline reads each as present but empty, so that their load balancers and DNS records are
// deleted although their objects cannot be read (an unreachable member's are not).
func (f *Fleet) Leaving() []string {
	f.mu.RLock()
	defer f.mu.RUnlock()
	out := make([]string, 0, len(f.leaving))
	for n := range f.leaving {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// IsLeaving tells whether the member is being deleted and its release is not done.
func (f *Fleet) IsLeaving(name string) bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.leaving[name]
}

// setLeaving records whether a member is leaving, and tells the pipeline when that changed.
func (f *Fleet) setLeaving(name string, leaving bool) {
	f.mu.Lock()
	changed := f.leaving[name] != leaving
	if leaving {
		f.leaving[name] = true
	} else {
		delete(f.leaving, name)
	}
	f.mu.Unlock()
	if changed {
		f.changed(name)
	}
}

// NeedLeaderElection: every replica translates, so every replica connects the members.
func (f *Fleet) NeedLeaderElection() bool { return false }

// leads tells whether this replica writes status and Events.
func (f *Fleet) leads() bool { return f.o.Leader == nil || f.o.Leader() }

// Start waits for ctx to end and then disconnects every member. Members run on contexts of their
// own (cancelled on disconnect), not on a reconcile's.
func (f *Fleet) Start(ctx context.Context) error {
	f.mu.RLock()
	hub := f.hubKinds
	f.mu.RUnlock()
	if hub != nil {
		go f.recheckHub(ctx, hub)
	}
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

// recheckHub looks for the hub's CRDs coming and going, as each member's probe does for its own,
// and reports what the hub lacks with an Event on the operator's namespace whenever that changes:
// the hub need not have a MemberCluster to carry the condition.
func (f *Fleet) recheckHub(ctx context.Context, hub *kindWatcher) {
	t := time.NewTicker(f.o.ProbeInterval)
	defer t.Stop()
	reported := ""
	for {
		// A follower reports nothing: it tells once it leads.
		if missing := strings.Join(hub.Missing(), ", "); missing != reported && f.leads() {
			f.reportHub(missing)
			reported = missing
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			hub.recheck(ctx)
		}
	}
}

// reportHub records which prerequisite CRDs the hub lacks, or that it lacks none any more.
func (f *Fleet) reportHub(missing string) {
	if f.o.Hub.Recorder == nil || f.o.Namespace == "" {
		return
	}
	ns := &corev1.Namespace{}
	ns.Name, ns.Namespace = f.o.Namespace, f.o.Namespace // the Event lands in the operator's namespace
	if missing == "" {
		f.o.Hub.Recorder.Eventf(ns, nil, corev1.EventTypeNormal, ReasonInstalled, "Prerequisites", "hub: every CRD fleetgate reads is installed")
		return
	}
	f.o.Hub.Recorder.Eventf(ns, nil, corev1.EventTypeWarning, ReasonCRDsMissing, "Prerequisites",
		"hub: not installed, their kinds are read as empty until they are: %s", missing)
}

// changed tells the pipeline and the MCS controller that a member's objects or health changed.
func (f *Fleet) changed(cluster string) {
	f.o.Changed(cluster)
	f.pokeMCS()
}

// pokeMCS has the MCS controller make a pass.
func (f *Fleet) pokeMCS() {
	select {
	case f.mcs <- event.GenericEvent{Object: &v1alpha1.MemberCluster{}}:
	default: // a pass is already due
	}
}

// Settled returns the named MemberClusters not settled yet: not looked at since the start, or
// connected with caches still syncing. A member is settled once usable or known not to be (its
// connection failed, it does not answer); before, a translation would leave out a member about to
// be read, and a replica serving it would take that member's routes and backends from its proxies.
func (f *Fleet) Settled(names []string) []string {
	f.mu.RLock()
	defer f.mu.RUnlock()
	var waiting []string
	for _, n := range names {
		m := f.members[n]
		switch {
		case !f.observed[n]:
		case m == nil, m.synced, !m.healthy:
			continue
		}
		waiting = append(waiting, n)
	}
	return waiting
}

// markObserved records that the reconciler looked at a MemberCluster.
func (f *Fleet) markObserved(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.observed[name] = true
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
