package translate

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzTranslate feeds arbitrary YAML (seeded with every golden input) through the snapshot
// loader and Translate: translation must never panic, and every config it emits must validate.
func FuzzTranslate(f *testing.F) {
	fx := readFixtures(f)
	ins, _ := filepath.Glob(filepath.Join("testdata", "*.in.yaml"))
	for _, in := range ins {
		data, err := os.ReadFile(in)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := loadSnapshot(data, fx)
		if err != nil {
			return
		}
		res := Translate(s)
		for _, c := range res.Configs {
			if err := c.Validate(); err != nil {
				t.Fatalf("config %s does not validate: %v", c.Gateway, err)
			}
		}
		// Setting Programmed must not panic either.
		for _, c := range res.Configs {
			res.SetProgrammed(c.Gateway, Programmed{Ready: true})
		}
	})
}
