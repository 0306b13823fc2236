package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/fleetgate/fleetgate"

// listedPackage is what `go list -json` says of one package.
type listedPackage struct {
	ImportPath string
	Dir        string
	Imports    []string
	Deps       []string
	GoFiles    []string
}

// importRule is one "never" edge of ARCHITECTURE.md: no package matching from may import a package
// matching to (directly, or through any dependency when transitive is set).
type importRule struct {
	why        string
	from       func(pkg string) bool
	to         func(imp string) bool
	transitive bool
}

func ours(rel string) func(string) bool {
	return func(p string) bool { return p == module+"/"+rel || strings.HasPrefix(p, module+"/"+rel+"/") }
}

func exactly(rel string) func(string) bool {
	return func(p string) bool { return p == module+"/"+rel }
}

func prefixes(ps ...string) func(string) bool {
	return func(p string) bool {
		return slices.ContainsFunc(ps, func(pre string) bool { return p == pre || strings.HasPrefix(p, pre+"/") })
	}
}

func anyOf(fs ...func(string) bool) func(string) bool {
	return func(p string) bool { return slices.ContainsFunc(fs, func(f func(string) bool) bool { return f(p) }) }
}

// concreteProvider matches the packages of one provider each (not the contract, not the shared suite).
func concreteProvider(p string) bool {
	rest, ok := strings.CutPrefix(p, module+"/providers/")
	return ok && !strings.HasPrefix(rest, "providertest")
}

// cloudSDK matches the cloud SDKs: only providers may talk to a cloud.
var cloudSDK = prefixes("github.com/aws/aws-sdk-go-v2", "github.com/aws/smithy-go", "cloud.google.com/go",
	"google.golang.org/api")

// kubeClient matches what reaches an API server.
var kubeClient = prefixes("sigs.k8s.io/controller-runtime", "k8s.io/client-go")

var importRules = []importRule{
	{why: "providers never import controllers", from: ours("providers"), to: ours("controllers"), transitive: true},
	{why: "the dataplane imports neither controllers nor providers", from: ours("dataplane"),
		to: anyOf(ours("controllers"), ours("providers")), transitive: true},
	{why: "dataplane/ir is the controller↔proxy contract: it imports none of ours and no Kubernetes API",
		from: exactly("dataplane/ir"), to: anyOf(prefixes(module), prefixes("k8s.io", "sigs.k8s.io")), transitive: true},
	{why: "translation is pure: no client, no network, no cloud SDK", from: ours("controllers/translate"),
		to: anyOf(kubeClient, cloudSDK, anyOf(prefixes("net/http", "os/exec"), func(p string) bool { return p == "net" })), transitive: false},
	{why: "translation is pure: no client or cloud SDK, not even through a dependency",
		from: ours("controllers/translate"), to: anyOf(kubeClient, cloudSDK), transitive: true},
	// Not transitive: external-dns's endpoint package brings client-go's scheme along.
	{why: "DNS records are computed purely: no client, no network", from: ours("controllers/records"),
		to: anyOf(kubeClient, cloudSDK, anyOf(prefixes("net/http", "os/exec"), func(p string) bool { return p == "net" })), transitive: false},
	{why: "only main wires concrete providers", from: anyOf(ours("controllers"), ours("dataplane"), ours("api"),
		ours("providers/providertest"), func(p string) bool { return p == module+"/providers" }),
		to: concreteProvider, transitive: true},
	{why: "cloud SDKs live in providers only", from: anyOf(ours("controllers"), ours("dataplane"), ours("api")),
		to: cloudSDK, transitive: true},
	{why: "our API types import none of our packages", from: ours("api"), to: prefixes(module), transitive: true},
	{why: "snapshot and fleet import only our API", from: anyOf(ours("controllers/snapshot"), ours("controllers/fleet")),
		to: anyOf(ours("controllers"), ours("providers"), ours("dataplane")), transitive: true},
}

