package clierr

// The exit codes of every command, one table: a number means one thing whichever
// command returns it. docs/exit-codes.md lists them with what to do; codes_test.go
// pins the numbers. A new code takes an unused number and a row in Codes.
const (
	ExitOK    = 0 // success
	ExitError = 1 // the command failed for a reason without a code of its own
	ExitUsage = 2 // bad flags or arguments; nothing was done

	// Reading a bundle (bundle verify, inspect, extract; restore; migrate's restore).
	ExitBundleIntegrity   = 3 // a blob's digest or size does not match, or its ciphertext fails authentication
	ExitBundleDecrypt     = 4 // no identity, or the wrong one
	ExitBundleVersion     = 5 // a format major version this plugin does not read, or inconsistent versions
	ExitBundleFormat      = 6 // not a bundle, or content that does not decode
	ExitBundleUnsafeEntry = 7 // unsafe content, or content the target filesystem cannot hold
	ExitBundleMissingBlob = 8 // a blob the manifest references is not stored
	ExitBundleSignature   = 9 // not signed by a --signer key

	// migrate: ExitStepBase + the number of the step that failed.
	ExitStepBase          = 10
	ExitMigratePreflight  = 11
	ExitMigrateBundle     = 12
	ExitMigrateRestore    = 13
	ExitMigrateWait       = 14
	ExitMigrateService    = 15
	ExitMigrateSwitchover = 16

	// restore.
	ExitRestoreTargetNotEmpty = 20 // database or data directory not empty
	ExitRestoreConflict       = 21 // objects on cluster 0 conflict; journal of other options
	ExitRestoreKubeKeys       = 22 // CRs do not match the database rows
	ExitRestoreDrift          = 23 // re-created resources disagree with the rows
	ExitRestoreApply          = 24 // an object failed to apply
	ExitRestoreCluster        = 25 // cluster 0 unreachable or without the CRDs
	ExitRestoreOlderPostgres  = 26 // target PostgreSQL older than the source's and refuses its schema
	ExitRestoreWrongPostgres  = 27 // target PostgreSQL not of the major that will run the data (--database-major)

	// Waiting: wait-for restore-complete and add-nodes monitor.
	ExitTimeout                   = 30 // --timeout ran out before the condition held
	ExitWaitRestoreFailed         = 31 // wait-for: the restore recorded a failed phase
	ExitWaitOtherBundle           = 32 // wait-for: a receipt for another bundle, or an incomplete one
	ExitMonitorValidationsFailing = 33 // monitor: a host's assisted-service validations kept failing
	ExitMonitorCSRBlocked         = 34 // monitor: a host waits for a CSR that was not approved
	ExitMonitorInstallFailed      = 35 // monitor: assisted-service reports a failed installation

	ExitInterrupted = 130 // interrupted (SIGINT), as shells report 128+2
)

// Code is one row of the exit-code table.
type Code struct {
	Code     int
	Meaning  string
	Commands []string
}

// Codes is the exit-code table, in numeric order: what each code means and
// which commands return it. docs/exit-codes.md is its long form.
var Codes = []Code{
	{ExitOK, "success", []string{"every command"}},
	{ExitError, "failed for a reason without a code of its own (network, permissions, space); restore --diff: differences found", []string{"every command"}},
	{ExitUsage, "usage: bad flags or arguments, nothing was done", []string{"every command"}},
	{ExitBundleIntegrity, "a bundle blob was altered or truncated, or its ciphertext fails authentication", []string{"bundle verify", "bundle inspect", "bundle extract", "restore"}},
	{ExitBundleDecrypt, "decryption failed: no or wrong --identity", []string{"bundle verify", "bundle extract", "restore"}},
	{ExitBundleVersion, "unsupported bundle format version, or the manifest and the metadata name different versions", []string{"bundle verify", "bundle inspect", "bundle extract", "restore"}},
	{ExitBundleFormat, "not a bundle, or content that does not decode", []string{"bundle verify", "bundle inspect", "bundle extract", "restore"}},
	{ExitBundleUnsafeEntry, "unsafe bundle content, or content the target filesystem cannot hold", []string{"bundle verify", "bundle extract", "restore"}},
	{ExitBundleMissingBlob, "a blob the manifest references is missing", []string{"bundle verify", "bundle inspect", "bundle extract", "restore"}},
	{ExitBundleSignature, "the bundle is not signed by a --signer key", []string{"bundle verify", "bundle extract", "restore"}},
	{ExitMigratePreflight, "migrate step 1, preflight, failed", []string{"migrate"}},
	{ExitMigrateBundle, "migrate step 2, bundle, failed", []string{"migrate"}},
	{ExitMigrateRestore, "migrate step 3, restore, failed", []string{"migrate"}},
	{ExitMigrateWait, "migrate step 4, wait, failed", []string{"migrate"}},
	{ExitMigrateService, "migrate step 5, service, failed", []string{"migrate"}},
	{ExitMigrateSwitchover, "migrate step 6, switchover, failed", []string{"migrate"}},
	{ExitRestoreTargetNotEmpty, "the target database or data directory is not empty", []string{"restore"}},
	{ExitRestoreConflict, "objects on cluster 0 conflict with the bundle, or a journal of this bundle was written with other options", []string{"restore"}},
	{ExitRestoreKubeKeys, "the bundle's CRs do not match its database rows", []string{"restore"}},
	{ExitRestoreDrift, "re-created resources disagree with the database rows", []string{"restore"}},
	{ExitRestoreApply, "applying an object to cluster 0 failed", []string{"restore"}},
	{ExitRestoreCluster, "cluster 0 is unreachable or lacks the CRDs", []string{"restore"}},
	{ExitRestoreOlderPostgres, "the target PostgreSQL is an older major than node 0's and refuses the bundle's schema", []string{"restore"}},
	{ExitRestoreWrongPostgres, "the target PostgreSQL is not of the major that will run the restored data (--database-major)", []string{"restore"}},
	{ExitTimeout, "timed out: --timeout ran out before the condition held", []string{"wait-for restore-complete", "add-nodes monitor"}},
	{ExitWaitRestoreFailed, "the restore recorded a failed phase", []string{"wait-for restore-complete"}},
	{ExitWaitOtherBundle, "cluster 0 holds a receipt for another bundle, or an incomplete one", []string{"wait-for restore-complete"}},
	{ExitMonitorValidationsFailing, "a host's assisted-service validations kept failing", []string{"add-nodes monitor"}},
	{ExitMonitorCSRBlocked, "a host waits for a CSR that was not approved", []string{"add-nodes monitor"}},
	{ExitMonitorInstallFailed, "assisted-service reports a failed installation of a host", []string{"add-nodes monitor"}},
	{ExitInterrupted, "interrupted (Ctrl-C)", []string{"add-nodes monitor"}},
}
