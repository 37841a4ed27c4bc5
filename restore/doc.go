// Package restore turns a verified bundle into cluster 0's assisted-service state:
// the database (one transaction), the file storage (staged, then renamed), kube
// keys, Secrets and tokens, and the resources in the order assisted-service needs;
// it keeps a journal so a killed restore converges when run again, and writes the
// receipt that `wait-for restore-complete` reads. It never prints or imports cobra.
//
// Run is the whole restore; Options holds only resolved values (the CLI turns
// flags, env files and Secrets into them):
//
//	res, err := restore.Run(ctx, restore.Options{
//		Ref: ref, Registry: reg, Identities: ids, // or Bundle: an opened bundle
//		TargetDB: dsn, DataDir: "/data",
//		Config: cfg, Namespace: "multicluster-engine", NamespaceMapping: m, ServiceURL: url,
//		OnEvent: onEvent, Progress: bars, Logger: log,
//	})
//	tok, err := res.ClusterToken(clusterID, auth.MintOptions{}) // for the switchover
//
// Run first checks everything without writing anything: every layer read to
// its end (digests, decryption, strict decoding), the resources planned, the
// target database and data directory empty (or Replace, or an earlier run of
// the same bundle), and the objects checked against cluster 0. Then come the
// journal's phases (PhaseDatabase, PhaseFiles, PhaseAuth, PhaseResources): the
// database loads in one transaction whose BeforeCommit writes the kube keys
// (or re-creates the resources from the rows and checks their drift and
// conflicts) and only then creates the journal, so a refusal leaves no trace;
// the files are extracted into StagingDirName inside the data directory and
// renamed into place; the auth phase pre-creates the postgres and local-auth
// Secrets and loads the key that signs status URLs and tokens; the resources
// are applied. Last, the receipt.
//
// DryRun and Diff run the same checks and load the database in a transaction
// that is rolled back; they write nothing. Errors are typed for callers that
// branch (see errors.go); Run returns its Result also with an error.
// docs/restore.md describes the command built on it.
package restore
