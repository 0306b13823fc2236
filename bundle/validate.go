package bundle

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/mail"
	"net/url"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
)

// Finding is one failed check. Errors make the bundle invalid; warnings are OperatorHub's
// recommendations.
type Finding struct {
	Warning bool
	Check   string
	Message string
}

func (f Finding) String() string {
	level := "ERROR"
	if f.Warning {
		level = "WARN"
	}
	return fmt.Sprintf("%s [%s] %s", level, f.Check, f.Message)
}

// Checks are the checks Validate runs, in order, named as in its findings and report.
var Checks = []string{"csv", "icon", "installModes", "crds", "descriptors", "almExamples", "relatedImages",
	"deployment", "permissions", "annotations", "prerequisites", "manifests"}

// prerequisiteGroups are API groups whose CRDs the platform installs (Gateway API, MCS API,
// external-dns): a bundle that shipped them would fight the platform's copy, so it must not.
var prerequisiteGroups = []string{"gateway.networking.k8s.io", "gateway.networking.x-k8s.io",
	"multicluster.x-k8s.io", "externaldns.k8s.io"}

// supportedKinds are the kinds OLM installs from a registry+v1 bundle's manifests/ (besides the CSV
// and CRDs) that fleetgate may ship.
var supportedKinds = []string{"ClusterServiceVersion", "CustomResourceDefinition", "Service", "ConfigMap",
	"Secret", "ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding",
	"PodDisruptionBudget", "PriorityClass", "ServiceMonitor", "PrometheusRule", "VerticalPodAutoscaler"}

