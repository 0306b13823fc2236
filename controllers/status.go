package controllers

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/fleetgate/fleetgate/controllers/translate"
)

// statusTarget is where the writer patches one cluster's objects.
type statusTarget struct {
	// Reader may be a cache: a write that conflicts with a newer object is retried after the queue's
	// backoff, by when the cache has caught up.
	Reader client.Reader
	// Live reads the API server itself. A cache that has not yet seen the writer's own last write
	// may show the status that write replaced, which can equal the one now wanted: the writer then
	// asks Live before it takes the write for a no-op.
	Live     client.Reader
	Writer   client.StatusClient
	Recorder events.EventRecorder
}

// StatusWriter is the one place fleetgate writes Gateway API status. Reconcilers hand it whole
// translation results; it diffs them against what it published last, queues the objects whose desired
// status changed (and the routes that no longer have any of our parents, to clear them), and patches
// /status in the right member cluster, skipping objects already in the desired state. It writes only on
// the leader; on a follower it keeps the latest desired state, written as soon as it is elected.
type StatusWriter struct {
	log      logr.Logger
	features []gwv1.SupportedFeature
	metrics  *Metrics

	// kinds are the kinds whose status the writer knows, by name.
	kinds map[string]kind

	mu      sync.Mutex
	targets map[string]statusTarget
	desired map[translate.ObjectRef]*desiredEntry
	// passes numbers the Publish calls of each part; count holds how many desired entries each
	// part has, so that a Publish that named them all can skip looking for dropped ones.
	passes, count [2]uint64
	// order holds each part's entries in the order the last Publish named them, spare the slice
	// the next order is built in: a pass names most objects where the last one did, which a cursor
	// finds without hashing their refs.
	order, spare [2][]*desiredEntry
	// written is the resourceVersion each object got from the writer's last write to it.
	written map[translate.ObjectRef]string
	// notified are the notices already turned into Events (notices.go), by the leader: a follower
	// records them without an Event.
	notified map[translate.Notice]bool
	// leader tells whether this replica leads; nil means it does.
	leader func() bool
	// leaving tells whether a cluster's MemberCluster is being deleted (fleet.Fleet.IsLeaving):
	// its objects that dropped out of the results get their kind's released status. Nil: none is.
	leaving func(cluster string) bool
	// queue hands out objects by priority: routes and policies that were there when the writer
	// started (the backlog: every status of a cold start, one API write each) after everything
	// that changed since, so that a change made meanwhile does not wait minutes behind them.
	// Nothing is queued before Start (a follower's queue would hold every object, and its depth
	// metric read as a backlog nobody drains): Start queues desired and dropped.
	queue priorityqueue.PriorityQueue[translate.ObjectRef]
	// started is set by Start; dropped holds, until then, the objects that left the results, whose
	// statuses Start queues for clearing, of kinds the sweeper does not look through (the sweeper
	// finds the others, and a follower's set would hold every deleted route until it leads).
	started bool
	dropped map[translate.ObjectRef]struct{}
	// read are the clusters the last pass of routes and policies read; swept those the sweeper
	// looked through since the writer started (or the cluster connected again); sweep wakes it.
	read  []string
	swept map[string]bool
	sweep chan struct{}
	// countsDelay is how long the write of a Gateway or ListenerSet waits when only its listeners'
	// attachedRoutes changed (attachedRoutesDelay; shorter in tests).
	countsDelay time.Duration
	// workers is how many writes are in flight at most (Options.StatusWorkers).
	workers int
}

// attachedRoutesDelay coalesces the writes of Gateways and ListenerSets whose only change is a
// listener's attachedRoutes. While routes are added one after another, each would otherwise cost
// one Gateway write in every member that has the Gateway, competing in the API servers with the
// writes of the routes' own Accepted; one write per Gateway in this period carries them all.
const attachedRoutesDelay = 250 * time.Millisecond

// desiredEntry is the latest desired status of one object.
type desiredEntry struct {
	ref  translate.ObjectRef
	want desiredStatus
	// pass is the Publish of the object's part that last named it, at place in its order.
	pass  uint64
	place int
}

