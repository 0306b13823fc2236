package bundle

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"
)

func load(t *testing.T) *Bundle {
	t.Helper()
	b, err := Load(".")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestValidate is `operator-sdk bundle validate ./bundle --select-optional suite=operatorframework`
// for the committed bundle: it prints the report and fails on any error.
func TestValidate(t *testing.T) {
	b := load(t)
	fs := b.Validate()
	byCheck := map[string][]Finding{}
	for _, f := range fs {
		byCheck[f.Check] = append(byCheck[f.Check], f)
	}
	var report strings.Builder
	fmt.Fprintf(&report, "bundle %s: %d owned CRDs, %d CRD files, %d other manifests, %d alm-examples\n",
		b.CSV.Metadata.Name, len(b.CSV.Spec.CustomResourceDefinitions.Owned), len(b.CRDs), len(b.Others),
		strings.Count(b.CSV.Metadata.Annotations["alm-examples"], `"apiVersion"`))
	for _, c := range Checks {
		status := "ok"
		if len(byCheck[c]) > 0 {
			status = fmt.Sprintf("%d findings", len(byCheck[c]))
		}
		fmt.Fprintf(&report, "  %-14s %s\n", c, status)
		for _, f := range byCheck[c] {
			fmt.Fprintf(&report, "    %s\n", f)
		}
	}
	t.Logf("validation report:\n%s", report.String())
	for _, f := range fs {
		if !f.Warning {
			t.Error(f)
		}
		if !slices.Contains(Checks, f.Check) {
			t.Errorf("finding of unlisted check %q", f.Check)
		}
	}
}

// TestValidateCatches breaks a valid bundle one way at a time: each check must see its defect.
func TestValidateCatches(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(b *Bundle)
		check  string
		want   string
	}{
		{"non-semver version", func(b *Bundle) { b.CSV.Spec.Version = "v1" }, "csv", "not semver"},
		{"name without version", func(b *Bundle) { b.CSV.Metadata.Name = "fleetgate" }, "csv", "<package>.v<version>"},
		{"no maintainers", func(b *Bundle) { b.CSV.Spec.Maintainers = nil }, "csv", "maintainers is empty"},
		{"bad maintainer email", func(b *Bundle) { b.CSV.Spec.Maintainers[0].Email = "nobody" }, "csv", "valid email"},
		{"http link", func(b *Bundle) { b.CSV.Spec.Links[0].URL = "http://example.com" }, "csv", "no https URL"},
		{"unknown category", func(b *Bundle) { b.CSV.Metadata.Annotations["categories"] = "Gateways" }, "csv", "not an OperatorHub category"},
		{"unknown capability", func(b *Bundle) { b.CSV.Metadata.Annotations["capabilities"] = "Basic" }, "csv", "capabilities"},
		{"no minKubeVersion", func(b *Bundle) { b.CSV.Spec.MinKubeVersion = "" }, "csv", "minKubeVersion is empty"},
		{"png icon with svg data", func(b *Bundle) { b.CSV.Spec.Icon[0].MediaType = "image/x-icon" }, "icon", "mediatype"},
		{"icon not svg", func(b *Bundle) {
			b.CSV.Spec.Icon[0].Data = base64.StdEncoding.EncodeToString([]byte("<html/>"))
		}, "icon", "no SVG"},
		{"icon not base64", func(b *Bundle) { b.CSV.Spec.Icon[0].Data = "%%%" }, "icon", "does not decode"},
		{"OwnNamespace offered", func(b *Bundle) { b.CSV.Spec.InstallModes[0].Supported = true }, "installModes", "only AllNamespaces"},
		{"install mode missing", func(b *Bundle) { b.CSV.Spec.InstallModes = b.CSV.Spec.InstallModes[1:] }, "installModes", "OwnNamespace not stated"},
		{"owned kind differs", func(b *Bundle) { b.CSV.Spec.CustomResourceDefinitions.Owned[0].Kind = "GatewayConfig" }, "crds", "the CRD says"},
		{"owned version not served", func(b *Bundle) { b.CSV.Spec.CustomResourceDefinitions.Owned[0].Version = "v1" }, "crds", "not served"},
		{"CRD not owned", func(b *Bundle) {
			b.CSV.Spec.CustomResourceDefinitions.Owned = b.CSV.Spec.CustomResourceDefinitions.Owned[1:]
		}, "crds", "not owned by the CSV"},
		{"owned CRD missing", func(b *Bundle) { b.CRDs = b.CRDs[1:] }, "crds", "is not in the bundle"},
		{"conversion webhook", func(b *Bundle) {
			b.CRDs[0].Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter}
		}, "crds", "conversion webhook"},
		{"descriptor names no field", func(b *Bundle) {
			b.CSV.Spec.CustomResourceDefinitions.Owned[0].SpecDescriptors[0].Path = "provder"
		}, "descriptors", `"provder" names no field`},
		{"alm-examples not JSON", func(b *Bundle) { b.CSV.Metadata.Annotations["alm-examples"] = "[{" }, "almExamples", "no JSON"},
		{"example with an enum violation", func(b *Bundle) {
			replaceExample(b, `"provider": "incluster"`, `"provider": "azure"`)
		}, "almExamples", "spec.provider"},
		{"example with an unknown field", func(b *Bundle) {
			replaceExample(b, `"region": "eu-west-1"`, `"region": "eu-west-1", "regoin": "x"`)
		}, "almExamples", "spec.regoin"},
		{"example breaking a CEL rule", func(b *Bundle) {
			replaceExample(b, `"eu-west-1a"`, `"us-east-1a"`)
		}, "almExamples", "every zone must lie in the region"},
		{"example missing a required field", func(b *Bundle) {
			replaceExample(b, `"kubeconfigSecretRef"`, `"kubeconfigSecret"`)
		}, "almExamples", "spec.kubeconfigSecretRef: Required value"},
		{"example without a name", func(b *Bundle) {
			replaceExample(b, `"name": "local"`, `"generateName": "local-"`)
		}, "almExamples", "no metadata.name"},
		{"deployment without selector", func(b *Bundle) {
			b.CSV.Spec.Install.Spec.Deployments[0].Spec.Selector = nil
		}, "deployment", "no selector"},
		{"no example for a CRD", func(b *Bundle) {
			replaceExample(b, `"kind": "MemberCluster"`, `"kind": "GatewayClassConfig"`)
		}, "almExamples", "memberclusters.fleetgate.dev has no example"},
		{"operator image not related", func(b *Bundle) { b.CSV.Spec.RelatedImages = nil }, "relatedImages", "not in relatedImages"},
		{"root filesystem writable", func(b *Bundle) {
			container(b).SecurityContext.ReadOnlyRootFilesystem = ptr.To(false)
		}, "deployment", "readOnlyRootFilesystem"},
		{"privilege escalation", func(b *Bundle) {
			container(b).SecurityContext.AllowPrivilegeEscalation = nil
		}, "deployment", "allowPrivilegeEscalation"},
		{"capabilities kept", func(b *Bundle) { container(b).SecurityContext.Capabilities = nil }, "deployment", "drop ALL"},
		{"may run as root", func(b *Bundle) {
			b.CSV.Spec.Install.Spec.Deployments[0].Spec.Template.Spec.SecurityContext.RunAsNonRoot = nil
		}, "deployment", "runAsNonRoot"},
		{"no seccomp", func(b *Bundle) {
			b.CSV.Spec.Install.Spec.Deployments[0].Spec.Template.Spec.SecurityContext.SeccompProfile = nil
		}, "deployment", "seccompProfile"},
		{"no readiness probe", func(b *Bundle) { container(b).ReadinessProbe = nil }, "deployment", "probe"},
		{"no memory limit", func(b *Bundle) { container(b).Resources.Limits = nil }, "deployment", "no memory limit"},
		{"service account without rules", func(b *Bundle) {
			b.CSV.Spec.Install.Spec.Deployments[0].Spec.Template.Spec.ServiceAccountName = "default"
		}, "permissions", "grants nothing"},
		{"wildcard rule", func(b *Bundle) {
			b.CSV.Spec.Install.Spec.ClusterPermissions[0].Rules[0].Verbs = []string{"*"}
		}, "permissions", "wildcard"},
		{"wrong mediatype", func(b *Bundle) {
			b.Annotations["operators.operatorframework.io.bundle.mediatype.v1"] = "plain+v0"
		}, "annotations", "registry+v1"},
		{"default channel not a channel", func(b *Bundle) {
			b.Annotations["operators.operatorframework.io.bundle.channel.default.v1"] = "stable"
		}, "annotations", "default channel"},
		{"Gateway API CRD shipped", func(b *Bundle) {
			crd := b.CRDs[0].DeepCopy()
			crd.Name, crd.Spec.Group, crd.Spec.Names.Plural = "gateways.gateway.networking.k8s.io", "gateway.networking.k8s.io", "gateways"
			b.CRDs = append(b.CRDs, *crd)
		}, "prerequisites", "gateways.gateway.networking.k8s.io belongs to the platform"},
		{"MCS CRD required", func(b *Bundle) {
			b.CSV.Spec.CustomResourceDefinitions.Required = []CRDDescription{{Name: "serviceimports.multicluster.x-k8s.io"}}
		}, "prerequisites", "OLM would never resolve it"},
		{"unsupported manifest", func(b *Bundle) { b.Files["ns.yaml"] = "Namespace" }, "manifests", "does not install"},
	}
	if fs := load(t).Validate(); slices.ContainsFunc(fs, func(f Finding) bool { return !f.Warning }) {
		t.Fatalf("the committed bundle is invalid already: %v", fs)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := load(t)
			tc.mutate(b)
			fs := b.Validate()
			if !slices.ContainsFunc(fs, func(f Finding) bool {
				return !f.Warning && f.Check == tc.check && strings.Contains(f.Message, tc.want)
			}) {
				t.Errorf("no %s error containing %q; findings: %v", tc.check, tc.want, fs)
			}
		})
	}
}

