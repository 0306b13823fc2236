package proxyproc

import (
	"io"

	"github.com/go-logr/logr"
	"github.com/go-logr/zapr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// newLogger logs JSON lines to w through zap, as the operator does, showing V(n) messages up to
// verbosity. It is not sampled: a proxy logs little besides errors, and none of them may go missing.
// sync flushes it.
func newLogger(w io.Writer, verbosity int) (log logr.Logger, sync func() error) {
	core := zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.Lock(zapcore.AddSync(w)),
		zap.NewAtomicLevelAt(zapcore.Level(-verbosity)))
	z := zap.New(core)
	return zapr.NewLogger(z), z.Sync
}
