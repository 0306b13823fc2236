// Command gen writes fleetgate's OLM bundle (bundle/manifests, bundle/metadata, bundle/bundle.Dockerfile)
// from config/: the generated CRDs and RBAC, the manager Deployment and xDS Service, and the samples.
// It also points config/manager's kustomization at the same image, so a kustomize install and an
// OLM install run the same tag. It refuses to write a bundle that fails bundle.Validate. Run it
// through `make bundle`; never edit the bundle by hand.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/fleetgate/fleetgate/bundle"
)

// options are the generator's inputs besides config/.
type options struct {
	version, image, channel string
}

const (
	pkg            = "fleetgate"
	serviceAccount = "fleetgate-controller-manager"
	deployment     = "fleetgate-controller-manager"
	// namePrefix is config/default's: objects get the names a kustomize install gives them.
	namePrefix = "fleetgate-"
)

// defaults are the Makefile's (VERSION, IMG): the committed bundle is generated with them.
var defaults = options{version: "0.1.0", image: "fleetgate:v0.1.0", channel: "alpha"}

func main() {
	var o options
	flag.StringVar(&o.version, "version", defaults.version, "bundle version (semver)")
	flag.StringVar(&o.image, "image", defaults.image, "operator image (also the proxies')")
	config := flag.String("config", "config", "the kustomize tree to read")
	out := flag.String("out", "bundle", "the bundle directory to write")
	flag.StringVar(&o.channel, "channel", defaults.channel, "OLM channel")
	flag.Parse()
	if err := run(*config, *out, o); err != nil {
		fmt.Fprintln(os.Stderr, "bundle:", err)
		os.Exit(1)
	}
}

func run(config, out string, o options) error {
	files, err := generate(config, o)
	if err != nil {
		return err
	}
	kustomization := filepath.Join(config, "manager", "kustomization.yaml")
	managerImage, err := kustomizeImage(kustomization, o.image)
	if err != nil {
		return err
	}
	for _, sub := range []string{"manifests", "metadata"} {
		if err := os.RemoveAll(filepath.Join(out, sub)); err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(out, sub), 0o755); err != nil {
			return err
		}
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(out, name), data, 0o644); err != nil {
			return err
		}
	}
	b, err := bundle.Load(out)
	if err != nil {
		return fmt.Errorf("reading back the bundle: %w", err)
	}
	var errs []error
	for _, f := range b.Validate() {
		if !f.Warning {
			errs = append(errs, errors.New(f.String()))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("the generated bundle is invalid:\n%w", err)
	}
	return os.WriteFile(kustomization, managerImage, 0o644)
}

