package main

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

var testMeta = metadata{
	version:  "1.2.3-test",
	revision: "0123456789abcdef",
	source:   "https://github.com/fleetgate/fleetgate",
	licenses: "NOASSERTION",
	created:  time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC),
}

func testOptions(out string) options {
	return options{
		pkg:         "./testdata/standin",
		image:       "example.com/fleetgate:v1.2.3-test",
		bundleImage: "example.com/fleetgate-bundle:v1.2.3-test",
		bundleDir:   filepath.Join("..", "bundle"),
		out:         out,
		meta:        testMeta,
	}
}

// TestImage builds everything twice from the same inputs (the stand-in binary, compiled for both
// platforms with the real flags) and checks that the digests match and that what was written is the
// image a cluster would run.
func TestImage(t *testing.T) {
	ctx := context.Background()
	out1, out2 := t.TempDir(), t.TempDir()
	res1, err := run(ctx, testOptions(out1))
	if err != nil {
		t.Fatal(err)
	}
	res2, err := run(ctx, testOptions(out2))
	if err != nil {
		t.Fatal(err)
	}
	if res1.index != res2.index || res1.bundle != res2.bundle {
		t.Errorf("two builds differ: index %s vs %s, bundle %s vs %s", res1.index, res2.index, res1.bundle, res2.bundle)
	}
	if a, b := fileSum(t, res1.tarball), fileSum(t, res2.tarball); a != b {
		t.Errorf("two docker archives differ: %x vs %x", a, b)
	}
	for _, p := range res1.platforms {
		t.Logf("%s %s %d bytes compressed", p.platform, p.digest, p.size)
	}

	idx := indexByRef(t, filepath.Join(out1, "oci"), "v1.2.3-test")
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	// go-containerregistry's own consistency checks: digests, sizes, diff IDs, media types.
	if err := validate.Index(idx); err != nil {
		t.Errorf("the index does not validate: %v", err)
	}
	if im.MediaType != types.OCIImageIndex {
		t.Errorf("index media type %s, want %s", im.MediaType, types.OCIImageIndex)
	}
	var got []string
	for _, d := range im.Manifests {
		got = append(got, d.Platform.String())
	}
	if d := cmp.Diff([]string{"linux/amd64", "linux/arm64/v8"}, got); d != "" {
		t.Errorf("index platforms (-want +got):\n%s", d)
	}

	wantLabels := map[string]string{
		"org.opencontainers.image.title":       "fleetgate",
		"org.opencontainers.image.description": "Gateway API across a fleet of clusters and clouds: the operator, and its proxy (`fleetgate dataplane`)",
		"org.opencontainers.image.version":     "1.2.3-test",
		"org.opencontainers.image.revision":    "0123456789abcdef",
		"org.opencontainers.image.source":      "https://github.com/fleetgate/fleetgate",
		"org.opencontainers.image.licenses":    "NOASSERTION",
		"org.opencontainers.image.created":     "2026-11-26T12:00:00Z",
	}
	machines := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	var amd64 v1.Hash
	for _, d := range im.Manifests {
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		arch := d.Platform.Architecture
		if arch == "amd64" {
			amd64 = d.Digest
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Architecture != arch || cfg.OS != "linux" {
			t.Errorf("%s: config says %s/%s", arch, cfg.OS, cfg.Architecture)
		}
		if cfg.RootFS.Type != "layers" || len(cfg.RootFS.DiffIDs) != 2 {
			t.Errorf("%s: rootfs %+v, want type layers with two diff IDs", arch, cfg.RootFS)
		}
		if cfg.Config.User != "65532:65532" {
			t.Errorf("%s: user %q, want 65532:65532", arch, cfg.Config.User)
		}
		if d := cmp.Diff([]string{"/fleetgate"}, cfg.Config.Entrypoint); d != "" {
			t.Errorf("%s: entrypoint (-want +got):\n%s", arch, d)
		}
		if d := cmp.Diff(wantLabels, cfg.Config.Labels); d != "" {
			t.Errorf("%s: labels (-want +got):\n%s", arch, d)
		}
		if !cfg.Created.Equal(testMeta.created) {
			t.Errorf("%s: created %s, want %s", arch, cfg.Created, testMeta.created)
		}

		files := flatten(t, img)
		bin := files["fleetgate"]
		if bin.hdr == nil || bin.hdr.Mode != 0o755 {
			t.Fatalf("%s: /fleetgate missing or not executable: %+v", arch, bin.hdr)
		}
		ef, err := elf.NewFile(bytes.NewReader(bin.data))
		if err != nil {
			t.Fatalf("%s: /fleetgate is no ELF binary: %v", arch, err)
		}
		if ef.Machine != machines[arch] {
			t.Errorf("%s: /fleetgate is built for %s", arch, ef.Machine)
		}
		for _, p := range ef.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("%s: /fleetgate is dynamically linked (PT_INTERP)", arch)
			}
		}
		if !bytes.Contains(bin.data, []byte("1.2.3-test")) {
			t.Errorf("%s: /fleetgate lacks the version stamped with -X main.version", arch)
		}
		if bytes.Contains(bin.data, []byte(mustAbs(t, "testdata"))) {
			t.Errorf("%s: /fleetgate holds the build directory: -trimpath did not apply", arch)
		}
		if ca := files["etc/ssl/certs/ca-certificates.crt"]; !bytes.Equal(ca.data, caCerts) || !bytes.Contains(ca.data, []byte("BEGIN CERTIFICATE")) {
			t.Errorf("%s: CA bundle missing or different", arch)
		}
		if !strings.Contains(string(files["etc/passwd"].data), "nonroot:x:65532:65532:") {
			t.Errorf("%s: /etc/passwd has no nonroot 65532: %q", arch, files["etc/passwd"].data)
		}
		if h := files["home/nonroot/"].hdr; h == nil || h.Uid != 65532 {
			t.Errorf("%s: /home/nonroot missing or not owned by 65532: %+v", arch, h)
		}
		for n, f := range files {
			if !f.hdr.ModTime.Equal(testMeta.created) {
				t.Errorf("%s: %s has time %s, want %s", arch, n, f.hdr.ModTime, testMeta.created)
			}
		}
		if arch == runtime.GOARCH {
			runBinary(t, bin.data, "standin 1.2.3-test\n")
		}
	}

	tag, err := name.NewTag("example.com/fleetgate:v1.2.3-test")
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := tarball.ImageFromPath(res1.tarball, &tag)
	if err != nil {
		t.Fatalf("docker archive does not load: %v", err)
	}
	// A docker archive has no manifest of its own (the reader makes a Docker one), so the image is
	// the same when its config, which names every layer's diff ID, is.
	amd64Img, err := idx.Image(amd64)
	if err != nil {
		t.Fatal(err)
	}
	want, err := amd64Img.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := loaded.ConfigName(); err != nil || got != want {
		t.Errorf("docker archive image ID %s (%v), want the index's amd64 image's %s", got, err, want)
	}
}

