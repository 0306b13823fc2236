package fleet

import (
	"cmp"
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// missingKinds are the kinds a member did not serve when it connected. Their lists read as empty
// until the member serves them (a CRD installed later) and their informer has synced.
type missingKinds struct {
	mu sync.RWMutex
	// kinds holds the kinds partialReader reads as empty.
	kinds map[schema.GroupVersionKind]bool
	// pending are the objects of kinds no informer was started for yet.
	pending []client.Object
}

// hides tells whether obj, an object or a list, is of a kind the member is not read for.
func (k *missingKinds) hides(obj runtime.Object, scheme *runtime.Scheme) bool {
	k.mu.RLock()
	none := len(k.kinds) == 0
	k.mu.RUnlock()
	if none {
		return false // the usual case, without looking up obj's kind
	}
	gvk, err := apiutil.GVKForObject(obj, scheme)
	if err != nil {
		return false
	}
	if meta.IsListType(obj) {
		gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	}
	k.mu.RLock()
	defer k.mu.RUnlock()
	return k.kinds[gvk]
}

func (k *missingKinds) add(obj client.Object, scheme *runtime.Scheme) {
	gvk, err := apiutil.GVKForObject(obj, scheme)
	if err != nil {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.kinds == nil {
		k.kinds = map[schema.GroupVersionKind]bool{}
	}
	k.kinds[gvk] = true
	k.pending = append(k.pending, obj)
}

// due returns the kinds no informer was started for yet.
func (k *missingKinds) due() []client.Object {
	k.mu.RLock()
	defer k.mu.RUnlock()
	if len(k.pending) == 0 {
		return nil
	}
	return append([]client.Object(nil), k.pending...)
}

func (k *missingKinds) started(obj client.Object) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for i, o := range k.pending {
		if o == obj {
			k.pending = append(k.pending[:i:i], k.pending[i+1:]...)
			return
		}
	}
}

func (k *missingKinds) served(gvk schema.GroupVersionKind) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.kinds, gvk)
}

// isPending tells whether obj's kind has no informer started.
func (k *missingKinds) isPending(obj client.Object) bool {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return slices.Contains(k.pending, obj)
}

// list returns the kinds read as empty.
func (k *missingKinds) list() []schema.GroupVersionKind {
	k.mu.RLock()
	defer k.mu.RUnlock()
	out := make([]schema.GroupVersionKind, 0, len(k.kinds))
	for gvk := range k.kinds {
		out = append(out, gvk)
	}
	return out
}

// kindRecheck is how often a cluster is asked again for the kinds it did not serve, and whether it
// still serves the prerequisite kinds it did: each try is a discovery request per API group version.
const kindRecheck = 10 * time.Second

// Kind is one kind fleetgate reads in every member.
type Kind struct {
	Object client.Object
	// CRD names the CustomResourceDefinition that serves the kind when it is a prerequisite that
	// fleetgate does not install (Gateway API, MCS); empty for built-in kinds and fleetgate's own.
	CRD string
}

// kindWatcher keeps one cluster's informers in step with the kinds it serves: a kind whose CRD is
// absent reads as empty (partialReader), gets an informer once its CRD appears, and loses it again
// when its CRD is removed, so that neither case needs a restart nor leaves an informer failing.
type kindWatcher struct {
	cache   cache.Cache
	disco   discovery.DiscoveryInterface
	scheme  *runtime.Scheme
	kinds   []Kind
	missing *missingKinds
	notify  toolscache.ResourceEventHandler
	// changed is called when a kind starts or stops being read.
	changed func()
	log     logr.Logger

	mu      sync.Mutex
	checked time.Time
}

// watchKinds registers an informer in c for every kind c serves and records the others as missing,
// logging each with the CRD to install.
func (f *Fleet) watchKinds(ctx context.Context, name string, c cache.Cache, cfg *rest.Config, notify toolscache.ResourceEventHandler, changed func()) (*kindWatcher, error) {
	dcfg := rest.CopyConfig(cfg)
	dcfg.Timeout = f.o.ProbeTimeout
	disco, err := discovery.NewDiscoveryClientForConfig(dcfg)
	if err != nil {
		return nil, fmt.Errorf("discovery client for %s: %w", name, err)
	}
	w := &kindWatcher{cache: c, disco: disco, scheme: f.o.Scheme, kinds: f.o.Kinds, missing: &missingKinds{},
		notify: notify, changed: changed, log: f.o.Log.WithValues("cluster", name), checked: time.Now()}
	for _, k := range w.kinds {
		inf, err := c.GetInformer(ctx, k.Object, cache.BlockUntilSynced(false))
		if err != nil {
			if meta.IsNoMatchError(err) {
				w.log.Info("kind not served: its CRD is not installed; its objects read as empty until it is",
					"kind", kindName(k.Object), "crd", k.CRD)
				w.missing.add(k.Object, w.scheme)
				continue
			}
			return nil, fmt.Errorf("cluster %s: informer for %T: %w", name, k.Object, err)
		}
		if _, err := inf.AddEventHandler(notify); err != nil {
			return nil, fmt.Errorf("cluster %s: handler for %T: %w", name, k.Object, err)
		}
	}
	return w, nil
}

