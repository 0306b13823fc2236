package controllers

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestNewLogger checks which verbosities each --log-level enables (zap's debug is logr's V(1)) and
// that bad flag values are refused.
func TestNewLogger(t *testing.T) {
	type enabled struct{ Info, Debug bool }
	tests := []struct {
		level, format string
		want          enabled
		wantErr       bool
	}{
		{level: "debug", format: "json", want: enabled{Info: true, Debug: true}},
		{level: "info", format: "json", want: enabled{Info: true}},
		{level: "info", format: "console", want: enabled{Info: true}},
		{level: "error", format: "console", want: enabled{}},
		{level: "loud", format: "json", wantErr: true},
		{level: "info", format: "xml", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.level+"/"+tt.format, func(t *testing.T) {
			log, err := NewLogger(tt.level, tt.format)
			if (err != nil) != tt.wantErr {
				t.Fatalf("NewLogger error = %v, want error %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			got := enabled{Info: log.V(0).Enabled(), Debug: log.V(1).Enabled()}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("enabled (-want +got):\n%s", d)
			}
		})
	}
}
