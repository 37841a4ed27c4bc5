package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunRejectsBadInputsBeforeBuilding: each case fails fast, before any go
// build, and writes nothing.
func TestRunRejectsBadInputsBeforeBuilding(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"no version", nil, "empty version"},
		{"version that is not semver", []string{"-version", "nightly"}, "neither semver"},
		{"build date that is not RFC 3339", []string{"-version", "v1.0.0", "-build-date", "yesterday"}, "RFC 3339"},
		{"manifest named for another plugin", []string{"-version", "v1.0.0", "-manifest", "krew/kubectl-assisted.yaml"}, "must be assisted.yaml"},
		{"bad platform", []string{"-version", "v1.0.0", "-platforms", "linux"}, "want OS/ARCH"},
		{"no krew platform", []string{"-version", "v1.0.0", "-platforms", "linux/s390x"}, "none is one that krew supports"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := t.TempDir()
			args := append([]string{"-out", filepath.Join(out, "dist")}, tt.args...)
			if !strings.Contains(strings.Join(args, " "), "-manifest") {
				args = append(args, "-manifest", filepath.Join(out, "assisted.yaml"))
			}
			err := run(context.Background(), args, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("run(%v) = %v, want an error containing %q", tt.args, err, tt.wantErr)
			}
			if left, _ := os.ReadDir(out); len(left) != 0 {
				t.Fatalf("a rejected run wrote %v", left)
			}
		})
	}
}