// generate returns the bundle's files by path relative to the bundle directory.
func generate(config string, o options) (map[string][]byte, error) {
	crds, err := readDir(filepath.Join(config, "crd", "bases"))
	if err != nil {
		return nil, err
	}
	var role rbacv1.ClusterRole
	if err := readKind(filepath.Join(config, "rbac", "role.yaml"), "ClusterRole", &role); err != nil {
		return nil, err
	}
	var leaderRole rbacv1.Role
	if err := readKind(filepath.Join(config, "rbac", "leader_election_role.yaml"), "Role", &leaderRole); err != nil {
		return nil, err
	}
	var dep appsv1.Deployment
	if err := readKind(filepath.Join(config, "manager", "manager.yaml"), "Deployment", &dep); err != nil {
		return nil, err
	}
	var svc map[string]any
	if err := readKind(filepath.Join(config, "manager", "manager.yaml"), "Service", &svc); err != nil {
		return nil, err
	}
	samples, err := readDir(filepath.Join(config, "samples"))
	if err != nil {
		return nil, err
	}
	var examples []map[string]any
	for _, s := range samples {
		if strings.HasPrefix(s.GetAPIVersion(), "fleetgate.dev/") {
			examples = append(examples, s.Object)
		}
	}
	almExamples, err := json.MarshalIndent(examples, "", "  ")
	if err != nil {
		return nil, err
	}

	setImage(&dep, o.image)
	dep.Spec.Template.Spec.ServiceAccountName = serviceAccount

	var owned []bundle.CRDDescription
	for _, crd := range crds {
		kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		storage := ""
		for _, raw := range versions {
			if v, _ := raw.(map[string]any); v["storage"] == true {
				storage, _ = v["name"].(string)
			}
		}
		d, ok := descriptions[kind]
		if !ok {
			return nil, fmt.Errorf("CRD %s has no description for the CSV: add one to descriptions", crd.GetName())
		}
		d.Name, d.Version, d.Kind = crd.GetName(), storage, kind
		owned = append(owned, d)
	}

	csv := bundle.CSV{
		Metadata: bundle.CSVMetadata{
			Name: pkg + ".v" + o.version,
			Annotations: map[string]string{
				"alm-examples":   string(almExamples),
				"capabilities":   "Basic Install",
				"categories":     "Networking",
				"containerImage": o.image,
				"description":    "Gateway API, Ingress and LoadBalancer Services across a fleet of clusters and clouds",
				"repository":     "https://github.com/fleetgate/fleetgate",
				"support":        "fleetgate",
				"operators.operatorframework.io/suggested-namespace": "fleetgate-system",
			},
		},
		Spec: bundle.CSVSpec{
			DisplayName: "fleetgate",
			Description: description,
			Version:     o.version,
			Maturity:    o.channel,
			// Gateway API v1.6 supports the five newest Kubernetes minors (1.32–1.36), and we test on 1.36.
			MinKubeVersion: "1.32.0",
			Provider:       bundle.AppLink{Name: "fleetgate", URL: "https://github.com/fleetgate/fleetgate"},
			Maintainers:    []bundle.Maintainer{{Name: "fleetgate maintainers", Email: "maintainers@fleetgate.dev"}},
			Links: []bundle.AppLink{
				{Name: "Source", URL: "https://github.com/fleetgate/fleetgate"},
				{Name: "Documentation", URL: "https://github.com/fleetgate/fleetgate/blob/main/README.md"},
				{Name: "Gateway API", URL: "https://gateway-api.sigs.k8s.io/"},
			},
			Icon:     []bundle.Icon{{Data: iconBase64(), MediaType: "image/svg+xml"}},
			Keywords: []string{"gateway-api", "ingress", "load-balancer", "multi-cluster", "fleet", "aws", "gcp", "proxy"},
			// fleetgate watches Gateway API objects in every namespace plus cluster-scoped kinds
			// (GatewayClass, MemberCluster, GatewayClassConfig) and cannot be confined to an
			// OperatorGroup's target namespaces: OwnNamespace, SingleNamespace and MultiNamespace
			// would promise a scoping it does not do.
			InstallModes: []bundle.InstallMode{
				{Type: bundle.OwnNamespace, Supported: false},
				{Type: bundle.SingleNamespace, Supported: false},
				{Type: bundle.MultiNamespace, Supported: false},
				{Type: bundle.AllNamespaces, Supported: true},
			},
			CustomResourceDefinitions: bundle.CustomResourceDefinitions{Owned: owned},
			Install: bundle.NamedInstallStrategy{
				Strategy: "deployment",
				Spec: bundle.InstallStrategy{
					ClusterPermissions: []bundle.Permissions{{ServiceAccountName: serviceAccount, Rules: role.Rules}},
					Permissions:        []bundle.Permissions{{ServiceAccountName: serviceAccount, Rules: leaderRole.Rules}},
					Deployments:        []bundle.DeploymentSpec{{Name: deployment, Spec: dep.Spec}},
				},
			},
			// By tag: the digest is a function of the commit (the revision label), and the commit
			// holds this CSV, so a CSV naming its own image's digest cannot exist. A release
			// pipeline that pushes the image first may pin the digest with --image.
			RelatedImages: []bundle.RelatedImage{{Name: "fleetgate", Image: o.image}},
		},
	}
	csv.APIVersion, csv.Kind = "operators.coreos.com/v1alpha1", "ClusterServiceVersion"

	files := map[string][]byte{}
	add := func(name string, v any) error {
		data, err := yaml.Marshal(v)
		if err != nil {
			return fmt.Errorf("encoding %s: %w", name, err)
		}
		files[name] = data
		return nil
	}
	if err := add("manifests/"+pkg+".clusterserviceversion.yaml", csv); err != nil {
		return nil, err
	}
	for _, crd := range crds {
		if err := add("manifests/"+crd.GetName()+".customresourcedefinition.yaml", crd.Object); err != nil {
			return nil, err
		}
	}
	// OLM installs a Service from the bundle into the operator's namespace; the proxies dial it.
	service := unstructured.Unstructured{Object: svc}
	service.SetName(namePrefix + service.GetName())
	service.SetNamespace("")
	if err := add("manifests/"+service.GetName()+"_v1_service.yaml", service.Object); err != nil {
		return nil, err
	}
	annotations := annotations(o.channel)
	if err := add("metadata/annotations.yaml", map[string]any{"annotations": annotations}); err != nil {
		return nil, err
	}
	files["bundle.Dockerfile"] = dockerfile(annotations)
	return files, nil
}

