package controllers

import (
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetgate/fleetgate/controllers/snapshot"
)

// TestKindsCoverSnapshot: every list of the snapshot is filled by exactly one kind of the table,
// so a kind added to the snapshot without its entry (or the other way round) fails here.
func TestKindsCoverSnapshot(t *testing.T) {
	s := &snapshot.Snapshot{}
	v := reflect.ValueOf(s).Elem()
	want := map[int]string{}
	for i := range v.NumField() {
		f := v.Field(i)
		if f.Kind() != reflect.Slice {
			continue
		}
		n := len(want) + 1 // a distinct length per list tells which list a kind counts
		f.Set(reflect.MakeSlice(f.Type(), n, n))
		want[n] = v.Type().Field(i).Name
	}
	got := map[int]string{}
	for _, k := range kinds() {
		n := k.count(s)
		if prev, dup := got[n]; dup {
			t.Errorf("kinds %s and %s count the same list", prev, k.name)
		}
		got[n] = want[n]
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("snapshot lists counted by a kind (-want +got):\n%s", diff)
	}
}

// TestKindsStatus: the kinds whose status fleetgate writes, in which part, and which of them it
// clears when it has nothing more to say.
func TestKindsStatus(t *testing.T) {
	type row struct {
		Part               statusPart
		Cleared, Coalesced bool
	}
	want := map[string]row{
		"GatewayClass": {Part: applied}, "Gateway": {Part: applied, Coalesced: true},
		"ListenerSet": {Part: applied, Coalesced: true},
		"HTTPRoute":   {Part: translated, Cleared: true}, "GRPCRoute": {Part: translated, Cleared: true},
		"TLSRoute": {Part: translated, Cleared: true}, "TCPRoute": {Part: translated, Cleared: true},
		"UDPRoute": {Part: translated, Cleared: true}, "BackendTLSPolicy": {Part: translated, Cleared: true},
		"Ingress": {Part: applied, Cleared: true}, "Service": {Part: applied},
	}
	got := map[string]row{}
	for _, k := range kinds() {
		if k.status != nil {
			got[k.name] = row{Part: k.status.part, Cleared: k.status.cleared != nil, Coalesced: k.status.countsOnly != nil}
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("status kinds (-want +got):\n%s", diff)
	}
}

// TestKindsObjects: each kind's object is of its kind, and generation gating applies to the
// object types of the gated kinds only.
func TestKindsObjects(t *testing.T) {
	table := kinds()
	f := newUpdateFilter(table)
	for _, k := range table {
		obj := k.object()
		if got := reflect.TypeOf(obj).Elem().Name(); got != k.name {
			t.Errorf("kind %s makes a %s", k.name, got)
		}
		if f[reflect.TypeOf(obj)] != k.generationGated {
			t.Errorf("kind %s: gated = %v, want %v", k.name, f[reflect.TypeOf(obj)], k.generationGated)
		}
	}
}
