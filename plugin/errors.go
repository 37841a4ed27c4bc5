package plugin

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kubectl-assisted/kubectl-assisted/bundle"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/files"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/pg"
	bresources "github.com/kubectl-assisted/kubectl-assisted/bundle/resources"
	"github.com/kubectl-assisted/kubectl-assisted/day2/clusterinfo"
	"github.com/kubectl-assisted/kubectl-assisted/day2/monitor"
	"github.com/kubectl-assisted/kubectl-assisted/day2/nodeimage"
	"github.com/kubectl-assisted/kubectl-assisted/plugin/clierr"
	"github.com/kubectl-assisted/kubectl-assisted/restore"
	"github.com/kubectl-assisted/kubectl-assisted/restore/journal"
	"github.com/kubectl-assisted/kubectl-assisted/restore/kubekeys"
	"github.com/kubectl-assisted/kubectl-assisted/restore/migrate"
	"github.com/kubectl-assisted/kubectl-assisted/restore/resources"
	"github.com/kubectl-assisted/kubectl-assisted/restore/waitfor"
)

// The engines type their failures (bundle.IntegrityError,
// resources.ConflictError, migrate.StepError, ...); this file maps each
// family to one clear message, the exit code of the one table
// (plugin/clierr/codes.go, docs/exit-codes.md) and what to do next. A
// command's Run returns its engine's error through its family's mapper.

// usageErr marks err as a usage error of cmd (exit code 2, pointer to
// --help): for what Run's first I/O finds wrong in what the flags name (a
// file that does not parse), where the options' own usage helper is not
// at hand.
func usageErr(cmd *cobra.Command, err error) error { return clierr.Usage(cmd, err) }

// bundleError maps a bundle failure to one clear message, an exit code per
// kind and what to do next.
func bundleError(err error) error {
	var ie *bundle.IntegrityError
	var de *bundle.DecryptError
	var ve *bundle.UnsupportedVersionError
	var ue *files.UnsafeEntryError
	var fe *bundle.FormatError
	var te *files.TarError
	var re *bresources.FormatError
	var me *bundle.MissingBlobError
	var vm *bundle.VersionMismatchError
	var tg *files.TargetError
	if mapped, ok := signatureError(err); ok {
		return mapped
	}
	switch {
	case errors.As(err, &me):
		return clierr.New(err, "Push or copy the bundle again with all its blobs, then verify.", ExitBundleMissingBlob)
	case errors.As(err, &ie):
		return clierr.New(err, "The stored bundle is damaged or was tampered with: copy or push it again from a good source, then verify.", ExitBundleIntegrity)
	case errors.As(err, &de):
		return clierr.New(err, "Pass --identity with the age identity file of a recipient given at creation ('bundle inspect' lists the recipients' fingerprints).", ExitBundleDecrypt)
	case errors.As(err, &ve):
		return clierr.New(err, "", ExitBundleVersion)
	case errors.As(err, &vm):
		return clierr.New(err, "The bundle was edited after it was created; nothing was written.", ExitBundleVersion)
	case errors.Is(err, pg.ErrUnsafeSQL):
		return clierr.New(err, "The bundle was not made by kubectl-assisted or was tampered with; nothing from it was run or written.", ExitBundleUnsafeEntry)
	case errors.As(err, &ue):
		return clierr.New(err, "The bundle was not made by kubectl-assisted or was tampered with; nothing was written.", ExitBundleUnsafeEntry)
	case errors.As(err, &tg) && tg.NoSpace:
		return clierr.New(err, "Free space on the target (or give it a larger volume) and run the same command again; nothing was written.", clierr.ExitError)
	case errors.As(err, &tg):
		return clierr.New(err, "Restore onto a filesystem that can hold it (a shorter directory path, a filesystem with larger extended attributes); nothing was written.", ExitBundleUnsafeEntry)
	case errors.As(err, &fe), errors.As(err, &te), errors.As(err, &re):
		return clierr.New(err, "", ExitBundleFormat)
	}
	return err
}

// signatureError maps a *bundle.SignatureError to exit code 9 with what to do.
func signatureError(err error) (error, bool) {
	var se *bundle.SignatureError
	if !errors.As(err, &se) {
		return err, false
	}
	hint := "The bundle's origin cannot be checked: anyone who can push to its tag could have made it. " +
		"Sign it when creating it (bundle create --signing-key), or pass --allow-unsigned if you trust where it comes from."
	switch se.Reason {
	case bundle.ReasonNoSigner:
		hint = "Pass --signer with the public key of the key that signed the bundle (its fingerprint is one of those found), or --allow-unsigned."
	case bundle.ReasonUntrusted, bundle.ReasonInvalid:
		hint = "Nothing was read from the bundle. It was not signed by a --signer key: it may have been replaced. Check the --signer files, or create and sign the bundle again."
	}
	return clierr.New(err, hint, ExitBundleSignature), true
}

