package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestBundleIsCurrent regenerates the bundle from config/ and fails when the committed one differs:
// the bundle is never edited by hand, and a change to config/ must come with `make bundle`.
func TestBundleIsCurrent(t *testing.T) {
	out := t.TempDir()
	if err := run(filepath.Join("..", "..", "config"), out, "0.1.0", "fleetgate:dev", "alpha"); err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{
		"manifests/fleetgate.clusterserviceversion.yaml",
		"manifests/gatewayclassconfigs.fleetgate.dev.customresourcedefinition.yaml",
		"manifests/memberclusters.fleetgate.dev.customresourcedefinition.yaml",
		"metadata/annotations.yaml",
	} {
		want, err := os.ReadFile(filepath.Join(out, rel))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join("..", rel))
		if err != nil {
			t.Fatalf("committed bundle lacks %s (run `make bundle`): %v", rel, err)
		}
		if d := cmp.Diff(string(want), string(got)); d != "" {
			t.Errorf("bundle/%s is stale, run `make bundle` (-generated +committed):\n%s", rel, d)
		}
	}
}