func container(b *Bundle) *corev1.Container {
	return &b.CSV.Spec.Install.Spec.Deployments[0].Spec.Template.Spec.Containers[0]
}

func replaceExample(b *Bundle, old, new string) {
	ex := b.CSV.Metadata.Annotations["alm-examples"]
	if !strings.Contains(ex, old) {
		panic(fmt.Sprintf("alm-examples lack %q: fix the test case", old))
	}
	b.CSV.Metadata.Annotations["alm-examples"] = strings.Replace(ex, old, new, 1)
}

// TestDockerfileLabels: bundle.Dockerfile labels its image with annotations.yaml, as OLM reads them
// from the image.
func TestDockerfileLabels(t *testing.T) {
	b := load(t)
	f, err := os.Open("bundle.Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	labels := map[string]string{}
	var copies []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "LABEL "); ok {
			k, v, _ := strings.Cut(rest, "=")
			labels[k] = v
		}
		if strings.HasPrefix(line, "COPY ") {
			copies = append(copies, line)
		}
	}
	if d := cmp.Diff(b.Annotations, labels); d != "" {
		t.Errorf("Dockerfile labels (-annotations.yaml +Dockerfile):\n%s", d)
	}
	if d := cmp.Diff([]string{"COPY manifests /manifests/", "COPY metadata /metadata/"}, copies); d != "" {
		t.Errorf("Dockerfile copies (-want +got):\n%s", d)
	}
}