// restoreError maps a restore failure to one clear message, an exit code per
// kind and what to do next.
func restoreError(err error) error {
	var oe *restore.OptionsError
	var bc *restore.BundleContentError
	var conflict *resources.ConflictError
	var fp *journal.FingerprintMismatchError
	var mismatch *kubekeys.MismatchError
	var drift *restore.DriftError
	var apply *resources.ApplyError
	var unreachable *resources.UnreachableError
	var missing *resources.MissingAPIError
	switch {
	case errors.As(err, &oe), errors.As(err, &bc):
		return clierr.New(err, "See 'restore --help' for the flags and what each needs; nothing was changed.", clierr.ExitUsage)
	case errors.Is(err, restore.ErrTargetNotEmpty), errors.Is(err, pg.ErrTargetNotEmpty):
		return clierr.New(err, "Restore into an empty database and data directory, or pass --replace to replace what they hold.", clierr.ExitRestoreTargetNotEmpty)
	case errors.As(err, &conflict):
		return clierr.New(err, "", clierr.ExitRestoreConflict)
	case errors.As(err, &fp):
		return clierr.New(err, "", clierr.ExitRestoreConflict)
	case errors.As(err, &mismatch):
		return clierr.New(err, "The bundle's CRs and database rows do not describe the same clusters; re-create the bundle from one node 0, or use --recreate-resources.", clierr.ExitRestoreKubeKeys)
	case errors.As(err, &drift):
		return clierr.New(err, "", clierr.ExitRestoreDrift)
	case errors.As(err, &apply):
		return clierr.New(err, "Fix the cause and run the same command again: the restore resumes where it stopped.", clierr.ExitRestoreApply)
	case errors.As(err, &unreachable):
		return clierr.New(err, "Check --kubeconfig and --context, and that cluster 0's API server answers from here; then run the same command again.", clierr.ExitRestoreCluster)
	case errors.As(err, &missing):
		return clierr.New(err, "", clierr.ExitRestoreCluster)
	case errors.Is(err, pg.ErrWrongMajor):
		return clierr.New(err, "Restore into a database of the major cluster 0's assisted-service runs (its operator's DATABASE_IMAGE); migrate's restore Job does this by itself.", clierr.ExitRestoreWrongPostgres)
	case errors.Is(err, pg.ErrOlderTarget):
		return clierr.New(err, "Restore into a database on the bundle's PostgreSQL major or a newer one (docs/postgresql.md lists which release runs which).", clierr.ExitRestoreOlderPostgres)
	}
	if mapped := bundleError(err); mapped != err {
		return mapped
	}
	var pe *journal.PhaseError
	if errors.As(err, &pe) {
		return clierr.New(err, "Fix the cause and run the same command again: the restore resumes where it stopped.", clierr.ExitError)
	}
	return err
}

// migrateError maps the engine's errors to exit codes: 10 + the failed
// step's number, with what to do next; 2 for options that contradict.
func migrateError(err error) error {
	var oe *migrate.OptionsError
	if errors.As(err, &oe) {
		return clierr.New(err, "", clierr.ExitUsage)
	}
	var se *migrate.StepError
	if !errors.As(err, &se) {
		return err
	}
	rec := migrate.Hint(err)
	if rec == "" {
		// What the bundle or restore engine's own failure means.
		mapped := bundleError(se.Err)
		if se.Step == migrate.StepRestore {
			mapped = restoreError(se.Err)
		}
		var ce *clierr.Error
		if errors.As(mapped, &ce) {
			rec = ce.Recommendation
		}
	}
	if rec == "" {
		rec = "Fix the cause and run the same command again: it continues at this step."
	}
	return clierr.New(err, rec, clierr.ExitStepBase+se.Number)
}

// waitForError maps a wait for the restore receipt that ended without it.
func waitForError(err error) error {
	var failed *waitfor.RestoreFailedError
	var other *waitfor.OtherBundleError
	var inc *waitfor.IncompleteReceiptError
	switch {
	case errors.As(err, &failed):
		return clierr.New(err, "Fix the cause, then rerun the same restore (or migrate): it resumes where it stopped.", clierr.ExitWaitRestoreFailed)
	case errors.As(err, &other), errors.As(err, &inc):
		return clierr.New(err, "Check that node 0 and cluster 0 agree on the bundle: `kubectl assisted bundle inspect REF` prints its digest.", clierr.ExitWaitOtherBundle)
	case errors.Is(err, waitfor.ErrTimeout):
		return clierr.New(err, "Look at the restore on cluster 0 (its Job or command output); run wait-for again with a longer --timeout.", clierr.ExitTimeout)
	}
	return err
}

// createError adds what to do next to the errors users can fix.
func createError(err error) error {
	var ve *nodeimage.ValidationError
	var re *clusterinfo.RequiredError
	switch {
	case errors.As(err, &ve):
		return clierr.New(fmt.Errorf("nodes-config is not valid for this cluster: %w", ve.Problems), "Fix the problems above; nothing was written.", clierr.ExitError)
	case errors.As(err, &re):
		return clierr.New(err, "Ask a cluster administrator for the access named above, or build offline with --cluster-profile.", clierr.ExitError)
	}
	return err
}

// monitorExitCodes are the exit codes of `add-nodes monitor`
// (docs/exit-codes.md): 0 when every host became a Ready node, otherwise
// what held the worst host back.
var monitorExitCodes = map[monitor.Outcome]int{
	monitor.OutcomeAllReady:           0,
	monitor.OutcomeTimeout:            clierr.ExitTimeout,
	monitor.OutcomeValidationsFailing: clierr.ExitMonitorValidationsFailing,
	monitor.OutcomeCSRBlocked:         clierr.ExitMonitorCSRBlocked,
	monitor.OutcomeInstallFailed:      clierr.ExitMonitorInstallFailed,
	monitor.OutcomeInterrupted:        clierr.ExitInterrupted,
}