// TestBundleImage checks that the bundle image carries the bundle's files and its annotations as
// labels, as bundle.Dockerfile would.
func TestBundleImage(t *testing.T) {
	dir := filepath.Join("..", "bundle")
	img, err := bundleImage(dir, testMeta)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "bundle")
	if err := writeLayout(out, img, "v1.2.3-test"); err != nil {
		t.Fatal(err)
	}
	p, err := layout.FromPath(out)
	if err != nil {
		t.Fatal(err)
	}
	img, err = p.Image(descriptorByRef(t, out, "v1.2.3-test").Digest)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{
		"operators.operatorframework.io.bundle.mediatype.v1": "registry+v1",
		"operators.operatorframework.io.bundle.manifests.v1": "manifests/",
		"operators.operatorframework.io.bundle.metadata.v1":  "metadata/",
		"operators.operatorframework.io.bundle.package.v1":   "fleetgate",
		"org.opencontainers.image.version":                   "1.2.3-test",
	} {
		if got := cfg.Config.Labels[k]; got != want {
			t.Errorf("label %s = %q, want %q", k, got, want)
		}
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 2 {
		t.Fatalf("bundle image has %d layers (%v), want manifests and metadata", len(layers), err)
	}
	files := flatten(t, img)
	var names []string
	for _, sub := range []string{"manifests", "metadata"} {
		entries, err := os.ReadDir(filepath.Join(dir, sub))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			rel := sub + "/" + e.Name()
			names = append(names, rel)
			want, err := os.ReadFile(filepath.Join(dir, rel))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(files[rel].data, want) {
				t.Errorf("bundle image %s differs from bundle/%s", rel, rel)
			}
		}
	}
	if len(names) < 4 {
		t.Errorf("bundle holds only %v", names)
	}
}

// TestTimestampsReachTheDigest: another SOURCE_DATE_EPOCH gives another image, so the digest
// equality above is not an accident of a builder that ignores its inputs.
func TestTimestampsReachTheDigest(t *testing.T) {
	later := testMeta
	later.created = testMeta.created.Add(time.Second)
	digest := func(m metadata) v1.Hash {
		img, err := operatorImage([]byte("binary"), platforms[0], m)
		if err != nil {
			t.Fatal(err)
		}
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	first, again := digest(testMeta), digest(testMeta)
	if first != again {
		t.Error("the same inputs give two digests")
	}
	if first == digest(later) {
		t.Error("the image does not change with its timestamp")
	}
}

type entry struct {
	hdr  *tar.Header
	data []byte
}

// flatten reads every layer of img, later layers over earlier ones.
func flatten(t *testing.T, img v1.Image) map[string]entry {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]entry{}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatal(err)
			}
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			files[h.Name] = entry{hdr: h, data: data}
		}
		_ = rc.Close()
	}
	return files
}

func descriptorByRef(t *testing.T, dir, ref string) v1.Descriptor {
	t.Helper()
	root, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := root.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range m.Manifests {
		if d.Annotations[refName] == ref {
			return d
		}
	}
	t.Fatalf("layout %s has no %s", dir, ref)
	return v1.Descriptor{}
}

func indexByRef(t *testing.T, dir, ref string) v1.ImageIndex {
	t.Helper()
	root, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := root.ImageIndex(descriptorByRef(t, dir, ref).Digest)
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

func fileSum(t *testing.T, path string) [32]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(data)
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	abs, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// runBinary runs the extracted binary on this machine: what is in the layer is a working program.
func runBinary(t *testing.T, data []byte, want string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fleetgate")
	if err := os.WriteFile(path, data, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(path).Output()
	if err != nil {
		t.Fatalf("running the image's binary: %v", err)
	}
	if string(out) != want {
		t.Errorf("the image's binary said %q, want %q", out, want)
	}
}