// TestObjects: what an install without OLM applies is the bundle's CRDs, one service account with
// the CSV's rules bound cluster-wide and in the namespace, the Deployment running as that account,
// and the xDS Service, all in the install namespace.
func TestObjects(t *testing.T) {
	b := load(t)
	objs, err := b.Objects("fleetgate-system")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range objs {
		got = append(got, fmt.Sprintf("%s %s/%s", o.GetKind(), o.GetNamespace(), o.GetName()))
	}
	want := []string{
		"CustomResourceDefinition /gatewayclassconfigs.fleetgate.dev",
		"CustomResourceDefinition /memberclusters.fleetgate.dev",
		"ServiceAccount fleetgate-system/fleetgate-controller-manager",
		"ClusterRole /fleetgate.v0.1.0-fleetgate-controller-manager-0",
		"ClusterRoleBinding /fleetgate.v0.1.0-fleetgate-controller-manager-0",
		"Role fleetgate-system/fleetgate.v0.1.0-fleetgate-controller-manager-0",
		"RoleBinding fleetgate-system/fleetgate.v0.1.0-fleetgate-controller-manager-0",
		"Deployment fleetgate-system/fleetgate-controller-manager",
		"Service fleetgate-system/fleetgate-xds",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("install objects (-want +got):\n%s", d)
	}
	for _, o := range objs {
		if _, ok := o.Object["status"]; ok {
			t.Errorf("%s %s carries a status", o.GetKind(), o.GetName())
		}
		switch o.GetKind() {
		case "ClusterRole", "Role":
			if rules, _ := o.Object["rules"].([]any); len(rules) == 0 {
				t.Errorf("%s %s has no rules", o.GetKind(), o.GetName())
			}
		case "ClusterRoleBinding", "RoleBinding":
			subjects, _ := o.Object["subjects"].([]any)
			s, _ := subjects[0].(map[string]any)
			if s["name"] != "fleetgate-controller-manager" || s["namespace"] != "fleetgate-system" {
				t.Errorf("%s %s binds %v", o.GetKind(), o.GetName(), s)
			}
		case "Deployment":
			spec, _ := o.Object["spec"].(map[string]any)
			tmpl, _ := spec["template"].(map[string]any)
			pod, _ := tmpl["spec"].(map[string]any)
			if pod["serviceAccountName"] != "fleetgate-controller-manager" {
				t.Errorf("Deployment runs as %v", pod["serviceAccountName"])
			}
		}
	}
}
