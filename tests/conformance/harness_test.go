package conformance

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
	upstream "sigs.k8s.io/gateway-api/conformance"
)

func TestSuiteImages(t *testing.T) {
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	tests := []struct {
		name    string
		fs      fstest.MapFS
		want    map[string][]string
		wantErr string
	}{{
		name: "echo and coredns images, each reference once, sorted",
		fs: fstest.MapFS{
			"base/manifests.yaml": file(`containers:
- name: a
  image: registry.k8s.io/gateway-api/echo-basic:v1.6.0
- image: "registry.k8s.io/coredns/coredns:v1.12.2"
  name: dns
`),
			"tests/t.yaml": file("      image: registry.k8s.io/gateway-api/echo-basic:v1.5.1\n" +
				"      image: registry.k8s.io/gateway-api/echo-basic:v1.6.0\n"),
			// Not a manifest, and the mesh profiles do not run here.
			"tests/t.go":          file("image: example.com/other:v1\n"),
			"mesh/manifests.yaml": file("image: registry.k8s.io/gateway-api/echo-advanced:v1.5.1\n"),
		},
		want: map[string][]string{
			echoPackage: {"registry.k8s.io/gateway-api/echo-basic:v1.5.1", "registry.k8s.io/gateway-api/echo-basic:v1.6.0"},
			dnsPackage:  {"registry.k8s.io/coredns/coredns:v1.12.2"},
		},
	}, {
		name:    "an image nothing builds",
		fs:      fstest.MapFS{"base/m.yaml": file("image: example.com/other:v1\n"), "tests/t.yaml": file("")},
		wantErr: "base/m.yaml: image example.com/other:v1: no package here builds it",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := suiteImages(tt.fs)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("suiteImages() error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("suiteImages() (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSuiteImagesUpstream checks the pinned suite's own manifests: every image they name is built
// here, and echo-basic and coredns are among them.
func TestSuiteImagesUpstream(t *testing.T) {
	got, err := suiteImages(upstream.Manifests)
	if err != nil {
		t.Fatal(err)
	}
	for _, pkg := range []string{echoPackage, dnsPackage} {
		if len(got[pkg]) == 0 {
			t.Errorf("no image of the suite's manifests is built from %s: %v", pkg, got)
		}
	}
}
