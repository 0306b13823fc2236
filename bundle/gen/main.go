// Command gen writes fleetgate's OLM bundle (bundle/manifests, bundle/metadata) from config/: the
// generated CRDs and RBAC, the manager Deployment and the samples. Run it through `make bundle`;
// never edit the bundle by hand.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

type object = map[string]any

func main() {
	version := flag.String("version", "0.1.0", "bundle version (semver)")
	image := flag.String("image", "fleetgate:dev", "operator image")
	config := flag.String("config", "config", "the kustomize tree to read")
	out := flag.String("out", "bundle", "the bundle directory to write")
	channel := flag.String("channel", "alpha", "OLM channel")
	flag.Parse()
	if err := run(*config, *out, *version, *image, *channel); err != nil {
		fmt.Fprintln(os.Stderr, "bundle:", err)
		os.Exit(1)
	}
}

func run(config, out, version, image, channel string) error {
	crds, err := readDir(filepath.Join(config, "crd", "bases"))
	if err != nil {
		return err
	}
	role, err := readOne(filepath.Join(config, "rbac", "role.yaml"), "ClusterRole")
	if err != nil {
		return err
	}
	leaderRole, err := readOne(filepath.Join(config, "rbac", "leader_election_role.yaml"), "Role")
	if err != nil {
		return err
	}
	deployment, err := readOne(filepath.Join(config, "manager", "manager.yaml"), "Deployment")
	if err != nil {
		return err
	}
	samples, err := readDir(filepath.Join(config, "samples"))
	if err != nil {
		return err
	}
	examples := []object{}
	for _, s := range samples {
		if api, _ := s["apiVersion"].(string); strings.HasPrefix(api, "fleetgate.dev/") {
			examples = append(examples, s)
		}
	}
	almExamples, err := yaml.Marshal(examples)
	if err != nil {
		return err
	}
	almJSON, err := yaml.YAMLToJSON(almExamples)
	if err != nil {
		return err
	}

	setImage(deployment, image)
	var owned []object
	for _, crd := range crds {
		spec, _ := crd["spec"].(object)
		names, _ := spec["names"].(object)
		versions, _ := spec["versions"].([]any)
		v := ""
		for _, raw := range versions {
			if ver, _ := raw.(object); ver["storage"] == true {
				v, _ = ver["name"].(string)
			}
		}
		meta, _ := crd["metadata"].(object)
		owned = append(owned, object{
			"name": meta["name"], "version": v, "kind": names["kind"], "displayName": names["kind"],
			"description": fmt.Sprintf("fleetgate %s", names["kind"]),
		})
	}
	const sa = "fleetgate-controller-manager"
	depSpec, _ := deployment["spec"].(object)
	podSpec := nested(depSpec, "template", "spec")
	podSpec["serviceAccountName"] = sa
	csv := object{
		"apiVersion": "operators.coreos.com/v1alpha1",
		"kind":       "ClusterServiceVersion",
		"metadata": object{
			"name": "fleetgate.v" + version,
			"annotations": object{
				"alm-examples":   string(almJSON),
				"capabilities":   "Basic Install",
				"categories":     "Networking",
				"containerImage": image,
				"description":    "Gateway API across a fleet of clusters and clouds",
			},
		},
		"spec": object{
			"displayName": "fleetgate",
			"description": "fleetgate turns Gateway API, Ingress and LoadBalancer Service objects across a fleet of clusters into load balancers (AWS ELBv2, GCP, or its own in-cluster Go proxy) and writes status back into every member cluster. It needs the Gateway API v1.6 CRDs (experimental channel) and the MCS API CRDs installed.",
			"version":     version,
			"maturity":    channel,
			"provider":    object{"name": "fleetgate"},
			"keywords":    []string{"gateway-api", "ingress", "load-balancer", "multi-cluster"},
			"installModes": []object{
				{"type": "OwnNamespace", "supported": true},
				{"type": "SingleNamespace", "supported": true},
				{"type": "MultiNamespace", "supported": false},
				{"type": "AllNamespaces", "supported": true},
			},
			"customresourcedefinitions": object{"owned": owned},
			"install": object{
				"strategy": "deployment",
				"spec": object{
					"clusterPermissions": []object{{"serviceAccountName": sa, "rules": role["rules"]}},
					"permissions":        []object{{"serviceAccountName": sa, "rules": leaderRole["rules"]}},
					"deployments":        []object{{"name": "fleetgate-controller-manager", "spec": depSpec}},
				},
			},
		},
	}

	manifests := filepath.Join(out, "manifests")
	if err := os.RemoveAll(manifests); err != nil {
		return err
	}
	if err := os.MkdirAll(manifests, 0o755); err != nil {
		return err
	}
	if err := write(filepath.Join(manifests, "fleetgate.clusterserviceversion.yaml"), csv); err != nil {
		return err
	}
	for _, crd := range crds {
		meta, _ := crd["metadata"].(object)
		name, _ := meta["name"].(string)
		if err := write(filepath.Join(manifests, name+".customresourcedefinition.yaml"), crd); err != nil {
			return err
		}
	}
	annotations := object{"annotations": object{
		"operators.operatorframework.io.bundle.mediatype.v1":       "registry+v1",
		"operators.operatorframework.io.bundle.manifests.v1":       "manifests/",
		"operators.operatorframework.io.bundle.metadata.v1":        "metadata/",
		"operators.operatorframework.io.bundle.package.v1":         "fleetgate",
		"operators.operatorframework.io.bundle.channels.v1":        channel,
		"operators.operatorframework.io.bundle.channel.default.v1": channel,
	}}
	if err := os.MkdirAll(filepath.Join(out, "metadata"), 0o755); err != nil {
		return err
	}
	return write(filepath.Join(out, "metadata", "annotations.yaml"), annotations)
}

func nested(o object, keys ...string) object {
	for _, k := range keys {
		next, _ := o[k].(object)
		if next == nil {
			next = object{}
			o[k] = next
		}
		o = next
	}
	return o
}

func setImage(deployment object, image string) {
	podSpec := nested(deployment, "spec", "template", "spec")
	containers, _ := podSpec["containers"].([]any)
	for _, raw := range containers {
		c, _ := raw.(object)
		if c["name"] != "manager" {
			continue
		}
		c["image"] = image
		// The proxies run the operator's own image.
		env, _ := c["env"].([]any)
		for _, e := range env {
			if v, _ := e.(object); v["name"] == "FLEETGATE_IMAGE" {
				v["value"] = image
			}
		}
	}
}

func write(path string, o object) error {
	data, err := yaml.Marshal(o)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", path, err)
	}
	return os.WriteFile(path, data, 0o644)
}

func readOne(path, kind string) (object, error) {
	objs, err := readFile(path)
	if err != nil {
		return nil, err
	}
	for _, o := range objs {
		if o["kind"] == kind {
			return o, nil
		}
	}
	return nil, fmt.Errorf("%s holds no %s", path, kind)
}

func readDir(dir string) ([]object, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	var all []object
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

func readFile(path string) ([]object, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []object
	for {
		var o object
		if err := dec.Decode(&o); errors.Is(err, io.EOF) {
			return objs, nil
		} else if err != nil {
			return nil, fmt.Errorf("decoding %s: %w", path, err)
		}
		if len(o) > 0 {
			objs = append(objs, o)
		}
	}
}
