package controllers

// The ledger of the embedded publishers: every spec.dns that records were published under and not
// yet removed from, kept in a ConfigMap of the operator's namespace, so that a config deleted or
// edited while no operator ran still has its records removed.

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
)

const (
	// DNSLedgerName is the ConfigMap holding the ledger.
	DNSLedgerName = "fleetgate-dns-published"
	dnsLedgerKey  = "published.json"
)

// dnsPlace is a spec.dns a config has published under, and the cluster the config was read from.
type dnsPlace struct {
	Config  string              `json:"config"`
	DNS     v1alpha1.DNSOptions `json:"dns"`
	Cluster string              `json:"cluster"`
}

// key tells places apart: the config and its options, encoded (a config read from another
// cluster than before published in the same place).
func (pl dnsPlace) key() string {
	b, err := json.Marshal(pl.DNS)
	if err != nil {
		panic(fmt.Sprintf("encoding DNSOptions: %v", err)) // plain data: cannot fail
	}
	return pl.Config + "\x00" + string(b)
}

// dnsLedger reads and writes the ledger; the publisher's loop is its only user.
type dnsLedger struct {
	writer    client.Client
	live      client.Reader
	namespace string
	// saved is the ledger as last read or written; nil until read.
	saved []byte
}

// load returns the places of the ledger, none when it does not exist.
func (l *dnsLedger) load(ctx context.Context) ([]dnsPlace, error) {
	var cm corev1.ConfigMap
	err := l.live.Get(ctx, client.ObjectKey{Namespace: l.namespace, Name: DNSLedgerName}, &cm)
	switch {
	case apierrors.IsNotFound(err):
		l.saved = []byte("[]")
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading ConfigMap %s/%s, where the embedded DNS publishers have published: %w", l.namespace, DNSLedgerName, err)
	}
	var places []dnsPlace
	if err := json.Unmarshal([]byte(cm.Data[dnsLedgerKey]), &places); err != nil {
		return nil, fmt.Errorf("decoding ConfigMap %s/%s key %s: %w", l.namespace, DNSLedgerName, dnsLedgerKey, err)
	}
	l.saved = []byte(cm.Data[dnsLedgerKey])
	return places, nil
}

// save writes places, sorted, when they differ from what was last read or written.
func (l *dnsLedger) save(ctx context.Context, places []dnsPlace) error {
	slices.SortFunc(places, func(a, b dnsPlace) int { return cmp.Compare(a.key(), b.key()) })
	if places == nil {
		places = []dnsPlace{}
	}
	b, err := json.Marshal(places)
	if err != nil {
		return fmt.Errorf("encoding where the embedded DNS publishers have published: %w", err)
	}
	if string(b) == string(l.saved) {
		return nil
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: l.namespace, Name: DNSLedgerName,
		Labels: map[string]string{"app.kubernetes.io/managed-by": "fleetgate"}}}
	err = l.live.Get(ctx, client.ObjectKeyFromObject(cm), cm)
	switch {
	case apierrors.IsNotFound(err):
		cm.Data = map[string]string{dnsLedgerKey: string(b)}
		err = l.writer.Create(ctx, cm)
	case err == nil:
		cm.Data = map[string]string{dnsLedgerKey: string(b)}
		err = l.writer.Update(ctx, cm)
	}
	if err != nil {
		return fmt.Errorf("writing ConfigMap %s/%s, where the embedded DNS publishers have published: %w", l.namespace, DNSLedgerName, err)
	}
	l.saved = b
	return nil
}

// places are the spec.dns the ledger must hold: those the publishers got last time or get now,
// and those still being retired from.
func (p *dnsPublisher) places(zones map[string]DNSZoneRecords) []dnsPlace {
	byKey := maps.Clone(p.retiring)
	if byKey == nil {
		byKey = map[string]dnsPlace{}
	}
	for _, pl := range p.zonesSynced {
		byKey[pl.key()] = pl
	}
	for name, z := range zones {
		pl := dnsPlace{Config: name, DNS: z.Options, Cluster: z.Cluster}
		byKey[pl.key()] = pl
	}
	return slices.Collect(maps.Values(byKey))
}
