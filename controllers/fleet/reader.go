package fleet

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

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