// TestArchitectureImports fails when a package takes an import ARCHITECTURE.md forbids.
func TestArchitectureImports(t *testing.T) {
	pkgs := listPackages(t)
	var violations []string
	for _, p := range pkgs {
		for _, r := range importRules {
			if !r.from(p.ImportPath) {
				continue
			}
			imports := p.Imports
			if r.transitive {
				imports = p.Deps
			}
			for _, imp := range imports {
				if r.to(imp) {
					violations = append(violations, fmt.Sprintf("%s imports %s: %s", p.ImportPath, imp, r.why))
				}
			}
		}
	}
	for _, v := range violations {
		t.Error(v)
	}
}

// TestImportRulesCatchViolations checks that each rule can fail, on made-up packages, so a typo in a
// matcher cannot turn a rule off silently.
func TestImportRulesCatchViolations(t *testing.T) {
	cases := []struct{ from, to string }{
		{module + "/providers/aws", module + "/controllers"},
		{module + "/dataplane/proxy", module + "/providers"},
		{module + "/dataplane/ir", module + "/api/v1alpha1"},
		{module + "/controllers/translate", "net/http"},
		{module + "/controllers/translate", "sigs.k8s.io/controller-runtime/pkg/client"},
		{module + "/controllers", module + "/providers/incluster"},
		{module + "/controllers", "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"},
		{module + "/api/v1alpha1", module + "/providers"},
		{module + "/controllers/fleet", module + "/controllers/translate"},
	}
	for _, c := range cases {
		caught := slices.ContainsFunc(importRules, func(r importRule) bool { return r.from(c.from) && r.to(c.to) })
		if !caught {
			t.Errorf("no rule forbids %s → %s", c.from, c.to)
		}
	}
	for _, ok := range []struct{ from, to string }{
		{module, module + "/providers/incluster"},
		{module + "/providers/incluster", module + "/providers"},
		{module + "/controllers", module + "/providers"},
		{module + "/controllers/translate", module + "/providers"},
	} {
		if slices.ContainsFunc(importRules, func(r importRule) bool { return r.from(ok.from) && r.to(ok.to) }) {
			t.Errorf("a rule forbids the allowed edge %s → %s", ok.from, ok.to)
		}
	}
}

// TestNoHandRolledPointerHelpers: k8s.io/utils/ptr has To, Deref and Equal; a generic func taking a T
// and returning its address is a copy of ptr.To.
func TestNoHandRolledPointerHelpers(t *testing.T) {
	fset := token.NewFileSet()
	for _, p := range listPackages(t) {
		for _, name := range p.GoFiles {
			path := filepath.Join(p.Dir, name)
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatalf("parsing %s: %v", path, err)
			}
			for _, d := range f.Decls {
				fn, ok := d.(*ast.FuncDecl)
				if ok && fn.Recv == nil && isAddressOf(fn) {
					t.Errorf("%s: %s returns the address of its argument: use k8s.io/utils/ptr.To", fset.Position(fn.Pos()), fn.Name.Name)
				}
			}
		}
	}
}

// isAddressOf matches `func f[T any](v T) *T { return &v }`.
func isAddressOf(fn *ast.FuncDecl) bool {
	if fn.Type.Params == nil || len(fn.Type.Params.List) != 1 || len(fn.Type.Params.List[0].Names) != 1 ||
		fn.Body == nil || len(fn.Body.List) != 1 {
		return false
	}
	ret, ok := fn.Body.List[0].(*ast.ReturnStmt)
	if !ok || len(ret.Results) != 1 {
		return false
	}
	u, ok := ret.Results[0].(*ast.UnaryExpr)
	if !ok || u.Op != token.AND {
		return false
	}
	id, ok := u.X.(*ast.Ident)
	return ok && id.Name == fn.Type.Params.List[0].Names[0].Name
}

func listPackages(t *testing.T) []listedPackage {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Dir,Imports,Deps,GoFiles", "./...")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []listedPackage
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decoding go list: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list found %d packages: is the test running at the module root?", len(pkgs))
	}
	return pkgs
}
