package install

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/fleetgate/fleetgate/bundle"
)

// permission is one verb on one resource (with its subresource, "gateways/status") of one API
// group: the unit both RBAC rules and audit events can be reduced to.
type permission struct {
	Group, Resource, Verb string
}

func (p permission) String() string {
	return fmt.Sprintf("%s %s", p.Verb, groupResource(p.Group, p.Resource))
}

func groupResource(group, resource string) string {
	if group == "" {
		return resource
	}
	return resource + "." + group
}

// auditEvent is the part of an audit.k8s.io/v1 Event the report needs.
type auditEvent struct {
	Stage string `json:"stage"`
	Verb  string `json:"verb"`
	URI   string `json:"requestURI"`
	User  struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		APIGroup    string `json:"apiGroup"`
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

// usage is what user did according to an audit log: the permissions its allowed requests used, and
// its denied requests.
type usage struct {
	used   map[permission]bool
	denied []string
}

func readAudit(path, user string) (usage, error) {
	f, err := os.Open(path)
	if err != nil {
		return usage{}, err
	}
	defer f.Close()
	u := usage{used: map[permission]bool{}}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e auditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return usage{}, fmt.Errorf("audit log %s: %w", path, err)
		}
		if e.User.Username != user || e.Stage != "ResponseComplete" && e.Stage != "ResponseStarted" {
			continue
		}
		if e.ResponseStatus != nil && e.ResponseStatus.Code == 403 {
			what := e.URI
			if r := e.ObjectRef; r != nil {
				what = fmt.Sprintf("%s %s in namespace %q (%s)", e.Verb, groupResource(r.APIGroup, joinSub(r.Resource, r.Subresource)), r.Namespace, e.URI)
			}
			u.denied = append(u.denied, what)
			continue
		}
		if r := e.ObjectRef; r != nil {
			u.used[permission{r.APIGroup, joinSub(r.Resource, r.Subresource), e.Verb}] = true
		}
	}
	return u, sc.Err()
}

func joinSub(resource, sub string) string {
	if sub == "" {
		return resource
	}
	return resource + "/" + sub
}

// granted expands RBAC rules into permissions.
func granted(rules []rbacv1.PolicyRule) map[permission]bool {
	g := map[permission]bool{}
	for _, r := range rules {
		for _, group := range r.APIGroups {
			for _, res := range r.Resources {
				for _, verb := range r.Verbs {
					g[permission{group, res, verb}] = true
				}
			}
		}
	}
	return g
}

// unused lists the granted permissions nothing used, sorted.
func unused(granted, used map[permission]bool) []permission {
	var out []permission
	for p := range granted {
		if !used[p] {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b permission) int {
		return strings.Compare(a.Group+"\x00"+a.Resource+"\x00"+a.Verb, b.Group+"\x00"+b.Resource+"\x00"+b.Verb)
	})
	return out
}

// sorted lists the permissions of a set in order.
func sorted(set map[permission]bool) []permission { return unused(set, nil) }

// rbacUsage reads the audit log for user, fails the test on any denied request, logs the granted
// permissions nothing used, and returns the report for rbac-usage.md.
func rbacUsage(t *testing.T, auditLog, user string, spec bundle.InstallStrategy) string {
	t.Helper()
	u, err := readAudit(auditLog, user)
	must(t, err)
	if len(u.used) == 0 {
		t.Fatalf("the audit log holds no request of %s: is the operator running with its token?", user)
	}
	for _, d := range u.denied {
		t.Errorf("denied (403) to %s: %s", user, d)
	}
	var rules []rbacv1.PolicyRule
	for _, p := range append(slices.Clone(spec.ClusterPermissions), spec.Permissions...) {
		rules = append(rules, p.Rules...)
	}
	g := granted(rules)
	left := unused(g, u.used)
	var b strings.Builder
	fmt.Fprintf(&b, "# RBAC of the bundle: granted and used\n\n")
	fmt.Fprintf(&b, "Written by `go test ./tests/install -run TestInstallWithBundleRBAC -update` from the audit log of\n")
	fmt.Fprintf(&b, "a real kube-apiserver while the operator ran with only the bundle's ServiceAccount token\n")
	fmt.Fprintf(&b, "(`%s`) and reconciled the samples and the conformance-style set.\n\n", user)
	fmt.Fprintf(&b, "- denied requests (403): %d\n- permissions granted: %d\n- granted and used: %d\n- granted, never used in this run: %d\n\n",
		len(u.denied), len(g), len(g)-len(left), len(left))
	fmt.Fprintf(&b, "## Granted, never used in this run, and why each is kept\n\n| permission | needed for |\n|---|---|\n")
	var logLines []string
	for _, p := range left {
		why := whyUnused(p)
		fmt.Fprintf(&b, "| `%s` | %s |\n", p, why)
		logLines = append(logLines, fmt.Sprintf("  %-55s %s", p, why))
	}
	fmt.Fprintf(&b, "\n## Granted and used\n\n")
	for _, p := range sorted(g) {
		if u.used[p] {
			fmt.Fprintf(&b, "- `%s`\n", p)
		}
	}
	var extra []permission
	for p := range u.used {
		if !g[p] {
			extra = append(extra, p)
		}
	}
	if len(extra) > 0 {
		fmt.Fprintf(&b, "\n## Used, allowed by Kubernetes' default roles rather than the bundle\n\n")
		for _, p := range sorted(toSet(extra)) {
			fmt.Fprintf(&b, "- `%s`\n", p)
		}
	}
	t.Logf("granted but never used by %s (%d of %d):\n%s", user, len(left), len(g), strings.Join(logLines, "\n"))
	return b.String()
}

