// Command image builds fleetgate's container images without a daemon or a registry: the operator
// image (which is also the proxy image: `fleetgate dataplane`) for linux/amd64 and linux/arm64 as an
// OCI image index in an OCI layout, the amd64 image as a docker-archive tarball, and the OLM bundle
// image from bundle/. Same commit, same digests: binaries are built with -trimpath and no build ID,
// and every timestamp is SOURCE_DATE_EPOCH (the commit time). Run it through `make image`.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"time"
)

func main() {
	var o options
	flag.StringVar(&o.pkg, "package", ".", "the Go package of the operator binary")
	flag.StringVar(&o.image, "image", "fleetgate:v0.1.0", "the operator image reference (its tag is the version tag)")
	flag.StringVar(&o.bundleImage, "bundle-image", "fleetgate-bundle:v0.1.0", "the bundle image reference")
	flag.StringVar(&o.bundleDir, "bundle", "bundle", "the OLM bundle directory (manifests/, metadata/)")
	flag.StringVar(&o.out, "out", "bin/image", "where the OCI layouts and the tarball go")
	flag.StringVar(&o.meta.version, "version", "0.1.0", "the version stamped into the binary and the labels")
	flag.StringVar(&o.meta.revision, "revision", "", "the source revision (git commit) for the labels")
	flag.StringVar(&o.meta.source, "source", "https://github.com/fleetgate/fleetgate", "the source repository URL for the labels")
	flag.StringVar(&o.meta.licenses, "licenses", "NOASSERTION", "SPDX license expression for the labels")
	epoch := flag.String("source-date-epoch", os.Getenv("SOURCE_DATE_EPOCH"), "Unix time of every timestamp in the images (the commit time); 0 when empty")
	flag.Parse()

	if *epoch != "" {
		secs, err := strconv.ParseInt(*epoch, 10, 64)
		if err != nil {
			fmt.Fprintln(os.Stderr, "image: --source-date-epoch:", err)
			os.Exit(2)
		}
		o.meta.created = time.Unix(secs, 0).UTC()
	} else {
		o.meta.created = time.Unix(0, 0).UTC()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	res, err := run(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
	fmt.Printf("operator %s index %s (%s)\n", o.image, res.index, res.layout)
	for _, p := range res.platforms {
		fmt.Printf("  %s %s %d bytes compressed\n", p.platform, p.digest, p.size)
	}
	fmt.Printf("docker archive %s (linux/amd64)\n", res.tarball)
	fmt.Printf("bundle %s %s (%s)\n", o.bundleImage, res.bundle, res.bundleLayout)
}