// OperatorHub's lists of capability levels and categories.
var (
	capabilityLevels = []string{"Basic Install", "Seamless Upgrades", "Full Lifecycle", "Deep Insights", "Auto Pilot"}
	categories       = []string{"AI/Machine Learning", "Application Runtime", "Big Data", "Cloud Provider",
		"Database", "Developer Tools", "Drivers and plugins", "Integration & Delivery", "Logging & Tracing",
		"Modernization & Migration", "Monitoring", "Networking", "OpenShift Optional", "Security", "Storage",
		"Streaming & Messaging", "Observability", "Other"}
	maturities   = []string{"planning", "pre-alpha", "alpha", "beta", "stable", "mature", "inactive", "deprecated"}
	iconTypes    = []string{"image/svg+xml", "image/png", "image/jpeg", "image/gif"}
	semverRegexp = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?$`)
)

type findings []Finding

func (fs *findings) errorf(check, format string, args ...any) {
	*fs = append(*fs, Finding{Check: check, Message: fmt.Sprintf(format, args...)})
}

func (fs *findings) warnf(check, format string, args ...any) {
	*fs = append(*fs, Finding{Warning: true, Check: check, Message: fmt.Sprintf(format, args...)})
}

// Validate runs every check on the bundle and returns what failed; an empty result is a valid
// bundle. The checks follow operator-sdk's bundle validators (object, CSV, CRD, annotations) and
// the operatorframework suite's optional ones (OperatorHub fields, good practices, alm-examples).
func (b *Bundle) Validate() []Finding {
	var fs findings
	b.checkCSV(&fs)
	b.checkIcon(&fs)
	b.checkInstallModes(&fs)
	crds := b.checkCRDs(&fs)
	b.checkDescriptors(&fs, crds)
	b.checkExamples(&fs, crds)
	b.checkRelatedImages(&fs)
	b.checkDeployment(&fs)
	b.checkPermissions(&fs)
	b.checkAnnotations(&fs)
	b.checkPrerequisites(&fs)
	b.checkManifests(&fs)
	return fs
}

func (b *Bundle) checkCSV(fs *findings) {
	const c = "csv"
	csv := b.CSV
	if csv.APIVersion != "operators.coreos.com/v1alpha1" || csv.Kind != "ClusterServiceVersion" {
		fs.errorf(c, "apiVersion/kind %s/%s", csv.APIVersion, csv.Kind)
	}
	if !semverRegexp.MatchString(csv.Spec.Version) {
		fs.errorf(c, "spec.version %q is not semver", csv.Spec.Version)
	}
	pkg := b.Annotations["operators.operatorframework.io.bundle.package.v1"]
	if want := pkg + ".v" + csv.Spec.Version; csv.Metadata.Name != want {
		fs.errorf(c, "metadata.name %q, want %q (<package>.v<version>)", csv.Metadata.Name, want)
	}
	for field, v := range map[string]string{
		"spec.displayName": csv.Spec.DisplayName, "spec.description": csv.Spec.Description,
		"spec.provider.name": csv.Spec.Provider.Name, "spec.maturity": csv.Spec.Maturity,
		"spec.minKubeVersion": csv.Spec.MinKubeVersion,
	} {
		if strings.TrimSpace(v) == "" {
			fs.errorf(c, "%s is empty", field)
		}
	}
	if v := csv.Spec.MinKubeVersion; v != "" && !semverRegexp.MatchString(v) {
		fs.errorf(c, "spec.minKubeVersion %q is not semver", v)
	}
	if csv.Spec.Maturity != "" && !slices.Contains(maturities, csv.Spec.Maturity) {
		fs.errorf(c, "spec.maturity %q is none of %v", csv.Spec.Maturity, maturities)
	}
	if len(csv.Spec.Keywords) == 0 {
		fs.errorf(c, "spec.keywords is empty")
	}
	if len(csv.Spec.Maintainers) == 0 {
		fs.errorf(c, "spec.maintainers is empty")
	}
	for _, m := range csv.Spec.Maintainers {
		if _, err := mail.ParseAddress(m.Email); m.Name == "" || err != nil {
			fs.errorf(c, "maintainer %q: name and a valid email needed (%v)", m.Name, err)
		}
	}
	if len(csv.Spec.Links) == 0 {
		fs.errorf(c, "spec.links is empty")
	}
	links := csv.Spec.Links
	if csv.Spec.Provider.URL != "" {
		links = append(slices.Clone(links), csv.Spec.Provider)
	}
	for _, l := range links {
		if u, err := url.Parse(l.URL); l.Name == "" || err != nil || u.Scheme != "https" || u.Host == "" {
			fs.errorf(c, "link %q: %q is no https URL", l.Name, l.URL)
		}
	}
	ann := csv.Metadata.Annotations
	if !slices.Contains(capabilityLevels, ann["capabilities"]) {
		fs.errorf(c, "annotation capabilities %q is none of %v", ann["capabilities"], capabilityLevels)
	}
	for _, cat := range strings.Split(ann["categories"], ",") {
		if !slices.Contains(categories, strings.TrimSpace(cat)) {
			fs.errorf(c, "annotation categories: %q is not an OperatorHub category", cat)
		}
	}
	// No createdAt: a date would change the bundle on every build, and `make verify` needs it stable.
	for _, k := range []string{"containerImage", "description", "repository", "support"} {
		if ann[k] == "" {
			fs.errorf(c, "annotation %s is empty", k)
		}
	}
	if len(csv.Spec.Description) < 200 {
		fs.warnf(c, "spec.description is %d characters: OperatorHub shows it as the long description", len(csv.Spec.Description))
	}
}

func (b *Bundle) checkIcon(fs *findings) {
	const c = "icon"
	if len(b.CSV.Spec.Icon) != 1 {
		fs.errorf(c, "%d icons, want one", len(b.CSV.Spec.Icon))
	}
	for _, icon := range b.CSV.Spec.Icon {
		if !slices.Contains(iconTypes, icon.MediaType) {
			fs.errorf(c, "mediatype %q is none of %v", icon.MediaType, iconTypes)
		}
		data, err := base64.StdEncoding.DecodeString(icon.Data)
		if err != nil || len(data) == 0 {
			fs.errorf(c, "base64data does not decode: %v", err)
			continue
		}
		if icon.MediaType == "image/svg+xml" {
			var root struct{ XMLName xml.Name }
			if err := xml.Unmarshal(data, &root); err != nil || root.XMLName.Local != "svg" {
				fs.errorf(c, "base64data is no SVG document (root %q, %v)", root.XMLName.Local, err)
			}
		}
	}
}

func (b *Bundle) checkInstallModes(fs *findings) {
	const c = "installModes"
	seen := map[string]bool{}
	supported := 0
	for _, m := range b.CSV.Spec.InstallModes {
		if !slices.Contains([]string{OwnNamespace, SingleNamespace, MultiNamespace, AllNamespaces}, m.Type) {
			fs.errorf(c, "unknown install mode %q", m.Type)
		}
		if seen[m.Type] {
			fs.errorf(c, "install mode %s listed twice", m.Type)
		}
		seen[m.Type] = true
		if m.Supported {
			supported++
		}
	}
	for _, t := range []string{OwnNamespace, SingleNamespace, MultiNamespace, AllNamespaces} {
		if !seen[t] {
			fs.errorf(c, "install mode %s not stated", t)
		}
	}
	if supported == 0 {
		fs.errorf(c, "no install mode supported")
	}
	// fleetgate watches Gateway API objects in every namespace and cluster-scoped kinds; it has no
	// way to honour an OperatorGroup's target namespaces, so only AllNamespaces may be offered.
	for _, m := range b.CSV.Spec.InstallModes {
		if m.Supported != (m.Type == AllNamespaces) {
			fs.errorf(c, "%s supported=%t: fleetgate watches all namespaces, so only AllNamespaces is", m.Type, m.Supported)
		}
	}
}

// checkCRDs matches owned CRD descriptions with the bundle's CRD files, by name, kind and version,
// and returns the CRDs by name.
func (b *Bundle) checkCRDs(fs *findings) map[string]*apiextensionsv1.CustomResourceDefinition {
	const c = "crds"
	byName := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for i := range b.CRDs {
		crd := &b.CRDs[i]
		byName[crd.Name] = crd
		if want := crd.Spec.Names.Plural + "." + crd.Spec.Group; crd.Name != want {
			fs.errorf(c, "CRD %s should be named %s", crd.Name, want)
		}
		if crd.Spec.Conversion != nil && crd.Spec.Conversion.Strategy == apiextensionsv1.WebhookConverter {
			fs.errorf(c, "CRD %s has a conversion webhook: upgrades through OLM break on those", crd.Name)
		}
		storage := 0
		for _, v := range crd.Spec.Versions {
			if v.Storage {
				storage++
			}
			if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
				fs.errorf(c, "CRD %s version %s has no schema", crd.Name, v.Name)
			}
		}
		if storage != 1 {
			fs.errorf(c, "CRD %s has %d storage versions", crd.Name, storage)
		}
	}
	owned := map[string]bool{}
	for _, o := range b.CSV.Spec.CustomResourceDefinitions.Owned {
		if owned[o.Name+"/"+o.Version] {
			fs.errorf(c, "owned CRD %s %s listed twice", o.Name, o.Version)
		}
		owned[o.Name+"/"+o.Version] = true
		crd := byName[o.Name]
		if crd == nil {
			fs.errorf(c, "owned CRD %s is not in the bundle", o.Name)
			continue
		}
		if o.Kind != crd.Spec.Names.Kind {
			fs.errorf(c, "owned CRD %s: kind %s, the CRD says %s", o.Name, o.Kind, crd.Spec.Names.Kind)
		}
		if !slices.ContainsFunc(crd.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool {
			return v.Name == o.Version && v.Served
		}) {
			fs.errorf(c, "owned CRD %s: version %s is not served by the CRD", o.Name, o.Version)
		}
		if o.DisplayName == "" || len(o.Description) < 20 {
			fs.errorf(c, "owned CRD %s needs a displayName and a description", o.Name)
		}
	}
	for _, crd := range b.CRDs {
		for _, v := range crd.Spec.Versions {
			if v.Served && !owned[crd.Name+"/"+v.Name] {
				fs.errorf(c, "CRD %s version %s is in the bundle but not owned by the CSV", crd.Name, v.Name)
			}
		}
	}
	return byName
}

// checkDescriptors: every spec/status descriptor names a field of the CRD's schema.
func (b *Bundle) checkDescriptors(fs *findings, crds map[string]*apiextensionsv1.CustomResourceDefinition) {
	const c = "descriptors"
	for _, o := range b.CSV.Spec.CustomResourceDefinitions.Owned {
		s := versionSchema(crds[o.Name], o.Version)
		if s == nil {
			continue
		}
		if len(o.SpecDescriptors) == 0 || len(o.StatusDescriptors) == 0 {
			fs.errorf(c, "%s has no spec or no status descriptors", o.Kind)
		}
		for root, ds := range map[string][]Descriptor{"spec": o.SpecDescriptors, "status": o.StatusDescriptors} {
			for _, d := range ds {
				if d.DisplayName == "" {
					fs.errorf(c, "%s %s.%s has no displayName", o.Kind, root, d.Path)
				}
				if !hasPath(s.Properties[root], d.Path) {
					fs.errorf(c, "%s %s descriptor %q names no field of the CRD", o.Kind, root, d.Path)
				}
				for _, x := range d.XDescriptors {
					if !strings.HasPrefix(x, "urn:alm:descriptor:") {
						fs.errorf(c, "%s %s.%s: x-descriptor %q is no urn:alm:descriptor", o.Kind, root, d.Path, x)
					}
				}
			}
		}
	}
}

func versionSchema(crd *apiextensionsv1.CustomResourceDefinition, version string) *apiextensionsv1.JSONSchemaProps {
	if crd == nil {
		return nil
	}
	for _, v := range crd.Spec.Versions {
		if v.Name == version && v.Schema != nil {
			return v.Schema.OpenAPIV3Schema
		}
	}
	return nil
}

// hasPath follows a descriptor path (a.b.c; list items are passed through) in a schema.
func hasPath(s apiextensionsv1.JSONSchemaProps, path string) bool {
	for _, part := range strings.Split(path, ".") {
		if s.Type == "array" && s.Items != nil && s.Items.Schema != nil {
			s = *s.Items.Schema
		}
		next, ok := s.Properties[part]
		if !ok {
			return false
		}
		s = next
	}
	return true
}

// checkExamples validates alm-examples as the API server would on create: defaulting, unknown
// fields (which the server would prune silently), the OpenAPI schema and the CEL rules.
func (b *Bundle) checkExamples(fs *findings, crds map[string]*apiextensionsv1.CustomResourceDefinition) {
	const c = "almExamples"
	var examples []map[string]any
	if err := json.Unmarshal([]byte(b.CSV.Metadata.Annotations["alm-examples"]), &examples); err != nil {
		fs.errorf(c, "alm-examples is no JSON list of objects: %v", err)
		return
	}
	byKind := map[schema.GroupVersionKind]*apiextensionsv1.CustomResourceDefinition{}
	for _, crd := range crds {
		for _, v := range crd.Spec.Versions {
			byKind[schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}] = crd
		}
	}
	covered := map[string]bool{}
	for i, ex := range examples {
		apiVersion, _ := ex["apiVersion"].(string)
		kind, _ := ex["kind"].(string)
		gv, err := schema.ParseGroupVersion(apiVersion)
		if err != nil {
			fs.errorf(c, "example %d: apiVersion %q: %v", i, apiVersion, err)
			continue
		}
		gvk := gv.WithKind(kind)
		crd := byKind[gvk]
		if crd == nil {
			fs.errorf(c, "example %d: %s is no owned CRD", i, gvk)
			continue
		}
		covered[crd.Name] = true
		if name, _, _ := unstructured.NestedString(ex, "metadata", "name"); name == "" {
			fs.errorf(c, "example %d (%s) has no metadata.name", i, kind)
		}
		for _, err := range validateObject(crd, gv.Version, ex) {
			fs.errorf(c, "example %d (%s): %v", i, kind, err)
		}
	}
	for _, o := range b.CSV.Spec.CustomResourceDefinitions.Owned {
		if !covered[o.Name] {
			fs.errorf(c, "owned CRD %s has no example", o.Name)
		}
	}
}

// validateObject runs an object through what kube-apiserver does to a custom resource on create.
func validateObject(crd *apiextensionsv1.CustomResourceDefinition, version string, obj map[string]any) []error {
	v1schema := versionSchema(crd, version)
	var internal apiextensions.JSONSchemaProps
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v1schema, &internal, nil); err != nil {
		return []error{fmt.Errorf("converting the schema: %w", err)}
	}
	structural, err := structuralschema.NewStructural(&internal)
	if err != nil {
		return []error{fmt.Errorf("the schema is not structural: %w", err)}
	}
	obj = deepCopyJSON(obj)
	var errs []error
	if unknown := pruning.PruneWithOptions(obj, structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true}); len(unknown) > 0 {
		errs = append(errs, fmt.Errorf("unknown fields the API server would drop: %v", unknown))
	}
	defaulting.Default(obj, structural)
	validator, _, err := apiservervalidation.NewSchemaValidator(&internal)
	if err != nil {
		return append(errs, fmt.Errorf("building the schema validator: %w", err))
	}
	for _, e := range apiservervalidation.ValidateCustomResource(nil, obj, validator) {
		errs = append(errs, e)
	}
	celErrs, _ := cel.NewValidator(structural, true, celconfig.PerCallLimit).
		Validate(context.Background(), field.NewPath(""), structural, obj, nil, celconfig.RuntimeCELCostBudget)
	for _, e := range celErrs {
		errs = append(errs, e)
	}
	return errs
}

func deepCopyJSON(o map[string]any) map[string]any {
	data, _ := json.Marshal(o)
	var out map[string]any
	_ = json.Unmarshal(data, &out)
	return out
}

func (b *Bundle) checkRelatedImages(fs *findings) {
	const c = "relatedImages"
	related := map[string]bool{}
	for _, r := range b.CSV.Spec.RelatedImages {
		if r.Name == "" || r.Image == "" {
			fs.errorf(c, "related image %+v needs a name and an image", r)
		}
		related[r.Image] = true
	}
	want := []string{b.CSV.Metadata.Annotations["containerImage"]}
	for _, d := range b.CSV.Spec.Install.Spec.Deployments {
		for _, ctr := range d.Spec.Template.Spec.Containers {
			want = append(want, ctr.Image)
			for _, e := range ctr.Env {
				if e.Name == "FLEETGATE_IMAGE" {
					want = append(want, e.Value)
				}
			}
		}
	}
	for _, img := range want {
		if !related[img] {
			fs.errorf(c, "image %q is not in relatedImages", img)
		}
	}
}

// checkDeployment: the operator's pods pass the restricted Pod Security Standard and have probes
// and resources.
func (b *Bundle) checkDeployment(fs *findings) {
	const c = "deployment"
	deps := b.CSV.Spec.Install.Spec.Deployments
	if b.CSV.Spec.Install.Strategy != "deployment" || len(deps) == 0 {
		fs.errorf(c, "install strategy %q with %d deployments", b.CSV.Spec.Install.Strategy, len(deps))
	}
	for _, d := range deps {
		pod := d.Spec.Template.Spec
		if d.Spec.Selector == nil || len(d.Spec.Selector.MatchLabels) == 0 {
			fs.errorf(c, "%s has no selector", d.Name)
			continue
		}
		for k, v := range d.Spec.Selector.MatchLabels {
			if d.Spec.Template.Labels[k] != v {
				fs.errorf(c, "%s: the selector's %s=%s is not on the pod template", d.Name, k, v)
			}
		}
		psc := pod.SecurityContext
		if psc == nil {
			psc = &corev1.PodSecurityContext{}
		}
		if pod.HostNetwork || pod.HostPID || pod.HostIPC {
			fs.errorf(c, "%s uses host namespaces", d.Name)
		}
		for i, ctr := range slices.Concat(pod.InitContainers, pod.Containers) {
			where := d.Name + "/" + ctr.Name
			sc := ctr.SecurityContext
			if sc == nil {
				sc = &corev1.SecurityContext{}
			}
			if !truthy(sc.RunAsNonRoot, psc.RunAsNonRoot) {
				fs.errorf(c, "%s: runAsNonRoot is not set (restricted PSS)", where)
			}
			if uid := firstInt(sc.RunAsUser, psc.RunAsUser); uid != nil && *uid == 0 {
				fs.errorf(c, "%s: runs as UID 0", where)
			}
			seccomp := sc.SeccompProfile
			if seccomp == nil {
				seccomp = psc.SeccompProfile
			}
			if seccomp == nil || (seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault && seccomp.Type != corev1.SeccompProfileTypeLocalhost) {
				fs.errorf(c, "%s: seccompProfile must be RuntimeDefault or Localhost (restricted PSS)", where)
			}
			if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
				fs.errorf(c, "%s: allowPrivilegeEscalation must be false (restricted PSS)", where)
			}
			if sc.Privileged != nil && *sc.Privileged {
				fs.errorf(c, "%s is privileged", where)
			}
			if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
				fs.errorf(c, "%s: capabilities must drop ALL (restricted PSS)", where)
			} else if len(sc.Capabilities.Add) > 0 && !slices.Equal(sc.Capabilities.Add, []corev1.Capability{"NET_BIND_SERVICE"}) {
				fs.errorf(c, "%s adds capabilities %v", where, sc.Capabilities.Add)
			}
			if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
				fs.errorf(c, "%s: readOnlyRootFilesystem is not set", where)
			}
			if ctr.Image == "" {
				fs.errorf(c, "%s has no image", where)
			}
			if i < len(pod.InitContainers) {
				continue
			}
			if ctr.LivenessProbe == nil || ctr.ReadinessProbe == nil {
				fs.errorf(c, "%s needs a liveness and a readiness probe", where)
			}
			if ctr.Resources.Requests.Cpu().IsZero() || ctr.Resources.Requests.Memory().IsZero() {
				fs.errorf(c, "%s: requests cpu and memory unset", where)
			}
			if ctr.Resources.Limits.Memory().IsZero() {
				fs.errorf(c, "%s: no memory limit", where)
			}
		}
	}
}

func truthy(ptrs ...*bool) bool {
	for _, p := range ptrs {
		if p != nil {
			return *p
		}
	}
	return false
}

func firstInt(ptrs ...*int64) *int64 {
	for _, p := range ptrs {
		if p != nil {
			return p
		}
	}
	return nil
}

func (b *Bundle) checkPermissions(fs *findings) {
	const c = "permissions"
	spec := b.CSV.Spec.Install.Spec
	accounts := map[string]bool{}
	for _, p := range slices.Concat(spec.ClusterPermissions, spec.Permissions) {
		accounts[p.ServiceAccountName] = true
		if len(p.Rules) == 0 {
			fs.errorf(c, "%s has an empty rule set", p.ServiceAccountName)
		}
		for _, r := range p.Rules {
			if slices.Contains(r.Verbs, "*") || slices.Contains(r.Resources, "*") || slices.Contains(r.APIGroups, "*") {
				fs.errorf(c, "%s has a wildcard rule %v", p.ServiceAccountName, r)
			}
		}
	}
	for _, d := range spec.Deployments {
		sa := d.Spec.Template.Spec.ServiceAccountName
		if sa == "" || !accounts[sa] {
			fs.errorf(c, "deployment %s runs as service account %q, which the CSV grants nothing", d.Name, sa)
		}
	}
}

func (b *Bundle) checkAnnotations(fs *findings) {
	const c = "annotations"
	a := b.Annotations
	for k, want := range map[string]string{
		"operators.operatorframework.io.bundle.mediatype.v1": "registry+v1",
		"operators.operatorframework.io.bundle.manifests.v1": "manifests/",
		"operators.operatorframework.io.bundle.metadata.v1":  "metadata/",
	} {
		if a[k] != want {
			fs.errorf(c, "%s = %q, want %q", k, a[k], want)
		}
	}
	if a["operators.operatorframework.io.bundle.package.v1"] == "" {
		fs.errorf(c, "no package name")
	}
	channels := strings.Split(a["operators.operatorframework.io.bundle.channels.v1"], ",")
	if def := a["operators.operatorframework.io.bundle.channel.default.v1"]; def == "" || !slices.Contains(channels, def) {
		fs.errorf(c, "default channel %q is not among the channels %v", def, channels)
	}
}

func (b *Bundle) checkPrerequisites(fs *findings) {
	for _, crd := range b.CRDs {
		if slices.Contains(prerequisiteGroups, crd.Spec.Group) {
			fs.errorf("prerequisites", "CRD %s belongs to the platform (Gateway API, MCS, external-dns), not to fleetgate: do not ship it", crd.Name)
		}
	}
	for _, r := range b.CSV.Spec.CustomResourceDefinitions.Required {
		fs.errorf("prerequisites", "required CRD %s: no OLM operator owns the Gateway API or MCS CRDs, so OLM would never resolve it", r.Name)
	}
}

func (b *Bundle) checkManifests(fs *findings) {
	for file, kind := range b.Files {
		if !slices.Contains(supportedKinds, kind) {
			fs.errorf("manifests", "%s holds a %s, which OLM does not install from a bundle", file, kind)
		}
	}
}
