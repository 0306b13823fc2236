package dns

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	if os.Getenv(envKillChild) != "" {
		os.Exit(runKillChild()) // the kill test's child (kill_test.go)
	}
	os.Exit(m.Run())
}
