package main

import (
	"runtime"
	"testing"
)

func TestBuildVersionsPreferTheStampedOnes(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		version, revision string
		wantVersion       string
		wantRevision      string
	}{
		"stamped by make build or the image": {version: "v0.2.0", revision: "0123abc", wantVersion: "v0.2.0", wantRevision: "0123abc"},
		// a test binary records no module version and no VCS revision
		"unstamped, nothing recorded": {wantVersion: "unknown", wantRevision: "unknown"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			v, r, goVersion := buildVersions(tc.version, tc.revision)
			if v != tc.wantVersion || r != tc.wantRevision || goVersion != runtime.Version() {
				t.Errorf("buildVersions(%q, %q) = %q, %q, %q; want %q, %q, %q", tc.version, tc.revision, v, r, goVersion,
					tc.wantVersion, tc.wantRevision, runtime.Version())
			}
		})
	}
}
