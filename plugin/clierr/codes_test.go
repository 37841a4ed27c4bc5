package clierr

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// TestExitCodesPinned holds every exit code to the number docs/exit-codes.md
// documents. The numbers are literals: scripts depend on them, so a change
// here is a breaking change and must be one on purpose.
func TestExitCodesPinned(t *testing.T) {
	pinned := []struct {
		name string
		got  int
		want int
	}{
		{"ExitOK", ExitOK, 0},
		{"ExitError", ExitError, 1},
		{"ExitUsage", ExitUsage, 2},
		{"ExitBundleIntegrity", ExitBundleIntegrity, 3},
		{"ExitBundleDecrypt", ExitBundleDecrypt, 4},
		{"ExitBundleVersion", ExitBundleVersion, 5},
		{"ExitBundleFormat", ExitBundleFormat, 6},
		{"ExitBundleUnsafeEntry", ExitBundleUnsafeEntry, 7},
		{"ExitBundleMissingBlob", ExitBundleMissingBlob, 8},
		{"ExitBundleSignature", ExitBundleSignature, 9},
		{"ExitStepBase", ExitStepBase, 10},
		{"ExitMigratePreflight", ExitMigratePreflight, 11},
		{"ExitMigrateBundle", ExitMigrateBundle, 12},
		{"ExitMigrateRestore", ExitMigrateRestore, 13},
		{"ExitMigrateWait", ExitMigrateWait, 14},
		{"ExitMigrateService", ExitMigrateService, 15},
		{"ExitMigrateSwitchover", ExitMigrateSwitchover, 16},
		{"ExitRestoreTargetNotEmpty", ExitRestoreTargetNotEmpty, 20},
		{"ExitRestoreConflict", ExitRestoreConflict, 21},
		{"ExitRestoreKubeKeys", ExitRestoreKubeKeys, 22},
		{"ExitRestoreDrift", ExitRestoreDrift, 23},
		{"ExitRestoreApply", ExitRestoreApply, 24},
		{"ExitRestoreCluster", ExitRestoreCluster, 25},
		{"ExitRestoreOlderPostgres", ExitRestoreOlderPostgres, 26},
		{"ExitRestoreWrongPostgres", ExitRestoreWrongPostgres, 27},
		{"ExitTimeout", ExitTimeout, 30},
		{"ExitWaitRestoreFailed", ExitWaitRestoreFailed, 31},
		{"ExitWaitOtherBundle", ExitWaitOtherBundle, 32},
		{"ExitMonitorValidationsFailing", ExitMonitorValidationsFailing, 33},
		{"ExitMonitorCSRBlocked", ExitMonitorCSRBlocked, 34},
		{"ExitMonitorInstallFailed", ExitMonitorInstallFailed, 35},
		{"ExitInterrupted", ExitInterrupted, 130},
	}
	for _, p := range pinned {
		if p.got != p.want {
			t.Errorf("%s = %d, documented as %d", p.name, p.got, p.want)
		}
	}
	want := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 14, 15, 16, 20, 21, 22, 23, 24, 25, 26, 27, 30, 31, 32, 33, 34, 35, 130}
	if len(Codes) != len(want) {
		t.Fatalf("the table has %d codes, want %d", len(Codes), len(want))
	}
	for i, c := range Codes {
		if c.Code != want[i] {
			t.Errorf("row %d is code %d, want %d (one row per code, in order)", i, c.Code, want[i])
		}
		if c.Meaning == "" || len(c.Commands) == 0 {
			t.Errorf("code %d: no meaning or no commands", c.Code)
		}
	}
}

// TestExitCodesDocumented checks that docs/exit-codes.md has a table row for
// every code in Codes, and no row for a code the table lacks.
func TestExitCodesDocumented(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "exit-codes.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile(`(?m)^\| (\d+) \|`)
	documented := map[int]bool{}
	for _, m := range row.FindAllStringSubmatch(string(data), -1) {
		n, _ := strconv.Atoi(m[1])
		if documented[n] {
			t.Errorf("docs/exit-codes.md: code %d has two rows", n)
		}
		documented[n] = true
	}
	defined := map[int]bool{}
	for _, c := range Codes {
		defined[c.Code] = true
		if !documented[c.Code] {
			t.Errorf("docs/exit-codes.md: no row for code %d (%s)", c.Code, c.Meaning)
		}
	}
	for n := range documented {
		if !defined[n] {
			t.Errorf("docs/exit-codes.md documents code %d, which clierr.Codes does not define", n)
		}
	}
}

func TestExitCode(t *testing.T) {
	if got := ExitCode(nil); got != 0 {
		t.Errorf("nil: %d, want 0", got)
	}
	if got := ExitCode(errors.New("x")); got != 1 {
		t.Errorf("plain error: %d, want 1", got)
	}
	if got := ExitCode(New(errors.New("x"), "", 0)); got != 1 {
		t.Errorf("code 0: %d, want 1", got)
	}
	if got := ExitCode(Silent(30)); got != 30 {
		t.Errorf("silent 30: %d", got)
	}
}
