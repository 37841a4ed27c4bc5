package restore

import (
	"errors"
	"fmt"
	"strings"

	"github.com/kubectl-assisted/kubectl-assisted/restore/recreate"
)

// The errors Run returns are typed so that callers branch with errors.As
// (the CLI maps each to an exit code). Besides the ones below, Run passes
// through, wrapped with context:
//
//   - bundle: *bundle.IntegrityError, *bundle.DecryptError,
//     *bundle.UnsupportedVersionError, *bundle.FormatError,
//     *files.UnsafeEntryError (the bundle is damaged, undecryptable or not one);
//   - database: *pg.TargetNotEmptyError (errors.Is pg.ErrTargetNotEmpty and
//     ErrTargetNotEmpty), *pg.OlderTargetError (errors.Is pg.ErrOlderTarget: an
//     older PostgreSQL major that refuses the bundle's schema),
//     pg.ErrChecksumMismatch, pg.ErrCorruptStream;
//   - kube keys: *kubekeys.MismatchError;
//   - resources: *resources.ConflictError, *resources.MissingAPIError,
//     *resources.UnreachableError, *resources.ApplyError,
//     *resources.UnknownKindsError;
//   - journal: *journal.FingerprintMismatchError, *journal.PhaseError
//     (wrapping the phase's own error).
//
// Every error that stops a restore before its first write says "nothing was
// changed"; none quotes a password, token or Secret data.

// ErrTargetNotEmpty is matched (errors.Is) by a refusal to restore into a
// database or data directory that already holds something.
var ErrTargetNotEmpty = errors.New("restore target is not empty")

// OptionsError is an invalid combination of options (a usage error).
type OptionsError struct{ Err error }

func (e *OptionsError) Error() string { return e.Err.Error() }
func (e *OptionsError) Unwrap() error { return e.Err }

// DataDirNotEmptyError refuses a data directory that already holds files.
type DataDirNotEmptyError struct {
	Dir     string
	Entries []string // a few of them
	More    int
}

func (e *DataDirNotEmptyError) Error() string {
	list := strings.Join(e.Entries, ", ")
	if e.More > 0 {
		list += fmt.Sprintf(" and %d more", e.More)
	}
	return fmt.Sprintf("data directory %s is not empty (it holds %s); restore only into an empty one, or pass --replace to replace its content; nothing was changed", e.Dir, list)
}

// Is makes errors.Is(err, ErrTargetNotEmpty) true.
func (e *DataDirNotEmptyError) Is(target error) bool { return target == ErrTargetNotEmpty }

// DriftError refuses to apply re-created resources that disagree with the
// restored rows: once assisted-service starts, its controllers would push
// every difference into the database (or unbind hosts). The database
// transaction was rolled back: nothing was changed.
type DriftError struct{ Differences []recreate.Difference }

func (e *DriftError) Error() string {
	const shown = 5
	var lines []string
	for i, d := range e.Differences {
		if i == shown {
			lines = append(lines, fmt.Sprintf("and %d more", len(e.Differences)-shown))
			break
		}
		lines = append(lines, d.String())
	}
	return fmt.Sprintf("%d field(s) of the re-created resources disagree with the database: %s; nothing was changed (see them all with --diff, or pass --accept-drift)",
		len(e.Differences), strings.Join(lines, "; "))
}

// BundleContentError is a bundle that lacks what the restore was asked to do
// (no database layer, no files layer).
type BundleContentError struct{ Err error }

func (e *BundleContentError) Error() string { return e.Err.Error() }
func (e *BundleContentError) Unwrap() error { return e.Err }

// errRollback ends the database transaction of a dry run or a drift check
// after its checks, without committing.
var errRollback = errors.New("dry run: roll back")
