// Package recreate re-creates assisted-service custom resources from restored
// database rows, for the variant where node 0 ran assisted-service without a
// Kubernetes API (plain ABI, the interactive UI flow) and no CRs exist to export.
//
// The controllers on cluster 0 compare every CR with its database row and push
// an update (or unbind a host) for any field that disagrees, so the objects
// built here carry exactly the values the rows hold, in the encodings the
// controllers compare. The flow the CLI wires is:
//
//	rows, err := recreate.Load(ctx, tx)                 // pgx.Tx, *pgx.Conn or a pool
//	res, err := recreate.FromRows(rows, recreate.Options{Namespace: ns, Manifests: m})
//	// res.Keys: the kube keys restore/kubekeys writes into the rows
//	// res.Objects: the CRs, in restore order, for restore/resources to apply
//	diffs, err := recreate.Diff(res.Objects, res.Rows)
//
// Build does Load and FromRows in one call.
//
// With ABI's install manifests (/etc/assisted/manifests, see LoadManifests) the
// objects start from those files and the rows fill what they lack; fields the
// files set and the rows disagree with stay as the files say and Diff reports
// them.
//
// Diff makes the comparisons the ClusterDeployment, InfraEnv and Agent
// controllers make (updateIfNeeded, updateInfraEnv, the Agent spec sync) and
// returns one Difference per disagreeing field, with secrets redacted. The
// `restore --recreate-resources --diff` command prints them and exits like
// diff(1): 0 when there is no difference, 1 when there is at least one, and
// above 1 on error (ExitCode maps a result to that code). Without --diff the
// restore refuses to apply while any difference remains, unless --accept-drift.
//
// The package never prints and never imports cobra.
package recreate
