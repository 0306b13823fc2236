package provision

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"

	"github.com/fleetgate/fleetgate/providers"
)

// Providers finds providers by name; providers.Registry implements it.
type Providers interface {
	Get(name string) (providers.Provider, bool)
	Names() []string
}

// Desired is one gateway's model as the latest translation wants it.
type Desired struct {
	Model providers.LoadBalancer
	// Version is the config version the config server stamped on the gateway's routing: models
	// compare by it instead of by Model.Routing, which can be large.
	Version uint64
}

// Outcome is the provider's answer for a gateway.
type Outcome struct {
	Status providers.Status
	// Err is the error of the last call; the engine retries it with backoff.
	Err error
	// Version is the config version of the model the outcome is for.
	Version uint64
	// Current is false when the desired model's non-routing part changed since that call.
	Current bool
}

// Options configure an Engine. Zero values take the defaults.
type Options struct {
	Providers Providers
	// Workers bounds the concurrent calls per provider (default 4).
	Workers int
	// Resync is how often every gateway is ensured again, ±10% (default 10 min).
	Resync time.Duration
	// NotReadyPoll is how often a gateway whose load balancer is not ready yet is ensured again,
	// ±10% (default 10 s).
	NotReadyPoll time.Duration
	// SweepEvery is how often the orphan sweep runs after the first one, ±10% (default 10 min).
	SweepEvery time.Duration
	// BaseDelay and MaxDelay bound the exponential per-gateway backoff after failures
	// (default 500 ms and 5 min).
	BaseDelay, MaxDelay time.Duration
	// OnResult is called after every provider call for a gateway, outside the engine's lock.
	OnResult func(gateway string)
	// OnSweep is called after every sweep whose List calls all succeeded.
	OnSweep func()
	Log     logr.Logger
	// Registerer receives the engine's metrics; nil registers none.
	Registerer prometheus.Registerer
}

// Engine provisions gateways. Set hands it the desired models; Start runs its workers.
type Engine struct {
	o        Options
	m        *metrics
	queues   map[string]*queue
	firstSet chan struct{}
	setOnce  sync.Once

	mu sync.Mutex
	// known are the member clusters the last Set's translation read (nil: every cluster). Nothing
	// is deleted in another cluster: a member that is unreachable, or not connected yet after a
	// start, only looks as if its gateways were gone.
	known map[string]bool
	// swept tells that a sweep's List calls all succeeded after the first Set; sweptKeys are the
	// gateways that sweep queued for deletion.
	swept     bool
	sweptKeys map[string][]string
	// started is set when Start runs (on the leader only). Before that, Set only records the
	// desired models: a follower's queues stay empty, so that their depth metrics say what is
	// waiting for a provider, and Start queues every gateway once.
	started bool
}

// queue is one provider's work queue; its entries are guarded by Engine.mu.
type queue struct {
	name    string
	p       providers.Provider
	q       workqueue.TypedRateLimitingInterface[string]
	entries map[string]*entry
}

// entry is one gateway of one provider.
type entry struct {
	// model is the desired model, or when !desired the last one known, for Delete.
	model   providers.LoadBalancer
	version uint64
	desired bool
	// gen changes with every change of model, version or desired; l4gen only with the model
	// without its routing.
	gen, l4gen uint64
	// clusters are where the provider may hold resources of the gateway: every cluster handed to
	// Ensure or found by the sweep and not deleted since.
	clusters []string
	res      *result
	// parked: not desired, but every cluster holding its resources is unknown now; deleted once
	// one of them is known again (and the gateway is still not desired there).
	parked bool
}

type result struct {
	status     providers.Status
	err        error
	version    uint64
	gen, l4gen uint64
}

