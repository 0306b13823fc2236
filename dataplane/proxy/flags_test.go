package proxy

import (
	"flag"
	"io"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// limitOpts are the Options LimitFlags sets.
type limitOpts struct {
	BackendResponse, BodyIdle, WriteIdle time.Duration
	MaxConns, H2Resets                   int
	AllowCBC                             bool
}

func limitOptsOf(o *Options) limitOpts {
	return limitOpts{o.BackendResponseTimeout, o.RequestBodyIdleTimeout, o.ResponseWriteIdleTimeout,
		o.MaxConnectionsPerListener, o.HTTP2MaxResetsPerSecond, o.AllowCBCCipherSuites}
}

func TestLimitFlags(t *testing.T) {
	// The flags' defaults are the Options' own.
	var def Options
	def.defaults()
	for _, tc := range []struct {
		name string
		args []string
		want func(o *limitOpts)
	}{
		{name: "defaults", want: func(*limitOpts) {}},
		{
			name: "timeouts and cap",
			args: []string{"-backend-response-timeout=5s", "-request-body-idle-timeout=2s", "-response-write-idle-timeout=3s", "-max-connections-per-listener=7"},
			want: func(o *limitOpts) {
				o.BackendResponse, o.BodyIdle, o.WriteIdle, o.MaxConns = 5*time.Second, 2*time.Second, 3*time.Second, 7
			},
		},
		{
			name: "http2 and tls",
			args: []string{"-http2-max-resets-per-second=9", "-allow-cbc-cipher-suites"},
			want: func(o *limitOpts) { o.H2Resets, o.AllowCBC = 9, true },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got Options
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			got.LimitFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			want := limitOptsOf(&def)
			tc.want(&want)
			if diff := cmp.Diff(want, limitOptsOf(&got)); diff != "" {
				t.Errorf("options (-want +got):\n%s", diff)
			}
		})
	}
}
