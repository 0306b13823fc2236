package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	_ "embed"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"sigs.k8s.io/yaml"
)

// caCerts is a pinned copy of Debian's ca-certificates bundle (20230311+deb12u1), not the build
// machine's: the image digest must depend on the commit alone, and a refresh is a reviewed commit.
//
//go:embed ca-certificates.crt
var caCerts []byte

const (
	// nonRoot is distroless's nonroot user and group, so restricted PSS admits the pod as is.
	nonRoot    = 65532
	entrypoint = "/fleetgate"
	refName    = "org.opencontainers.image.ref.name"
)

// platforms are the operator image's architectures, all linux.
var platforms = []v1.Platform{
	{OS: "linux", Architecture: "amd64"},
	{OS: "linux", Architecture: "arm64", Variant: "v8"},
}

type options struct {
	pkg                string
	image, bundleImage string
	bundleDir, out     string
	meta               metadata
}

// metadata is what the OCI labels say, plus the one timestamp every file and config carries.
type metadata struct {
	version, revision, source, licenses string
	created                             time.Time
}

func (m metadata) labels(title, description string) map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":       title,
		"org.opencontainers.image.description": description,
		"org.opencontainers.image.version":     m.version,
		"org.opencontainers.image.revision":    m.revision,
		"org.opencontainers.image.source":      m.source,
		"org.opencontainers.image.licenses":    m.licenses,
		"org.opencontainers.image.created":     m.created.Format(time.RFC3339),
	}
}

type platformImage struct {
	platform string
	digest   v1.Hash
	size     int64
}

type result struct {
	index, bundle                 v1.Hash
	platforms                     []platformImage
	layout, bundleLayout, tarball string
}

// run builds the operator binary for every platform, assembles the images and writes them out.
func run(ctx context.Context, o options) (result, error) {
	ref, err := name.NewTag(o.image)
	if err != nil {
		return result{}, fmt.Errorf("operator image reference: %w", err)
	}
	bundleRef, err := name.NewTag(o.bundleImage)
	if err != nil {
		return result{}, fmt.Errorf("bundle image reference: %w", err)
	}
	work, err := os.MkdirTemp("", "fleetgate-image-")
	if err != nil {
		return result{}, err
	}
	defer os.RemoveAll(work)

	var res result
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	var amd64 v1.Image
	for _, p := range platforms {
		bin := filepath.Join(work, "fleetgate-"+p.Architecture)
		if err := goBuild(ctx, o.pkg, p.Architecture, o.meta.version, bin); err != nil {
			return result{}, err
		}
		data, err := os.ReadFile(bin)
		if err != nil {
			return result{}, err
		}
		img, err := operatorImage(data, p, o.meta)
		if err != nil {
			return result{}, fmt.Errorf("%s image: %w", p, err)
		}
		digest, err := img.Digest()
		if err != nil {
			return result{}, err
		}
		size, err := compressedSize(img)
		if err != nil {
			return result{}, err
		}
		res.platforms = append(res.platforms, platformImage{platform: p.String(), digest: digest, size: size})
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
		if p.Architecture == "amd64" {
			amd64 = img
		}
	}
	if res.index, err = idx.Digest(); err != nil {
		return result{}, err
	}
	res.layout = filepath.Join(o.out, "oci")
	if err := writeLayout(res.layout, idx, ref.TagStr()); err != nil {
		return result{}, err
	}
	res.tarball = filepath.Join(o.out, "fleetgate.tar")
	if err := tarball.WriteToFile(res.tarball, ref, amd64); err != nil {
		return result{}, fmt.Errorf("writing %s: %w", res.tarball, err)
	}

	bundle, err := bundleImage(o.bundleDir, o.meta)
	if err != nil {
		return result{}, fmt.Errorf("bundle image: %w", err)
	}
	if res.bundle, err = bundle.Digest(); err != nil {
		return result{}, err
	}
	res.bundleLayout = filepath.Join(o.out, "bundle")
	if err := writeLayout(res.bundleLayout, bundle, bundleRef.TagStr()); err != nil {
		return result{}, err
	}
	return res, nil
}

// goBuild cross-compiles a static, reproducible binary: no cgo, no paths, no build ID, no VCS stamp
// (the revision is a label instead, so a dirty tree cannot change the binary).
func goBuild(ctx context.Context, pkg, goarch, version, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false",
		"-ldflags", "-s -w -buildid= -X main.version="+version, "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+goarch)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building %s for linux/%s: %w", pkg, goarch, err)
	}
	return nil
}

