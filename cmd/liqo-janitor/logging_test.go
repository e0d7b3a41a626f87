package main

import (
	"bytes"
	"strings"
	"testing"

	"go.uber.org/zap/zapcore"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// Every release is a line of the log, however many go in a second (controller-runtime's production
// logger would keep the first 100 of a message a second and every 100th after), and the asked level
// still holds.
func TestEveryReleaseStaysInTheLog(t *testing.T) {
	for name, tc := range map[string]struct {
		level        zapcore.LevelEnabler
		info, debugs int
	}{
		"default level":         {level: nil, info: 5000, debugs: 0},
		"--zap-log-level=2":     {level: zapcore.Level(-2), info: 5000, debugs: 5000},
		"--zap-log-level=error": {level: zapcore.ErrorLevel, info: 0, debugs: 0},
	} {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			log := newLogger(zap.Options{Level: tc.level, DestWriter: &out})
			for range 5000 {
				log.Info("Released object")
				log.V(1).Info("Releasing failed, will retry")
			}
			if n := strings.Count(out.String(), `"Released object"`); n != tc.info {
				t.Errorf("%d of 5000 info lines logged, want %d", n, tc.info)
			}
			if n := strings.Count(out.String(), `"Releasing failed, will retry"`); n != tc.debugs {
				t.Errorf("%d of 5000 V(1) lines logged, want %d", n, tc.debugs)
			}
		})
	}
}
