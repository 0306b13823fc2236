package fleet

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
)

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
	if name == v1alpha1.HubCluster && f.o.Hub != nil {
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
