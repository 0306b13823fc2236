package main

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestBundleIsCurrent regenerates the bundle from config/ and fails when the committed one differs:
// the bundle is never edited by hand, and a change to config/ must come with `make bundle`.
func TestBundleIsCurrent(t *testing.T) {
	config := filepath.Join("..", "..", "config")
	files, err := generate(config, defaults)
	if err != nil {
		t.Fatal(err)
	}
	var generated []string
	for rel, want := range files {
		generated = append(generated, rel)
		got, err := os.ReadFile(filepath.Join("..", rel))
		if err != nil {
			t.Errorf("committed bundle lacks %s (run `make bundle`): %v", rel, err)
			continue
		}
		if d := cmp.Diff(string(want), string(got)); d != "" {
			t.Errorf("bundle/%s is stale, run `make bundle` (-generated +committed):\n%s", rel, d)
		}
	}
	var committed []string
	for _, sub := range []string{"manifests", "metadata"} {
		entries, err := os.ReadDir(filepath.Join("..", sub))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			committed = append(committed, sub+"/"+e.Name())
		}
	}
	committed = append(committed, "bundle.Dockerfile")
	sort.Strings(generated)
	sort.Strings(committed)
	if d := cmp.Diff(generated, committed); d != "" {
		t.Errorf("bundle files (-generated +committed):\n%s", d)
	}

	kustomization := filepath.Join(config, "manager", "kustomization.yaml")
	want, err := kustomizeImage(kustomization, defaults.image)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(kustomization)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Errorf("config/manager/kustomization.yaml does not name %s, run `make bundle`:\n%s", defaults.image, d)
	}
}

// TestVersionAndImageReachTheBundle: another version and image change the CSV's name, version,
// images and relatedImages, and the kustomization, and nothing still names the default ones.
func TestVersionAndImageReachTheBundle(t *testing.T) {
	config := filepath.Join("..", "..", "config")
	o := options{version: "1.4.0-rc.1", image: "registry.example.com/team/fleetgate:v1.4.0-rc.1", channel: "alpha"}
	files, err := generate(config, o)
	if err != nil {
		t.Fatal(err)
	}
	csv := string(files["manifests/fleetgate.clusterserviceversion.yaml"])
	for _, want := range []string{"name: fleetgate.v1.4.0-rc.1", "version: 1.4.0-rc.1",
		"image: registry.example.com/team/fleetgate:v1.4.0-rc.1", "containerImage: registry.example.com/team/fleetgate:v1.4.0-rc.1"} {
		if !strings.Contains(csv, want) {
			t.Errorf("CSV lacks %q", want)
		}
	}
	if n := strings.Count(csv, defaults.image); n != 0 {
		t.Errorf("CSV still names %s %d times", defaults.image, n)
	}
	k, err := kustomizeImage(filepath.Join(config, "manager", "kustomization.yaml"), o.image)
	if err != nil {
		t.Fatal(err)
	}
	wantK := "images:\n- name: controller\n  newName: registry.example.com/team/fleetgate\n  newTag: v1.4.0-rc.1\nresources:\n- manager.yaml\n"
	if d := cmp.Diff(wantK, string(k)); d != "" {
		t.Errorf("kustomization (-want +got):\n%s", d)
	}
}
