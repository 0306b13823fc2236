package main

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSoftMemoryLimit(t *testing.T) {
	const mib = 1 << 20
	for _, tt := range []struct {
		name    string
		env     map[string]string
		fileRSS int64
		want    int64
		wantOK  bool
		wantErr bool
	}{
		{name: "no limit given"},
		{name: "512Mi container, 60 MiB of the binary", env: map[string]string{"FLEETGATE_MEMORY_LIMIT": "536870912"}, fileRSS: 60 * mib,
			want: 536870912 - 60*mib - 536870912/20, wantOK: true},
		{name: "300Mi container", env: map[string]string{"FLEETGATE_MEMORY_LIMIT": "314572800"}, fileRSS: 60 * mib,
			want: 314572800 - 60*mib - 314572800/20, wantOK: true},
		{name: "never below half", env: map[string]string{"FLEETGATE_MEMORY_LIMIT": "104857600"}, fileRSS: 60 * mib, want: 52428800, wantOK: true},
		{name: "RssFile unknown", env: map[string]string{"FLEETGATE_MEMORY_LIMIT": "536870912"}, want: 536870912 - 536870912/20, wantOK: true},
		{name: "GOMEMLIMIT wins", env: map[string]string{"GOMEMLIMIT": "300MiB", "FLEETGATE_MEMORY_LIMIT": "536870912"}},
		{name: "zero", env: map[string]string{"FLEETGATE_MEMORY_LIMIT": "0"}},
		{name: "a quantity, not bytes", env: map[string]string{"FLEETGATE_MEMORY_LIMIT": "512Mi"}, wantErr: true},
		{name: "negative", env: map[string]string{"FLEETGATE_MEMORY_LIMIT": "-1"}, wantErr: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, ok, err := softMemoryLimit(func(k string) string { return tt.env[k] }, tt.fileRSS)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if diff := cmp.Diff([2]any{tt.want, tt.wantOK}, [2]any{got, ok}); diff != "" {
				t.Errorf("limit, ok (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRSSFile(t *testing.T) {
	status := "Name:\tfleetgate\nVmRSS:\t   80748 kB\nRssAnon:\t   19328 kB\nRssFile:\t   61420 kB\nRssShmem:\t       0 kB\n"
	if got, want := rssFile(strings.NewReader(status)), int64(61420)<<10; got != want {
		t.Errorf("rssFile = %d, want %d", got, want)
	}
	if got := rssFile(strings.NewReader("Name:\tx\n")); got != 0 {
		t.Errorf("rssFile without the line = %d, want 0", got)
	}
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skip("no /proc")
	}
	defer f.Close()
	if got := rssFile(f); got <= 0 {
		t.Errorf("rssFile of this test binary = %d, want its resident file pages", got)
	}
}
