package fleet

import (
	"context"
	"errors"
	"fmt"

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
	cfg.QPS, cfg.Burst = f.o.QPS, f.o.Burst
	cl, err := cluster.New(cfg, func(o *cluster.Options) {
		o.Scheme = f.o.Scheme
		o.Logger = log
		o.Cache.DefaultTransform = CacheTransform() // as in the hub's cache (controllers.CacheOptions)
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
	notify := f.notifier(name)
	kinds, err := f.watchKinds(ctx, name, cl.GetCache(), cfg, notify, func() { f.changed(name); f.pokeStatus(name) })
	if err != nil {
		return err
	}
	mctx, cancel := context.WithCancel(context.Background())
	m := &member{name: name, hash: hash, weight: weight, cl: cl, writer: writer, cancel: cancel, healthy: true,
		reader: kinds.reader(cl.GetCache(), StoreReader{Reader: cl.GetCache(), Cache: cl.GetCache()}), kinds: kinds}
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

// notifier calls Changed for a cluster's events, but for updates that UpdateMatters says change nothing.
func (f *Fleet) notifier(name string) toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { f.changed(name) },
		UpdateFunc: func(old, new any) {
			if f.o.UpdateMatters == nil || f.o.UpdateMatters(old, new) {
				f.changed(name)
			}
		},
		DeleteFunc: func(any) { f.changed(name) },
	}
}

// WatchHub registers the hub's informers for the kinds it serves in the manager's cache c (cfg is
// the manager's config), and makes the hub member read the kinds it does not serve as empty until
// their CRDs are installed. Call it before the manager starts, when the hub is a member.
func (f *Fleet) WatchHub(ctx context.Context, c cache.Cache, cfg *rest.Config) error {
	if f.o.Hub == nil {
		return errors.New("the hub is not a member")
	}
	name := v1alpha1.HubCluster
	kinds, err := f.watchKinds(ctx, name, c, cfg, f.notifier(name), func() { f.changed(name); f.pokeStatus(name) })
	if err != nil {
		return err
	}
	store := StoreReader{Reader: f.o.Hub.Reader, Cache: c}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hubKinds = kinds
	f.o.Hub.Reader = kinds.reader(f.o.Hub.Reader, store)
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
	// missing names the CRDs (or kinds) fleetgate reads that the member does not serve.
	missing []string
}

func (f *Fleet) state(name string) state {
	f.mu.RLock()
	defer f.mu.RUnlock()
	m := f.members[name]
	if m == nil {
		return state{}
	}
	return state{known: true, synced: m.synced, healthy: m.healthy, stale: m.stale, hash: m.hash, version: m.version, probeErr: m.probeErr,
		missing: m.kinds.Missing()}
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
