package gcp

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	if endpoint := os.Getenv(envKillChild); endpoint != "" {
		os.Exit(runKillChild(endpoint)) // the kill test's child (kill_test.go)
	}
	os.Exit(m.Run())
}
