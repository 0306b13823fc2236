package controllers

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1b1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	"github.com/fleetgate/fleetgate/controllers/snapshot"
)

// ClusterReader is one member cluster's view: its name and a reader backed by its informer cache.
type ClusterReader struct {
	Cluster string
	Reader  client.Reader
	// LegacyReferencePolicy is set when the cluster serves the v1alpha2 ReferencePolicy CRD that
	// ReferenceGrant replaced; its objects are read as ReferenceGrants.
	LegacyReferencePolicy bool
	// Weight is the member's share of ServiceImport traffic (MemberCluster spec.weight).
	Weight int32
	// Unserved are the kinds whose CRD the cluster does not serve.
	Unserved []string
	// Leaving is set while the cluster's MemberCluster is being deleted: the pipeline reads it as
	// present but empty, so that the delete paths release what was made for its objects. Reader
	// is the member's cache while it is usable, for the release paths; nil when it is not.
	Leaving bool
}

// referencePolicyGVK is the pre-v0.6 name of ReferenceGrant.
func referencePolicyGVK() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: gwv1.GroupName, Version: "v1alpha2", Kind: "ReferencePolicy"}
}

// buildSnapshot reads every kind of the table from each source's cache and returns the sorted snapshot,
// sorted from order's last snapshot when order is set (snapshot.Order).
// The snapshot keeps only the Secrets a Gateway listener refers to, so translation never sees
// unrelated credentials; they are read whatever their type so that a wrong type can be reported.
func buildSnapshot(ctx context.Context, table []kind, sources []ClusterReader, order *snapshot.Order) (*snapshot.Snapshot, error) {
	s := &snapshot.Snapshot{ClusterWeights: make(map[string]int32, len(sources))}
	var errs []error
	read := make([]ClusterReader, 0, len(sources))
	for _, src := range sources {
		s.ClusterWeights[src.Cluster] = src.Weight
		if len(src.Unserved) > 0 {
			if s.UnservedKinds == nil {
				s.UnservedKinds = map[string][]string{}
			}
			s.UnservedKinds[src.Cluster] = src.Unserved
		}
		if !src.Leaving {
			read = append(read, src)
		}
	}
	for _, k := range table {
		errs = append(errs, k.read(ctx, read, s))
	}
	for _, src := range sources {
		if src.LegacyReferencePolicy && !src.Leaving {
			errs = append(errs, readLegacyPolicies(ctx, src, s))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	dropDeleting(s)
	s.Secrets = referencedSecrets(s)
	s.ConfigMaps = referencedConfigMaps(s)
	if order != nil {
		return s.SortFrom(order), nil
	}
	return s.Sort(), nil
}

// storeLister reads a kind's cached objects themselves (fleet.StoreReader); ok is false when it
// cannot, and the kind is listed instead.
type storeLister interface {
	ListStore(ctx context.Context, obj client.Object) (objs []any, ok bool, err error)
}

// readInto lists one kind from every source and appends its items, tagged with their cluster, to
// dst in source order, sized once for all sources: grown source by source, a snapshot copied the
// hub's 20,000 routes again for every member holding one more (at ten members the largest part of
// what a change allocated). Translation only reads, and the snapshot lives for one pass: the
// cache's objects need no copy.
func readInto[L client.ObjectList, T any](ctx context.Context, sources []ClusterReader, newList func() L, dst *[]snapshot.Object[T], items func(L) []T) error {
	type part struct {
		cluster string
		stored  []any // the cache's own objects (storeLister)
		listed  []T
	}
	parts := make([]part, 0, len(sources))
	n := 0
	for _, src := range sources {
		p := part{cluster: src.Cluster}
		stored, ok, err := listStore[T](ctx, src)
		switch {
		case err != nil:
			return err
		case ok:
			p.stored = stored
			n += len(stored)
		default:
			list := newList()
			if err := src.Reader.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
				return fmt.Errorf("listing %T in cluster %s: %w", list, src.Cluster, err)
			}
			p.listed = items(list)
			n += len(p.listed)
		}
		parts = append(parts, p)
	}
	*dst = slices.Grow(*dst, n)
	for _, p := range parts {
		for _, o := range p.stored {
			if t, ok := o.(*T); ok {
				*dst = append(*dst, snapshot.Object[T]{Cluster: p.cluster, Obj: t})
			}
		}
		for i := range p.listed {
			*dst = append(*dst, snapshot.Object[T]{Cluster: p.cluster, Obj: &p.listed[i]})
		}
	}
	return nil
}

// listStore reads a kind's cached objects themselves when src's reader can (storeLister); ok is
// false when it cannot, and the kind is to be listed instead.
func listStore[T any](ctx context.Context, src ClusterReader) (objs []any, ok bool, err error) {
	sl, ok := src.Reader.(storeLister)
	if !ok {
		return nil, false, nil
	}
	obj, ok := any(new(T)).(client.Object)
	if !ok {
		return nil, false, nil
	}
	objs, ok, err = sl.ListStore(ctx, obj)
	if err != nil {
		return nil, false, fmt.Errorf("listing %T in cluster %s: %w", obj, src.Cluster, err)
	}
	return objs, ok, nil
}

// refKey names one object in one cluster.
type refKey struct{ cluster, namespace, name string }

// referencedSecrets keeps the Secrets a Gateway or ListenerSet listener's certificateRefs or the
// Gateway's backend client certificate name (in any namespace: whether a cross-namespace reference
// is permitted is translation's call) and those of Ingress TLS.
func referencedSecrets(s *snapshot.Snapshot) []snapshot.Object[corev1.Secret] {
	type key = refKey
	wanted := map[key]bool{}
	for _, g := range s.Gateways {
		if tls := g.Obj.Spec.TLS; tls != nil && tls.Backend != nil && tls.Backend.ClientCertificateRef != nil {
			ref := tls.Backend.ClientCertificateRef
			wanted[key{g.Cluster, cmp.Or(ptrString(ref.Namespace), g.Obj.Namespace), string(ref.Name)}] = true
		}
		for _, l := range g.Obj.Spec.Listeners {
			if l.TLS == nil {
				continue
			}
			for _, ref := range l.TLS.CertificateRefs {
				ns := g.Obj.Namespace
				if ref.Namespace != nil {
					ns = string(*ref.Namespace)
				}
				wanted[key{g.Cluster, ns, string(ref.Name)}] = true
			}
		}
	}
	for _, ls := range s.ListenerSets {
		for _, l := range ls.Obj.Spec.Listeners {
			if l.TLS == nil {
				continue
			}
			for _, ref := range l.TLS.CertificateRefs {
				ns := ls.Obj.Namespace
				if ref.Namespace != nil {
					ns = string(*ref.Namespace)
				}
				wanted[key{ls.Cluster, ns, string(ref.Name)}] = true
			}
		}
	}
	for _, ing := range s.Ingresses {
		for _, t := range ing.Obj.Spec.TLS {
			wanted[key{ing.Cluster, ing.Obj.Namespace, t.SecretName}] = true
		}
	}
	out := s.Secrets[:0]
	for _, sec := range s.Secrets {
		if wanted[key{sec.Cluster, sec.Obj.Namespace, sec.Obj.Name}] {
			out = append(out, sec)
		}
	}
	return out
}

// referencedConfigMaps keeps the ConfigMaps named as CA certificates by BackendTLSPolicies and by
// Gateways' frontend client certificate validation.
func referencedConfigMaps(s *snapshot.Snapshot) []snapshot.Object[corev1.ConfigMap] {
	wanted := map[refKey]bool{}
	for _, p := range s.BackendTLSPolicies {
		for _, ref := range p.Obj.Spec.Validation.CACertificateRefs {
			wanted[refKey{p.Cluster, p.Obj.Namespace, string(ref.Name)}] = true
		}
	}
	for _, g := range s.Gateways {
		tls := g.Obj.Spec.TLS
		if tls == nil || tls.Frontend == nil {
			continue
		}
		configs := []gwv1.TLSConfig{tls.Frontend.Default}
		for _, pp := range tls.Frontend.PerPort {
			configs = append(configs, pp.TLS)
		}
		for _, c := range configs {
			if c.Validation == nil {
				continue
			}
			for _, ref := range c.Validation.CACertificateRefs {
				wanted[refKey{g.Cluster, cmp.Or(ptrString(ref.Namespace), g.Obj.Namespace), string(ref.Name)}] = true
			}
		}
	}
	out := s.ConfigMaps[:0]
	for _, cm := range s.ConfigMaps {
		if wanted[refKey{cm.Cluster, cm.Obj.Namespace, cm.Obj.Name}] {
			out = append(out, cm)
		}
	}
	return out
}

func ptrString[S ~string](p *S) string {
	if p == nil {
		return ""
	}
	return string(*p)
}

func readLegacyPolicies(ctx context.Context, src ClusterReader, s *snapshot.Snapshot) error {
	var list unstructured.UnstructuredList
	list.SetGroupVersionKind(referencePolicyGVK().GroupVersion().WithKind("ReferencePolicyList"))
	if err := src.Reader.List(ctx, &list); err != nil {
		return fmt.Errorf("listing ReferencePolicies in cluster %s: %w", src.Cluster, err)
	}
	for _, item := range list.Items {
		g, err := snapshot.ReferenceGrantFromLegacy(item.Object)
		if err != nil {
			return fmt.Errorf("cluster %s: ReferencePolicy %s/%s: %w", src.Cluster, item.GetNamespace(), item.GetName(), err)
		}
		s.ReferenceGrants = append(s.ReferenceGrants, snapshot.Object[gwv1b1.ReferenceGrant]{Cluster: src.Cluster, Obj: g})
	}
	return nil
}
