package dns

import (
	"fmt"
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	if os.Getenv(envKillChild) != "" {
		os.Exit(runKillChild()) // the kill test's child (kill_test.go)
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	stop, err := startGoogleProxy() // google_test.go
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the Cloud DNS proxy:", err)
		return 1
	}
	defer stop()
	return m.Run()
}