// New returns an engine with a queue for every provider registered now.
func New(o Options) (*Engine, error) {
	if o.Workers <= 0 {
		o.Workers = 4
	}
	o.Resync = cmpOr(o.Resync, 10*time.Minute)
	o.NotReadyPoll = cmpOr(o.NotReadyPoll, 10*time.Second)
	o.SweepEvery = cmpOr(o.SweepEvery, 10*time.Minute)
	o.BaseDelay = cmpOr(o.BaseDelay, 500*time.Millisecond)
	o.MaxDelay = cmpOr(o.MaxDelay, 5*time.Minute)
	if o.OnResult == nil {
		o.OnResult = func(string) {}
	}
	if o.OnSweep == nil {
		o.OnSweep = func() {}
	}
	m, err := newMetrics(o.Registerer)
	if err != nil {
		return nil, fmt.Errorf("registering provisioning metrics: %w", err)
	}
	e := &Engine{o: o, m: m, queues: map[string]*queue{}, firstSet: make(chan struct{})}
	for _, name := range o.Providers.Names() {
		p, ok := o.Providers.Get(name)
		if !ok {
			continue
		}
		e.queues[name] = &queue{
			name: name,
			p:    p,
			q: workqueue.NewTypedRateLimitingQueueWithConfig(
				workqueue.NewTypedItemExponentialFailureRateLimiter[string](o.BaseDelay, o.MaxDelay),
				workqueue.TypedRateLimitingQueueConfig[string]{Name: "provision-" + name}),
			entries: map[string]*entry{},
		}
	}
	return e, nil
}

func cmpOr(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// jitter spreads periodic work of many keys: d ±10%.
func jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.9 + 0.2*rand.Float64()))
}

// Set makes desired the whole desired set: a gateway is queued when its model changed, and
// gateways that left the set are queued for deletion. clusters are the member clusters the
// translation read (nil: all); resources in other clusters are never deleted. Models of providers
// the engine has no queue for are ignored. It never blocks on provider calls.
func (e *Engine) Set(desired []Desired, clusters []string) {
	want := make(map[string]map[string]Desired, len(e.queues))
	for _, d := range desired {
		if _, ok := e.queues[d.Model.Provider]; !ok {
			e.o.Log.Info("no provider for gateway; not provisioned", "gateway", d.Model.Gateway, "provider", d.Model.Provider)
			continue
		}
		if want[d.Model.Provider] == nil {
			want[d.Model.Provider] = map[string]Desired{}
		}
		want[d.Model.Provider][d.Model.Gateway] = d
	}
	e.mu.Lock()
	e.known = nil
	if clusters != nil {
		e.known = make(map[string]bool, len(clusters))
		for _, c := range clusters {
			e.known[c] = true
		}
	}
	for name, q := range e.queues {
		for gw, d := range want[name] {
			en := q.entries[gw]
			if en == nil {
				en = &entry{}
				q.entries[gw] = en
			}
			sameL4 := en.desired && sameModel(en.model, d.Model)
			// A cluster the gateway left while it was unknown can be cleaned up once it is back.
			pending := len(e.knownLocked(removedClusters(en.clusters, d.Model.Clusters))) > 0
			if sameL4 && en.version == d.Version && !pending {
				// A load balancer that is not ready yet is looked at again on every pass: the
				// event that woke the pass may be what it waits for.
				if r := en.res; r != nil && r.err == nil && !r.status.Ready && r.gen == en.gen {
					en.gen++ // not settled until looked at
					e.queueLocked(q, gw)
				}
				continue
			}
			en.model, en.version, en.desired = d.Model, d.Version, true
			en.gen++
			if !sameL4 {
				en.l4gen++
			}
			e.queueLocked(q, gw)
		}
		for gw, en := range q.entries {
			if _, ok := want[name][gw]; ok {
				continue
			}
			if !en.desired {
				if en.parked && len(e.knownLocked(union(en.clusters, en.model.Clusters))) > 0 {
					en.parked = false
					e.queueLocked(q, gw)
				}
				continue
			}
			en.desired = false
			en.gen++
			en.l4gen++
			e.queueLocked(q, gw)
		}
	}
	e.mu.Unlock()
	e.setOnce.Do(func() { close(e.firstSet) })
}

