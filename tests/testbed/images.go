package testbed

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Images the test node's packages build: its sandbox image and a tiny HTTP backend.
const (
	PauseImage = "localhost/fleetgate-pause:node"
	EchoImage  = "localhost/fleetgate-echo:node"
)

// imagePackages are the Go packages PauseImage and EchoImage are built from.
var imagePackages = map[string]string{
	PauseImage: "./tests/testbed/nodeimages/pause",
	EchoImage:  "./tests/testbed/nodeimages/echo",
}

// BuildImage builds ref (PauseImage or EchoImage) offline: the package as a static linux/amd64
// binary, the only file of a one-layer image whose entrypoint it is, written to dir as a docker
// archive (what the node's containerd imports). It returns the archive's path.
func BuildImage(ctx context.Context, dir, ref string) (string, error) {
	pkg, ok := imagePackages[ref]
	if !ok {
		return "", fmt.Errorf("no package builds image %s", ref)
	}
	return BuildPackageImage(ctx, dir, pkg, ref)
}

// BuildPackageImage builds the Go package pkg (a path in this module or one it requires) into an
// image as BuildImage does, tagged with every one of refs: pods naming any of them run it.
func BuildPackageImage(ctx context.Context, dir, pkg string, refs ...string) (string, error) {
	if len(refs) == 0 {
		return "", fmt.Errorf("image of %s: no reference to tag it with", pkg)
	}
	var tags []name.Tag
	for _, ref := range refs {
		tag, err := name.NewTag(ref)
		if err != nil {
			return "", fmt.Errorf("image reference %s: %w", ref, err)
		}
		tags = append(tags, tag)
	}
	ref := refs[0]
	bin := filepath.Join(dir, filepath.Base(pkg))
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, pkg)
	cmd.Dir = RepoRoot()
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %s: %w: %s", pkg, err, out)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", bin, err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: "app", Mode: 0o755, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
		return "", fmt.Errorf("layer of %s: %w", ref, err)
	}
	if _, err := tw.Write(data); err != nil {
		return "", fmt.Errorf("layer of %s: %w", ref, err)
	}
	if err := tw.Close(); err != nil {
		return "", fmt.Errorf("layer of %s: %w", ref, err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	if err != nil {
		return "", fmt.Errorf("layer of %s: %w", ref, err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return "", fmt.Errorf("image %s: %w", ref, err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return "", fmt.Errorf("config of %s: %w", ref, err)
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", "amd64"
	cfg.Config = v1.Config{Entrypoint: []string{"/app"}}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return "", fmt.Errorf("config of %s: %w", ref, err)
	}
	tagged := map[name.Tag]v1.Image{}
	for _, tag := range tags {
		tagged[tag] = img
	}
	out := filepath.Join(dir, filepath.Base(pkg)+".tar")
	if err := tarball.MultiWriteToFile(out, tagged); err != nil {
		return "", fmt.Errorf("writing %s: %w", out, err)
	}
	return out, nil
}