// operatorImage puts the binary on an empty base that holds only what a static Go program needs:
// CA certificates, a passwd/group naming the non-root user, and a writable-looking /tmp.
// The base layer is the same for every platform, so a registry stores it once.
func operatorImage(binary []byte, p v1.Platform, m metadata) (v1.Image, error) {
	base, err := tarLayer(m.created, []file{
		{name: "etc/", mode: 0o755 | fs.ModeDir},
		{name: "etc/group", mode: 0o644, data: []byte("root:x:0:\nnonroot:x:65532:\n")},
		{name: "etc/passwd", mode: 0o644, data: []byte("root:x:0:0:root:/root:/sbin/nologin\n" +
			"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{name: "etc/ssl/", mode: 0o755 | fs.ModeDir},
		{name: "etc/ssl/certs/", mode: 0o755 | fs.ModeDir},
		{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, data: caCerts},
		{name: "home/", mode: 0o755 | fs.ModeDir},
		{name: "home/nonroot/", mode: 0o700 | fs.ModeDir, owner: nonRoot},
		{name: "tmp/", mode: 0o777 | fs.ModeDir | fs.ModeSticky},
	})
	if err != nil {
		return nil, err
	}
	app, err := tarLayer(m.created, []file{{name: entrypoint[1:], mode: 0o755, data: binary}})
	if err != nil {
		return nil, err
	}
	cfg := &v1.ConfigFile{
		Architecture: p.Architecture,
		OS:           p.OS,
		Variant:      p.Variant,
		Config: v1.Config{
			User:       fmt.Sprintf("%d:%d", nonRoot, nonRoot),
			Entrypoint: []string{entrypoint},
			WorkingDir: "/",
			Labels: m.labels("fleetgate",
				"Gateway API across a fleet of clusters and clouds: the operator, and its proxy (`fleetgate dataplane`)"),
		},
	}
	return assemble(cfg, m.created, []layerWithHistory{
		{base, "fleetgate base: CA certificates, nonroot user 65532"},
		{app, "fleetgate binary " + m.version + " (linux/" + p.Architecture + ")"},
	})
}

// bundleImage is what bundle.Dockerfile makes: FROM scratch, manifests/ and metadata/ as one layer
// each, and the annotations of metadata/annotations.yaml as labels, which is where OLM reads them.
func bundleImage(dir string, m metadata) (v1.Image, error) {
	data, err := os.ReadFile(filepath.Join(dir, "metadata", "annotations.yaml"))
	if err != nil {
		return nil, err
	}
	var annotations struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := yaml.UnmarshalStrict(data, &annotations); err != nil {
		return nil, fmt.Errorf("decoding annotations.yaml: %w", err)
	}
	labels := m.labels("fleetgate-bundle", "fleetgate's OLM bundle (registry+v1)")
	for k, v := range annotations.Annotations {
		labels[k] = v
	}
	var adds []layerWithHistory
	for _, sub := range []string{"manifests", "metadata"} {
		files, err := readTree(dir, sub)
		if err != nil {
			return nil, err
		}
		l, err := tarLayer(m.created, files)
		if err != nil {
			return nil, err
		}
		adds = append(adds, layerWithHistory{l, "COPY " + sub + " /" + sub + "/"})
	}
	cfg := &v1.ConfigFile{Architecture: "amd64", OS: "linux", Config: v1.Config{Labels: labels}}
	return assemble(cfg, m.created, adds)
}

type layerWithHistory struct {
	layer   v1.Layer
	comment string
}

func assemble(cfg *v1.ConfigFile, created time.Time, layers []layerWithHistory) (v1.Image, error) {
	// The OCI spec's only rootfs type; containerd refuses an image without it.
	cfg.RootFS.Type = "layers"
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.ConfigFile(img, cfg)
	if err != nil {
		return nil, err
	}
	for _, l := range layers {
		img, err = mutate.Append(img, mutate.Addendum{Layer: l.layer, MediaType: types.OCILayer,
			History: v1.History{Created: v1.Time{Time: created}, CreatedBy: l.comment}})
		if err != nil {
			return nil, err
		}
	}
	return mutate.CreatedAt(img, v1.Time{Time: created})
}

// file is one tar entry; a directory's name ends in "/".
type file struct {
	name  string
	mode  fs.FileMode
	owner int
	data  []byte
}

// tarLayer writes the entries in the given order with one fixed time and owner, so the same input
// gives the same bytes (and gzip, with no name or time in its header, the same digest). gzip's
// default level, not go-containerregistry's BestSpeed: a fifth smaller for a second more.
func tarLayer(mtime time.Time, files []file) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{
			Name: f.name, Mode: int64(f.mode.Perm()), Uid: f.owner, Gid: f.owner,
			ModTime: mtime, Format: tar.FormatPAX, Typeflag: tar.TypeReg, Size: int64(len(f.data)),
		}
		if f.mode&fs.ModeSticky != 0 {
			h.Mode |= 0o1000
		}
		if f.mode.IsDir() {
			h.Typeflag, h.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressionLevel(gzip.DefaultCompression))
}

// readTree lists dir/sub as tar entries named sub/..., sorted, with modes normalised: a checkout's
// umask must not change the bundle image.
func readTree(dir, sub string) ([]file, error) {
	var files []file
	err := filepath.WalkDir(filepath.Join(dir, sub), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			files = append(files, file{name: rel + "/", mode: 0o755 | fs.ModeDir})
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files = append(files, file{name: rel, mode: 0o644, data: data})
		return nil
	})
	sort.Slice(files, func(i, j int) bool { return path.Clean(files[i].name) < path.Clean(files[j].name) })
	return files, err
}

// writeLayout replaces dir with an OCI layout holding one image or index under the tag.
func writeLayout(dir string, content mutate.Appendable, tag string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("creating layout %s: %w", dir, err)
	}
	ann := layout.WithAnnotations(map[string]string{refName: tag})
	switch c := content.(type) {
	case v1.ImageIndex:
		err = p.AppendIndex(c, ann)
	case v1.Image:
		err = p.AppendImage(c, ann)
	default:
		err = fmt.Errorf("%T is neither an image nor an index", content)
	}
	if err != nil {
		return fmt.Errorf("writing layout %s: %w", dir, err)
	}
	return nil
}

func compressedSize(img v1.Image) (int64, error) {
	m, err := img.Manifest()
	if err != nil {
		return 0, err
	}
	total := m.Config.Size
	for _, l := range m.Layers {
		total += l.Size
	}
	return total, nil
}
