package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
)

func TestContainerMemoryLimit(t *testing.T) {
	for _, tt := range []struct {
		name    string
		env     map[string]string
		want    int64
		wantOK  bool
		wantErr bool
	}{
		{name: "no limit given"},
		{name: "512Mi container", env: map[string]string{"FLEETGATE_MEMORY_LIMIT": "536870912"}, want: 536870912, wantOK: true},
		{name: "GOMEMLIMIT wins", env: map[string]string{"GOMEMLIMIT": "300MiB", "FLEETGATE_MEMORY_LIMIT": "536870912"}},
		{name: "zero", env: map[string]string{"FLEETGATE_MEMORY_LIMIT": "0"}},
		{name: "a quantity, not bytes", env: map[string]string{"FLEETGATE_MEMORY_LIMIT": "512Mi"}, wantErr: true},
		{name: "negative", env: map[string]string{"FLEETGATE_MEMORY_LIMIT": "-1"}, wantErr: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, ok, err := containerMemoryLimit(func(k string) string { return tt.env[k] })
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if diff := cmp.Diff([2]any{tt.want, tt.wantOK}, [2]any{got, ok}); diff != "" {
				t.Errorf("limit, ok (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSoftMemoryLimit(t *testing.T) {
	for _, tt := range []struct {
		name           string
		limit, fileRSS int64
		want           int64
	}{
		{name: "512Mi container, 60 MiB of the binary", limit: 512 * mib, fileRSS: 60 * mib, want: 512*mib - 60*mib - 512*mib/20},
		{name: "300Mi container", limit: 300 * mib, fileRSS: 60 * mib, want: 300*mib - 60*mib - 300*mib/20},
		{name: "never below half", limit: 100 * mib, fileRSS: 60 * mib, want: 50 * mib},
		{name: "RssFile unknown", limit: 512 * mib, want: 512*mib - 512*mib/20},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := softMemoryLimit(tt.limit, tt.fileRSS); got != tt.want {
				t.Errorf("softMemoryLimit(%d, %d) = %d, want %d", tt.limit, tt.fileRSS, got, tt.want)
			}
		})
	}
}

// The limit follows the binary's resident pages down as they grow, and neither flaps when the
// kernel reclaims some nor moves for less than a MiB.
func TestFollowBinaryPages(t *testing.T) {
	const limit = 300 * mib
	reads := []int64{46 * mib, 46 * mib, 60 * mib, 60*mib + 512<<10, 55 * mib, 80 * mib, 0}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var set []int64
	read := func() int64 {
		if len(reads) == 0 {
			return 0 // a tick may win the race with the cancelled context once
		}
		f := reads[0]
		if reads = reads[1:]; len(reads) == 0 {
			cancel()
		}
		return f
	}
	followBinaryPages(ctx, limit, time.Millisecond, read, func(n int64) int64 { set = append(set, n); return 0 }, logr.Discard())
	want := []int64{softMemoryLimit(limit, 46*mib), softMemoryLimit(limit, 60*mib), softMemoryLimit(limit, 80*mib)}
	if diff := cmp.Diff(want, set); diff != "" {
		t.Errorf("limits set (-want +got):\n%s", diff)
	}
	if len(reads) != 0 {
		t.Errorf("returned with %d reads left, want it to run until its context ends", len(reads))
	}
}

// Without RssFile the limit is still set, at the container's less 5%.
func TestFollowBinaryPagesUnknown(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	var set []int64
	followBinaryPages(ctx, 300*mib, time.Millisecond, func() int64 { cancel(); return 0 }, func(n int64) int64 { set = append(set, n); return 0 }, logr.Discard())
	if diff := cmp.Diff([]int64{300*mib - 300*mib/20}, set); diff != "" {
		t.Errorf("limits set (-want +got):\n%s", diff)
	}
}

const mib = 1 << 20

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