// Recheck queues the gateway again with an unchanged model, for a change only the provider can
// see (e.g. a proxy process that exited): providers are idempotent, so Ensure repairs what drifted.
func (e *Engine) Recheck(gateway string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, q := range e.queues {
		if en := q.entries[gateway]; en != nil && en.desired {
			en.gen++ // not settled until looked at
			e.queueLocked(q, gateway)
		}
	}
}

// RecheckProvider queues every desired gateway of the named provider again with an unchanged
// model, for a change of the provider's inputs that no model holds (a MemberCluster's security
// groups, which every AWS gateway's member rules follow).
func (e *Engine) RecheckProvider(provider string) {
	q, ok := e.queues[provider]
	if !ok {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for gw, en := range q.entries {
		if en.desired {
			en.gen++ // not settled until looked at
			e.queueLocked(q, gw)
		}
	}
}

// queueLocked queues gw for q's workers once they run; before Start the entry only records it.
func (e *Engine) queueLocked(q *queue, gw string) {
	if e.started {
		q.q.Add(gw)
	}
}

// startLocked marks the engine started and queues every gateway it knows: a replica that was a
// follower until now made no call for any of them.
func (e *Engine) startLocked() {
	e.started = true
	for _, q := range e.queues {
		for gw, en := range q.entries {
			if !en.parked {
				q.q.Add(gw)
			}
		}
	}
}

// sameModel compares two models without their routing, which Desired.Version stands for.
func sameModel(a, b providers.LoadBalancer) bool {
	a.Routing, b.Routing = nil, nil
	return reflect.DeepEqual(a, b)
}

// Result is the provider's latest answer for a desired gateway; ok is false before the first one
// and for gateways that are not desired.
func (e *Engine) Result(provider, gateway string) (Outcome, bool) {
	q, ok := e.queues[provider]
	if !ok {
		return Outcome{}, false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	en := q.entries[gateway]
	if en == nil || !en.desired || en.res == nil {
		return Outcome{}, false
	}
	r := en.res
	return Outcome{Status: r.status, Err: r.err, Version: r.version, Current: r.l4gen == en.l4gen}, true
}

// Settled tells that no provider has work left for the gateway: it is either unknown to every
// provider (deleted, or never provisioned), or its current desired model was ensured without error.
func (e *Engine) Settled(gateway string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.settledLocked(gateway)
}

func (e *Engine) settledLocked(gateway string) bool {
	for _, q := range e.queues {
		en := q.entries[gateway]
		if en == nil {
			continue
		}
		if !en.desired || en.res == nil || en.res.err != nil || en.res.gen != en.gen {
			return false
		}
	}
	return true
}

// Swept tells that an orphan sweep after the first Set listed every provider and that every
// gateway it found orphaned is deleted: what the engine did not know of before is cleaned up.
func (e *Engine) Swept() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.swept {
		return false
	}
	for _, keys := range e.sweptKeys {
		for _, gw := range keys {
			if !e.settledLocked(gw) {
				return false
			}
		}
	}
	return true
}

// Holding returns, sorted, the gateways for which a provider may still hold resources in cluster:
// those desired with a model of the cluster, and those whose resources there are not deleted yet.
func (e *Engine) Holding(cluster string) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, q := range e.queues {
		for gw, en := range q.entries {
			if slices.Contains(en.clusters, cluster) || slices.Contains(en.model.Clusters, cluster) {
				out = append(out, gw)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// knownLocked keeps the clusters of cs that the last Set's translation read.
func (e *Engine) knownLocked(cs []string) []string {
	if e.known == nil {
		return cs
	}
	var out []string
	for _, c := range cs {
		if e.known[c] {
			out = append(out, c)
		}
	}
	return out
}

// removedClusters are the clusters in have that are not in keep.
func removedClusters(have, keep []string) []string {
	var out []string
	for _, c := range have {
		if !slices.Contains(keep, c) {
			out = append(out, c)
		}
	}
	return out
}

// union adds the clusters of add missing from have, sorted.
func union(have, add []string) []string {
	out := slices.Clone(have)
	for _, c := range add {
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return out
}