func annotations(channel string) map[string]string {
	return map[string]string{
		"operators.operatorframework.io.bundle.mediatype.v1":       "registry+v1",
		"operators.operatorframework.io.bundle.manifests.v1":       "manifests/",
		"operators.operatorframework.io.bundle.metadata.v1":        "metadata/",
		"operators.operatorframework.io.bundle.package.v1":         pkg,
		"operators.operatorframework.io.bundle.channels.v1":        channel,
		"operators.operatorframework.io.bundle.channel.default.v1": channel,
	}
}

// dockerfile is for people with a container engine: `docker build -f bundle/bundle.Dockerfile bundle`.
// `make image` builds the same image without one (image/).
func dockerfile(annotations map[string]string) []byte {
	keys := make([]string, 0, len(annotations))
	for k := range annotations {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b bytes.Buffer
	b.WriteString("# Generated by bundle/gen (make bundle); do not edit. Build context: bundle/.\nFROM scratch\n\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "LABEL %s=%s\n", k, annotations[k])
	}
	b.WriteString("\nCOPY manifests /manifests/\nCOPY metadata /metadata/\n")
	return b.Bytes()
}

func setImage(dep *appsv1.Deployment, image string) {
	for i := range dep.Spec.Template.Spec.Containers {
		c := &dep.Spec.Template.Spec.Containers[i]
		if c.Name != "manager" {
			continue
		}
		c.Image = image
		// The proxies run the operator's own image.
		for j := range c.Env {
			if c.Env[j].Name == "FLEETGATE_IMAGE" {
				c.Env[j].Value = image
			}
		}
	}
}

// kustomizeImage returns the kustomization with its "controller" image pointed at image
// (name[:tag]), as `kustomize edit set image controller=<image>` would.
func kustomizeImage(path, image string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var k map[string]any
	if err := yaml.Unmarshal(data, &k); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", path, err)
	}
	name, tag := image, ""
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		name, tag = image[:i], image[i+1:]
	}
	entry := map[string]any{"name": "controller", "newName": name}
	if tag != "" {
		entry["newTag"] = tag
	}
	k["images"] = []any{entry}
	return yaml.Marshal(k)
}

func readKind(path, kind string, into any) error {
	objs, err := readFile(path)
	if err != nil {
		return err
	}
	for _, o := range objs {
		if o.GetKind() != kind {
			continue
		}
		data, err := json.Marshal(o.Object)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(data, into); err != nil {
			return fmt.Errorf("decoding the %s in %s: %w", kind, path, err)
		}
		return nil
	}
	return fmt.Errorf("%s holds no %s", path, kind)
}

func readDir(dir string) ([]unstructured.Unstructured, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	var all []unstructured.Unstructured
	for _, p := range paths {
		if filepath.Base(p) == "kustomization.yaml" {
			continue
		}
		objs, err := readFile(p)
		if err != nil {
			return nil, err
		}
		all = append(all, objs...)
	}
	return all, nil
}

func readFile(path string) ([]unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []unstructured.Unstructured
	for {
		var o map[string]any
		if err := dec.Decode(&o); errors.Is(err, io.EOF) {
			return objs, nil
		} else if err != nil {
			return nil, fmt.Errorf("decoding %s: %w", path, err)
		}
		if len(o) > 0 {
			objs = append(objs, unstructured.Unstructured{Object: o})
		}
	}
}
