package fleet

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
	// checked is when pending was last tried.
	checked time.Time
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

// due returns the pending kinds when they were last tried at least every ago, and marks them tried.
func (k *missingKinds) due(every time.Duration) []client.Object {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.pending) == 0 || time.Since(k.checked) < every {
		return nil
	}
	k.checked = time.Now()
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

// kindRecheck is how often a member is asked again for the kinds it did not serve: each try is a
// discovery request.
const kindRecheck = 10 * time.Second

// adoptKinds starts informers for the kinds the member did not serve when it connected and serves
// now, without reconnecting it: its other kinds keep being read. Once an informer has synced, its
// kind is read like the others and the pipeline runs again.
func (f *Fleet) adoptKinds(ctx context.Context, m *member) {
	for _, obj := range m.missing.due(kindRecheck) {
		kind := fmt.Sprintf("%T", obj)
		inf, err := m.cl.GetCache().GetInformer(ctx, obj, cache.BlockUntilSynced(false))
		if err != nil {
			if !meta.IsNoMatchError(err) {
				f.o.Log.Error(err, "starting an informer for a kind the member serves now", "cluster", m.name, "kind", kind)
			}
			continue
		}
		if _, err := inf.AddEventHandler(m.notify); err != nil {
			f.o.Log.Error(err, "watching a kind the member serves now", "cluster", m.name, "kind", kind)
			continue
		}
		m.missing.started(obj)
		gvk, err := apiutil.GVKForObject(obj, f.o.Scheme)
		if err != nil {
			continue
		}
		go func() {
			if !toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
				return
			}
			m.missing.served(gvk)
			f.o.Log.Info("member serves a kind it did not serve when it connected", "cluster", m.name, "kind", kind)
			f.changed(m.name)
		}()
	}
}
