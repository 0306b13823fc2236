package gcp

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protojson"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/dataplane/ir"
	"github.com/fleetgate/fleetgate/providers"
)

var update = flag.Bool("update", false, "rewrite testdata/*.out.yaml from the current output")

const testFleet = "fleet-1"

// goldenInput is one testdata/*.in.yaml: a class's options, the members' placement and a
// gateway's model with its routing.
type goldenInput struct {
	GCP     v1alpha1.GCPOptions `json:"gcp"`
	Members map[string]Member   `json:"members,omitempty"`
	// Probes are backends' readiness probes by backend name.
	Probes    map[string]providers.HTTPProbe `json:"probes,omitempty"`
	Gateway   string                         `json:"gateway"`
	Clusters  []string                       `json:"clusters"`
	Addresses []providers.Address            `json:"addresses,omitempty"`
	Labels    map[string]string              `json:"labels,omitempty"`
	Routing   ir.Config                      `json:"routing"`
}

// goldenResource is a Resource as the golden files show it: the message as the REST API's JSON.
type goldenResource struct {
	Kind      string            `json:"kind"`
	Scope     string            `json:"scope"`
	ID        string            `json:"id"`
	Name      string            `json:"name"`
	Spec      json.RawMessage   `json:"spec"`
	Endpoints []json.RawMessage `json:"endpoints,omitempty"`
}

type goldenOutput struct {
	Error     string           `json:"error,omitempty"`
	Zones     []string         `json:"zones,omitempty"`
	Notes     []string         `json:"notes,omitempty"`
	Resources []goldenResource `json:"resources,omitempty"`
}

// TestGolden builds the Stack of every testdata/*.in.yaml and compares it with its .out.yaml
// (go test ./providers/gcp -run TestGolden -update rewrites them; review the diff).
func TestGolden(t *testing.T) {
	ins, err := filepath.Glob("testdata/*.in.yaml")
	if err != nil || len(ins) == 0 {
		t.Fatalf("no golden inputs: %v", err)
	}
	for _, in := range ins {
		t.Run(strings.TrimSuffix(filepath.Base(in), ".in.yaml"), func(t *testing.T) {
			raw, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			var gi goldenInput
			if err := yaml.UnmarshalStrict(raw, &gi); err != nil {
				t.Fatalf("%s: %v", in, err)
			}
			got := renderGolden(t, &gi)
			out := strings.TrimSuffix(in, ".in.yaml") + ".out.yaml"
			if *update {
				if err := os.WriteFile(out, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(out)
			if err != nil {
				t.Fatalf("%v (run with -update)", err)
			}
			if diff := gocmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("%s (-want +got):\n%s", out, diff)
			}
		})
	}
}

func renderGolden(t *testing.T, gi *goldenInput) []byte {
	t.Helper()
	o, err := decodeOptions(mustJSON(t, gi.GCP), v1alpha1.GCPOptions{})
	var out goldenOutput
	if err != nil {
		out.Error = err.Error()
	} else {
		gi.Routing.Gateway = gi.Gateway
		lb := &providers.LoadBalancer{Gateway: gi.Gateway, Namespace: "infra", Name: "web", Clusters: gi.Clusters,
			Addresses: gi.Addresses, Labels: gi.Labels, Routing: &gi.Routing}
		s, err := Build(lb, o, Env{Members: gi.Members, Probes: gi.Probes}, testFleet)
		if err != nil {
			out.Error = err.Error()
		} else {
			out.Zones, out.Notes = s.Zones, s.Notes
			for _, r := range s.Resources {
				spec, err := protojson.Marshal(r.Msg)
				if err != nil {
					t.Fatal(err)
				}
				gr := goldenResource{Kind: r.Kind.String(), Scope: r.Scope.String(), ID: r.ID, Name: r.Name, Spec: spec}
				for _, e := range r.Endpoints {
					b, err := protojson.Marshal(e)
					if err != nil {
						t.Fatal(err)
					}
					gr.Endpoints = append(gr.Endpoints, b)
				}
				out.Resources = append(out.Resources, gr)
			}
		}
	}
	b, err := yaml.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
