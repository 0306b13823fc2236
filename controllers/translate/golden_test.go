package translate

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

var update = flag.Bool("update", false, "rewrite testdata/*.out.yaml from the current output")

func readFixtures(t testing.TB) fixtures {
	t.Helper()
	crt, err := os.ReadFile(filepath.Join("testdata", "certs", "tls.crt"))
	if err != nil {
		t.Fatal(err)
	}
	key, err := os.ReadFile(filepath.Join("testdata", "certs", "tls.key"))
	if err != nil {
		t.Fatal(err)
	}
	return fixtures{crt: crt, key: key}
}

// renderResult marshals a result for a golden file, with the fixture PEMs replaced by their
// names so outputs stay readable.
func renderResult(res *Result, fx fixtures) ([]byte, error) {
	name := func(pem *[]byte) {
		if bytes.Equal(*pem, fx.crt) {
			*pem = []byte("fixture tls.crt")
		}
		if bytes.Equal(*pem, fx.key) {
			*pem = []byte("fixture tls.key")
		}
	}
	backends := func(bs []ir.Backend) {
		for i := range bs {
			if bs[i].TLS != nil {
				name(&bs[i].TLS.CACertPEM)
			}
		}
	}
	for i := range res.Configs {
		if c := res.Configs[i].BackendClientCertificate; c != nil {
			name(&c.CertPEM)
			name(&c.KeyPEM)
		}
		for j := range res.Configs[i].Listeners {
			l := &res.Configs[i].Listeners[j]
			if l.ClientValidation != nil {
				name(&l.ClientValidation.CACertPEM)
			}
			for _, vh := range l.VirtualHosts {
				for _, r := range vh.Routes {
					backends(r.Backends)
					for k := range r.Filters.Mirrors {
						backends([]ir.Backend{r.Filters.Mirrors[k].Backend})
					}
				}
			}
			for k := range l.Certificates {
				c := &l.Certificates[k]
				if bytes.Equal(c.CertPEM, fx.crt) {
					c.CertPEM = []byte("fixture tls.crt")
				}
				if bytes.Equal(c.KeyPEM, fx.key) {
					c.KeyPEM = []byte("fixture tls.key")
				}
			}
		}
	}
	return yaml.Marshal(res)
}

func TestGolden(t *testing.T) {
	fx := readFixtures(t)
	ins, err := filepath.Glob(filepath.Join("testdata", "*.in.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ins) == 0 {
		t.Fatal("no golden inputs")
	}
	for _, in := range ins {
		name := strings.TrimSuffix(filepath.Base(in), ".in.yaml")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			s, err := loadSnapshot(data, fx)
			if err != nil {
				t.Fatal(err)
			}
			var opts []Option
			if strings.HasPrefix(name, "caps-") {
				opts = append(opts, WithCatalog(testCatalog{}))
			}
			pass := Begin(s, opts...)
			// The controller publishes the early statuses before Finish: Finish must not change them.
			e := pass.Early()
			early, err := yaml.Marshal(Result{GatewayClasses: e.GatewayClasses, Routes: e.Routes, Policies: e.Policies})
			if err != nil {
				t.Fatal(err)
			}
			res := pass.Finish()
			if late, err := yaml.Marshal(Result{GatewayClasses: res.GatewayClasses, Routes: res.Routes, Policies: res.Policies}); err != nil {
				t.Fatal(err)
			} else if diff := cmp.Diff(string(early), string(late)); diff != "" {
				t.Errorf("Finish changed the early statuses (-early +final):\n%s", diff)
			}
			// The controller hands translation the informers' own objects (no copies), so it must
			// not write through them.
			pristine, err := loadSnapshot(data, fx)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(pristine, s); diff != "" {
				t.Errorf("Translate modified its input (-before +after):\n%s", diff)
			}
			for _, c := range res.Configs {
				if err := c.Validate(); err != nil {
					t.Errorf("config %s does not validate: %v", c.Gateway, err)
				}
			}
			got, err := renderResult(res, fx)
			if err != nil {
				t.Fatal(err)
			}
			out := strings.TrimSuffix(in, ".in.yaml") + ".out.yaml"
			if *update {
				if err := os.WriteFile(out, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(out)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("output differs from %s (-want +got):\n%s", out, diff)
			}
		})
	}
}
