package conformance

import (
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1a2 "sigs.k8s.io/gateway-api/apis/v1alpha2"
	gwv1a3 "sigs.k8s.io/gateway-api/apis/v1alpha3"
	gwxv1a1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"
	upstream "sigs.k8s.io/gateway-api/conformance"
	confv1 "sigs.k8s.io/gateway-api/conformance/apis/v1"
	"sigs.k8s.io/gateway-api/conformance/tests"
	"sigs.k8s.io/gateway-api/conformance/utils/config"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	"sigs.k8s.io/gateway-api/pkg/features"

	"github.com/fleetgate/fleetgate/tests/testbed"
)

// fullEnv selects the full run (every gateway profile, report written); `make conformance` sets it.
// Without it the test runs the core tests of GATEWAY-HTTP only, so `make test` stays quick.
const fullEnv = "FLEETGATE_CONFORMANCE"

// nodeEnv runs the suite's pods on a real node instead of the stand-in; `make conformance-node`
// sets it. Its full run writes the report with a -node suffix.
const nodeEnv = "FLEETGATE_CONFORMANCE_NODE"

func TestMain(m *testing.M) {
	testbed.QuietGlobalLogger()
	os.Exit(m.Run())
}

func TestConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a real API server, controller manager and processes; skipped in -short mode")
	}
	if u, err := user.Current(); err != nil || u.Uid != "0" {
		t.Skip("the conformance node needs root for network namespaces")
	}
	full := os.Getenv(fullEnv) != ""
	onNode := os.Getenv(nodeEnv) != ""
	if onNode {
		// Asked for by name: a machine without a node fails rather than skips.
		if err := testbed.NodeSupported(); err != nil {
			t.Fatalf("%s is set but no node runs here: %v", nodeEnv, err)
		}
	}
	ctx := t.Context()
	started := time.Now()
	// Kept when the test fails: it holds the operator, proxy and controller-manager logs.
	dir, err := os.MkdirTemp("", "fleetgate-conformance-")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("environment files in %s", dir)
	env, err := Start(ctx, dir, Options{Node: onNode}, t.Logf)
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stopping the environment: %v", err)
		}
		if !t.Failed() {
			_ = os.RemoveAll(dir)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("environment up in %s", time.Since(started).Round(time.Second))

	// The suite reads the class's features once at start; wait until the operator has published them.
	claimed, err := env.SupportedFeatures(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("GatewayClass %s claims %d features", GatewayClass, len(claimed))
	opts := options(t, env)
	mode := os.Getenv(fullEnv)
	if mode == "probe" {
		// Discovery only: every gateway feature, claimed or not, to find what could be claimed next.
		opts.EnableAllSupportedFeatures = true
		opts.ExemptFeatures = append(opts.ExemptFeatures, features.SetsToNamesSet(features.MeshCoreFeatures, features.MeshExtendedFeatures).UnsortedList()...)
	}
	if full {
		opts.ConformanceProfiles = []suite.ConformanceProfileName{
			suite.GatewayHTTPConformanceProfileName, suite.GatewayGRPCConformanceProfileName,
			suite.GatewayTLSConformanceProfileName, suite.GatewayTCPConformanceProfileName,
			suite.GatewayUDPConformanceProfileName,
		}
		dir := filepath.Join(testbed.RepoRoot(), "tests", "conformance", "reports")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		opts.ReportOutputPath = filepath.Join(dir, "fleetgate-gateway-conformance-report.yaml")
		if onNode {
			opts.ReportOutputPath = filepath.Join(dir, "fleetgate-gateway-conformance-report-node.yaml")
		}
		if mode == "probe" {
			opts.ReportOutputPath = filepath.Join(dir, "probe.yaml")
		}
	} else {
		// The quick subset: the class's published features cut down to GATEWAY-HTTP's core ones.
		core := features.SetsToNamesSet(features.GatewayCoreFeatures, features.HTTPRouteCoreFeatures,
			features.ReferenceGrantCoreFeatures)
		for _, f := range claimed {
			if core.Has(features.FeatureName(f)) {
				opts.SupportedFeatures = append(opts.SupportedFeatures, features.FeatureName(f))
			}
		}
		opts.ConformanceProfiles = []suite.ConformanceProfileName{suite.GatewayHTTPConformanceProfileName}
	}
	if skip := os.Getenv("FLEETGATE_CONFORMANCE_SKIP"); skip != "" {
		opts.SkipTests = strings.Split(skip, ",")
	}
	if only := os.Getenv("FLEETGATE_CONFORMANCE_ONLY"); only != "" {
		keep := strings.Split(only, ",")
		for _, ct := range tests.ConformanceTests {
			if !slices.Contains(keep, ct.ShortName) {
				opts.SkipTests = append(opts.SkipTests, ct.ShortName)
			}
		}
	}
	if test := os.Getenv("FLEETGATE_CONFORMANCE_TEST"); test != "" {
		opts.RunTest = test
	}
	if full && (opts.RunTest != "" || len(opts.SkipTests) > 0) {
		// A filtered run does not stand for the implementation: the committed reports keep the
		// last full one.
		opts.ReportOutputPath = filepath.Join(os.TempDir(), "fleetgate-conformance-partial-"+filepath.Base(opts.ReportOutputPath))
		t.Logf("a filtered run: report in %s", opts.ReportOutputPath)
	}
	upstream.RunConformanceWithOptions(t, opts)
	if env.Node != nil {
		// The base manifests' pods are still up (CleanupBaseResources is false).
		rss := env.Node.RSS()
		var total int64
		var parts []string
		for _, role := range slices.Sorted(maps.Keys(rss)) {
			b := rss[role]
			total += b
			parts = append(parts, fmt.Sprintf("%s %d", role, b>>20))
		}
		t.Logf("node resident memory after the run: %d MiB (%s MiB)", total>>20, strings.Join(parts, ", "))
	}
	t.Logf("conformance run took %s", time.Since(started).Round(time.Second))
}

func options(t *testing.T, env *Env) suite.ConformanceOptions {
	cl, err := client.New(env.Cluster.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, install := range []func(*runtime.Scheme) error{gwv1a3.Install, gwv1a2.Install, gwxv1a1.Install,
		gwv1.Install, apiextensionsv1.AddToScheme} {
		if err := install(cl.Scheme()); err != nil {
			t.Fatal(err)
		}
	}
	cs, err := clientset.NewForConfig(env.Cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	timeouts := config.DefaultTimeoutConfig()
	return suite.ConformanceOptions{
		ConfigurableOptions: suite.ConfigurableOptions{
			GatewayClassName:     GatewayClass,
			CleanupBaseResources: false,
			CleanupTestResources: true,
			TimeoutConfig:        timeouts,
			Mode:                 "default",
			SkipProvisionalTests: false,
			// Local mode binds a gateway to any loopback address outside 127.0.0.0/16 that another
			// gateway does not hold, and nothing else (GatewayStaticAddresses).
			UsableNetworkAddresses:   []gwv1.GatewaySpecAddress{{Type: new(gwv1.IPAddressType), Value: "127.254.0.10"}},
			UnusableNetworkAddresses: []gwv1.GatewaySpecAddress{{Type: new(gwv1.IPAddressType), Value: "198.51.100.10"}},
			Implementation: confv1.Implementation{
				Organization: "fleetgate",
				Project:      "fleetgate",
				URL:          "https://github.com/fleetgate/fleetgate",
				Version:      "dev",
				Contact:      []string{"https://github.com/fleetgate/fleetgate/issues"},
			},
		},
		Client:     cl,
		Clientset:  cs,
		RestConfig: rest.CopyConfig(env.Cluster.Config),
		ManifestFS: []fs.FS{&upstream.Manifests},
	}
}