// NewStatusWriter returns a writer that publishes features on every GatewayClass it accepts.
func NewStatusWriter(log logr.Logger, features []gwv1.SupportedFeature, m *Metrics) *StatusWriter {
	return &StatusWriter{
		log:         log,
		features:    features,
		metrics:     m,
		kinds:       kindsByName(kinds()),
		targets:     map[string]statusTarget{},
		desired:     map[translate.ObjectRef]*desiredEntry{},
		written:     map[translate.ObjectRef]string{},
		dropped:     map[translate.ObjectRef]struct{}{},
		swept:       map[string]bool{},
		sweep:       make(chan struct{}, 1),
		countsDelay: attachedRoutesDelay,
		workers:     DefaultStatusWorkers,
		queue: priorityqueue.New("status", func(o *priorityqueue.Opts[translate.ObjectRef]) {
			o.RateLimiter = statusRateLimiter()
		}),
	}
}

// SetTarget registers (or replaces) the clients of one member cluster.
func (w *StatusWriter) SetTarget(cluster string, t statusTarget) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.targets[cluster] = t
}

// RemoveTarget forgets a member cluster that is no longer usable. Its queued objects are dropped:
// they left the translation with it and come back (and are written) when it returns.
func (w *StatusWriter) RemoveTarget(cluster string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.targets, cluster)
	delete(w.swept, cluster) // what changed while it was away is looked for when it returns
}

// begin ends the follower's wait: from now on Publish queues, and everything known is queued.
func (w *StatusWriter) begin() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.started = true
	w.requeueLocked()
	w.wakeSweeperLocked()
}

// NeedLeaderElection makes the writer run only on the leader.
func (w *StatusWriter) NeedLeaderElection() bool { return true }

// Start runs the writer until ctx ends.
func (w *StatusWriter) Start(ctx context.Context) error {
	go func() {
		<-ctx.Done()
		w.queue.ShutDown()
	}()
	w.begin()
	// Writes are API round trips: several in flight keep a burst (a Gateway in every member, its
	// routes) from queueing behind one another. The queue never hands out one object twice at once.
	var wg sync.WaitGroup
	wg.Go(func() { w.sweeper(ctx) })
	for range w.workers {
		wg.Go(func() { w.work(ctx) })
	}
	wg.Wait()
	return nil
}

// DefaultStatusWorkers is how many status writes are in flight by default. A write is one API
// round trip whose cost is the API server's CPU (~3-4 ms for an HTTPRoute on the 2-core test box:
// decoding, CEL validation, etcd). There eight already saturate the API server: 32 wrote a cold
// start no faster and tripled each write's wait (25-50 → 80-360 ms), and with it the wait of a
// change queued behind the backlog. An API server with more cores takes more writers
// (--status-workers; tests/bench/results/convergence.md, "Status write ceiling").
const DefaultStatusWorkers = 8

// MaxStatusWorkers bounds Options.StatusWorkers: past it, more writers only queue in the API
// server's priority-and-fairness seats.
const MaxStatusWorkers = 256

// statusWorkers is the writer count Options.StatusWorkers asks for.
func statusWorkers(n int) (int, error) {
	switch {
	case n == 0:
		return DefaultStatusWorkers, nil
	case n < 1 || n > MaxStatusWorkers:
		return 0, fmt.Errorf("status workers: %d is not between 1 and %d", n, MaxStatusWorkers)
	}
	return n, nil
}

// backlogPriority is the queue priority of the statuses the writer found to do when it started
// (below the default 0 of every later change).
var backlogPriority = -1

// statusRetryMax caps the backoff of a status write that keeps failing.
const statusRetryMax = 2 * time.Second

// statusRateLimiter backs retries off per object only, and not far: most failures are conflicts
// with our own previous write that the cache has not seen yet. The controller default (a shared
// 10/s bucket, backoff up to 1000 s) left Gateways unprogrammed for minutes after a burst of
// conflicts although their proxies had ACKed.
func statusRateLimiter() workqueue.TypedRateLimiter[translate.ObjectRef] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[translate.ObjectRef](5*time.Millisecond, statusRetryMax)
}

func (w *StatusWriter) work(ctx context.Context) {
	for {
		ref, priority, shutdown := w.queue.GetWithPriority()
		if shutdown {
			return
		}
		err := w.write(ctx, ref)
		w.queue.Done(ref)
		if err != nil {
			if apierrors.IsConflict(err) {
				// Expected: another writer, or our own last write the cache has not seen yet.
				w.log.V(1).Info("status conflict, retrying", "cluster", ref.Cluster, "kind", ref.Kind, "namespace", ref.Namespace, "name", ref.Name)
			} else {
				w.log.Error(err, "writing status", "cluster", ref.Cluster, "kind", ref.Kind, "namespace", ref.Namespace, "name", ref.Name)
			}
			w.queue.AddWithOpts(priorityqueue.AddOpts{RateLimited: true, Priority: &priority}, ref)
			continue
		}
		w.queue.Forget(ref)
	}
}
