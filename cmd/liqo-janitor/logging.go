package main

import (
	"github.com/go-logr/logr"
	uberzap "go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// newLogger is controller-runtime's zap logger as the --zap-* flags set it, but without its sampling: in
// production mode controller-runtime keeps, of each message, the first 100 in a second and then every
// 100th, which would drop most "Released object" lines of a large clean-up, and the log is where every
// release is recorded (janitor rule 8). controller-runtime samples only a logger that is not enabled at
// debug level -2, so the core is built enabled there too and the level the flags ask for is applied as a
// filter in front of it.
func newLogger(o zap.Options) logr.Logger {
	asked := o.Level
	if asked == nil {
		asked = zapcore.InfoLevel
	}
	o.Level = uberzap.LevelEnablerFunc(func(l zapcore.Level) bool { return l >= -2 || asked.Enabled(l) })
	o.ZapOpts = append(o.ZapOpts, uberzap.WrapCore(func(core zapcore.Core) zapcore.Core {
		filtered, err := zapcore.NewIncreaseLevelCore(core, asked)
		if err != nil {
			return core // cannot happen: the core is enabled wherever asked is
		}
		return filtered
	}))
	return zap.New(zap.UseFlagOptions(&o))
}
