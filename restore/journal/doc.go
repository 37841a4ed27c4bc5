// Package journal makes a restore resumable and announces its end.
//
// The journal is a ConfigMap per bundle digest, in the restore's target
// namespace, that records each phase as it starts and finishes. A restore that
// is killed at any point and run again reads it, skips (after an optional
// re-check) the phases recorded as done and runs the others again, so every
// phase must be idempotent: a phase killed after its work but before it was
// recorded runs twice.
//
// The receipt is a second ConfigMap, written once every phase is done; its
// existence with the bundle's digest is what `kubectl assisted wait-for
// restore-complete --bundle DIGEST` waits for.
//
// # Names, labels and keys (a contract with wait-for and with users)
//
//	journal:  ConfigMap  kubectl-assisted-journal-<alg>-<hex>
//	receipt:  ConfigMap  kubectl-assisted-receipt-<alg>-<hex>
//	          (digest sha256:abc... -> kubectl-assisted-receipt-sha256-abc...)
//	labels:   app.kubernetes.io/managed-by=kubectl-assisted
//	          kubectl-assisted.io/role=restore-journal | restore-receipt
//	          kubectl-assisted.io/bundle-digest=<alg>-<hex, first 50 characters>
//	annotation kubectl-assisted.io/bundle-digest=<full digest>
//
//	journal data:  bundleDigest   the full digest
//	               fingerprint    the caller's hash of the restore options
//	               phase.<name>   JSON {"state":"running"|"done","startedAt","finishedAt","counts"}
//	receipt data:  bundleDigest   the full digest
//	               formatVersion  "1"
//	               phases         comma-separated phase names, in the order they ran
//	               startedAt      RFC 3339, the first phase's start
//	               completedAt    RFC 3339, when the receipt was written
//	               counts         JSON {"<phase>": {"<what>": n}}
package journal
