package plugin

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/kubectl-assisted/kubectl-assisted/bundle"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/files"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/pg"
	"github.com/kubectl-assisted/kubectl-assisted/plugin/clierr"
	"github.com/kubectl-assisted/kubectl-assisted/restore"
	"github.com/kubectl-assisted/kubectl-assisted/restore/job"
	"github.com/kubectl-assisted/kubectl-assisted/restore/journal"
	"github.com/kubectl-assisted/kubectl-assisted/restore/kubekeys"
	"github.com/kubectl-assisted/kubectl-assisted/restore/resources"
)

func TestParseNamespaceMapping(t *testing.T) {
	tests := []struct {
		name    string
		in      []string
		want    map[string]string
		wantErr bool
	}{
		{"repeated and comma-separated", []string{"a=b,c=d", " e = f "}, map[string]string{"a": "b", "c": "d", "e": "f"}, false},
		{"same twice", []string{"a=b", "a=b"}, map[string]string{"a": "b"}, false},
		{"conflict", []string{"a=b", "a=c"}, nil, true},
		{"no equals", []string{"a"}, nil, true},
		{"empty side", []string{"=b"}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseNamespaceMapping(tt.in)
			if (err != nil) != tt.wantErr || (!tt.wantErr && !reflect.DeepEqual(got, tt.want)) {
				t.Fatalf("got %v, %v; want %v (err %v)", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

// TestRestoreErrorExitCodes pins the documented numbers (docs/exit-codes.md).
func TestRestoreErrorExitCodes(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("context: %w", err) }
	tests := []struct {
		name string
		err  error
		want int
	}{
		{"options", &restore.OptionsError{Err: errors.New("x")}, 2},
		{"bundle lacks a layer", &restore.BundleContentError{Err: errors.New("x")}, 2},
		{"integrity", wrap(&bundle.IntegrityError{Blob: "database"}), 3},
		{"decrypt", wrap(&bundle.DecryptError{Err: bundle.ErrWrongIdentity}), 4},
		{"tampered ciphertext", wrap(&bundle.IntegrityError{Blob: "files", Reason: bundle.ReasonTampered}), 3},
		{"missing blob", wrap(&bundle.MissingBlobError{Blob: "files layer", Err: errors.New("not found")}), 8},
		{"inconsistent versions", wrap(&bundle.VersionMismatchError{Manifest: "1.0.1", Metadata: "1.0.0"}), 5},
		{"unsupported version", wrap(&bundle.UnsupportedVersionError{Version: "2.0.0"}), 5},
		{"unsafe entry", wrap(&files.UnsafeEntryError{Name: "x", Reason: files.ReasonSparse}), 7},
		{"target cannot hold it", wrap(&files.TargetError{Dir: "/d", Reason: "path"}), 7},
		{"target too small", wrap(&files.TargetError{Dir: "/d", Reason: "space", NoSpace: true}), 1},
		{"database not empty", wrap(&pg.TargetNotEmptyError{Objects: []string{"table public.x"}}), 20},
		{"data dir not empty", &restore.DataDirNotEmptyError{Dir: "/d"}, 20},
		{"conflict", wrap(&resources.ConflictError{}), 21},
		{"journal of other options", &journal.FingerprintMismatchError{Name: "j"}, 21},
		{"kube keys", wrap(&journal.PhaseError{Phase: "database", Err: &kubekeys.MismatchError{Problems: []string{"p"}}}), 22},
		{"drift", wrap(&restore.DriftError{}), 23},
		{"apply", &journal.PhaseError{Phase: "resources", Err: &resources.ApplyError{Err: errors.New("x")}}, 24},
		{"unreachable", &resources.UnreachableError{Err: errors.New("x")}, 25},
		{"missing CRDs", wrap(&resources.MissingAPIError{}), 25},
		{"older PostgreSQL", wrap(&pg.OlderTargetError{SourceVersion: "16.4", SourceVersionNum: 160004, TargetVersion: "13.22", TargetVersionNum: 130022, Err: errors.New("x")}), 26},
		{"wrong PostgreSQL major", wrap(fmt.Errorf("%w; nothing was changed", &pg.WrongMajorError{TargetVersion: "16.4", Want: 12})), 27},
		{"anything else", errors.New("x"), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := clierr.ExitCode(restoreError(tt.err)); got != tt.want {
				t.Fatalf("exit code %d, want %d", got, tt.want)
			}
		})
	}
}

// The restore Job fails at once (podFailurePolicy FailJob) on exactly the
// restore's refusals that another pod cannot change; restore/job cannot
// import the code table, so its list is held to it here.
func TestRestoreJobPermanentExitCodes(t *testing.T) {
	want := []int32{clierr.ExitUsage, clierr.ExitBundleIntegrity, clierr.ExitBundleDecrypt, clierr.ExitBundleVersion, clierr.ExitBundleFormat,
		clierr.ExitBundleUnsafeEntry, clierr.ExitBundleMissingBlob, clierr.ExitBundleSignature, clierr.ExitRestoreTargetNotEmpty,
		clierr.ExitRestoreConflict, clierr.ExitRestoreKubeKeys, clierr.ExitRestoreDrift, clierr.ExitRestoreOlderPostgres, clierr.ExitRestoreWrongPostgres}
	if !slices.Equal(job.PermanentExitCodes, want) {
		t.Fatalf("job.PermanentExitCodes = %v, want %v", job.PermanentExitCodes, want)
	}
}