func toSet(ps []permission) map[permission]bool {
	s := map[permission]bool{}
	for _, p := range ps {
		s[p] = true
	}
	return s
}

// whyUnused says which path needs a grant this run left unused; each was checked against the code
// when the grants were narrowed (see the RBAC markers in controllers/). A grant it cannot explain
// is a candidate for removal.
func whyUnused(p permission) string {
	switch {
	case p.Verb == "list":
		return "informers start with a streaming WatchList on this API server (audited as watch); list is their fallback where WatchList is off"
	case p == permission{"", "pods", "get"}:
		return "AWS provider only: target health checks follow a backend pod's readiness probe"
	case p == permission{"externaldns.k8s.io", "dnsendpoints", "get"}:
		return "the DNS publisher lists DNSEndpoints' metadata and reads in full only one changed by someone else since it last wrote or read it (external-dns's status, a hand edit); whether this run had one depends on timing"
	case p.Resource == "dnsendpoints" && (p.Verb == "create" || p.Verb == "update" || p.Verb == "delete"):
		return "the DNS publisher creates a gateway's DNSEndpoint once it has an address, updates it when its records change and deletes it when the gateway goes; this run waits for a create and a delete, and updates only when a gateway's records change after they were first written"
	case p.Resource == "configmaps" && (p.Verb == "create" || p.Verb == "update"):
		return "the embedded DNS publishers write their ledger (ConfigMap fleetgate-dns-published in the operator's namespace) when a GatewayClassConfig with spec.dns publishes; this run has none"
	case p == permission{"", "services/status", "patch"}:
		return "local mode only: the local provider patches a LoadBalancer Service's status"
	case p.Verb == "create" && slices.Contains([]string{"services", "serviceaccounts", "deployments"}, p.Resource):
		return "server-side apply writes these: an apply that creates is authorized as create too, with no audit event of its own"
	case p.Verb == "patch" && p.Resource == "events":
		return "event recorders patch a repeated Event (count, series) instead of creating another"
	case p == permission{"gateway.networking.k8s.io", "referencepolicies", "watch"}:
		return "the legacy ReferencePolicy is watched only when its CRD is installed (not part of Gateway API v1.6)"
	case p.Verb == "get" && !strings.Contains(p.Resource, "/"):
		return "reads come from the informer cache; get goes with list and watch, which disclose the same objects"
	}
	return "**not explained: review, and remove it if nothing needs it**"
}

// TestUnusedGrants checks the reduction of rules and audit events to permissions on a small log.
func TestUnusedGrants(t *testing.T) {
	const user = "system:serviceaccount:ns:sa"
	log := strings.Join([]string{
		`{"stage":"ResponseComplete","verb":"list","requestURI":"/api/v1/secrets","user":{"username":"` + user + `"},"objectRef":{"resource":"secrets"},"responseStatus":{"code":200}}`,
		`{"stage":"ResponseStarted","verb":"watch","requestURI":"/api/v1/secrets?watch=true","user":{"username":"` + user + `"},"objectRef":{"resource":"secrets"},"responseStatus":{"code":200}}`,
		`{"stage":"ResponseComplete","verb":"patch","requestURI":"/apis/gateway.networking.k8s.io/v1/namespaces/a/gateways/g/status","user":{"username":"` + user + `"},"objectRef":{"apiGroup":"gateway.networking.k8s.io","resource":"gateways","subresource":"status","namespace":"a"},"responseStatus":{"code":200}}`,
		`{"stage":"ResponseComplete","verb":"delete","requestURI":"/apis/apps/v1/namespaces/a/deployments/d","user":{"username":"` + user + `"},"objectRef":{"apiGroup":"apps","resource":"deployments","namespace":"a"},"responseStatus":{"code":403}}`,
		`{"stage":"ResponseComplete","verb":"get","requestURI":"/api/v1/pods","user":{"username":"someone-else"},"objectRef":{"resource":"pods"},"responseStatus":{"code":200}}`,
	}, "\n")
	path := t.TempDir() + "/audit.log"
	must(t, os.WriteFile(path, []byte(log), 0o600))
	u, err := readAudit(path, user)
	must(t, err)
	g := granted([]rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"secrets", "pods"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"gateway.networking.k8s.io"}, Resources: []string{"gateways/status"}, Verbs: []string{"patch", "update"}},
	})
	var got []string
	for _, p := range unused(g, u.used) {
		got = append(got, p.String())
	}
	for _, c := range []struct {
		name      string
		got, want []string
	}{
		{"unused", got, []string{"get pods", "list pods", "watch pods", "get secrets", "update gateways/status.gateway.networking.k8s.io"}},
		{"denied", u.denied, []string{`delete deployments.apps in namespace "a" (/apis/apps/v1/namespaces/a/deployments/d)`}},
	} {
		if diff := cmp.Diff(c.want, c.got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
	}
}
