package translate

import (
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

// TestPurity keeps translation free of clients, HTTP and cloud SDKs, as the architecture requires.
func TestPurity(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	cmd := exec.Command("go", "list", "-deps", "-json", ".")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	// Anywhere in the dependency graph: clients and cloud SDKs.
	forbidden := []string{
		"sigs.k8s.io/controller-runtime/",
		"k8s.io/client-go/",
		"github.com/aws/",
		"cloud.google.com/",
		"google.golang.org/api/",
	}
	// In fleetgate's own packages: no HTTP. (k8s.io/apimachinery's meta/v1, which every API type
	// needs, links net/http for its error helpers; that cannot be avoided and is never called.)
	ownForbidden := []string{"net/http"}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	n := 0
	for {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		n++
		for _, f := range forbidden {
			if p.ImportPath == strings.TrimSuffix(f, "/") || strings.HasPrefix(p.ImportPath, f) {
				t.Errorf("controllers/translate depends on %s", p.ImportPath)
			}
		}
		if !strings.HasPrefix(p.ImportPath, "github.com/fleetgate/fleetgate/") {
			continue
		}
		for _, imp := range p.Imports {
			for _, f := range ownForbidden {
				if imp == f || strings.HasPrefix(imp, f+"/") {
					t.Errorf("%s imports %s", p.ImportPath, imp)
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("go list returned no packages")
	}
}