// reader wraps a cluster's readers so that the kinds it does not serve read as empty.
func (w *kindWatcher) reader(r client.Reader, store StoreReader) client.Reader {
	return partialReader{Reader: r, store: store, scheme: w.scheme, missing: w.missing}
}

// Missing names what the cluster lacks of what fleetgate reads, sorted: the CRD to install for
// each prerequisite kind, the kind itself otherwise.
func (w *kindWatcher) Missing() []string {
	gone := w.missing.list()
	var out []string
	for _, k := range w.kinds {
		gvk, err := apiutil.GVKForObject(k.Object, w.scheme)
		if err != nil || !slices.Contains(gone, gvk) {
			continue
		}
		out = append(out, cmp.Or(k.CRD, gvk.Kind))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// unserved are the kinds read as empty, sorted.
func (w *kindWatcher) unserved() []string {
	var out []string
	for _, gvk := range w.missing.list() {
		out = append(out, gvk.Kind)
	}
	slices.Sort(out)
	return out
}

// recheck, at most every kindRecheck, adopts the kinds the cluster serves now and drops those whose
// CRD was removed.
func (w *kindWatcher) recheck(ctx context.Context) {
	w.mu.Lock()
	due := time.Since(w.checked) >= kindRecheck
	if due {
		w.checked = time.Now()
	}
	w.mu.Unlock()
	if !due {
		return
	}
	d := discovered{}
	w.drop(ctx, d)
	w.adopt(ctx, d)
}

// discovered holds what one recheck learnt of the kinds each group version serves.
type discovered map[schema.GroupVersion]map[string]bool

// serves tells whether the cluster serves gvk; ok is false when it cannot be told.
func (w *kindWatcher) serves(d discovered, gvk schema.GroupVersionKind) (served, ok bool) {
	gv := gvk.GroupVersion()
	kinds, known := d[gv]
	if !known {
		var err error
		if kinds, err = w.servedKinds(gv); err != nil {
			w.log.V(1).Info("cannot tell which kinds the cluster serves", "groupVersion", gv.String(), "error", err.Error())
			return false, false
		}
		d[gv] = kinds
	}
	return kinds[gvk.Kind], true
}

// adopt starts informers for the missing kinds the cluster serves now, without reconnecting it:
// its other kinds keep being read. Once an informer has synced, its kind is read like the others.
func (w *kindWatcher) adopt(ctx context.Context, d discovered) {
	for _, obj := range w.missing.due() {
		kind := kindName(obj)
		gvk, err := apiutil.GVKForObject(obj, w.scheme)
		if err != nil {
			continue
		}
		// Discovery first: the REST mapper may still know a kind whose CRD was deleted, and an
		// informer for it would fail to list forever.
		if served, _ := w.serves(d, gvk); !served {
			continue
		}
		inf, err := w.cache.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
		if err != nil {
			if !meta.IsNoMatchError(err) {
				w.log.Error(err, "starting an informer for a kind the cluster serves now", "kind", kind)
			}
			continue
		}
		if _, err := inf.AddEventHandler(w.notify); err != nil {
			w.log.Error(err, "watching a kind the cluster serves now", "kind", kind)
			continue
		}
		w.missing.started(obj)
		go func() {
			if !toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
				return
			}
			w.missing.served(gvk)
			w.log.Info("kind served now: its CRD was installed", "kind", kind)
			w.changed()
		}()
	}
}

// drop removes the informers of the prerequisite kinds the cluster no longer serves (their CRD
// was deleted): left running they would fail to list forever. Their kinds read as empty again.
func (w *kindWatcher) drop(ctx context.Context, d discovered) {
	dropped := false
	for _, k := range w.kinds {
		gvk, err := apiutil.GVKForObject(k.Object, w.scheme)
		if k.CRD == "" || err != nil || w.missing.isPending(k.Object) {
			continue // no informer to stop
		}
		if served, ok := w.serves(d, gvk); served || !ok {
			continue
		}
		if err := w.cache.RemoveInformer(ctx, k.Object); err != nil {
			w.log.Error(err, "stopping the informer of a kind no longer served", "kind", gvk.Kind)
			continue
		}
		w.missing.add(k.Object, w.scheme)
		w.log.Info("kind no longer served: its CRD was removed; its objects read as empty until it is installed again",
			"kind", gvk.Kind, "crd", k.CRD)
		dropped = true
	}
	if dropped {
		w.changed()
	}
}

// servedKinds asks the cluster which kinds it serves in gv; none when it does not serve gv at all.
func (w *kindWatcher) servedKinds(gv schema.GroupVersion) (map[string]bool, error) {
	list, err := w.disco.ServerResourcesForGroupVersion(gv.String())
	if apierrors.IsNotFound(err) {
		return map[string]bool{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("discovering %s: %w", gv, err)
	}
	out := map[string]bool{}
	for _, r := range list.APIResources {
		out[r.Kind] = true
	}
	return out, nil
}

func kindName(obj client.Object) string {
	t := reflect.TypeOf(obj)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
}
